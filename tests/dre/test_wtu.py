"""WTU in amaranth.sim against the golden model: every case of WTU_CASES, back-pressure, corners, cycles, traces."""


import pytest

import mutants
from amaranth.hdl import Fragment, Module, Mux
from amaranth.lib import wiring

from conftest import params
from vrex.errors import ConfigError
from vrex.golden.dre.wtu import linear as gw
from vrex.golden.dre.jobs import WTUJob, load_jobs, random_jobs, save_jobs
from vrex.hdl.dre.wtu.linear import WTU, wtu_for
from vrex.hdl.dre.wtu.layouts import wtu_group_layout, wtu_row_layout
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.bench import unpack
from vrex.sim.cases import WTU_CASES
from vrex.sim.dre.wtu.bench import bench_params, corner_jobs, make_bench, measure_cycles, model_schedule, random_wtu_jobs

CASES = params(WTU_CASES)
SMALL = [c for c in WTU_CASES if not c.id.startswith("wtu-edge")]
WICSUM = params([c for c in SMALL if c.cfg.dre.wtu.mode != "topk"])
TOPK = params([c for c in SMALL if c.cfg.dre.wtu.mode == "topk"])
TINY = next(c for c in WTU_CASES if c.id == "wtu-tiny-early_exit").config()
TRAFFIC = [pytest.param(1.0, 1.0, id="no-stall"), pytest.param(0.7, 0.6, id="random-stall"),
           pytest.param(0.25, 0.3, id="heavy-stall")]


def run(cfg, bench):
    result = run_amaranth(WTU.from_config(cfg), bench)
    assert not result.report(bench), result.report(bench)
    return result


def rejected_jobs(cfg):
    cap = cfg.dre.wtu.row_capacity
    return [WTUJob("oversize", (1,) * (cap + 1), ((0,) * (cap + 1),) * 2), WTUJob("empty", (), ((), ()))]


def rows_of(bench, cfg):
    """Decoded expected row beats (the bench's golden side)."""
    lay = wtu_row_layout(bench_params(cfg).geometry)
    return [unpack(lay, b) for b in bench.expected["row"]]


# ---- random stimulus under back-pressure ---------------------------------------------------------------------


@pytest.mark.parametrize("p_valid, p_ready", TRAFFIC)
@pytest.mark.parametrize("case", CASES)
def test_amaranth_matches_golden(case, p_valid, p_ready):
    cfg = case.config()
    n = 120 if case.id.startswith("wtu-edge") else 300
    bench = make_bench(cfg, n=n, seed=11, p_valid=p_valid, p_ready=p_ready)
    result = run(cfg, bench)
    assert len(result.observed["row"]) == len(bench.expected["row"]) > 0


@pytest.mark.parametrize("case", params(SMALL))
def test_corner_cases_and_rejected_jobs(case):
    cfg = case.config()
    jobs = list(corner_jobs(cfg).values())
    jobs = jobs[:3] + rejected_jobs(cfg)[:1] + jobs[3:] + rejected_jobs(cfg)[1:]   # recovery after a rejection
    bench = make_bench(cfg, jobs=jobs, p_valid=0.6, p_ready=0.5, seed=5)
    run(cfg, bench)
    errors = [r for r in rows_of(bench, cfg) if r["error"]]
    assert len(errors) == 4 and all(r["last"] and not r["mask"] for r in errors)


