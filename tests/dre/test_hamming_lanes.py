"""Hamming lane array: golden properties, amaranth.sim and cocotb (Verilator, Icarus) against the golden model."""

import random

import pytest

import mutants

from conftest import params, simulators
from vrex.golden.dre.hamming_lanes import hamming_distance, hamming_lanes
from vrex.hdl.dre.hamming_lanes import HammingLanes
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.cases import HAMMING_LANES_CASES
from vrex.sim.dre.hamming_lanes import make_bench
from vrex.sim.runner import run_cocotb
from vrex.synth.generic import generic_figures
from vrex.synth.verilog import emit

CASES = params(HAMMING_LANES_CASES)


mutant_less_equal = mutants.lanes_less_equal


# ---- golden --------------------------------------------------------------------------------------------------


def test_golden_distance_properties():
    rng = random.Random(0)
    for _ in range(500):
        a, b, c = (rng.getrandbits(32) for _ in range(3))
        assert hamming_distance(a, a) == 0
        assert hamming_distance(a, b) == hamming_distance(b, a)
        assert hamming_distance(a, c) <= hamming_distance(a, b) + hamming_distance(b, c)
        assert hamming_distance(a, a ^ 0xFFFFFFFF) == 32


def test_golden_threshold_is_strict_and_respects_validity():
    out = hamming_lanes(0b0000, [0b0000, 0b0011, 0b0111, 0b1111], 0b1111, 2)
    assert out == {"distance": [0, 2, 3, 4], "below": 0b0001}
    assert hamming_lanes(0, [0, 0], 0b10, 1)["below"] == 0b10
    assert hamming_lanes(0, [0], 1, 0)["below"] == 0            # threshold 0: nothing joins
    assert hamming_lanes(0, [0xF], 1, 5)["below"] == 1          # threshold code_bits + 1: everything joins


# ---- amaranth.sim --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_amaranth_sim_matches_golden(case, seed):
    cfg = case.config()
    bench = make_bench(cfg, n=150, seed=seed, p_valid=[0.5, 0.9, 1.0][seed - 1], p_ready=[0.5, 0.6, 1.0][seed - 1])
    result = run_amaranth(HammingLanes.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    assert len(result.observed["o"]) == 150
    if seed == 3:             # no back-pressure: full throughput, latency 1
        ins, outs = result.handshake_cycles["in:i"], result.handshake_cycles["o"]
        assert ins == list(range(ins[0], ins[0] + 150))                   # one transaction per cycle
        assert [o - i for i, o in zip(ins, outs)] == [1] * 150           # registered output: latency 1


@pytest.mark.parametrize("case", CASES)
def test_measure_cycles_reports_what_the_bench_sees(case):
    from vrex.sim.benches import cycles_for
    from vrex.sim.dre.hamming_lanes import measure_cycles
    assert cycles_for("hamming_lanes") is measure_cycles
    figures = measure_cycles(case.config())
    assert figures["latency_cycles"] == 1 and figures["cycles_per_transaction"] == 1
    assert figures["transactions"] == 64 and figures["config_hash"] == case.config().hash()


def test_amaranth_sim_catches_mutated_threshold():
    cfg = HAMMING_LANES_CASES[0].config()
    bench = make_bench(cfg, n=100, reference=mutant_less_equal)
    report = run_amaranth(HammingLanes.from_config(cfg), bench).report(bench)
    assert "mismatching transaction" in report and "below=" in report


# ---- cocotb on generated Verilog -----------------------------------------------------------------------------


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", CASES)
def test_cocotb_matches_golden(case, simulator, work_dir):
    cfg = case.config()
    bench = make_bench(cfg, n=300, seed=7, p_valid=0.7, p_ready=0.6)
    result = run_cocotb(emit("hamming_lanes", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
    assert len(result.observed["o"]) == 300


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_catches_mutated_threshold(simulator, work_dir):
    cfg = HAMMING_LANES_CASES[0].config()
    bench = make_bench(cfg, n=100, reference=mutant_less_equal)
    report = run_cocotb(emit("hamming_lanes", cfg), bench, simulator, work_dir).report(bench)
    assert "mismatching transaction" in report


def test_simulators_agree_on_cycles(work_dir):
    cfg = HAMMING_LANES_CASES[0].config()
    bench = make_bench(cfg, n=100, seed=3)
    a = run_amaranth(HammingLanes.from_config(cfg), bench)
    v = run_cocotb(emit("hamming_lanes", cfg), bench, "icarus", work_dir)
    assert a.handshake_cycles == v.handshake_cycles and a.observed == v.observed


# ---- structure and figures -----------------------------------------------------------------------------------


def test_generic_figures_scale_with_lanes():
    small = generic_figures(emit("hamming_lanes", HAMMING_LANES_CASES[0].config()))
    big = generic_figures(emit("hamming_lanes", HAMMING_LANES_CASES[1].config()))
    for f in (small, big):
        assert f["cells"] > 0 and f["transistors"] > 0 and f["logic_depth"] > 0
    # tiny: 4 lanes x 16 bits; edge: 16 lanes x 32 bits -> about 8x the XOR/popcount logic
    assert 4 < big["transistors"] / small["transistors"] < 16
    # flops: registered output = lanes x distance bits + below mask + valid
    assert small["flops"] == 4 * 5 + 4 + 1 and big["flops"] == 16 * 6 + 16 + 1
