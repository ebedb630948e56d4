"""The needle benchmark's statistics: Wilson intervals of an accuracy, McNemar's exact test of two methods on the
same questions, the cluster bootstrap of an accuracy difference, and the iso-accuracy traffic of a budget sweep.

Every question is scored right or wrong per method; questions are *paired* across methods (the same question ids,
in the same order) and grouped in *clusters*, the haystacks: one haystack hosts several questions whose outcomes
are correlated, so resampling questions independently would understate the uncertainty. The bootstrap therefore
resamples whole clusters with replacement (each replicate draws as many clusters as there are, and takes all of
their questions). Tests come from :mod:`scipy.stats`; the cluster bootstrap is a numpy percentile bootstrap,
because :func:`scipy.stats.bootstrap` resamples observations, not clusters.

All functions are pure: sequences in, plain floats out, deterministic given ``seed``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.stats import binomtest

__all__ = ["wilson", "mcnemar_exact", "paired_bootstrap_delta", "distinguishable", "iso_accuracy_traffic"]


def wilson(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of an accuracy of ``correct`` right answers out of ``n`` questions.

    Raises
    ------
    ValueError
        When ``n`` is 0 (an accuracy of no question has no interval) or ``correct`` is outside [0, n].
    """
    if n <= 0:
        raise ValueError(f"a Wilson interval needs at least one question, got n = {n}")
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be between 0 and n = {n}, got {correct}")
    ci = binomtest(int(correct), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def _outcomes(x: Sequence[bool], name: str) -> np.ndarray:
    a = np.asarray(x, dtype=bool)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of right/wrong outcomes, got shape {a.shape}")
    return a


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value of two methods' paired outcomes on the same questions.

    Only the discordant pairs count: ``b01`` questions where ``a`` is wrong and ``b`` right, ``b10`` the reverse.
    Under the null hypothesis (equal accuracy) each discordant pair goes either way with probability 1/2, so the
    p-value is the two-sided binomial test of ``min(b01, b10)`` out of ``b01 + b10``; 1.0 without discordant pairs.

    Raises
    ------
    ValueError
        When the two sequences differ in length (they would not be paired).
    """
    a, b = _outcomes(a, "a"), _outcomes(b, "b")
    if len(a) != len(b):
        raise ValueError(f"paired outcomes must have the same length, got {len(a)} and {len(b)}")
    b01, b10 = int(np.sum(~a & b)), int(np.sum(a & ~b))
    if b01 + b10 == 0:
        return 1.0
    return float(binomtest(min(b01, b10), b01 + b10, 0.5).pvalue)


class _Clusters:
    """Questions grouped by cluster id, with the bootstrap's cluster weights.

    ``weights`` is an ``(n_boot, C)`` matrix: how many times each of the ``C`` clusters is drawn in each replicate
    (a multinomial of ``C`` draws), so a replicate's sum over questions is ``weights @ per-cluster sums``.
    """

    def __init__(self, clusters: Sequence[Hashable], n: int, n_boot: int, confidence: float, seed: int):
        if len(clusters) != n:
            raise ValueError(f"clusters must name one cluster per question: {len(clusters)} for {n} questions")
        if n == 0:
            raise ValueError("the bootstrap needs at least one question")
        if n_boot < 1:
            raise ValueError(f"n_boot must be at least 1, got {n_boot}")
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        codes: dict = {}
        self.index = np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=np.intp)
        self.count = len(codes)
        self.sizes = np.bincount(self.index, minlength=self.count)
        rng = np.random.default_rng(seed)
        self.weights = rng.multinomial(self.count, np.full(self.count, 1.0 / self.count), size=n_boot)
        self.replicate_sizes = self.weights @ self.sizes
        self.quantiles = ((1 - confidence) / 2, (1 + confidence) / 2)

    def sums(self, x: np.ndarray) -> np.ndarray:
        """Per-cluster sums of a per-question quantity."""
        return np.bincount(self.index, weights=x, minlength=self.count)

    def replicate_means(self, x: np.ndarray) -> np.ndarray:
        """The mean of ``x`` over each replicate's questions, shape ``(n_boot,)``."""
        return self.weights @ self.sums(x) / self.replicate_sizes

    def percentile(self, values: np.ndarray) -> tuple[float, float]:
        lo, hi = np.quantile(values, self.quantiles)
        return float(lo), float(hi)


def _delta(method: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return method.astype(float) - reference.astype(float)


def paired_bootstrap_delta(method: Sequence[bool], reference: Sequence[bool], clusters: Sequence[Hashable], *,
                           n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> dict:
    """Accuracy difference of ``method`` over ``reference`` on the same questions, with a cluster bootstrap interval.

    Parameters
    ----------
    method, reference
        Right/wrong outcomes, paired question by question.
    clusters
        The cluster (haystack) id of each question; any hashable values.

    Returns
    -------
    dict
        ``delta``: accuracy(method) − accuracy(reference), a fraction; ``ci``: ``(lo, hi)``, the percentile
        interval of the delta over ``n_boot`` replicates, each drawing as many whole clusters as there are, with
        replacement (method and reference resampled together, so they stay paired); ``n``: the number of
        questions; ``clusters``: the number of clusters.
    """
    m, r = _outcomes(method, "method"), _outcomes(reference, "reference")
    if len(m) != len(r):
        raise ValueError(f"paired outcomes must have the same length, got {len(m)} and {len(r)}")
    c = _Clusters(clusters, len(r), n_boot, confidence, seed)
    d = _delta(m, r)
    return {"delta": float(d.mean()), "ci": c.percentile(c.replicate_means(d)), "n": len(d), "clusters": c.count}


def distinguishable(ci: tuple[float, float]) -> bool:
    """Whether an interval of a difference excludes 0 (False when it covers 0, ends included)."""
    lo, hi = ci
    return lo > 0 or hi < 0


def _crossing(traffic: np.ndarray, criterion: np.ndarray) -> np.ndarray:
    """Per row of ``criterion`` (rows × sorted points): the least traffic at which its piecewise-linear
    interpolation reaches 0 from below; the first traffic if the first point passes, +inf if none does."""
    passes = criterion >= 0
    first = np.argmax(passes, axis=1)
    out = np.full(len(criterion), np.inf)
    rows = np.flatnonzero(passes.any(axis=1))
    at_first = rows[first[rows] == 0]
    out[at_first] = traffic[0]
    inner = rows[first[rows] > 0]
    j = first[inner]
    u0, u1 = criterion[inner, j - 1], criterion[inner, j]          # u0 < 0 <= u1
    out[inner] = traffic[j - 1] + (traffic[j] - traffic[j - 1]) * (-u0) / (u1 - u0)
    return out


def _isotonic(criterion: np.ndarray) -> np.ndarray:
    """Each row of ``criterion`` (rows × points sorted by traffic) replaced by its least-squares non-decreasing
    fit (:func:`scipy.optimize.isotonic_regression`, pool adjacent violators, equal weights)."""
    return np.stack([isotonic_regression(row).x for row in criterion])


FITS = ("isotonic", "raw")


def iso_accuracy_traffic(points: Sequence[tuple[float, Sequence[bool]]], reference: Sequence[bool],
                         clusters: Sequence[Hashable], *, n_boot: int = 2000, confidence: float = 0.95,
                         seed: int = 0, fit: str = "isotonic") -> dict:
    """The least traffic at which a method's budget sweep is not worse than full attention, with an interval.

    Definition. A sweep point j (traffic t_j, outcomes aligned with ``reference``, the full-attention outcomes on
    the same questions) is *not worse than full* when the upper bound U_j of its paired cluster-bootstrap interval
    of Δ_j = accuracy_j − accuracy(full) is ≥ 0. With the points sorted by traffic, the *iso-accuracy traffic* T is
    the least traffic at which the piecewise-linear interpolation of U(t) over the points reaches 0 from below: the
    first crossing (between the last failing point before the first passing one and that passing point). If the
    lowest-traffic point already passes, T is its traffic and only an upper bound ("≤ T", ``bounded_below``); if
    no point passes, T is None (``missed``). ``monotone`` says whether every point after the raw crossing passes
    too (False when missed).

    Monotone fit (``fit = "isotonic"``, the default). Fetching more cannot make a method worse in expectation, so
    a sweep whose U(t) falls after rising is noise at this n; the raw crossing of such a sweep is the first lucky
    point. U(t) is therefore replaced by its non-decreasing least-squares fit over the points (isotonic
    regression, pool adjacent violators) before the crossing is read, in the observation and in every replicate
    alike; ``raw_traffic`` keeps the crossing of the unfitted U(t), and each point's ``fitted_upper`` the fit.
    ``fit = "raw"`` reads T off the unfitted U(t) (``traffic == raw_traffic``).

    Interval. Every bootstrap replicate resamples whole clusters once, jointly for all points and the reference
    (so the points stay paired with full attention and with each other), and gives Δ*_j; the replicate's
    criterion is Δ*_j + (U_j − Δ_j) ≥ 0 (the observed distance from Δ_j to its upper bound carried over), and its
    crossing T* is found as above (+inf when no point passes). The interval is the percentile interval of T*;
    an end at +inf is None, meaning "beyond the sweep".

    Parameters
    ----------
    points
        ``(traffic, outcomes)`` per sweep point of one method, traffic a fraction of the KV in [0, 1].
    reference, clusters
        The full-attention outcomes and the cluster (haystack) id of each question.

    Returns
    -------
    dict
        ``traffic`` (T or None), ``raw_traffic`` (the unfitted crossing or None), ``fit``, ``ci`` (``(lo, hi)``,
        None ends beyond the sweep), ``bounded_below``, ``missed``, ``monotone``, and ``points``: per point sorted
        by traffic, ``traffic``, ``accuracy``, ``delta``, ``delta_ci`` (the same interval
        :func:`paired_bootstrap_delta` gives with the same seed), ``not_worse`` and ``fitted_upper``.

    Raises
    ------
    ValueError
        With fewer than two points, a traffic outside [0, 1], outcomes not aligned with ``reference``, or an
        unknown ``fit``.
    """
    if fit not in FITS:
        raise ValueError(f"fit must be one of {', '.join(FITS)}, got {fit!r}")
    if len(points) < 2:
        raise ValueError(f"an iso-accuracy traffic is read off a sweep: a sweep needs at least two points, "
                         f"got {len(points)}")
    r = _outcomes(reference, "reference")
    parsed = []
    for t, outcomes in points:
        t = float(t)
        if not 0.0 <= t <= 1.0:                     # also rejects NaN
            raise ValueError(f"a sweep point's traffic must be in [0, 1], got {t}")
        o = _outcomes(outcomes, f"the outcomes at traffic {t}")
        if len(o) != len(r):
            raise ValueError(f"the outcomes at traffic {t} must be aligned with the reference: {len(o)} questions "
                             f"for {len(r)}")
        parsed.append((t, o))
    parsed.sort(key=lambda p: p[0])
    c = _Clusters(clusters, len(r), n_boot, confidence, seed)
    traffic = np.array([t for t, _ in parsed])
    deltas = [_delta(o, r) for _, o in parsed]
    observed = np.array([d.mean() for d in deltas])
    replicates = np.stack([c.replicate_means(d) for d in deltas], axis=1)          # (n_boot, points)
    cis = [c.percentile(replicates[:, j]) for j in range(len(parsed))]
    upper = np.array([hi for _, hi in cis])
    not_worse = upper >= 0

    shape = _isotonic if fit == "isotonic" else (lambda c: c)
    fitted = shape(upper[None, :])[0]
    t_raw = float(_crossing(traffic, upper[None, :])[0])
    t_obs = float(_crossing(traffic, fitted[None, :])[0])
    missed = not np.isfinite(t_obs)
    first = int(np.argmax(fitted >= 0))
    raw_first = int(np.argmax(not_worse))
    t_star = _crossing(traffic, shape(replicates + (upper - observed)))
    # A sentinel above every traffic stands for +inf, so that np.quantile's interpolation stays finite; an end
    # that reaches into it is beyond the sweep.
    ends = np.quantile(np.where(np.isfinite(t_star), t_star, 2.0), c.quantiles)
    ci = tuple(None if e > traffic[-1] else float(e) for e in ends)
    return {
        "traffic": None if missed else t_obs,
        "raw_traffic": t_raw if np.isfinite(t_raw) else None,
        "fit": fit,
        "ci": ci,
        "bounded_below": bool(not missed and first == 0),
        "missed": missed,
        "monotone": bool(np.isfinite(t_raw) and not_worse[raw_first:].all()),
        "points": [{"traffic": float(t), "accuracy": float(o.mean()), "delta": float(dj), "delta_ci": cij,
                    "not_worse": bool(nw), "fitted_upper": float(fu)}
                   for (t, o), dj, cij, nw, fu in zip(parsed, observed, cis, not_worse, fitted)],
    }
