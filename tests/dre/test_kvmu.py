"""KVMU RTL on cocotb (Verilator and Icarus) with cocotbext-axi AxiRam tiers, checked job by job against the golden
model: AXI bursts of every port, responses, staging / table / host images, guard bytes, counters; faults, a reset in
the middle of traffic, bad commands, recorded sessions, and deliberately wrong references."""

import pytest

import mutants
from conftest import params, simulators
from vrex.golden.dre.kvmu import Job, random_kvmu_jobs, session_jobs
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.sim.cases import KVMU_CASES
from vrex.sim.dre.kvmu.bench import make_bench, run_bench
from vrex.synth.verilog import emit

CASES = params(KVMU_CASES)
BY_ID = {c.id: c for c in KVMU_CASES}
TINY = BY_ID["kvmu-128b-evict-every-frame"]


def run(cfg, bench, simulator, work_dir):
    result = run_bench(emit("kvmu", cfg), bench, simulator, work_dir)
    return bench.report(result), result


def causes(bench):
    """Cause bits of every expected response (bits 0..4 of the packed response after the 16-bit tag)."""
    return [(e["resp"] >> 16) & 0x1F for e in bench.expected]


# Default tier: the wide-bus cases on Icarus (its builds take seconds), the first case on Verilator (its build is
# shared by the tests below); the slow tier runs every case on Icarus and soaks every case on Verilator.
RANDOM_RUNS = [pytest.param(c, "icarus", id=f"{c.id}-icarus", marks=[] if c.id in (
    "kvmu-512b-wide-token-sinks", "kvmu-64b-narrow-gap") else [pytest.mark.slow]) for c in KVMU_CASES] + \
    [pytest.param(TINY, "verilator", id=f"{TINY.id}-verilator")]


@pytest.mark.sim
@pytest.mark.parametrize("case, simulator", [r for r in RANDOM_RUNS if r.values[1] in simulators()])
def test_random_session_matches_the_golden_model(case, simulator, work_dir):
    cfg = case.config()
    k = KVMU_CASES.index(case)
    bench = make_bench(cfg, n=8 * cfg.kvmu_map.contexts, seed=11 + k, p_valid=0.6, p_ready=0.6, p_pause=0.25,
                       min_tokens=12)
    report, result = run(cfg, bench, simulator, work_dir)
    assert not report, report
    c = bench.counters
    assert c["bursts"] > 20 and c["table_reads"] > 20 and c["errors"] > 0      # evictions, prefetches and bad ids ran
    mo = cfg.dre.kvmu.max_outstanding
    assert max(result["max_outstanding_seen"].values()) == min(mo, max(result["max_outstanding_seen"].values()))
    if mo > 1:
        assert max(result["max_outstanding_seen"][p] for p in ("device", "host")) > 1   # bursts overlap


@pytest.mark.sim
def test_axi_errors_are_reported_and_the_unit_goes_on(work_dir):
    cfg = TINY.config()
    km = cfg.kvmu_map
    faults = [("host", "read", 0, 2048), ("host", "write", 6 * km.block_bytes, 7 * km.block_bytes),
              ("table", "read", km.table_base + 16 * 16, km.table_base + 20 * 16)]
    bench = make_bench(cfg, n=8 * km.contexts, seed=5, faults=faults, min_tokens=12, p_pause=0)
    seen = set()
    for c in causes(bench):
        seen |= {b for b in range(5) if c >> b & 1}
    assert {2, 3, 4} <= seen, seen                      # read, write and table errors all occur
    assert causes(bench)[-1] & 0b11100 == 0 or len(bench.jobs) > 30
    report, _ = run(cfg, bench, "verilator", work_dir)
    assert not report, report


@pytest.mark.sim
def test_reset_in_the_middle_of_traffic_recovers(work_dir):
    cfg = TINY.config()
    jobs = random_kvmu_jobs(cfg, 6, seed=3, min_tokens=15) + random_kvmu_jobs(cfg, 6, seed=4, min_tokens=15)
    reset_job = next(i for i, j in enumerate(jobs) if i > 16 and j.arrivals and j.mask)
    bench = make_bench(cfg, jobs=jobs, reset_job=reset_job, seed=3, p_pause=0.1)
    report, result = run(cfg, bench, "verilator", work_dir)
    assert not report, report
    after = bench.expected[reset_job + 1:]
    assert sum(len(e["bursts"]["host"]) for e in after) > 10   # the second session moved data again


