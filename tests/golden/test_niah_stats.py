"""The needle benchmark's statistics (golden/evaluation/niah/stats.py): Wilson intervals and McNemar's exact test
against published values and scipy, the cluster bootstrap of a paired accuracy difference, the iso-accuracy
traffic of synthetic budget sweeps; bad input."""

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap

from vrex.golden.evaluation.niah.stats import (distinguishable, iso_accuracy_traffic, mcnemar_exact,
                                               paired_bootstrap_delta, wilson)


def test_wilson_known_values_and_scipy():
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=5e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=5e-4)
    ci = binomtest(37, 50).proportion_ci(confidence_level=0.9, method="wilson")
    assert wilson(37, 50, confidence=0.9) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert wilson(37, 50, confidence=0.99)[1] - wilson(37, 50, confidence=0.99)[0] > ci.high - ci.low


def test_wilson_bad_input():
    with pytest.raises(ValueError, match="a Wilson interval needs at least one question, got n = 0"):
        wilson(0, 0)
    with pytest.raises(ValueError, match="correct must be between 0 and n = 10, got 11"):
        wilson(11, 10)


def test_mcnemar_exact_known_table():
    # 2×2 table: both right 20, only a right 1, only b right 9, both wrong 10
    a = [True] * 20 + [True] * 1 + [False] * 9 + [False] * 10
    b = [True] * 20 + [False] * 1 + [True] * 9 + [False] * 10
    p = mcnemar_exact(a, b)
    assert p == pytest.approx(0.021484375, rel=1e-9)          # 2 · (1 + 10) / 2**10
    assert p == pytest.approx(binomtest(1, 10, 0.5).pvalue, rel=1e-12)
    assert mcnemar_exact(b, a) == p
    assert mcnemar_exact(a[:20] + [True] * 5 + [False] * 5, a[:20] + [False] * 5 + [True] * 5) == 1.0


def test_mcnemar_no_discordant_pair_and_bad_lengths():
    assert mcnemar_exact([True, False, True], [True, False, True]) == 1.0
    with pytest.raises(ValueError, match="paired outcomes must have the same length, got 3 and 2"):
        mcnemar_exact([True, False, True], [True, False])


def test_bootstrap_identical_outcomes_is_zero():
    rng = np.random.default_rng(3)
    ref = rng.random(120) < 0.6
    r = paired_bootstrap_delta(ref, ref, np.repeat(np.arange(30), 4))
    assert r == {"delta": 0.0, "ci": (0.0, 0.0), "n": 120, "clusters": 30}
    assert not distinguishable(r["ci"])


def test_bootstrap_method_right_where_reference_misses():
    rng = np.random.default_rng(4)
    ref = rng.random(200) < 0.7
    method = np.ones(200, dtype=bool)
    r = paired_bootstrap_delta(method, ref, np.repeat(np.arange(50), 4))
    assert r["delta"] == pytest.approx(1 - ref.mean())
    lo, hi = r["ci"]
    assert 0 < lo < r["delta"] < hi
    assert distinguishable(r["ci"])
    assert distinguishable((-0.2, -0.01)) and not distinguishable((-0.1, 0.0))


def test_bootstrap_singletons_match_scipy_percentile_bootstrap():
    rng = np.random.default_rng(5)
    ref = rng.random(300) < 0.7
    method = ref ^ (rng.random(300) < 0.2)
    r = paired_bootstrap_delta(method, ref, list(range(300)), n_boot=4000)
    d = method.astype(float) - ref.astype(float)
    s = bootstrap((d,), np.mean, n_resamples=4000, confidence_level=0.95, method="percentile",
                  rng=np.random.default_rng(0)).confidence_interval
    assert r["ci"] == pytest.approx((s.low, s.high), abs=0.012)


