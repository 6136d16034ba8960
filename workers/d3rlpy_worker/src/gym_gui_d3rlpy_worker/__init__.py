"""gym_gui's d3rlpy worker: d3rlpy's offline algorithms trained on the home's Minari datasets."""
