"""gym_gui's LLM Multi-Step worker: a language model behind an OpenAI-compatible endpoint chooses the actions."""
