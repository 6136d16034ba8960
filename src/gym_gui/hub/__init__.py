"""Sharing on the Hugging Face Hub: a finished run's model published with its card, a published model
fetched back for import, a dataset pushed in Minari's layout. Through huggingface_hub's own client;
the token is the client's (HF_TOKEN or its stored login), never gym_gui's to keep."""
