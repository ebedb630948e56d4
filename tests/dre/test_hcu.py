"""HCU RTL: amaranth.sim and cocotb (Verilator, Icarus) against the golden reference, cycles against the model."""

import random

import pytest

import mutants
from amaranth.sim import Simulator

from conftest import params, simulators
from vrex.errors import ConfigError, TraceError
from vrex.golden.dre.hcu.reference import hcu_cycles_for
from vrex.golden.dre.jobs import HCUJob, load_jobs, save_jobs
from vrex.hdl.dre.hcu import HCU
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.bench import unpack
from vrex.sim.benches import bench_for, cycles_for
from vrex.sim.cases import HCU_CASES, Case
from vrex.sim.dre.hcu import (CORNERS, INPUT_LATENCY, corner_jobs, job_items, make_bench, measure_cycles,
                          model_token_cycles, output_layout, random_hcu_jobs, token_cycles_from_result)
from vrex.sim.runner import run_cocotb
from vrex.synth.lint import verilator_lint
from vrex.synth.verilog import emit

CASES = params(HCU_CASES)
BY_ID = {c.id: c for c in HCU_CASES}
SMALL = [BY_ID["bitserial-1b"], BY_ID["first-join-nearest-s8"], BY_ID["lanes3-12b-cap6-p3"]]


mutant_less_equal, mutant_ties_to_higher_slot = mutants.hcu_less_equal, mutants.hcu_ties_to_higher_slot


def outputs(cfg, bench):
    layout = output_layout(cfg)
    return [unpack(layout, v) for v in bench.expected["o"]]


# ---- amaranth.sim: functional ----------------------------------------------------------------------------------

TRAFFIC = [(0.7, 0.6), (0.9, 0.3), (0.4, 0.9)]


@pytest.mark.parametrize("case", CASES)
def test_amaranth_sim_matches_golden_under_back_pressure(case):
    cfg = case.config()
    k = HCU_CASES.index(case)
    p_valid, p_ready = TRAFFIC[k % len(TRAFFIC)]
    jobs = random_hcu_jobs(cfg, 12 if case.id.startswith("edge") else 90, random.Random(k), max_preload=64)
    bench = make_bench(cfg, jobs=jobs, seed=k + 1, p_valid=p_valid, p_ready=p_ready)
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    assert len(result.observed["o"]) == len(bench.expected["o"]) > 0


@pytest.mark.parametrize("corner", CORNERS)
@pytest.mark.parametrize("case", params(SMALL))
def test_amaranth_sim_corner_cases(case, corner):
    cfg = case.config()
    jobs, thr = corner_jobs(cfg, corner)
    bench = make_bench(cfg, jobs=jobs, threshold=thr, p_valid=0.8, p_ready=0.7, seed=3, name=f"hcu-{corner}")
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    # the corner is really exercised (checked on the golden expectation the RTL matched)
    out, cap = outputs(cfg, bench), cfg.hcu_capacity
    joins = [o for o in out if not o["new"]]
    if corner == "full_table":
        assert any(o["full"] for o in out) and any(not o["full"] for o in out)
        if cfg.dre.hcu.full_policy == "spill":
            assert any(o["full"] and o["new"] and o["cluster"] == cap for o in out)
        else:
            assert any(o["full"] and not o["new"] and o["cluster"] < cap for o in out)
    elif corner == "threshold_zero":
        assert not joins
    elif corner == "threshold_max":
        assert [o["new"] for o in out] == [1] + [0] * (len(out) - 1)
    elif corner == "identical_tokens":
        assert out[0]["new"] and all(o["distance"] == 0 and o["cluster"] == out[0]["cluster"] for o in out[1:])
    elif corner == "equidistant_tie":
        for job, (o1, o2) in zip(jobs, zip(out[0::2], out[1::2])):
            low, high = (0, len(job.open_codes) - 1)
            assert (o1["cluster"], o2["cluster"]) == (low, low) and not o1["new"], (job, o1)
            d = (job.token_codes[0] ^ job.open_codes[high]).bit_count()
            assert o1["distance"] == d                       # the higher slot was at the same distance
    elif corner == "preload_at_capacity":
        assert out[0]["cluster"] == 0 and any(o["full"] for o in out)
    elif corner in ("back_to_back_jobs", "back_to_back_tokens", "empty_preload"):
        assert sum(o["first"] for o in out) == len(jobs) and sum(o["last"] for o in out) == len(jobs)