def test_bootstrap_clustering_widens_the_interval():
    # clusters 0..4 of 20 questions: the method gains all of cluster 2 and loses none
    ref = np.repeat([True, True, False, False, False], 20)
    method = np.repeat([True, True, True, False, False], 20)
    clustered = paired_bootstrap_delta(method, ref, np.repeat(np.arange(5), 20))
    singletons = paired_bootstrap_delta(method, ref, np.arange(100))
    assert clustered["delta"] == singletons["delta"] == pytest.approx(0.2)
    assert (clustered["clusters"], singletons["clusters"]) == (5, 100)
    (c_lo, c_hi), (s_lo, s_hi) = clustered["ci"], singletons["ci"]
    assert c_hi - c_lo > 2 * (s_hi - s_lo)
    # a replicate's delta is K/5, K ~ Binomial(5, 1/5) the draws of cluster 2: P(K = 0) = 0.33, P(K ≤ 2) = 0.94,
    # P(K ≤ 3) = 0.993, so the 95 % percentile interval is (0, 3/5)
    assert clustered["ci"] == pytest.approx((0.0, 0.6), abs=1e-12)
    assert distinguishable(singletons["ci"]) and not distinguishable(clustered["ci"])


def test_bootstrap_deterministic_by_seed():
    rng = np.random.default_rng(6)
    ref = rng.random(150) < 0.6
    method = ref ^ (rng.random(150) < 0.3)
    clusters = [f"haystack-{i // 5}" for i in range(150)]
    a = paired_bootstrap_delta(method, ref, clusters, seed=11)
    assert paired_bootstrap_delta(method, ref, clusters, seed=11) == a
    assert len({paired_bootstrap_delta(method, ref, clusters, seed=s)["ci"] for s in range(12, 17)}) > 1


def test_bootstrap_bad_input():
    with pytest.raises(ValueError, match="paired outcomes must have the same length, got 3 and 2"):
        paired_bootstrap_delta([True] * 3, [True] * 2, [0, 1, 2])
    with pytest.raises(ValueError, match="clusters must name one cluster per question: 2 for 3 questions"):
        paired_bootstrap_delta([True] * 3, [True] * 3, [0, 1])


# --- iso-accuracy traffic -----------------------------------------------------------------------------------------

