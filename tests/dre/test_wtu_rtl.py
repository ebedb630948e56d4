"""WTU generated Verilog: cocotb on Verilator and Icarus against the golden model, lint, structure, figures."""

import pytest

from conftest import params, simulators
from mutants import wtu_ties_to_higher_index as mutant_ties_to_higher_index
from mutants import wtu_row_mass_threshold_without_r as mutant_row_mass_threshold_without_r
from mutants import wtu_walks_one_bucket_less as mutant_walks_one_bucket_less
from test_wtu import rejected_jobs
from vrex.config import load_config
from vrex.hdl.dre.wtu.linear import WTU
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.cases import LINEAR, WTU_CASES
from vrex.sim.runner import run_cocotb
from vrex.sim.dre.wtu.bench import bench_params, corner_jobs, make_bench, model_schedule, random_wtu_jobs
from vrex.synth.generic import generic_figures, structural_check
from vrex.synth.lint import verilator_lint
from vrex.synth.verilog import emit

CASES = params(WTU_CASES)
TINY = next(c for c in WTU_CASES if c.id == "wtu-tiny-early_exit").config()
TOPK = next(c for c in WTU_CASES if c.id == "wtu-topk-k8").config()
ROW = next(c for c in WTU_CASES if c.id == "wtu-exp2-row-3lanes-p1-z10").config()