def test_corner_cases_mean_what_they_say():
    """The named corner jobs exercise what their names claim (checked on the golden side of the bench)."""
    cfg = TINY
    p = bench_params(cfg)
    c = corner_jobs(cfg)
    sel = {name: gw.wtu_job(j.counts, j.rows, capacity=p.geometry.capacity, **p.golden) for name, j in c.items()}
    n = len(c["all_equal"].counts)
    assert sel["all_equal"].rows[0].mask == (1 << n) - 1                   # one bucket: everything selected
    assert sel["one_dominant"].rows[0].mask == 1 << (n // 2)                # only the dominant cluster
    assert all(s < 0 for s in c["negative"].rows[0])
    assert sel["negative"].rows[0].mask == 0b11 << (n - 2)                  # the two least negative scores
    assert [r.mask for r in sel["one_cluster"].rows] == [1, 1, 1]
    assert len(c["full_row"].counts) == p.geometry.capacity
    assert sel["zero_counts"].rows[0].mask == (1 << n) - 1                  # total 0: T ≥ total, select all
    k = cfg.dre.wtu.topk_k
    ties = c["ties_at_k"]
    top = gw.select_topk(list(ties.rows[0]), k)
    tied = [j for j, s in enumerate(ties.rows[0]) if s == max(ties.rows[0])]
    assert len(tied) > k and top.mask == sum(1 << j for j in tied[:k])


@pytest.mark.parametrize("case", WICSUM)
@pytest.mark.parametrize("ratio", ["zero", "one", "above_one"])
def test_ratio_extremes(case, ratio):
    cfg = case.config()
    r = cfg.dre.wtu.ratio_bits
    ratio_q = {"zero": 0, "one": 1 << r, "above_one": (1 << (r + 1)) - 1}[ratio]
    bench = make_bench(cfg, n=150, seed=3, ratio_q=ratio_q, p_valid=0.8, p_ready=0.7)
    run(cfg, bench)
    rows = [b for b in rows_of(bench, cfg) if b["last"]]
    if ratio != "zero":       # T ≥ total: every cluster of every row selected
        assert all(b["exit_bucket"] == 0 for b in rows)
    elif bench_params(cfg).geometry.row_mass:   # T = -r: a row with resident mass fetches nothing, one without walks 1
        assert all(b["buckets_walked"] <= 1 for b in rows)
        assert sum(b["buckets_walked"] == 0 and b["selected"] == 0 for b in rows) > len(rows) // 4
    else:                     # T = 0: the walk stops at the first bucket with a positive sum
        assert sum(b["buckets_walked"] == 1 for b in rows) > len(rows) // 2


@pytest.mark.parametrize("case", TOPK)
@pytest.mark.parametrize("k", ["zero", "one", "n", "above_n", "max"])
def test_topk_k_extremes(case, k):
    cfg = case.config()
    g = bench_params(cfg).geometry
    jobs = random_wtu_jobs(cfg, 100, seed=8) + [corner_jobs(cfg)["ties_at_k"]]
    n0 = len(jobs[0].counts)
    value = {"zero": 0, "one": 1, "n": n0, "above_n": n0 + 1, "max": (1 << g.clusters_bits) - 1}[k]
    bench = make_bench(cfg, jobs=jobs, k=value, p_valid=0.8, p_ready=0.6)
    run(cfg, bench)
    last = [b for b in rows_of(bench, cfg) if b["last"]]
    if k == "zero":
        assert all(b["selected"] == 0 for b in last)
    elif k == "one":
        assert all(b["selected"] == 1 for b in last)


# ---- a deliberately wrong reference must fail -----------------------------------------------------------------


BY_ID = {c.id: c for c in WTU_CASES}
MUTANTS = [pytest.param("wtu-tiny-early_exit", mutants.wtu_walks_one_bucket_less, id="wicsum-walks-one-bucket-less"),
           pytest.param("wtu-topk-k8", mutants.wtu_ties_to_higher_index, id="topk-ties-to-higher-index"),
           pytest.param("wtu-tiny-exp2", mutants.wtu_exp2_skips_refinement, id="exp2-skips-refinement"),
           pytest.param("wtu-tiny-exp2", mutants.wtu_exp2_reversed_lut, id="exp2-reversed-lut"),
           pytest.param("wtu-tiny-exp2-row", mutants.wtu_row_mass_no_rescale, id="row-mass-no-rescale"),
           pytest.param("wtu-exp2-row-3lanes-p1-z10", mutants.wtu_row_mass_threshold_without_r,
                        id="row-mass-threshold-without-r")]


@pytest.mark.parametrize("case_id, mutant", MUTANTS)
def test_amaranth_catches_a_wrong_reference(case_id, mutant):
    cfg = BY_ID[case_id].config()
    corners = corner_jobs(cfg)
    jobs = random_wtu_jobs(cfg, 200, seed=2) + [corners["ties_at_k"], corners["exp2_lut_order"]]
    bench = make_bench(cfg, jobs=jobs, reference=mutant)
    report = run_amaranth(WTU.from_config(cfg), bench).report(bench)
    assert "mismatching transaction" in report and "mask=" in report


# ---- cycles ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_cycles_equal_the_model(case):
    """Under no back-pressure every handshake happens on the cycle wtu_schedule predicts."""
    cfg = case.config()
    p = bench_params(cfg)
    edge = case.id.startswith("wtu-edge")
    jobs = random_wtu_jobs(cfg, 80 if edge else 200, seed=21) + rejected_jobs(cfg)
    if not edge:
        jobs += list(corner_jobs(cfg).values())
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0)
    result = run(cfg, bench)
    t0 = result.handshake_cycles["in:counts"][0]
    measured = {k: [c - t0 for c in v] for k, v in result.handshake_cycles.items()}
    model = model_schedule(p, jobs)
    for port in model:
        assert measured[port] == model[port], port


