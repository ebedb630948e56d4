"""Resident-mass unit (hdl/core/resident_mass.py) against the golden ``resident_mass``: amaranth.sim on every case of
RESIDENT_MASS_CASES under three traffics, corner rows, cycles, the rows of a session; cocotb on Verilator and
Icarus; a mutant; the one-sentence ConfigErrors. Lint and Yosys check -assert of every case: tests/test_structure.py."""

import functools
import random

import pytest

from conftest import params, simulators
from mutants import resident_mass_without_floor_per_bin as mutant_without_floor_per_bin
from vrex.errors import ConfigError
from vrex.golden.dre.wtu.exp import ExpParams, resident_mass
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.hdl.core.resident_mass import (ROW_QUEUE, ResidentMass, ResidentMassGeometry, resident_mass_latency,
                                         resident_mass_layout)
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.bench import unpack
from vrex.sim.cases import RESIDENT_MASS_CASES, ROW_MASS
from vrex.sim.core.resident_mass import (corner_rows, dense_beats, make_bench, measure_cycles, session_rows,
                                         trace_stimulus)
from vrex.sim.runner import run_cocotb
from vrex.synth.verilog import emit

SMALL = [c for c in RESIDENT_MASS_CASES if c.base != "edge"]
EDGE = next(c for c in RESIDENT_MASS_CASES if c.base == "edge")
TRAFFIC = [(1.0, 1.0, "no-stall"), (0.7, 0.6, "random-stall"), (0.3, 0.25, "heavy-stall")]
# every case under one traffic (rotating), the first two under all three
AMARANTH = [pytest.param(c, pv, pr, id=f"{c.id}-{t}") for i, c in enumerate(SMALL)
            for j, (pv, pr, t) in enumerate(TRAFFIC) if i < 2 or j == i % 3]