N, PER = 200, 4                                             # 50 haystacks of 4 questions
CLUSTERS = np.repeat(np.arange(N // PER), PER)
REF = np.random.default_rng(7).random(N) < 0.8


def _lose(k, seed=0):
    """The reference's outcomes with k of its right answers turned wrong."""
    out = REF.copy()
    out[np.random.default_rng(seed).choice(np.flatnonzero(REF), k, replace=False)] = False
    return out


def _gain(k, seed=0):
    """The reference's outcomes with k of its wrong answers turned right."""
    out = REF.copy()
    out[np.random.default_rng(seed).choice(np.flatnonzero(~REF), k, replace=False)] = True
    return out


def test_iso_accuracy_rising_sweep():
    points = [(0.8, REF), (0.1, _lose(60)), (0.3, _lose(20)), (0.2, _lose(40)), (0.6, REF), (0.4, REF)]
    r = iso_accuracy_traffic(points, REF, CLUSTERS)
    assert [p["traffic"] for p in r["points"]] == [0.1, 0.2, 0.3, 0.4, 0.6, 0.8]
    assert [p["not_worse"] for p in r["points"]] == [False, False, False, True, True, True]
    assert [p["delta"] for p in r["points"]] == pytest.approx([-0.3, -0.2, -0.1, 0, 0, 0])
    assert r["points"][2]["accuracy"] == pytest.approx(REF.mean() - 0.1)
    assert 0.3 < r["traffic"] <= 0.4
    lo, hi = r["ci"]
    assert lo is not None and hi is not None and lo <= r["traffic"] <= hi
    assert (r["bounded_below"], r["missed"], r["monotone"]) == (False, False, True)
    again = iso_accuracy_traffic(points, REF, CLUSTERS)
    assert again == r


def test_iso_accuracy_interpolates_between_the_crossing_points():
    points = [(0.2, _lose(30)), (0.3, _lose(12)), (0.5, _gain(12)), (0.7, REF)]
    r = iso_accuracy_traffic(points, REF, CLUSTERS, seed=3, fit="raw")
    u3, u5 = r["points"][1]["delta_ci"][1], r["points"][2]["delta_ci"][1]
    assert u3 < 0 < u5
    assert r["traffic"] == pytest.approx(0.3 + 0.2 * -u3 / (u5 - u3))
    assert 0.3 < r["traffic"] < 0.5
    # each replicate carries the observed half-width, so its crossings scatter around T, not around Δ's crossing
    lo, hi = r["ci"]
    assert 0.3 <= lo < r["traffic"] < hi < 0.5
    # the per-point intervals are the paired bootstrap's, on the same joint replicates
    for (t, o), p in zip(points, r["points"]):
        assert p["delta_ci"] == paired_bootstrap_delta(o, REF, CLUSTERS, seed=3)["ci"]


def test_iso_accuracy_not_monotone():
    points = [(0.1, _lose(40)), (0.3, REF), (0.5, _lose(40, seed=1)), (0.9, REF)]
    raw = iso_accuracy_traffic(points, REF, CLUSTERS, fit="raw")
    assert 0.1 < raw["traffic"] <= 0.3 and raw["raw_traffic"] == raw["traffic"]
    assert (raw["missed"], raw["monotone"]) == (False, False)
    # the isotonic fit pools the lucky point at 0.3 with the failing one at 0.5: the crossing moves past both
    r = iso_accuracy_traffic(points, REF, CLUSTERS)
    assert r["fit"] == "isotonic" and r["raw_traffic"] == raw["traffic"] and not r["monotone"]
    fu = [p["fitted_upper"] for p in r["points"]]
    assert fu == sorted(fu) and fu[1] == pytest.approx(fu[2]) and fu[1] < 0 <= fu[3]
    u = [p["delta_ci"][1] for p in r["points"]]
    assert fu[1] == pytest.approx((u[1] + u[2]) / 2)
    assert 0.5 < r["traffic"] <= 0.9
    lo, hi = r["ci"]
    assert lo is not None and lo > 0.1


def test_iso_accuracy_fit_changes_nothing_on_a_rising_sweep():
    points = [(0.1, _lose(60)), (0.2, _lose(40)), (0.3, _lose(20)), (0.4, REF), (0.6, REF)]
    a, b = iso_accuracy_traffic(points, REF, CLUSTERS), iso_accuracy_traffic(points, REF, CLUSTERS, fit="raw")
    assert a["traffic"] == b["traffic"] == a["raw_traffic"]
    assert [p["fitted_upper"] for p in a["points"]] == [p["delta_ci"][1] for p in a["points"]]


def test_iso_accuracy_missed():
    points = [(0.1, _lose(60)), (0.5, _lose(40)), (0.9, _lose(30))]
    r = iso_accuracy_traffic(points, REF, CLUSTERS)
    assert r["traffic"] is None and r["missed"] and not r["bounded_below"] and not r["monotone"]
    assert r["ci"] == (None, None)
    assert not any(p["not_worse"] for p in r["points"])


def test_iso_accuracy_first_point_passes():
    points = [(0.25, _gain(5)), (0.5, REF), (1.0, REF)]
    r = iso_accuracy_traffic(points, REF, CLUSTERS)
    assert r["traffic"] == 0.25 and r["bounded_below"] and not r["missed"] and r["monotone"]
    assert r["ci"] == (0.25, 0.25)


def test_iso_accuracy_bad_input():
    with pytest.raises(ValueError, match="a sweep needs at least two points, got 1"):
        iso_accuracy_traffic([(0.5, REF)], REF, CLUSTERS)
    with pytest.raises(ValueError, match=r"traffic must be in \[0, 1\], got 1.5"):
        iso_accuracy_traffic([(0.5, REF), (1.5, REF)], REF, CLUSTERS)
    with pytest.raises(ValueError, match=r"traffic must be in \[0, 1\], got -0.1"):
        iso_accuracy_traffic([(-0.1, REF), (0.5, REF)], REF, CLUSTERS)
    with pytest.raises(ValueError, match="the outcomes at traffic 0.5 must be aligned with the reference: "
                                         "199 questions for 200"):
        iso_accuracy_traffic([(0.2, REF), (0.5, REF[:-1])], REF, CLUSTERS)
    with pytest.raises(ValueError, match="fit must be one of isotonic, raw, got 'cubic'"):
        iso_accuracy_traffic([(0.2, REF), (0.5, REF)], REF, CLUSTERS, fit="cubic")
