"""LXE blocks (MAC tree, DPE, VPE, SRAM, LXE top) against the golden models, on amaranth.sim, Verilator and Icarus,
under random back-pressure, with mutants that must be caught, config rules, and the measured cycle figures."""

import pytest

import mutants
from conftest import config_error, params, simulators
from vrex.hdl.lxe.dpe import DPE
from vrex.hdl.lxe.lxe import LXE
from vrex.hdl.lxe.mac_tree import MacTree, mac_latency
from vrex.hdl.lxe.vpe import VPE, VpeLane
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.cases import DPE_CASES, LXE_CASES
from vrex.sim.lxe import dpe as dpe_bench
from vrex.sim.lxe import lxe as lxe_bench
from vrex.sim.lxe import mac_tree as tree_bench
from vrex.sim.lxe import vpe as vpe_bench
from vrex.sim.lxe import vpe_lane as lane_bench
from vrex.sim.runner import run_cocotb
from vrex.synth.verilog import emit

BY_ID = {c.id: c for c in LXE_CASES}
SMALL = [c for c in LXE_CASES if c.id != "tree64-edge"]
FEW_LANES = [BY_ID["lxe-tiny"], BY_ID["tree4-cut1-lanes1"]]        # VPEs small enough for the default tier
TRAFFIC = pytest.mark.parametrize("traffic", [(1.0, 1.0), (0.4, 0.4)], ids=["no-stall", "heavy"])


def check(result, bench):
    report = result.report(bench)
    assert not report, report


# ---- amaranth.sim ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", params(LXE_CASES))
@TRAFFIC
def test_mac_tree_matches_golden(case, traffic):
    cfg = case.config()
    bench = tree_bench.make_bench(cfg, n=120, seed=3, p_valid=traffic[0], p_ready=traffic[1])
    check(run_amaranth(MacTree.from_config(cfg), bench), bench)


@pytest.mark.parametrize("case", params([BY_ID["lxe-tiny"], BY_ID["tree16-cuts-lanes8"], *DPE_CASES]))
@pytest.mark.parametrize("traffic", [(0.6, 0.5)], ids=["random"])
def test_dpe_matches_golden(case, traffic):
    cfg = case.config()
    bench = dpe_bench.make_bench(cfg, n=40, seed=4, p_valid=traffic[0], p_ready=traffic[1])
    check(run_amaranth(DPE.from_config(cfg), bench), bench)


@pytest.mark.parametrize("case", params(FEW_LANES))
@TRAFFIC
def test_vpe_matches_golden(case, traffic):
    cfg = case.config()
    bench = vpe_bench.make_bench(cfg, n=120, seed=5, p_valid=traffic[0], p_ready=traffic[1])
    check(run_amaranth(VPE.from_config(cfg), bench), bench)


def test_vpe_lane_alone_matches_golden():
    cfg = BY_ID["lxe-tiny"].config()
    bench = lane_bench.make_bench(cfg, n=300, seed=6, p_valid=0.6, p_ready=0.5)
    check(run_amaranth(VpeLane.from_config(cfg), bench), bench)


@pytest.mark.parametrize("case", params(FEW_LANES))
def test_vpe_lane_rounds_conversion_ties_like_the_golden(case):
    """Every tie and near-tie of the fixed-point and 2^x conversions (the guard bit at every position)."""
    cfg = case.config()
    bench = lane_bench.make_bench(cfg, beats=vpe_bench.rounding_edge_beats(), p_valid=0.8, p_ready=0.7)
    check(run_amaranth(VpeLane.from_config(cfg), bench), bench)


def test_lxe_top_matches_golden():
    cfg = BY_ID["lxe-tiny"].config()
    bench = lxe_bench.make_bench(cfg, n=80, seed=7, p_valid=0.6, p_ready=0.5)
    check(run_amaranth(LXE.from_config(cfg), bench), bench)
    assert len(bench.expected["sram_rdata"]) > 10


def test_mac_tree_replays_session_operands():
    cfg = BY_ID["lxe-tiny"].config()
    jobs = tree_bench.trace_stimulus(cfg, "synthetic", limit=60)
    bench = tree_bench.make_bench(cfg, jobs=jobs, p_valid=0.8, p_ready=0.7)
    assert len(bench.expected["o"]) == 60
    check(run_amaranth(MacTree.from_config(cfg), bench), bench)


@pytest.mark.parametrize("mutant", ["mac_truncates", "mac_reversed_beats", "mac_no_ftz"])
def test_mac_tree_catches_mutants(mutant):
    cfg = BY_ID["lxe-tiny"].config()
    bench = tree_bench.make_bench(cfg, n=300, seed=8, reference=getattr(mutants, mutant))
    assert "mismatching transaction" in run_amaranth(MacTree.from_config(cfg), bench).report(bench)