def test_amaranth_sim_catches_a_wrong_threshold_rule():
    cfg = BY_ID["bitserial-1b"].config()
    bench = make_bench(cfg, n=60, reference=mutant_less_equal)
    report = run_amaranth(HCU.from_config(cfg), bench).report(bench)
    assert "mismatching transaction" in report and "cluster=" in report


def test_amaranth_sim_catches_a_wrong_tie_rule():
    cfg = BY_ID["lanes3-12b-cap6-p3"].config()
    jobs, thr = corner_jobs(cfg, "equidistant_tie")
    bench = make_bench(cfg, jobs=jobs, threshold=thr, reference=mutant_ties_to_higher_slot)
    report = run_amaranth(HCU.from_config(cfg), bench).report(bench)
    assert "mismatching transaction" in report


def test_replay_of_saved_jobs(work_dir):
    cfg = BY_ID["slice4-early-exit-p2"].config()
    jobs = random_hcu_jobs(cfg, 30, random.Random(9))
    save_jobs(work_dir / "jobs.json", jobs, [], meta={"config_hash": cfg.hash()})
    loaded, wtu, meta = load_jobs(work_dir / "jobs.json")
    assert loaded == jobs and wtu == [] and meta["config_hash"] == cfg.hash()
    bench = make_bench(cfg, jobs=loaded, p_valid=0.6, p_ready=0.6)
    assert bench.inputs == make_bench(cfg, jobs=jobs, p_valid=0.6, p_ready=0.6).inputs
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)


def test_jobs_the_hcu_cannot_take_are_clear_errors():
    cfg = BY_ID["lanes1-cap8-join-nearest"].config()
    with pytest.raises(TraceError, match=r"preloads 9 open clusters but the HCU holds 8 \(dre.hcu.code_memory_bytes\)"):
        make_bench(cfg, jobs=[HCUJob("big", tuple(range(9)), (1,))])
    with pytest.raises(TraceError, match="does not fit resv.hash_bits = 16"):
        make_bench(cfg, jobs=[HCUJob("wide", (), (1 << 16,))])
    with pytest.raises(TraceError, match="neither preloaded codes nor tokens"):
        make_bench(cfg, jobs=[HCUJob("empty", (), ())])


def test_trace_driven_jobs_from_a_session():
    from vrex.golden.resv.block_jobs import record_jobs
    for case in (BY_ID["edge-parallel-16x32"], BY_ID["bitserial-1b"]):
        cfg = case.config()
        for trace in ("synthetic", "video"):
            hcu_jobs, _ = record_jobs(cfg, trace, seed=0, max_jobs=6, layers=[0], frames=6)
            assert hcu_jobs, f"{trace}: no HCU jobs recorded"
            bench = make_bench(cfg, jobs=hcu_jobs, p_valid=0.7, p_ready=0.7, name=f"hcu-{trace}")
            result = run_amaranth(HCU.from_config(cfg), bench)
            assert not result.report(bench), result.report(bench)


# ---- cycles --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_amaranth_sim_cycles_equal_the_model(case):
    """No back-pressure: every token takes exactly the modelled cycles; tokens and jobs follow without gaps."""
    cfg = case.config()
    jobs = random_hcu_jobs(cfg, 12 if case.id.startswith("edge") else 60, random.Random(4), max_preload=64)
    jobs += corner_jobs(cfg, "back_to_back_jobs")[0]
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0)
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    assert token_cycles_from_result(jobs, result) == model_token_cycles(cfg, jobs)
    n_items = sum(len(job_items(j)) for j in jobs)
    total = sum(hcu_cycles_for(cfg, j.open_codes, j.token_codes).total for j in jobs)
    assert result.handshake_cycles["o"][-1] == INPUT_LATENCY + total
    assert result.handshake_cycles["in:i"][:3] == [0, 1, 2] and n_items == len(result.handshake_cycles["in:i"])