def run(cfg, bench):
    result = run_amaranth(ResidentMass.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    return result


@pytest.mark.parametrize("case, p_valid, p_ready", AMARANTH)
def test_amaranth_matches_golden(case, p_valid, p_ready):
    cfg = case.config()
    bench = make_bench(cfg, n=50, seed=11, p_valid=p_valid, p_ready=p_ready)
    assert len(run(cfg, bench).observed["resident"]) == len(bench.expected["resident"]) > 50


def test_amaranth_edge_matches_golden():
    cfg = EDGE.config()
    run(cfg, make_bench(cfg, n=25, seed=5, p_valid=0.7, p_ready=0.6))


def test_corner_rows_mean_what_they_say():
    """The named corner rows exercise what their names claim (the golden side)."""
    for case in SMALL:
        cfg = case.config()
        g = ResidentMassGeometry.from_config(cfg)
        zmax = (1 << g.sum_bits) - 1
        golden = {k: resident_mass(r, ExpParams.from_config(cfg), g.sum_bits) for k, r in corner_rows(g).items()}
        assert golden["empty"] == (0, 0)
        assert all(golden[k].total > 0 for k in golden if k != "empty")
        assert golden["single_key_max"].max_score == (1 << (g.score_bits - 1)) - 1
        assert golden["single_key_min"].max_score == -(1 << (g.score_bits - 1))
        rows = corner_rows(g)
        assert max(rows["max_rising_late"]) == rows["max_rising_late"][-1] > max(rows["max_rising_late"][:-1])
        if g.sum_bits <= 10:
            assert golden["saturating"].total == zmax        # the sum saturates
            assert golden["saturate_then_rise"].total < zmax  # a rise of the maximum takes the saturation back
            assert golden["saturate_then_rise"][:1] == (rows["saturate_then_rise"][-1],)


def test_sticky_saturation_is_exact():
    """A bin mass beyond the accumulators' width (one lane, a 6-bit sum: 8-bit accumulators) saturates the result
    at every window index, and a rise of the maximum by fewer bins than the window keeps it saturated."""
    case = next(c for c in SMALL if c.id == "rm-1lane-3bins-p4-z6")
    cfg = case.config()
    g = ResidentMassGeometry.from_config(cfg)
    hi, S = (1 << (g.score_bits - 1)) - 1, g.bin_shift
    low = hi - ((g.buckets - 1) << S)
    rows = [[low] * 40 + [hi], [low] * 40, [hi] + [low] * 40, [low] * 3 + [hi], [hi - (g.buckets << S)] * 40 + [hi]]
    bench = make_bench(cfg, rows=rows, p_valid=0.8, p_ready=0.7, seed=2)
    run(cfg, bench)
    p = ExpParams.from_config(cfg)
    assert [resident_mass(r, p, g.sum_bits).total for r in rows][:3] == [(1 << g.sum_bits) - 1] * 3


@pytest.mark.parametrize("case", params([SMALL[0], EDGE]))
def test_latency_and_throughput_equal_the_model(case):
    cfg = case.config()
    g = ResidentMassGeometry.from_config(cfg)
    figures = measure_cycles(cfg)
    assert figures["latency_cycles"] == figures["model_latency"] == resident_mass_latency(g)
    # rows of at least latency / (ROW_QUEUE - 1) beats stream back to back: one beat per cycle
    beats = -(-resident_mass_latency(g) // (ROW_QUEUE - 1))
    rng = random.Random(4)
    rows = [[rng.randint(-300, 300) for _ in range(beats * g.lanes)] for _ in range(8)]
    bench = make_bench(cfg, rows=rows, p_valid=1.0, p_ready=1.0)
    bench.inputs["scores"] = dense_beats(g, rows)
    ins = run(cfg, bench).handshake_cycles["in:scores"]
    assert ins[-1] - ins[0] == len(ins) - 1


def test_session_rows_reproduce_the_recorded_resident_input():
    """Trace-driven: the resident-key scores of a row-mode session's query rows (synthetic trace, 2 sinks, a 32-token
    window) give, on the unit, the resident input the session recorded in its WTU jobs."""
    cfg = SMALL[0].config().with_overrides({**ROW_MASS, "resv.sink_tokens": 2, "resv.recent_window_tokens": 32})
    rows = session_rows(cfg, make_trace(cfg, "synthetic", options=TraceOptions(frames=16)), limit=32)
    bench = make_bench(cfg, rows=[r for r, _ in rows], p_valid=0.8, p_ready=0.7, seed=9)
    lay = resident_mass_layout(ResidentMassGeometry.from_config(cfg))
    assert [tuple(unpack(lay, b).values()) for b in bench.expected["resident"]] == [m for _, m in rows]
    run(cfg, bench)


def test_trace_stimulus_replays_through_make_bench():
    """``vrex sim --trace`` on a config without the row rule: the session runs with it, the rows replay."""
    cfg = SMALL[0].config()
    rows = trace_stimulus(cfg, "synthetic", limit=12)
    bench = make_bench(cfg, jobs=rows, p_valid=0.7, p_ready=0.7, seed=3)
    assert len(bench.expected["resident"]) == len(rows) == 12 and all(rows)
    run(cfg, bench)


def test_config_errors_are_one_sentence():
    cfg = SMALL[0].config()
    with pytest.raises(ConfigError, match=r"^dre\.wtu\.bucket_octaves = 16: .*\.$"):
        ResidentMassGeometry.from_config(cfg.with_overrides({"dre.wtu.bucket_octaves": 16,
                                                             "dre.wtu.score_frac_bits": 8}))
    with pytest.raises(ConfigError, match=r"^dre\.wtu\.exp_lut_entries = 32: .*\.$"):
        ResidentMassGeometry.from_config(cfg.with_overrides({"dre.wtu.exp_lut_entries": 32}))


# ---- generated Verilog ---------------------------------------------------------------------------------------


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=[] if c is SMALL[1] else [pytest.mark.slow])
                                  for c in RESIDENT_MASS_CASES])
def test_cocotb_matches_golden(case, simulator, work_dir):
    cfg = case.config()
    bench = make_bench(cfg, n=60 if case.base == "edge" else 120, seed=7, p_valid=0.7, p_ready=0.6)
    result = run_cocotb(emit("resident_mass", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_catches_a_wrong_reference(simulator, work_dir):
    cfg = SMALL[1].config()
    bench = make_bench(cfg, n=60, seed=2, reference=mutant_without_floor_per_bin)
    assert "mismatching transaction" in run_cocotb(emit("resident_mass", cfg), bench, simulator, work_dir).report(bench)


@functools.cache
def _edge_session_rows():
    return trace_stimulus(EDGE.config(), "synthetic", limit=24)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_edge_session_rows(simulator, work_dir):
    """The edge unit on the resident-key scores of a row-mode edge session (its 1024-token window: about 70 beats a
    row) under random back-pressure."""
    cfg = EDGE.config()
    bench = make_bench(cfg, jobs=_edge_session_rows(), p_valid=0.7, p_ready=0.6, seed=5)
    result = run_cocotb(emit("resident_mass", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