@pytest.mark.parametrize("mutant", ["dpe_load_ignores_mask", "dpe_reads_word_zero", "dpe_load_to_wrong_group"])
def test_dpe_catches_mutants(mutant):
    cfg = BY_ID["lxe-tiny"].config()
    bench = dpe_bench.make_bench(cfg, n=60, seed=8, model=getattr(mutants, mutant))
    assert "mismatching transaction" in run_amaranth(DPE.from_config(cfg), bench).report(bench)


def test_vpe_catches_a_truncating_add():
    cfg = BY_ID["lxe-tiny"].config()
    bench = vpe_bench.make_bench(cfg, n=100, seed=9, reference=mutants.vpe_add_truncates, ops=("add",))
    assert "mismatching transaction" in run_amaranth(VPE.from_config(cfg), bench).report(bench)


# ---- latency attributes and cycle figures -----------------------------------------------------------------------


@pytest.mark.parametrize("case", params(FEW_LANES))
def test_latency_attribute_is_what_the_bench_measures(case):
    cfg = case.config()
    tree = tree_bench.measure_cycles(cfg)
    assert tree["latency_cycles"] == mac_latency(cfg.lxe.mac_cuts, cfg.lxe.mac_norm_stages) \
        == len(cfg.lxe.mac_cuts) + 2 + cfg.lxe.mac_norm_stages
    assert tree["beats_per_cycle"] == 1.0
    dpe = dpe_bench.measure_cycles(cfg)
    assert dpe["latency_cycles"] == tree["latency_cycles"] + 1 + cfg.lxe.dpe_read_stages
    assert dpe["beats_per_cycle"] == 1.0
    vpe = vpe_bench.measure_cycles(cfg)
    assert vpe["latency_cycles"] == cfg.lxe.vpe_stages
    assert vpe["beats_per_cycle"] == 1.0
    assert 0 < dpe["dpe_efficiency"] <= 1 and 0 < vpe["vpe_efficiency"] <= 1


@pytest.mark.parametrize("case", params(DPE_CASES))
def test_dpe_latency_follows_its_read_stages(case):
    """measure_cycles raises unless the measured latency is the attribute; the attribute counts the read stages."""
    from vrex.hdl.lxe.dpe import dpe_latency

    x = case.config().lxe
    dpe = dpe_bench.measure_cycles(case.config())
    assert dpe["latency_cycles"] == dpe_latency(x.mac_cuts, x.mac_norm_stages, x.dpe_read_stages) \
        == mac_latency(x.mac_cuts, x.mac_norm_stages) + 1 + x.dpe_read_stages
    assert dpe["beats_per_cycle"] == 1.0


def test_utilisation_model_matches_a_dpe_simulation():
    """A small matmul on the DPE in amaranth.sim, scheduled weight-stationary (a column tile's weights loaded once,
    every row streamed against them, K longer than the weight memory split into chunks), is bit-exact with the
    golden DPE and takes exactly the cycles the utilisation model gives."""
    import random

    from vrex.hdl.lxe.dpe import dpe_latency
    from vrex.sim.lxe.operands import random_dot
    from vrex.sim.lxe.utilisation import matmul_cycles, partial_sum_chunks

    cfg = BY_ID["lxe-tiny"].config()
    x = cfg.lxe
    M, K, N = 5, 5 * x.dpe_inputs - 2, 2 * x.dpe_trees + 1      # two chunks of K, a last tile of one column
    assert partial_sum_chunks(cfg, K) == 2 and x.dpe_load_trees > 1
    rng = random.Random(1)
    rows = [random_dot(rng, K, "clean")[0] for _ in range(M)]
    columns = [random_dot(rng, K, "clean")[1] for _ in range(N)]
    bench = dpe_bench.matmul_bench(cfg, rows, columns)
    assert len(bench.expected["o"]) == M * 3 * 2
    result = run_amaranth(DPE.from_config(cfg), bench)
    check(result, bench)
    first_in, last_out = result.handshake_cycles["in:i"][0], result.handshake_cycles["o"][-1]
    assert last_out - first_in == matmul_cycles(M, K, N, trees=x.dpe_trees, inputs=x.dpe_inputs,
                                                latency=dpe_latency(x.mac_cuts, x.mac_norm_stages, x.dpe_read_stages),
                                                load_trees=x.dpe_load_trees) - 1


# ---- cocotb on the generated Verilog ------------------------------------------------------------------------------


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("component", ["mac_tree", "vpe_lane"])
def test_cocotb_blocks_match_golden(component, simulator, work_dir):
    cfg = BY_ID["lxe-tiny"].config()
    module = {"mac_tree": tree_bench, "vpe_lane": lane_bench}[component]
    bench = module.make_bench(cfg, n=200, seed=10, p_valid=0.7, p_ready=0.6)
    check(run_cocotb(emit(component, cfg), bench, simulator, work_dir), bench)