def stimulus(case_id, cfg, beats):
    jobs = random_wtu_jobs(cfg, beats, seed=7)
    if not case_id.startswith("wtu-edge"):
        jobs += list(corner_jobs(cfg).values()) + rejected_jobs(cfg)
    return jobs


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", CASES)
def test_cocotb_matches_golden(case, simulator, work_dir):
    cfg = case.config()
    edge = case.id.startswith("wtu-edge")
    bench = make_bench(cfg, jobs=stimulus(case.id, cfg, 120 if edge else 200), p_valid=0.7, p_ready=0.6, seed=7)
    result = run_cocotb(emit("wtu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
    assert len(result.observed["group"]) == len(bench.expected["group"]) > 0


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("cfg", [pytest.param(TINY, id="tiny"), pytest.param(ROW, id="row-mass")])
def test_cocotb_no_stall_cycles_equal_the_model(cfg, simulator, work_dir):
    jobs = stimulus("tiny", cfg, 150)
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0)
    result = run_cocotb(emit("wtu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
    t0 = result.handshake_cycles["in:counts"][0]
    model = model_schedule(bench_params(cfg), jobs)
    for port in model:
        assert [c - t0 for c in result.handshake_cycles[port]] == model[port], port


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_heavy_stall(simulator, work_dir):
    bench = make_bench(TOPK, jobs=stimulus("topk", TOPK, 150), p_valid=0.2, p_ready=0.25, seed=13)
    result = run_cocotb(emit("wtu", TOPK), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("cfg, mutant", [pytest.param(TINY, mutant_walks_one_bucket_less, id="wicsum"),
                                         pytest.param(TOPK, mutant_ties_to_higher_index, id="topk"),
                                         pytest.param(ROW, mutant_row_mass_threshold_without_r, id="row-mass")])
def test_cocotb_catches_a_wrong_reference(cfg, mutant, simulator, work_dir):
    jobs = random_wtu_jobs(cfg, 150, seed=2) + [corner_jobs(cfg)["ties_at_k"]]
    bench = make_bench(cfg, jobs=jobs, reference=mutant)
    report = run_cocotb(emit("wtu", cfg), bench, simulator, work_dir).report(bench)
    assert "mismatching transaction" in report


@pytest.mark.sim
def test_simulators_agree_on_every_handshake(work_dir):
    cfg = next(c for c in WTU_CASES if c.id == "wtu-histogram-12buckets").config()
    bench = make_bench(cfg, n=150, seed=4, p_valid=0.6, p_ready=0.5)
    results = [run_amaranth(WTU.from_config(cfg), bench)]
    results += [run_cocotb(emit("wtu", cfg), bench, s, work_dir / s) for s in simulators()]
    for r in results:
        assert not r.report(bench), r.report(bench)
        assert r.handshake_cycles == results[0].handshake_cycles


# ---- structure and figures -----------------------------------------------------------------------------------


def test_generic_figures_hold_the_memories():
    g = bench_params(TINY).geometry
    figures = generic_figures(emit("wtu", TINY))
    memory_bits = sum(g.memory_bits().values())
    assert figures["cells"] > 0 and figures["transistors"] > 0 and figures["logic_depth"] > 0
    assert memory_bits == 64 * 12 + 64 * 8 + 64
    # technology.memories = sram: the score and count memories are SRAM macros, kept out of the logic figures;
    # the 64-bit aggregation memory is below technology.sram_min_bits and stays flip-flops
    assert {m["name"]: m["total_bits"] for m in figures["sram_memories"]} == {"score_mem": 768, "count_mem": 512}
    assert 64 < figures["flops"] < 64 + 800
    # technology.memories = flops: every memory bit is a flip-flop, plus the control
    flops = generic_figures(emit("wtu", TINY.with_overrides({"technology.memories": "flops"})))
    assert flops["sram_memories"] == [] and memory_bits < flops["flops"] < memory_bits + 800


# ---- long runs -----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("mode", ["early_exit", "histogram", "histogram-offloaded", "topk"])
def test_cocotb_edge_modes_long(mode, simulator, work_dir):
    # early exit walks linear (shift_min) weights; the edge rule (exp2) runs on the histogram datapath, as shipped
    # (the row rule: every row carries its resident input) and with the offloaded rule; top-k ranks offloaded scores
    overrides = {"early_exit": LINEAR, "histogram": {},
                 "histogram-offloaded": {"resv.threshold_mass": "offloaded"},
                 "topk": {"dre.wtu.mode": "topk", "resv.threshold_mass": "offloaded"}}[mode]
    cfg = load_config("edge").with_overrides(overrides)
    jobs = random_wtu_jobs(cfg, 1500, seed=31) + list(corner_jobs(cfg).values()) + rejected_jobs(cfg)
    bench = make_bench(cfg, jobs=jobs, p_valid=0.6, p_ready=0.5, seed=31)
    result = run_cocotb(emit("wtu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)


@pytest.mark.parametrize("overrides", [
    pytest.param({"dre.wtu.lanes": 8, "dre.wtu.score_memory_bytes": 12, "dre.wtu.buckets": 256},
                 id="one-word-256-buckets"),
    pytest.param({"dre.wtu.mode": "topk", "dre.wtu.lanes": 8, "dre.wtu.score_memory_bytes": 12,
                  "dre.wtu.buckets": 256}, id="topk-one-word-256-buckets"),
    pytest.param({"dre.wtu.mode": "histogram", "dre.wtu.score_bits": 4, "dre.wtu.score_frac_bits": 0,
                  "dre.wtu.count_bits": 1, "dre.wtu.score_memory_bytes": 8, "dre.wtu.count_memory_bytes": 2},
                 id="histogram-4bit-scores-1bit-counts"),
])
def test_extreme_geometries_lint_and_structure(overrides):
    emitted = emit("wtu", TINY.with_overrides(overrides))
    lint = verilator_lint(emitted)
    assert lint.clean, "\n".join(lint.warnings)
    structural_check(emitted)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case_id", ["wtu-edge-exp2", "wtu-edge-exp2-row"])
def test_cocotb_real_llm_jobs(case_id, simulator, work_dir):
    """WTU jobs recorded from SmolLM2 sessions on the edge exp2 WTU (offloaded and row-mass threshold) under random
    back-pressure."""
    from test_wtu import smollm2_jobs

    cfg = next(c for c in WTU_CASES if c.id == case_id).config()
    jobs = smollm2_jobs(cfg.resv.threshold_mass == "row")
    bench = make_bench(cfg, jobs=jobs, p_valid=0.7, p_ready=0.6, seed=3)
    result = run_cocotb(emit("wtu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
