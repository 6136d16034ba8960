"""Curves of a metric as numbers: TensorBoard's smoothing, and the mean ± std of several runs' curves
on a common step grid (numpy only; the Charts tab, the Compare view and `gym-gui compare` share it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_SMOOTHING = 0.6  # TensorBoard's default
GRID_POINTS = 400

# Rows of the EMA computed per matrix product: small enough that w**(i-k) never under- or
# overflows badly, large enough that the Python loop over blocks is short (1M points: 16k turns).
_EMA_BLOCK = 64


def ema(
    values: np.ndarray, weight: float, state: tuple[float, int] = (0.0, 0)
) -> tuple[np.ndarray, tuple[float, int]]:
    """TensorBoard's smoothing: a debiased exponential moving average, continued from ``state``.

    Like TensorBoard, ``last = last * weight + (1 - weight) * value`` starting from 0, divided
    by ``1 - weight ** n`` so the first points are not dragged towards zero; non-finite values
    are shown as they are and do not enter the average.

    Args:
        values: the new points.
        weight: 0 (no smoothing) to < 1.
        state: ``(last, n)`` returned by the previous call for the points before ``values``.

    Returns:
        The smoothed points and the state to continue from.
    """
    x = np.asarray(values, dtype=np.float64)
    last, count = state
    if len(x) == 0:
        return x.copy(), state
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    finite = np.isfinite(x)
    out = x.copy()
    xs = x[finite]
    m = len(xs)
    if m == 0:
        return out, state
    if weight == 0.0:
        out[finite] = xs
        return out, (float(xs[-1]), count + m)
    # Blocked linear recurrence: inside a block the average is a matrix product with the
    # lower-triangular T[i, k] = w**(i-k); blocks are chained by the value carried out of each.
    block = _EMA_BLOCK
    blocks = -(-m // block)
    padded = np.zeros(blocks * block)
    padded[:m] = xs
    i = np.arange(block)
    lag = i[:, None] - i[None, :]
    transfer = np.where(lag >= 0, weight ** np.maximum(lag, 0), 0.0)
    local = (1.0 - weight) * (padded.reshape(blocks, block) @ transfer.T)
    decay = weight ** (i + 1.0)
    carries = np.empty(blocks)
    carry = last
    tail = local[:, -1]
    end_decay = decay[-1]
    for b in range(blocks):
        carries[b] = carry
        carry = tail[b] + end_decay * carry
    raw = (local + decay[None, :] * carries[:, None]).ravel()[:m]
    carried = float(raw[-1])
    # The debiasing factor 1 - w**n is 1 to double precision once w**n < 1e-17: only the first
    # points of a series need it (computing it for all of a million costs more than the EMA).
    needed = max(0, min(m, int(np.ceil(-17.0 / np.log10(weight))) - count))
    if needed:
        raw = raw.copy()
        raw[:needed] /= 1.0 - weight ** (count + 1.0 + np.arange(needed))
    out[finite] = raw
    return out, (carried, count + m)


@dataclass(frozen=True)
class Band:
    """Mean ± std of one group of runs (same config, different seeds) on a common step grid."""

    run_ids: tuple[str, ...]
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def mean_std_band(
    run_ids: list[str], curves: list[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS
) -> Band | None:
    """Interpolate each curve onto a common step grid (where all of them have data) and take mean and std.

    Returns None when the curves share no step range.
    """
    prepared = []
    for steps, values in curves:
        if len(steps) == 0:
            return None
        # np.interp needs increasing x: average the points logged at one step (several envs
        # can end an episode at the same global step).
        unique, inverse = np.unique(steps, return_inverse=True)
        means = np.bincount(inverse, weights=values) / np.bincount(inverse)
        prepared.append((unique, means))
    start = max(s[0] for s, _ in prepared)
    stop = min(s[-1] for s, _ in prepared)
    if not stop > start:
        return None
    grid = np.linspace(start, stop, points)
    stacked = np.vstack([np.interp(grid, s, v) for s, v in prepared])
    return Band(tuple(run_ids), grid, stacked.mean(axis=0), stacked.std(axis=0))