@pytest.mark.sim
@pytest.mark.parametrize("component", ["dpe", "vpe", "lxe"])
def test_cocotb_icarus_dpe_vpe_and_lxe_match_golden(component, work_dir):
    cfg = BY_ID["lxe-tiny"].config()
    module = {"dpe": dpe_bench, "vpe": vpe_bench, "lxe": lxe_bench}[component]
    bench = module.make_bench(cfg, n=50, seed=11, p_valid=0.7, p_ready=0.6)
    check(run_cocotb(emit(component, cfg), bench, "icarus", work_dir), bench)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_catches_a_mutant(simulator, work_dir):
    cfg = BY_ID["lxe-tiny"].config()
    bench = tree_bench.make_bench(cfg, n=200, seed=12, reference=mutants.mac_truncates)
    assert "mismatching transaction" in run_cocotb(emit("mac_tree", cfg), bench, simulator, work_dir).report(bench)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("component", ["dpe", "vpe", "lxe"])
def test_cocotb_verilator_dpe_vpe_and_lxe_match_golden(component, work_dir):
    cfg = BY_ID["lxe-tiny"].config()
    module = {"dpe": dpe_bench, "vpe": vpe_bench, "lxe": lxe_bench}[component]
    bench = module.make_bench(cfg, n=200, seed=13, p_valid=0.7, p_ready=0.6)
    check(run_cocotb(emit(component, cfg), bench, "verilator", work_dir), bench)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("component", ["mac_tree", "vpe_lane"])
def test_cocotb_verilator_edge_blocks_soak(component, work_dir):
    cfg = BY_ID["tree64-edge"].config()
    module = {"mac_tree": tree_bench, "vpe_lane": lane_bench}[component]
    bench = module.make_bench(cfg, n=3000, seed=14, p_valid=0.8, p_ready=0.7)
    check(run_cocotb(emit(component, cfg), bench, "verilator", work_dir), bench)


@pytest.mark.slow
@pytest.mark.parametrize("case", params(SMALL))
def test_amaranth_soak_every_case(case):
    cfg = case.config()
    for seed in range(3):
        bench = tree_bench.make_bench(cfg, n=600, seed=100 + seed, p_valid=0.8, p_ready=0.5, max_beats=6)
        check(run_amaranth(MacTree.from_config(cfg), bench), bench)
        bench = vpe_bench.make_bench(cfg, n=300, seed=200 + seed, p_valid=0.8, p_ready=0.5)
        check(run_amaranth(VPE.from_config(cfg), bench), bench)


# ---- bad configurations ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("lxe: {dpe_inputs: 48}", "lxe.dpe_inputs = 48: must be a power of two ≥ 2"),
    ("lxe: {dpe_inputs: 16, mac_cuts: [3, 12]}", "cut 12 is beyond the tree depth: a 16-input MAC tree has front "
                                                 "levels 0..9 (cut 10 registers the adder-tree root), so cuts must be "
                                                 "1..10."),
    ("lxe: {mac_cuts: [8, 4]}", "lxe.mac_cuts = [8, 4]: must be strictly increasing"),
    ("lxe: {mac_cuts: [0]}", "lxe.mac_cuts = (0,): must be ≥ 1."),
    ("lxe: {sram_kib: 384, sram_banks: 7}", "does not divide into lxe.sram_banks (7) banks"),
    ("lxe: {vpe_lanes: 48}", "lxe.vpe_lanes = 48: x lxe.vpe_units (1) lanes must divide model.head_dim (128)"),
    ("lxe: {acc_headroom_bits: 5}", "lxe.acc_headroom_bits = 5: must be ≥ 8"),
    ("lxe: {dpe_load_trees: 24}", "lxe.dpe_load_trees = 24: must divide lxe.dpe_trees (64): a load beat writes one "
                                  "whole group of trees."),
    ("lxe: {dpe_weight_words: 0}", "lxe.dpe_weight_words = 0: must be ≥ 1."),
    ("lxe: {mac_norm_stages: 4}", "lxe.mac_norm_stages = 4: must be ≤ 3."),
    ("lxe: {vpe_stages: 3}", "lxe.vpe_stages = 3: must be ≥ 4."),
    ("lxe: {dpe_weight_banks: 3}", "lxe.dpe_weight_banks = 3: must divide lxe.dpe_inputs (64): each bank holds the "
                                   "same number of a word's BF16 elements."),
    ("lxe: {dpe_read_stages: 3}", "lxe.dpe_read_stages = 3: must be ≤ 2."),
    ("core: {memory_bank_bits: -1}", "core.memory_bank_bits = -1: must be ≥ 0."),
])
def test_bad_lxe_configs_are_rejected_in_one_sentence(tmp_path, text, message):
    err = config_error(tmp_path, text)
    assert message in err and err.count("\n") == 0, err