def test_early_exit_saves_cycles_and_never_costs():
    cfg = BY_ID["slice4-early-exit-p2"].config()
    off = cfg.with_overrides({"dre.hcu.early_exit": False})
    jobs = random_hcu_jobs(cfg, 60, random.Random(8))
    on_c = sum(hcu_cycles_for(cfg, j.open_codes, j.token_codes).total for j in jobs)
    off_c = sum(hcu_cycles_for(off, j.open_codes, j.token_codes).total for j in jobs)
    assert on_c < off_c
    for c in (cfg, off):
        bench = make_bench(c, jobs=jobs, p_valid=1.0, p_ready=1.0)
        result = run_amaranth(HCU.from_config(c), bench)
        assert not result.report(bench)
        assert sum(token_cycles_from_result(jobs, result)) + sum(len(j.open_codes) for j in jobs) == (
            on_c if c is cfg else off_c)


def test_measure_cycles_on_the_edge_config():
    cfg = BY_ID["edge-parallel-16x32"].config()
    assert cycles_for("hcu") is measure_cycles and bench_for("hcu") is make_bench
    figures = measure_cycles(cfg)
    assert figures["matches_model"]
    assert figures["per_token"]["overhead"] == cfg.dre.hcu.pipeline_stages == 3 and figures["per_token"]["per_unit"] == 1
    assert figures["per_token"]["slices"] == 1 and figures["per_token"]["lanes"] == 16
    assert 0 <= figures["early_exit_saving"] < 1 and "ceil(n_open / 16)" in figures["formula"]


# ---- status outputs ------------------------------------------------------------------------------------------


def test_status_outputs_overflow_and_event_strobes():
    """Drive items by hand: open_slots, preload_overflow (sticky per job), busy and the early-exit strobes."""
    cfg = Case("tiny-cap8-b4", "tiny", {"dre.hcu.code_memory_bytes": 16, "dre.hcu.bits_per_cycle": 4}).config()
    dut = HCU.from_config(cfg)
    from vrex.hdl.dre.hcu import hcu_input_layout

    layout = hcu_input_layout(16)
    rng = random.Random(2)
    job_a = HCUJob("a", tuple(rng.getrandbits(16) for _ in range(8)), ())
    job_b = HCUJob("b", (0x00FF, 0x0F0F, 0xFFFF, 0x3C3C, 0x5555), (0x00FE, 0x1234, 0xF0F0, 0x00FF, 0x0001))
    items = [dict(it) for it in job_items(job_a)] + [{"code": 0xAAAA, "preload": 1, "last": 1}]
    items[-2]["last"] = 0
    items += job_items(job_b)
    timing = hcu_cycles_for(cfg, job_b.open_codes, job_b.token_codes)
    seen = {"group_exit": 0, "scan_stop": 0, "overflow_after_a": 0, "slots_after_a": None, "outputs": 0}

    async def bench(ctx):
        ctx.set(dut.threshold, cfg.resv.hamming_threshold)
        ctx.set(dut.o.ready, 1)
        assert ctx.get(dut.busy) == 0
        for k, it in enumerate(items):
            ctx.set(dut.i.payload.as_value(), layout.const(it).as_value().value)
            ctx.set(dut.i.valid, 1)
            while True:
                await ctx.tick()
                seen["group_exit"] += ctx.get(dut.group_exit)
                seen["scan_stop"] += ctx.get(dut.scan_stop)
                seen["outputs"] += ctx.get(dut.o.valid)
                if ctx.get(dut.i.ready):
                    break
        ctx.set(dut.i.valid, 0)
        for _ in range(200):
            await ctx.tick()
            seen["group_exit"] += ctx.get(dut.group_exit)
            seen["scan_stop"] += ctx.get(dut.scan_stop)
            seen["outputs"] += ctx.get(dut.o.valid)
        assert ctx.get(dut.busy) == 0 and ctx.get(dut.preload_overflow) == 0

    async def watch(ctx):
        async for _, _, slots, overflow in ctx.tick().sample(dut.open_slots, dut.preload_overflow):
            if overflow and seen["slots_after_a"] is None:
                seen["slots_after_a"], seen["overflow_after_a"] = slots, overflow

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(watch)
    sim.run()
    assert seen["slots_after_a"] == 8 and seen["overflow_after_a"] == 1
    assert seen["outputs"] == len(job_b.token_codes)
    assert seen["group_exit"] == sum(t.group_exits for t in timing.tokens) > 0
    assert seen["scan_stop"] == sum(t.scan_stop for t in timing.tokens) > 0


