"""Confidence intervals for the proportions the book reports (accuracies, all-valid rates, ...); how two compare."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from statistics import NormalDist


def one_decimal(value: float) -> str:
    """``value`` with one decimal, halves rounded up as printed (71.25 and 61.25 both up, to 71.3 and 61.3),
    never by the float's binary value, so a number reads the same in every table and sentence."""
    return str(Decimal(repr(float(value))).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """Wilson score 95% interval for ``successes / n`` as fractions in [0, 1]; (nan, nan) at ``n == 0``. Unlike the
    Wald interval it stays inside [0, 1] and does not collapse at 0/n or n/n (8/10: (0.490, 0.943); 0/5: (0, 0.434)):

        centre = (p + z²/2n) / (1 + z²/n),  half-width = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)

    with ``p = successes / n`` and ``z`` the two-sided 95% normal quantile (1.96).
    """
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.975)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0/n and n/n the outer bound is exactly 0 or 1; set it so rather than leave a rounding residue.
    low = 0.0 if successes == 0 else centre - half_width
    high = 1.0 if successes == n else centre + half_width
    return low, high


ABOVE, BELOW, OVERLAP = "above", "below", "overlap"


def compare_intervals(low: float, high: float, other_low: float, other_high: float | None = None) -> str:
    """``above`` when ``[low, high]`` lies wholly above ``[other_low, other_high]`` (a fixed level ``other_low``
    when ``other_high`` is None), ``below`` when wholly below, else ``overlap`` (also at a NaN end)."""
    other_high = other_low if other_high is None else other_high
    return ABOVE if low > other_high else BELOW if high < other_low else OVERLAP
