"""Bootstrap confidence intervals of the paper's statistics (`paper_report`), with numpy and
scipy (the `reproduce` extra, imported here only).

Every statistic takes paired samples (one value per cell or pair in each array) and an axis,
so that scipy.stats.bootstrap evaluates all resamples at once. Intervals are BCa (bias
corrected and accelerated) from 9999 resamples of a fixed seed: the same data give the same
interval. A resample whose statistic is undefined (every pair at one RTT: no slope) is left
out (the interval is then the percentiles of the others); when the resampled values are all
equal (https exactly 1.2x gridftp in every cell) the interval is that value.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 21  # the issue that asked for them


def ratio_of_means(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(a) / mean(b): how many times b's throughput a reaches over the same cells."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean(a, axis=axis) / np.mean(b, axis=axis)


def slope(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """The least-squares slope of y against x (nan when x does not vary)."""
    dx = x - np.mean(x, axis=axis, keepdims=True)
    dy = y - np.mean(y, axis=axis, keepdims=True)
    spread = np.sum(dx * dx, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, np.sum(dx * dy, axis=axis) / spread, np.nan)


def relative_slope(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """slope(x, y) / mean(y): the fraction of its mean throughput y changes per unit of x."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return slope(x, y, axis=axis) / np.mean(y, axis=axis)


def relative_slope_difference(
    xa: np.ndarray, a: np.ndarray, xb: np.ndarray, b: np.ndarray, axis: int = -1
) -> np.ndarray:
    """relative_slope(xa, a) - relative_slope(xb, b): 0 when both lose the same fraction.

    A difference, not a ratio: a ratio of slopes is undefined where one protocol's slope is
    near 0 (its interval then spans everything and can agree with anything)."""
    return relative_slope(xa, a, axis=axis) - relative_slope(xb, b, axis=axis)


def slope_ratio(
    xa: np.ndarray, a: np.ndarray, xb: np.ndarray, b: np.ndarray, axis: int = -1
) -> np.ndarray:
    """slope(xa, a) / slope(xb, b): 1 when both lose the same Gbit/s per unit of x."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return slope(xa, a, axis=axis) / slope(xb, b, axis=axis)


def estimate(
    statistic: Callable[..., np.ndarray], samples: Sequence[Sequence[float]]
) -> tuple[float | None, float | None, float | None]:
    """(the statistic, the low and high ends of its 95% interval); Nones when undefined."""
    data = tuple(np.asarray(sample, dtype=float) for sample in samples)
    value = float(statistic(*data))
    if not np.isfinite(value):
        return None, None, None
    if min(sample.size for sample in data) < 2:  # nothing to resample
        return value, None, None
    low, high = _interval(statistic, data, value)
    return value, low, high


def _interval(
    statistic: Callable[..., np.ndarray], data: tuple[np.ndarray, ...], value: float
) -> tuple[float, float]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # BCa's complaints about degenerate or undefined resamples: handled below.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        found = stats.bootstrap(
            data,
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=RESAMPLES,
            confidence_level=CONFIDENCE,
            method="BCa",
            rng=np.random.default_rng(SEED),
        )
    low, high = found.confidence_interval
    if np.isfinite(low) and np.isfinite(high):
        return float(low), float(high)
    resampled = found.bootstrap_distribution
    resampled = resampled[np.isfinite(resampled)]
    if resampled.size == 0 or np.ptp(resampled) <= 1e-12 * max(1.0, abs(value)):
        return value, value
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return float(low), float(high)
