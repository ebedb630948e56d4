"""Retrieval ratio as a function of the KV size: a stated fit through ratios measured at several session lengths.

The golden model reports, per method and stage, the retrieval ratio of one session and the retrieval candidates its
steps chose from (``offloaded_tokens / layer_head_steps``: mean candidates per layer, head and step). Several
golden JSONs (sessions of different lengths) give points (n_i, r_i); ``perf.ratio_fit`` chooses the curve that
carries them to the model's KV sizes, n = retrieval candidates per stream:

``power``       r(n) = a · n^b           (least squares on ln r against ln n; the default: a selection whose size
                                          grows more slowly than the cache gives a ratio that falls as a power)
``log_linear``  r(n) = a + b · ln n      (least squares on r against ln n)
``constant``    r(n) = mean r_i

With one measured length every form is the constant. The fitted value is clipped to [0, 1]; the residuals
r_i − r(n_i) on the measured lengths and the extrapolation factor (largest n asked / largest n measured) are part of
the fit's description, so a result says how far it reaches beyond its data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RatioFit", "fit_ratio"]


@dataclass(frozen=True)
class RatioFit:
    form: str                  # power | log_linear | constant
    a: float
    b: float
    points: tuple              # ((n, r), ...) measured
    sources: tuple = ()        # the files the points came from

    def __call__(self, n: float) -> float:
        n = max(1.0, n)     # no candidates: nothing is selected, any value will do; keep the law defined
        if self.form == "constant":
            value = self.a
        elif self.form == "power":
            value = self.a * n ** self.b
        else:
            value = self.a + self.b * math.log(n)
        return min(1.0, max(0.0, value))

    @property
    def residuals(self) -> tuple:
        """r_i − r(n_i) on the measured lengths."""
        return tuple(r - self(n) for n, r in self.points)

    @property
    def n_max(self) -> float:
        return max(n for n, _ in self.points)

    def describe(self, n_eval: float | None = None) -> str:
        if self.form == "constant":
            law = f"constant {self.a:.4f}"
        elif self.form == "power":
            law = f"r = {self.a:.4g}·n^{self.b:+.3f}"
        else:
            law = f"r = {self.a:.4g} {self.b:+.4g}·ln n"
        pts = ", ".join(f"{r:.3f} at n={n:.0f} (residual {res:+.3f})" for (n, r), res in zip(self.points,
                                                                                            self.residuals))
        out = f"{law} through {len(self.points)} point(s): {pts}"
        if n_eval is not None and n_eval > self.n_max:
            out += f"; extrapolated to n={n_eval:.0f} ({n_eval / self.n_max:.1f}× the longest measured)"
        return out


def _least_squares(xs, ys) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through (xs, ys)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def fit_ratio(points, form: str = "power", sources=()) -> RatioFit:
    """Fit ``points`` ((n, r) with n > 0, r in [0, 1]) with ``form``; one distinct n gives the constant mean."""
    pts = tuple(sorted((float(n), float(r)) for n, r in points))
    if not pts:
        raise ValueError("no points to fit")
    distinct = {n for n, _ in pts}
    mean = sum(r for _, r in pts) / len(pts)
    if form == "constant" or len(distinct) < 2:
        return RatioFit("constant", mean, 0.0, pts, tuple(sources))
    if form == "power":
        usable = [(n, r) for n, r in pts if r > 0]
        if len({n for n, _ in usable}) < 2:
            return RatioFit("constant", mean, 0.0, pts, tuple(sources))
        c, b = _least_squares([math.log(n) for n, _ in usable], [math.log(r) for _, r in usable])
        return RatioFit("power", math.exp(c), b, pts, tuple(sources))
    if form == "log_linear":
        a, b = _least_squares([math.log(n) for n, _ in pts], [r for _, r in pts])
        return RatioFit("log_linear", a, b, pts, tuple(sources))
    raise ValueError(f"unknown fit form {form!r}")