def test_back_to_back_rows_and_jobs_have_no_idle_cycle():
    cfg = TINY
    g = bench_params(cfg).geometry
    jobs = [WTUJob(f"j{i}", tuple(range(1, 3 * g.lanes + 2)),
                   tuple(tuple((7 * r + 3 * j) % 50 - 20 for j in range(3 * g.lanes + 1)) for r in range(3)))
            for i in range(3)]
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0)
    result = run(cfg, bench)
    w = 4
    scores, rows = result.handshake_cycles["in:scores"], result.handshake_cycles["row"]
    counts, groups = result.handshake_cycles["in:counts"], result.handshake_cycles["group"]
    for r in range(9):
        beats = scores[r * w:(r + 1) * w]
        assert beats == list(range(beats[0], beats[0] + w))              # a row streams in without a gap
        assert rows[r * w:(r + 1) * w] == list(range(rows[r * w], rows[r * w] + w))   # and streams out
        if r % 3 != 2:
            assert scores[(r + 1) * w] == rows[(r + 1) * w - 1]          # next row accepted at the last mask beat
    for j in range(2):
        assert counts[(j + 1) * w] == groups[(j + 1) * w - 1]           # next job at the last group beat
        assert counts[j * w:(j + 1) * w] == list(range(counts[j * w], counts[j * w] + w))


def test_measure_cycles_matches_the_model():
    figures = measure_cycles(TINY)
    assert figures["model_matches"] and figures["mode"] == "early_exit"
    exp2 = measure_cycles(BY_ID["wtu-tiny-exp2"].config())
    assert exp2["model_matches"] and exp2["per_row"]["latencies"]["fin_state"] == exp2["per_row"]["overhead"] - 2
    row = measure_cycles(BY_ID["wtu-tiny-exp2-row"].config())     # the row rule: the same latencies
    assert row["model_matches"] and row["per_row"] == exp2["per_row"]
    assert figures["per_row"]["overhead"] == gw.ROW_OVERHEAD and figures["per_row"]["per_pass_overhead"] == 3
    assert 2 <= figures["mean_passes"] <= 2 + TINY.dre.wtu.buckets
    assert 0 < figures["early_exit"]["mean_fraction_of_scores_to_threshold"] <= 1


@pytest.mark.slow
@pytest.mark.parametrize("transform, mode", [("exp2", "histogram"), ("shift_min", "early_exit"),
                                             ("shift_min", "histogram"), ("shift_min", "topk")])
