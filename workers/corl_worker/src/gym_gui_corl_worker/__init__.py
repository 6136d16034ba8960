"""gym_gui's CORL worker: a CORL checkout's offline algorithms trained on the home's Minari datasets."""
