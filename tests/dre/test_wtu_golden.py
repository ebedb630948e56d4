"""WTU golden side: the job reference, the top-k refinement schedule, the cycle model and the bench packing."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vrex.errors import TraceError, VrexError
from vrex.golden.dre.jobs import WTUJob
from vrex.golden.dre.wtu.linear import (WTUJobError, bucket_shift, check_job, select_bucketed, select_row, select_topk,
                             signed_range, topk_refinement, wtu_job, wtu_job_cycles, wtu_row_cycles, wtu_schedule)
from vrex.sim.cases import WTU_CASES
from vrex.sim.dre.wtu.bench import bench_params, corner_jobs, job_beats, make_bench, random_wtu_jobs

TINY = next(c for c in WTU_CASES if c.id == "wtu-tiny-early_exit").config()


# ---- top-k refinement: the RTL's bucket select finds exactly the golden top-k -----------------------------


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_topk_refinement_selects_the_golden_topk(data):
    bits = data.draw(st.integers(4, 16))
    lo, hi = signed_range(bits)
    span = data.draw(st.sampled_from([1, 3, 40, hi - lo]))
    base = data.draw(st.integers(lo, hi - min(span, hi - lo)))
    scores = data.draw(st.lists(st.integers(base, base + min(span, hi - lo)), min_size=2, max_size=60))
    k = data.draw(st.integers(1, len(scores) - 1))
    buckets = data.draw(st.integers(2, 20))
    v, ties, walks = topk_refinement(scores, k, buckets)
    greater = [j for j, s in enumerate(scores) if s > v]
    equal = [j for j, s in enumerate(scores) if s == v]
    assert len(greater) + ties == k and 1 <= ties <= len(equal)
    mask = sum(1 << j for j in greater + equal[:ties])
    assert mask == select_topk(scores, k).mask
    d = buckets.bit_length() - 1
    sh0 = bucket_shift(0, max(scores) - min(scores), 1 << d)
    assert len(walks) == 1 + -(-sh0 // d)
    assert all(1 <= w <= 1 << d for w in walks)


# ---- job reference -------------------------------------------------------------------------------------------


PARAMS = {"mode": "early_exit", "ratio_q": 77, "ratio_bits": 8, "buckets": 8, "k": 2}


def test_wtu_job_ors_the_rows():
    counts, rows = (1, 2, 3, 4), ((0, 10, 20, 30), (30, 20, 10, 0), (5, 5, 5, 5))
    sel = wtu_job(counts, rows, capacity=8, **PARAMS)
    masks = [select_row(list(r), list(counts), **PARAMS).mask for r in rows]
    assert [s.mask for s in sel.rows] == masks
    assert sel.group_mask == masks[0] | masks[1] | masks[2]


@pytest.mark.parametrize("counts, rows, message", [
    ((), ((),), r"needs at least one cluster \(N = 0\)"),
    ((1,) * 9, ((0,) * 9,), r"has 9 clusters but the WTU row capacity is 8"),
    ((1, 2), (), r"needs at least one score row"),
    ((1, 2), ((1, 2), (3,)), r"row 1 has 1 scores but the job has 2 counts"),
])
def test_wtu_job_rejects_bad_shapes(counts, rows, message):
    with pytest.raises(WTUJobError, match=message) as e:
        wtu_job(counts, rows, capacity=8, **PARAMS)
    assert isinstance(e.value, VrexError) and isinstance(e.value, ValueError)
    with pytest.raises(WTUJobError):
        check_job(counts, rows, 8)


# ---- cycle model ---------------------------------------------------------------------------------------------


def test_cycle_model_counts_passes_as_the_walk_requires():
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 64)
        scores = [rng.randint(-2048, 2047) for _ in range(n)]
        counts = [rng.randint(0, 9) for _ in range(n)]
        ratio_q = rng.choice([0, 1, 77, 128, 255, 256])
        kw = dict(lanes=4, ratio_q=ratio_q, ratio_bits=8, buckets=8, k=rng.randint(0, 70))
        sel = select_bucketed(scores, counts, ratio_q=ratio_q, ratio_bits=8, buckets=8)
        ee = wtu_row_cycles(scores, counts, mode="early_exit", **kw)
        hist = wtu_row_cycles(scores, counts, mode="histogram", **kw)
        w = -(-n // 4)
        if sel.threshold >= sel.total or sel.top_bucket == 0:      # everything selected: no selection pass
            assert ee.selection_passes == hist.selection_passes == 0 and ee.cycles == hist.cycles == 2 * w + 6
        else:
            assert 1 <= ee.selection_passes <= sel.top_bucket <= 7
            assert ee.selection_passes == min(sel.buckets_walked, sel.top_bucket)
            assert hist.walk_cycles == sel.buckets_walked and ee.cycles == 2 * w + 6 + ee.selection_passes * (w + 3)
        top = wtu_row_cycles(scores, counts, mode="topk", **kw)
        assert (top.selection_passes == 0) == (kw["k"] == 0 or kw["k"] >= n)


def test_cycle_model_on_rows_worked_by_hand():
    """8 clusters on 4 lanes (W = 2 words), one token each, ratio 0.5, 8 buckets: row = 2W + 6 = 10 cycles, an
    early-exit pass W + 3 = 5, a histogram binning pass W + 2 = 4 plus one cycle per bucket walked."""
    kw = dict(lanes=4, ratio_q=128, ratio_bits=8, buckets=8, k=2)
    # one dominant score: total 100, T = 50, sh = 4, top bucket 6 holds 100 > 50 -> exit after one bucket
    one = [100, 0, 0, 0, 0, 0, 0, 0]
    assert wtu_row_cycles(one, [1] * 8, mode="early_exit", **kw).cycles == 10 + 5
    assert wtu_row_cycles(one, [1] * 8, mode="histogram", **kw).cycles == 10 + 4 + 1
    # a ramp 10..80: s' = 0..70, total 280, T = 140; bucket 4 (s' >= 64) holds 70, bucket 3 adds 60 + 50 = 180
    ramp = [10, 20, 30, 40, 50, 60, 70, 80]
    assert wtu_row_cycles(ramp, [1] * 8, mode="early_exit", **kw).cycles == 10 + 2 * 5
    assert wtu_row_cycles(ramp, [1] * 8, mode="histogram", **kw).cycles == 10 + 4 + 2
    # ratio 1.0: T = total, nothing to walk
    assert wtu_row_cycles(ramp, [1] * 8, mode="early_exit", **{**kw, "ratio_q": 256}).cycles == 10


def test_schedule_is_back_to_back():
    cfg = TINY
    p = bench_params(cfg)
    jobs = random_wtu_jobs(cfg, 120, seed=2)
    g = p.geometry
    sched = wtu_schedule([(j.counts, j.rows) for j in jobs], capacity=g.capacity, lanes=g.lanes, **p.golden)
    n_rows = sum(len(j.rows) * -(-len(j.counts) // g.lanes) for j in jobs)
    assert len(sched["row"]) == n_rows and len(sched["in:scores"]) == n_rows
    assert sched["in:counts"][0] == 0 and all(b > a for a, b in zip(sched["row"], sched["row"][1:]))
    # the next job's first count beat is accepted on the cycle of the previous job's last group beat
    t, k = 0, 0
    for j in jobs:
        w = -(-len(j.counts) // g.lanes)
        k += w
        t += wtu_job_cycles(j.counts, j.rows, capacity=g.capacity, lanes=g.lanes, **p.golden)
        assert sched["group"][k - 1] == t
        if k < len(sched["group"]):
            assert sched["in:counts"][k] == t


def test_row_mass_cycles_follow_the_selection():
    """threshold_mass = row: the same latencies; a row whose resident mass holds p runs no refinement pass, a row
    without resident mass takes the offloaded rule's cycles, and wtu_job_cycles / wtu_schedule take the input."""
    from vrex.golden.dre.wtu.linear import exp2_latencies

    cfg = next(c for c in WTU_CASES if c.id == "wtu-tiny-exp2-row").config()
    p = bench_params(cfg)
    g, kw = p.geometry, p.timing
    lat = exp2_latencies(kw["exp"], g.pipeline_stages, g.ratio_bits)
    job = corner_jobs(cfg)["resident_holds_row"]
    row, counts = job.rows[0], job.counts
    w = -(-len(counts) // g.lanes)
    offloaded = wtu_row_cycles(row, counts, lanes=g.lanes, **kw)
    assert offloaded.selection_passes == 1                 # the offloaded rule refines this row
    assert wtu_row_cycles(row, counts, lanes=g.lanes, resident=(row[0], 0), **kw) == offloaded
    nothing = wtu_row_cycles(row, counts, lanes=g.lanes, resident=job.resident[0], **kw)
    assert nothing.selection_passes == 0 and nothing.cycles == 2 * w + lat["fin_state"] + lat["mask_tail"]
    cycles = wtu_job_cycles(counts, job.rows, capacity=g.capacity, lanes=g.lanes, resident=job.resident, **kw)
    assert cycles == w + 2 * nothing.cycles
    sched = wtu_schedule([(counts, job.rows, job.resident)], capacity=g.capacity, lanes=g.lanes, **kw)
    assert sched["group"][-1] == cycles


# ---- bench packing -------------------------------------------------------------------------------------------


def test_job_beats_carry_the_job_and_randomise_dont_cares():
    g = bench_params(TINY).geometry
    job = WTUJob("x", tuple(range(1, 11)), (tuple(range(10)), tuple(range(10, 0, -1))))
    counts, scores = job_beats(g, job, random.Random(1))
    assert len(counts) == 3 and counts[0]["clusters"] == 10
    assert [c for b in counts for c in b["counts"]][:10] == list(job.counts)
    assert [s for b in scores[:3] for s in b["scores"]][:10] == list(job.rows[0])
    assert scores[2]["last"] == 0 and scores[5]["last"] == 1           # taken from a row's final beat only
    beats = [job_beats(g, job, random.Random(seed)) for seed in range(8)]
    assert len({b[0][1]["clusters"] for b in beats}) > 1                # clusters after the first beat: random
    assert len({b[1][2]["scores"][3] for b in beats}) > 1               # lanes beyond N: random


@pytest.mark.parametrize("job, message", [
    (WTUJob("big", (0,) * 128, ((0,) * 128,)), r"128 clusters, more than the 7-bit clusters field"),
    (WTUJob("neg", (-1, 2), ((0, 0),)), r"count -1 is outside the unsigned 8-bit format"),
    (WTUJob("wide", (1, 2), ((0, 4096),)), r"score 4096 is outside the signed 12-bit format"),
    (WTUJob("ragged", (1, 2), ((0, 1), (0,))), r"row 1 has 1 scores but the job has 2 counts"),
])
def test_bench_rejects_jobs_the_ports_cannot_carry(job, message):
    with pytest.raises(TraceError, match=message):
        make_bench(TINY, jobs=[job])


def test_bench_defaults_follow_the_config():
    assert make_bench(TINY, n=20).statics == {"ratio": TINY.ratio_fixed}
    topk = next(c for c in WTU_CASES if c.id == "wtu-topk-k8").config()
    assert make_bench(topk, n=20).statics == {"k": topk.dre.wtu.topk_k}
    assert make_bench(TINY, n=20, ratio_q=0).statics == {"ratio": 0}
    with pytest.raises(ValueError, match="does not fit the 13-bit ratio input"):
        make_bench(TINY, n=20, ratio_q=1 << 13)


def test_random_jobs_scale_with_n_and_corners_are_valid():
    g = bench_params(TINY).geometry
    for n in (1, 50, 400):
        jobs = random_wtu_jobs(TINY, n, seed=n)
        beats = sum((len(j.rows) + 1) * -(-len(j.counts) // g.lanes) for j in jobs)
        assert jobs and beats <= max(2 * n, 2 * g.words + 2) and (n < 50 or beats >= n)
    for name, job in corner_jobs(TINY).items():
        check_job(job.counts, job.rows, g.capacity)
        assert job.context == name