def test_measure_cycles_edge(transform, mode):
    from vrex.config import load_config

    # the edge ships the row rule; the linear transform and the top-k mode run the offloaded one
    rule = {} if transform == "exp2" and mode == "histogram" else {"resv.threshold_mass": "offloaded"}
    figures = measure_cycles(load_config("edge").with_overrides({"resv.score_transform": transform,
                                                                  "dre.wtu.mode": mode, **rule}))
    assert figures["model_matches"] and figures["transform"] == transform


# ---- config errors --------------------------------------------------------------------------------------------


def test_exp_transform_is_a_clear_config_error():
    cfg = TINY.with_overrides({"resv.score_transform": "exp"})
    with pytest.raises(ConfigError, match=r"resv.score_transform = 'exp': has no integer form, so the WTU cannot "
                                          r"implement it; use shift_min or relu"):
        WTU.from_config(cfg)
    Fragment.get(WTU.from_config(cfg.with_overrides({"dre.wtu.mode": "topk"})), None)   # top-k ranks raw scores


def test_ports_follow_the_mode():
    wicsum = WTU.from_config(TINY)
    topk = WTU.from_config(TINY.with_overrides({"dre.wtu.mode": "topk"}))
    for dut in (wicsum, topk):
        Fragment.get(dut, None)            # elaborate (an unused component warns when collected)
    assert "ratio" in wicsum.signature.members
    assert "k" in topk.signature.members and "ratio" not in topk.signature.members
    g = bench_params(TINY).geometry
    assert wtu_group_layout(g).size == g.lanes + 2


# ---- trace-driven stimulus ------------------------------------------------------------------------------------


