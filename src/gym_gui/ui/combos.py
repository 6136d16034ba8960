"""Combo boxes as wide as their layout gives them, from a floor of some characters, never their longest item."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox


def fit_to_layout(combo: QComboBox, characters: int) -> QComboBox:
    """Size ``combo`` from ``characters`` wide at its least, widening with its layout, and return it.

    Sizing to the contents would widen the window to the longest item (a Meta-World id, a family's
    install line) and measure every label of a long list (a run's tens of thousands of episodes).
    """
    combo.setMinimumContentsLength(characters)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    return combo
