"""DRE top: HCU + WTU behind one component, against the golden model, with its status counters."""

import pytest
from amaranth import Value

import mutants
from conftest import params, simulators
from vrex.golden.resv.block_jobs import record_jobs
from vrex.hdl.dre.top import DRE, DRE_COUNTERS
from vrex.hdl.unused import silence_unused
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.cases import DRE_CASES
from vrex.sim.dre.top import make_bench
from vrex.sim.runner import run_cocotb
from vrex.synth.generic import generic_figures
from vrex.synth.verilog import emit

CASES = params(DRE_CASES)
BY_ID = {c.id: c for c in DRE_CASES}


def check(result, bench):
    assert not result.report(bench), result.report(bench)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("traffic", [(1.0, 1.0), (0.7, 0.6), (0.4, 0.3)], ids=["no-stall", "random", "heavy"])
def test_amaranth_sim_matches_golden_and_counters(case, traffic):
    cfg = case.config()
    n = 40 if case.id.startswith("dre-edge") else 120
    bench = make_bench(cfg, n=n, seed=3, p_valid=traffic[0], p_ready=traffic[1])
    result = run_amaranth(DRE.from_config(cfg), bench)
    check(result, bench)
    sig, wrap = result.extra["signals"], 1 << cfg.dre.counter_bits
    assert (result.cycles + bench.reset_cycles) % wrap == sig["status__cycles"]
    assert sig["status__hcu_tokens"] > 0 and sig["status__wtu_rows"] > 0
    if result.cycles < wrap:
        assert sig["status__hcu_busy_cycles"] <= sig["status__cycles"]
        assert sig["status__wtu_active_cycles"] <= sig["status__cycles"]


def test_early_exit_counters_count_something():
    cfg = BY_ID["dre-topk-slice4"].config()        # 4-bit slices: lane groups can exit early
    bench = make_bench(cfg, n=150, seed=5)
    result = run_amaranth(DRE.from_config(cfg), bench)
    check(result, bench)
    assert result.extra["signals"]["status__hcu_group_exits"] > 0


def test_clear_holds_counters_at_zero():
    cfg = BY_ID["dre-tiny"].config()
    bench = make_bench(cfg, n=40, seed=2)
    bench.statics["clear"] = 1
    bench.expected_signals = {k: 0 for k in bench.expected_signals}
    check(run_amaranth(DRE.from_config(cfg), bench), bench)


def test_counters_wrap_at_their_width():
    cfg = BY_ID["dre-histogram-first-bitserial"].config()      # 8-bit counters
    bench = make_bench(cfg, n=300, seed=4)
    assert bench.expected_signals["status__hcu_tokens"] == 300 % 256
    check(run_amaranth(DRE.from_config(cfg), bench), bench)


@pytest.mark.parametrize("mutant", ["hcu", "wtu", "wtu-row-mass"])
def test_a_wrong_reference_is_caught(mutant):
    cfg = BY_ID["dre-tiny-exp2-row" if mutant == "wtu-row-mass" else "dre-tiny"].config()
    kw = {"hcu": {"reference_hcu": mutants.hcu_less_equal},
          "wtu": {"reference_wtu": mutants.wtu_walks_one_bucket_less},
          "wtu-row-mass": {"reference_wtu": mutants.wtu_row_mass_threshold_without_r}}[mutant]
    bench = make_bench(cfg, n=150, seed=6, **kw)
    report = run_amaranth(DRE.from_config(cfg), bench).report(bench)
    assert "mismatching transaction" in report


@pytest.mark.parametrize("case_id", ["dre-tiny", "dre-tiny-exp2-row"])
def test_trace_driven_jobs_from_a_session(case_id):
    cfg = BY_ID[case_id].config()
    for trace in ("synthetic", "video"):
        jobs = record_jobs(cfg, trace, seed=0, max_jobs=8, layers=[0], frames=14)
        assert jobs[0] and jobs[1], f"{trace}: a session of 14 frames must give HCU and WTU jobs"
        bench = make_bench(cfg, jobs=jobs, p_valid=0.7, p_ready=0.6, name=f"dre-{trace}")
        check(run_amaranth(DRE.from_config(cfg), bench), bench)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", CASES)
def test_cocotb_matches_golden_and_counters(case, simulator, work_dir):
    cfg = case.config()
    n = 30 if case.id.startswith("dre-edge") else 100
    bench = make_bench(cfg, n=n, seed=7, p_valid=0.7, p_ready=0.6)
    check(run_cocotb(emit("dre", cfg), bench, simulator, work_dir), bench)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_catches_a_wrong_reference(simulator, work_dir):
    cfg = BY_ID["dre-tiny"].config()
    bench = make_bench(cfg, n=100, seed=6, reference_hcu=mutants.hcu_ties_to_higher_slot,
                       reference_wtu=mutants.wtu_walks_one_bucket_less)
    assert "mismatching transaction" in run_cocotb(emit("dre", cfg), bench, simulator, work_dir).report(bench)