def test_threshold_latched_per_job_under_back_pressure():
    """A threshold change during a job applies to the next job (here: changed when job 0's first assignment
    appears, before job 1 reaches the engine). The stream protocol under back-pressure is checked by every
    bench run (BenchResult.report)."""
    cfg = BY_ID["slice4-early-exit-p2"].config()
    dut = HCU.from_config(cfg)
    from vrex.hdl.dre.hcu import hcu_input_layout

    lin, lout = hcu_input_layout(16), output_layout(cfg)
    jobs = random_hcu_jobs(cfg, 24, random.Random(6), scenarios=("clustered", "copies"), max_tokens=12)[:1]
    jobs.append(HCUJob("distance-3", (0x0000,), (0x0007, 0x0070)))      # joins at threshold 6, not at 2
    thresholds = (6, 2)
    items = [it for job in jobs for it in job_items(job)]
    rng = random.Random(1)
    got = []

    async def drive(ctx):
        ctx.set(dut.threshold, thresholds[0])
        for k, it in enumerate(items):
            ctx.set(dut.i.payload.as_value(), lin.const(it).as_value().value)
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        for _ in range(3000):
            ready = int(rng.random() < 0.3)
            ctx.set(dut.o.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload.as_value())
            if valid and ready:
                got.append(payload)
                if len(got) == 1:
                    ctx.set(dut.threshold, thresholds[1])   # job 0 keeps 6 (latched), job 1 samples 2

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(drive)
    sim.add_testbench(sink)
    sim.run()
    expected = []
    for job, thr in zip(jobs, thresholds):
        expected += make_bench(cfg, jobs=[job], threshold=thr).expected["o"]
    assert [unpack(lout, v) for v in got] == [unpack(lout, v) for v in expected]
    assert expected != make_bench(cfg, jobs=jobs, threshold=thresholds[0]).expected["o"]   # the latch matters