@pytest.mark.sim
def test_bad_commands_are_flagged_and_dropped(work_dir):
    cfg = TINY.config()
    km = cfg.kvmu_map
    jobs = random_kvmu_jobs(cfg, 5, seed=8, bad=0.15)
    jobs.insert(6, Job(km.contexts + 1, 900, arrivals=((0, True), (1, False)), mask=(3,)))      # no such context
    jobs.insert(9, Job(1, 901, mask=(1 << (cfg.dre.wtu.lanes - 1),) * 80))                    # unknown clusters
    bench = make_bench(cfg, jobs=jobs, seed=8, p_pause=0)
    cs = causes(bench)
    assert cs[6] == 1 and cs[9] & 0b10 and cs[7] & 0b11100 == 0
    report, _ = run(cfg, bench, "verilator", work_dir)
    assert not report, report


@pytest.mark.sim
@pytest.mark.parametrize("mutant, case", [
    ("KVMUSplitsPastTheBoundary", "kvmu-64b-narrow-gap"),
    ("KVMUDropsTheLastBeat", "kvmu-128b-evict-every-frame"),
    ("KVMUInvertsTheGapRule", "kvmu-64b-narrow-gap"),
])
def test_a_wrong_reference_is_caught(mutant, case, work_dir):
    cfg = BY_ID[case].config()
    bench = make_bench(cfg, n=8 * cfg.kvmu_map.contexts, seed=2, reference=getattr(mutants, mutant), p_pause=0,
                       min_tokens=15)
    report, _ = run(cfg, bench, "icarus", work_dir)
    assert "bursts differ" in report or "region" in report, report


def _session(cfg, trace, frames, layers=(0,)):
    t = make_trace(cfg, trace, layers=list(layers), options=TraceOptions(frames=frames))
    return session_jobs(cfg, t, layers=list(layers))


@pytest.mark.sim
def test_a_recorded_session_replays(work_dir):
    cfg = TINY.config()
    jobs = _session(cfg, "synthetic", 14)
    bench = make_bench(cfg, jobs=jobs, seed=4, name="kvmu-synthetic", p_pause=0.1)
    assert sum(1 for e in bench.expected if e["bursts"]["host"]) > 5
    report, _ = run(cfg, bench, "verilator", work_dir)
    assert not report, report


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("case", CASES)
def test_soak_of_a_hundred_thousand_cycles(case, work_dir):
    cfg = case.config()
    bench = make_bench(cfg, n=70 * cfg.kvmu_map.contexts, seed=101, p_valid=0.8, p_ready=0.8, p_pause=0.15)
    report, result = run(cfg, bench, "verilator", work_dir)
    assert not report, report
    assert result["cycles"] >= 100_000, result["cycles"]


@pytest.mark.slow
@pytest.mark.sim
def test_soak_on_icarus_and_a_real_video_session(work_dir):
    cfg = TINY.config()
    bench = make_bench(cfg, jobs=_session(cfg, "video", 30, layers=(0, 1)), seed=6, name="kvmu-video")
    report, result = run(cfg, bench, "icarus", work_dir)
    assert not report, report
    assert result["cycles"] >= 20_000


@pytest.mark.slow
@pytest.mark.sim
def test_measure_cycles_reports_the_streaming_rates():
    from vrex.sim.dre.kvmu.bench import measure_cycles
    from vrex.synth.verilog import emit

    cfg = TINY.config()
    r = measure_cycles(cfg, emit=emit)   # raises if the run does not match the golden model
    beat = cfg.kvmu_map.beat_bytes
    assert r["config_hash"] == cfg.hash() and 0 < r["bus_utilisation"] <= 1 and 0 < r["evict_bus_utilisation"] <= 1
    assert r["bytes_per_cycle"] == r["bus_utilisation"] * beat
    assert r["evict_bus_utilisation"] < r["bus_utilisation"]     # eviction waits on four table accesses per token
    assert r["per_frame"]["cycles"] > cfg.model.tokens_per_frame * r["arrival_cycles_per_token"]