def test_generic_figures_are_the_blocks_plus_counters():
    # the flat DRE under the config that asks for it: the slow tier's flat figures (test_dre_figures.py) then reuse
    # this Yosys run (same emitted folder); the blocks under tiny share theirs with the report tests
    cfg = BY_ID["dre-tiny"].config()
    dre = generic_figures(emit("dre", cfg.with_overrides({"technology.dre_figures": "flat"})))
    hcu, wtu, kvmu = (generic_figures(emit(c, cfg)) for c in ("hcu", "wtu", "kvmu"))
    # the status counters, their registered increments and the WTU-active flag; the increments are 1 bit (`cycles`
    # adds a constant), but the two row sums, which are `last` (1 bit) × the row's field
    dre_block = DRE.from_config(cfg)          # built for its signature only, never elaborated
    silence_unused(dre_block)
    row = dre_block.rows.payload
    increment_bits = (len(DRE_COUNTERS) - 3) + sum(1 + len(Value.cast(f)) for f in (row.selected, row.buckets_walked))
    counters = len(DRE_COUNTERS) * cfg.dre.counter_bits + increment_bits + 1
    blocks = hcu["flops"] + wtu["flops"] + kvmu["flops"] + counters
    assert 0.95 * blocks <= dre["flops"] <= blocks      # flattening may merge a few registers across the blocks
    assert hcu["cells"] + wtu["cells"] + kvmu["cells"] < dre["cells"]
    assert sorted(m["name"] for m in dre["sram_memories"]) == \
        sorted(m["name"] for m in hcu["sram_memories"] + wtu["sram_memories"] + kvmu["sram_memories"])


def test_the_top_adds_no_cycles():
    """A no-stall DRE run hands over every transaction on the same cycle as the blocks run alone."""
    from vrex.hdl.dre.hcu import HCU
    from vrex.hdl.dre.wtu.linear import WTU
    from vrex.sim.dre import hcu as hcu_bench
    from vrex.sim.dre.wtu import bench as wtu_bench
    from vrex.sim.dre.top import PORTS

    cfg = BY_ID["dre-topk-slice4"].config()
    bench = make_bench(cfg, n=80, seed=9, p_valid=1.0, p_ready=1.0)
    dre = run_amaranth(DRE.from_config(cfg), bench)
    check(dre, bench)
    for block, module in ((HCU, hcu_bench), (WTU, wtu_bench)):
        sub = module.make_bench(cfg, n=80, seed=9, p_valid=1.0, p_ready=1.0)
        alone = run_amaranth(block.from_config(cfg), sub)
        for port, cycles in alone.handshake_cycles.items():
            inner = port.removeprefix("in:")
            outer = ("in:" if port.startswith("in:") else "") + PORTS[inner]
            assert dre.handshake_cycles[outer] == cycles, port


@pytest.mark.sim
def test_cocotb_kvmu_in_the_dre_replays_the_golden_session(work_dir):
    """The third block of the DRE: the KVMU jobs of the session whose HCU and WTU jobs the tests above replay."""
    from vrex.golden.dre.kvmu import session_jobs
    from vrex.golden.traces.sources import TraceOptions, make_trace
    from vrex.sim.dre.kvmu.bench import make_bench as kvmu_bench, run_bench

    cfg = BY_ID["dre-tiny"].config().with_overrides(
        {"dre.kvmu.device_capacity_bytes": 32768 + 4 * 89 * 64, "dre.kvmu.staging_bytes": 32768,
         "dre.kvmu.context_tokens": 512, "dre.kvmu.table_clusters": 256})
    trace = make_trace(cfg, "synthetic", layers=[0], options=TraceOptions(frames=14))
    streams = make_bench(cfg, jobs=record_jobs(cfg, trace, max_jobs=8, layers=[0]), p_valid=0.7, p_ready=0.6)
    check(run_cocotb(emit("dre", cfg), streams, "verilator", work_dir / "hcu_wtu"), streams)
    bench = kvmu_bench(cfg, jobs=session_jobs(cfg, trace, layers=[0]), seed=3, prefix="kvmu_", p_pause=0.1)
    assert sum(len(e["bursts"]["host"]) for e in bench.expected) > 10
    result = run_bench(emit("dre", cfg), bench, "verilator", work_dir / "kvmu")
    assert not bench.report(result), bench.report(result)