def test_single_row_code_table():
    """capacity == lanes: the code table is one register row instead of a memory."""
    cfg = Case("single-row", "tiny", {"dre.hcu.code_memory_bytes": 8, "dre.hcu.bits_per_cycle": 2}).config()
    assert cfg.hcu_capacity == cfg.dre.hcu.lanes
    bench = make_bench(cfg, n=60, seed=4, p_valid=0.7, p_ready=0.5)
    result = run_amaranth(HCU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    e = emit("hcu", cfg)
    assert "reg [63:0] code_row" in e.verilog.read_text()
    assert verilator_lint(e).clean


# ---- configuration -------------------------------------------------------------------------------------------


def test_from_config_rejects_what_the_hcu_cannot_build():
    cfg = BY_ID["bitserial-1b"].config()
    with pytest.raises(ConfigError, match=r"resv.cluster_code = 'majority': cannot be built by the HCU"):
        HCU.from_config(cfg.with_overrides({"resv.cluster_code": "majority"}))
    with pytest.raises(ConfigError, match=r"dre.hcu.current_memory_bytes = 4: holds 2 code\(s\) .* set it to ≥ 6 "
                                          r"bytes"):
        HCU.from_config(cfg.with_overrides({"dre.hcu.current_memory_bytes": 4}))


def test_cli_verilog_and_sim(tmp_path, capsys):
    from vrex.cli import main

    assert main(["verilog", "--component", "hcu", "--config", "tiny", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "vrex_hcu.v").read_text().count("module vrex_hcu(") == 1
    capsys.readouterr()
    assert main(["sim", "--component", "hcu", "--config", "tiny", "--sim", "amaranth", "-n", "40"]) == 0
    assert capsys.readouterr().out.startswith("PASS: hcu on amaranth.sim")
    bad = tmp_path / "majority.yaml"
    bad.write_text("resv:\n  cluster_code: majority\n")
    assert main(["verilog", "--component", "hcu", "--config", str(bad), "-o", str(tmp_path / "x")]) == 2
    assert "cannot be built by the HCU" in capsys.readouterr().err


# ---- cocotb on generated Verilog -----------------------------------------------------------------------------


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", CASES)
def test_cocotb_matches_golden(case, simulator, work_dir):
    cfg = case.config()
    jobs = random_hcu_jobs(cfg, 24 if case.id.startswith("edge") else 100, random.Random(7))
    jobs += corner_jobs(cfg, "full_table")[0] + corner_jobs(cfg, "equidistant_tie")[0]
    bench = make_bench(cfg, jobs=jobs, seed=7, p_valid=0.7, p_ready=0.6)
    result = run_cocotb(emit("hcu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
    assert len(result.observed["o"]) > 0


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("traffic", [pytest.param((1.0, 1.0), id="no-stall"), pytest.param((0.25, 0.2), id="heavy")])
@pytest.mark.parametrize("case", params(SMALL[:2]))
def test_cocotb_traffic_extremes(case, traffic, simulator, work_dir):
    cfg = case.config()
    jobs = random_hcu_jobs(cfg, 50, random.Random(12)) + corner_jobs(cfg, "full_table")[0]
    bench = make_bench(cfg, jobs=jobs, seed=5, p_valid=traffic[0], p_ready=traffic[1])
    result = run_cocotb(emit("hcu", cfg), bench, simulator, work_dir)
    assert not result.report(bench), result.report(bench)
    if traffic == (1.0, 1.0):
        assert token_cycles_from_result(jobs, result) == model_token_cycles(cfg, jobs)


@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
def test_cocotb_catches_a_broken_reference(simulator, work_dir):
    cfg = BY_ID["first-join-nearest-s8"].config()
    bench = make_bench(cfg, n=40, reference=mutant_less_equal)
    report = run_cocotb(emit("hcu", cfg), bench, simulator, work_dir).report(bench)
    assert "mismatching transaction" in report


@pytest.mark.sim
def test_cocotb_trace_driven_jobs(work_dir):
    from vrex.golden.resv.block_jobs import record_jobs
    cfg = BY_ID["edge-parallel-16x32"].config()
    hcu_jobs, _ = record_jobs(cfg, "video", seed=0, max_jobs=4, layers=[0], frames=6)
    bench = make_bench(cfg, jobs=hcu_jobs, p_valid=0.7, p_ready=0.6, name="hcu-video")
    for simulator in simulators():
        result = run_cocotb(emit("hcu", cfg), bench, simulator, work_dir / simulator)
        assert not result.report(bench), result.report(bench)


def test_simulators_agree_on_cycles(work_dir):
    cfg = BY_ID["lanes3-12b-cap6-p3"].config()
    bench = make_bench(cfg, n=40, seed=3, p_valid=0.6, p_ready=0.5)
    a = run_amaranth(HCU.from_config(cfg), bench)
    v = run_cocotb(emit("hcu", cfg), bench, "icarus", work_dir)
    assert a.handshake_cycles == v.handshake_cycles and a.observed == v.observed


# ---- structure -----------------------------------------------------------------------------------------------


def test_generic_figures_include_the_memories():
    """Generic synthesis maps both memories to flip-flops: at least capacity x B + (frame - 1) x (B + 2) bits."""
    from vrex.synth.generic import generic_figures

    cfg = BY_ID["lanes3-12b-cap6-p3"].config()
    g = generic_figures(emit("hcu", cfg))
    bits = cfg.resv.hash_bits
    assert g["flops"] >= cfg.hcu_capacity * bits + (cfg.hcu_frame_tokens - 1) * (bits + 2)
    assert g["cells"] > 0 and g["transistors"] > 0 and g["logic_depth"] > 0


# ---- long tier -----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize("simulator", simulators())
@pytest.mark.parametrize("case", CASES)
def test_cocotb_long_random(case, simulator, work_dir):
    """Full-size random jobs (preloads up to the capacity) under three traffic patterns; cycles at no stall."""
    cfg = case.config()
    n = 120 if case.id.startswith("edge") else 600
    for seed, (p_valid, p_ready) in [(21, (0.5, 0.5)), (22, (1.0, 1.0)), (23, (0.2, 0.9))]:
        jobs = random_hcu_jobs(cfg, n, random.Random(seed))
        jobs += [j for c in CORNERS for j in corner_jobs(cfg, c)[0] if c not in ("threshold_zero", "threshold_max")]
        bench = make_bench(cfg, jobs=jobs, seed=seed, p_valid=p_valid, p_ready=p_ready)
        result = run_cocotb(emit("hcu", cfg), bench, simulator, work_dir / str(seed))
        assert not result.report(bench), result.report(bench)
        if p_valid == p_ready == 1.0:
            assert token_cycles_from_result(jobs, result) == model_token_cycles(cfg, jobs)


@pytest.mark.parametrize("case", CASES)
def test_generic_figures_of_the_table(case):
    """Generic figures of every case: the code memory is an SRAM macro (listed, not in the logic) or flip-flops."""
    from vrex.synth.generic import generic_figures

    cfg = case.config()
    g = generic_figures(emit("hcu", cfg))
    sram = {m["name"]: m["total_bits"] for m in g["sram_memories"]}
    code_bits = cfg.hcu_capacity * cfg.resv.hash_bits
    if "code_memory" in sram:
        assert sram["code_memory"] == code_bits and g["flops"] < code_bits
    else:
        assert code_bits < cfg.technology.sram_min_bits and g["flops"] >= code_bits
    assert g["transistors"] > 0 and g["logic_depth"] > 0


def _random_configuration(k):
    rng = random.Random(100 + k)
    bits = rng.choice([4, 6, 8, 12, 16, 24])
    lanes = rng.randint(1, 5)
    codes = lanes * rng.randint(1, 6)
    frame = max(3, rng.randint(3, 10))
    return Case(f"random-{k}", "tiny", {
        "resv.hash_bits": bits, "resv.hamming_threshold": rng.randint(0, bits + 1),
        "resv.assignment": rng.choice(["nearest", "first"]),
        "dre.hcu.lanes": lanes, "dre.hcu.bits_per_cycle": rng.choice([d for d in range(1, bits + 1) if bits % d == 0]),
        "dre.hcu.code_memory_bytes": codes * bits // 8 if codes * bits % 8 == 0 else codes * bits,
        "dre.hcu.current_memory_bytes": -(-frame * bits // 8), "dre.hcu.early_exit": rng.random() < 0.7,
        "dre.hcu.pipeline_stages": rng.randint(1, 4), "dre.hcu.full_policy": rng.choice(["spill", "join_nearest"])})


@pytest.mark.slow
@pytest.mark.parametrize("k", range(16))
def test_random_configurations(k):
    """Random small configurations: results under back-pressure, exact cycles without, lint clean."""
    cfg = _random_configuration(k).config()
    for p_valid, p_ready in [(0.6, 0.5), (1.0, 1.0)]:
        jobs = random_hcu_jobs(cfg, 80, random.Random(k))
        bench = make_bench(cfg, jobs=jobs, seed=k, p_valid=p_valid, p_ready=p_ready)
        result = run_amaranth(HCU.from_config(cfg), bench)
        assert not result.report(bench), result.report(bench)
    assert token_cycles_from_result(jobs, result) == model_token_cycles(cfg, jobs)
    assert verilator_lint(emit("hcu", cfg)).clean