def test_replay_of_saved_jobs(tmp_path):
    cfg = TINY
    _, wtu_jobs = random_jobs(cfg, n_hcu=0, n_wtu=6, seed=4)
    path = tmp_path / "jobs.json"
    save_jobs(path, [], wtu_jobs, meta={"config": cfg.name})
    _, loaded, meta = load_jobs(path)
    assert loaded == wtu_jobs and meta == {"config": cfg.name}
    bench = make_bench(cfg, jobs=loaded, p_valid=0.7, p_ready=0.7)
    run(cfg, bench)
    assert len(bench.expected["group"]) == sum(-(-len(j.counts) // cfg.dre.wtu.lanes) for j in loaded)


@pytest.mark.parametrize("case_id", ["wtu-tiny-early_exit", "wtu-tiny-exp2-row"])
@pytest.mark.parametrize("trace", ["synthetic", "video"])
def test_recorded_session_jobs(trace, case_id):
    from vrex.golden.resv.block_jobs import record_jobs
    cfg = BY_ID[case_id].config()
    _, wtu_jobs = record_jobs(cfg, trace, seed=0, max_jobs=6, layers=[0], frames=6)
    assert wtu_jobs
    if cfg.resv.threshold_mass == "row":       # the session records each row's resident input
        assert all(len(j.resident) == len(j.rows) and all(t > 0 for _, t in j.resident) for j in wtu_jobs)
    bench = make_bench(cfg, jobs=wtu_jobs, p_valid=0.7, p_ready=0.6)
    run(cfg, bench)


# ---- any valid geometry -----------------------------------------------------------------------------------------


def random_geometries(count, seed):
    """Valid configs with random lanes, capacity, widths, buckets, mode and transform (tiny base)."""
    import random

    rng = random.Random(seed)
    out = []
    while len(out) < count:
        lanes, words = rng.choice([1, 2, 3, 5, 8]), rng.choice([1, 2, 3, 7])
        b, c = rng.randint(4, 16), rng.randint(1, 12)
        try:
            cfg = TINY.with_overrides({
                "dre.wtu.lanes": lanes, "dre.wtu.score_bits": b, "dre.wtu.score_frac_bits": rng.randint(0, b - 1),
                "dre.wtu.count_bits": c, "dre.wtu.ratio_bits": rng.randint(4, 12),
                "dre.wtu.buckets": rng.choice([2, 3, 5, 16, 37, 256]), "dre.wtu.topk_k": 1,
                "dre.wtu.score_memory_bytes": -(-lanes * words * b // 8),
                "dre.wtu.count_memory_bytes": -(-lanes * words * c // 8),
                "dre.wtu.mode": rng.choice(["early_exit", "histogram", "topk"]),
                "resv.score_transform": rng.choice(["shift_min", "relu"])})
        except ConfigError:
            continue
        out.append(cfg.with_overrides({"dre.wtu.topk_k": rng.randint(1, cfg.dre.wtu.row_capacity)}))
    return out


GEOMETRIES = random_geometries(8, seed=2024)


@pytest.mark.parametrize("index", range(len(GEOMETRIES)))
def test_any_valid_geometry(index):
    cfg = GEOMETRIES[index]
    run(cfg, make_bench(cfg, n=80, seed=index, p_valid=0.6, p_ready=0.6))


# ---- control inputs are sampled per job ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["early_exit", "topk"])
def test_control_input_is_sampled_at_each_job_start(mode):
    """Software changes ratio / k between jobs (and once in the middle of a job, which must not matter)."""
    import random

    from amaranth.sim import Simulator

    from vrex.hdl.dre.wtu.layouts import wtu_counts_layout, wtu_scores_layout
    from vrex.sim.bench import pack
    from vrex.sim.dre.wtu.bench import job_beats

    cfg = TINY.with_overrides({"dre.wtu.mode": mode})
    g = bench_params(cfg).geometry
    lc, ls, lr = wtu_counts_layout(g), wtu_scores_layout(g), wtu_row_layout(g)
    jobs = [j for j in random_wtu_jobs(cfg, 200, seed=12) if len(j.counts) > g.lanes][:3]
    controls = [0, 1 << g.ratio_bits, cfg.ratio_fixed] if mode != "topk" else [1, 0, 5]
    expected = []
    for job, value in zip(jobs, controls):
        p = bench_params(cfg, **({"k": value} if mode == "topk" else {"ratio_q": value}))
        sel = gw.wtu_job(job.counts, job.rows, capacity=g.capacity, **p.golden)
        expected += [r.mask for r in sel.rows]
    dut = wtu_for(g)
    port = dut.k if mode == "topk" else dut.ratio
    got = []

    async def testbench(ctx):
        rng = random.Random(1)
        ctx.set(dut.row.ready, 1)
        ctx.set(dut.group.ready, 1)
        for job, value in zip(jobs, controls):
            counts, scores = job_beats(g, job, rng)
            ctx.set(port, value)
            for i, beat in enumerate(counts):
                ctx.set(dut.counts.payload.as_value(), pack(lc, beat))
                ctx.set(dut.counts.valid, 1)
                await ctx.tick().until(dut.counts.ready)
                if i == 0:
                    ctx.set(port, controls[-1] ^ 1)      # changed in mid-job: ignored until the next job
            ctx.set(dut.counts.valid, 0)
            for beat in scores:
                ctx.set(dut.scores.payload.as_value(), pack(ls, beat))
                ctx.set(dut.scores.valid, 1)
                await ctx.tick().until(dut.scores.ready)
            ctx.set(dut.scores.valid, 0)
        for _ in range(4000):
            if len(got) == len(expected):
                break
            await ctx.tick()

    async def monitor(ctx):
        mask, lanes_seen = 0, 0
        async for _, _, row_valid, payload in ctx.tick().sample(dut.row.valid, dut.row.payload.as_value()):
            if row_valid:
                beat = unpack(lr, payload)
                mask |= beat["mask"] << lanes_seen
                lanes_seen += g.lanes
                if beat["last"]:
                    got.append(mask)
                    mask, lanes_seen = 0, 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.add_testbench(monitor, background=True)
    sim.run()
    assert got == expected and len(set(expected)) > 1


# ---- stream protocol: payload stable while stalled --------------------------------------------------------------


class UnstableWhileStalled(wiring.Component):
    """The WTU with its row payload inverted whenever the consumer stalls (correct at every handshake)."""

    def __init__(self, cfg):
        self._inner = WTU.from_config(cfg)
        super().__init__(self._inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner
        for name in ("counts", "scores"):
            outer, inside = getattr(self, name), getattr(inner, name)
            m.d.comb += [inside.payload.eq(outer.payload), inside.valid.eq(outer.valid), outer.ready.eq(inside.ready)]
        for name in ("row", "group"):
            outer, inside = getattr(self, name), getattr(inner, name)
            m.d.comb += [outer.payload.eq(inside.payload), outer.valid.eq(inside.valid), inside.ready.eq(outer.ready)]
        m.d.comb += [inner.ratio.eq(self.ratio),
                     self.row.payload.as_value().eq(Mux(self.row.ready, inner.row.payload.as_value(),
                                                        ~inner.row.payload.as_value()))]
        return m


def test_unstable_payload_under_back_pressure_is_caught():
    bench = make_bench(TINY, n=100, seed=6, p_valid=0.8, p_ready=0.4)
    result = run_amaranth(UnstableWhileStalled(TINY), bench)
    assert not result.mismatches(bench)                  # the handshakes alone look right ...
    assert result.protocol_errors and "payload changed while stalled" in result.report(bench)   # ... but not this
    assert not run_amaranth(WTU.from_config(TINY), bench).protocol_errors


# ---- real-LLM stimulus: WTU jobs recorded from SmolLM2 sessions (tests/dre/data/smollm2_wtu_jobs.json) ------------

SMOLLM2_JOBS = __import__("pathlib").Path(__file__).parent / "data" / "smollm2_wtu_jobs.json"
# the same model and clips with resv.threshold_mass = row: every row carries its resident input (mass of the sinks,
# the recent window and the current step), recorded by the session
SMOLLM2_ROW_MASS_JOBS = SMOLLM2_JOBS.with_name("smollm2_wtu_jobs_row_mass.json")


def smollm2_jobs(row_mass: bool = False):
    _, jobs, meta = load_jobs(SMOLLM2_ROW_MASS_JOBS if row_mass else SMOLLM2_JOBS)
    assert "SmolLM2" in meta["source"] and jobs
    assert all(len(j.resident) == (len(j.rows) if row_mass else 0) for j in jobs)
    return jobs


@pytest.mark.parametrize("case_id", ["wtu-edge-exp2", "wtu-edge-exp2-row"])
@pytest.mark.parametrize("traffic", [pytest.param((1.0, 1.0), id="no-stall"), pytest.param((0.6, 0.5), id="stall")])
def test_real_llm_jobs_on_the_edge_wtu(traffic, case_id):
    """Rows of a trained LLM (peaked, with sinks and heavy hitters) through the edge exp2 WTU, with the offloaded and
    the row-mass threshold; exact cycles."""
    cfg = BY_ID[case_id].config()
    row_mass = cfg.resv.threshold_mass == "row"
    jobs = smollm2_jobs(row_mass)
    bench = make_bench(cfg, jobs=jobs, p_valid=traffic[0], p_ready=traffic[1], seed=9)
    result = run(cfg, bench)
    sel = [gw.wtu_job(j.counts, j.rows, capacity=cfg.dre.wtu.row_capacity, resident=j.resident or None,
                      **bench_params(cfg).golden) for j in jobs]
    assert sum(r.count() for s in sel for r in s.rows) < 0.5 * sum(len(j.counts) * len(j.rows) for j in jobs)
    if row_mass:                # rows whose window holds p fetch nothing, the others walk
        decided = [r.none_selected for s in sel for r in s.rows]
        assert 0 < sum(decided) < len(decided)
    if traffic == (1.0, 1.0):
        t0 = result.handshake_cycles["in:counts"][0]
        model = model_schedule(bench_params(cfg), jobs)
        assert {k: [c - t0 for c in v] for k, v in result.handshake_cycles.items() if k in model} == model
