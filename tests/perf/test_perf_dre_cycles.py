"""The system model's WTU cycles follow the RTL's cycle model (vrex.golden.dre.wtu.linear.wtu_row_cycles)."""

import random

import pytest

from vrex.config import load_config
from vrex.golden.dre.wtu.linear import PASS_OVERHEAD, ROW_OVERHEAD, exp2_latencies, wtu_job_cycles, wtu_row_cycles
from vrex.perf.dre_timing import dre_timing
from vrex.perf.figures_input import figures_from_dict
from vrex.sim.dre.wtu.bench import bench_params, job_resident, peaked_job, with_resident


def _per_row(cfg) -> dict:
    """The per-row constants the WTU bench reports (sim/dre/wtu/bench.py measure_cycles), without simulating."""
    params = bench_params(cfg)
    g = params.geometry
    if g.exp2:
        lat = exp2_latencies(params.golden["exp"], g.pipeline_stages, g.ratio_bits)
        return {"overhead": lat["fin_state"] + lat["mask_tail"], "per_unit": 1, "per_pass_overhead": lat["walk_state"]}
    return {"overhead": ROW_OVERHEAD, "per_unit": 1, "per_pass_overhead": PASS_OVERHEAD[g.mode]}


def _timing(cfg, per_row, mean_passes):
    data = {"components": {"wtu": {"cycles": {"per_row": per_row, "mean_passes": mean_passes}}}}
    return dre_timing(cfg, figures_from_dict(data, "f.json"))


@pytest.mark.parametrize("name", ["tiny", "edge"])
def test_wtu_row_cycles_match_the_rtl_cycle_model(name):
    """Per row, with the row's own pass count (load + P selection passes + mask): perf's cycles equal the RTL
    model's exactly, so the per-pass overhead is counted P times, not P + 2 (the old discrepancy)."""
    cfg = load_config(name)
    params = bench_params(cfg)
    g = params.geometry
    per_row = _per_row(cfg)
    rng = random.Random(5)
    seen = set()
    for n in (g.capacity // 4, g.lanes, 3 * g.lanes + 1, g.capacity // 4, g.capacity):
        job = with_resident(g, peaked_job(g, n, 4, rng, f"t{n}"), rng)
        resident = job_resident(g, job) or [None] * len(job.rows)
        total = 0
        for row, res in zip(job.rows, resident):
            rc = wtu_row_cycles(row, job.counts, lanes=g.lanes, resident=res, **params.timing)
            seen.add(rc.selection_passes)
            assert _timing(cfg, per_row, rc.passes).wtu_cycles(cfg, 1, n) == rc.cycles
            total += rc.cycles
        # a job adds its count words once
        words = -(-n // g.lanes)
        assert wtu_job_cycles(job.counts, job.rows, capacity=g.capacity, lanes=g.lanes, resident=resident,
                              **params.timing) == total + words
    assert seen - {0}, "some rows must run selection passes (where P and P + 2 differ)"


def test_per_pass_overhead_counts_selection_passes_only():
    cfg = load_config("edge")
    d = _timing(cfg, {"overhead": 28, "per_unit": 1, "per_pass_overhead": 17}, 2.5)
    w = 1280 // cfg.dre.wtu.lanes
    assert d.wtu_cycles(cfg, 1, 1280) == pytest.approx(28 + 2.5 * w + 0.5 * 17)      # not 2.5 · 17
    assert d.wtu_cycles(cfg, 10, 1280, jobs=2) == pytest.approx(10 * (28 + 2.5 * w + 0.5 * 17) + 2 * w)
    # fewer measured passes than the two fixed ones add no negative overhead
    assert _timing(cfg, {"overhead": 28, "per_unit": 1, "per_pass_overhead": 17}, 2.0).wtu_cycles(cfg, 1, 16) == 30
