"""gym_gui's own environment families, one package each: its entries, key maps and Markdown docs."""
