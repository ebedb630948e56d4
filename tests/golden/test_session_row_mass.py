"""The ReSV session with resv.threshold_mass = row: the resident input of each row (what it attends anyway, quantised
like the cluster scores), recorded jobs that replay through the WTU reference, both engines alike, the offline and
online drivers alike, monotone in p, and the share of rows that fetch nothing."""

import math

import pytest
import torch

from vrex.config import load_config
from vrex.golden.dre.jobs import load_jobs, save_jobs
from vrex.golden.dre.wtu.exp import ExpParams, ResidentMass, resident_mass
from vrex.golden.dre.wtu.linear import quantize_scores, select_row, select_row_kwargs
from vrex.golden.evaluation.offline import evaluate, light_mask, make_policies
from vrex.golden.resv.online import OnlineRun
from vrex.golden.resv.policies import BaselineSettings, StepContext
from vrex.golden.resv.session import LOG2E, JobRecorder, ReSVPolicy, run_session
from vrex.golden.resv.stream import Stream
from vrex.golden.traces.sources import TraceOptions, make_trace

EXP2 = {"resv.score_transform": "exp2", "dre.wtu.mode": "histogram"}
ROW = load_config("tiny").with_overrides({**EXP2, "resv.threshold_mass": "row", "resv.row_mass_p": 0.9,
                                          "resv.text_row_mass_p": 0.8, "resv.sink_tokens": 2,
                                          "resv.recent_window_tokens": 32})


@pytest.fixture(scope="module")
def trace():
    return make_trace(ROW, "synthetic", options=TraceOptions(frames=16))


def _fetched(cfg, trace, engine="tensor"):
    class Log(ReSVPolicy):
        def select(self, ctx):
            out = super().select(ctx)
            self.log[(ctx.layer, ctx.step.index)] = [set(f.tolist()) for f in out]
            return out

    pol = Log(cfg, engine=engine)
    pol.log = {}
    run_session(cfg, trace, policy=pol)
    return pol.log, pol.stats()


def test_attended_anyway_is_the_light_mask_without_fetched_tokens(trace):
    for include in (True, False):
        cfg = ROW.with_overrides({"resv.include_current_frame": include})
        stream = Stream(cfg, trace)
        step = next(s for s in stream.steps if stream.residency(s).n_offloaded and s.tokens > 1)
        res = stream.residency(step)
        ctx = StepContext(cfg, 0, trace.layers[0], None, stream, step, res, [0], trace.segment_ids())
        keys, attended = ctx.attended_anyway()
        causal = torch.arange(step.end)[None, :] <= (step.start + torch.arange(step.tokens))[:, None]
        want = light_mask(res, step, [torch.zeros(0, dtype=torch.int64)], torch.tensor([0]), causal, include)[0]
        got = torch.zeros(step.tokens, step.end, dtype=torch.bool)
        got[:, keys] = attended
        assert torch.equal(got, want)


def test_recorded_jobs_carry_the_resident_input_and_replay(trace, tmp_path):
    rec = JobRecorder()
    run_session(ROW, trace, recorder=rec)
    assert rec.wtu and all(len(j.resident) == len(j.rows) for j in rec.wtu)
    w = ROW.dre.wtu
    nothing = 0
    for job, out in zip(rec.wtu, rec.wtu_outcomes, strict=True):
        stage = "frame" if ".F" in job.context else "text"
        kw = select_row_kwargs(ROW, stage)
        assert out.ratio_q == kw["ratio_q"] == ROW.stage_ratio_fixed(stage)
        for row, m, mask in zip(job.rows, job.resident, out.row_masks, strict=True):
            sel = select_row(list(row), list(job.counts), **kw, resident=ResidentMass(*m))
            assert sel.mask == mask
            assert 0 < m[1] < 1 << w.resident_sum_bits
            nothing += sel.none_selected
    assert nothing                                             # some rows found p in their window
    save_jobs(tmp_path / "j.json", rec.hcu, rec.wtu)
    assert load_jobs(tmp_path / "j.json")[1] == rec.wtu


def test_resident_input_is_the_quantised_scores_of_the_attended_keys(trace):
    """One frame job recomputed by hand: q·k/√d · log2 e of the attended keys, quantised like the cluster scores,
    then :func:`resident_mass` per row."""
    rec = JobRecorder()
    run_session(ROW, trace, layers=[1], heads=[1], recorder=rec)
    job = next(j for j in rec.wtu if j.context.startswith("L1.H1.F"))
    stream = Stream(ROW, trace)
    step = next(s for s in stream.steps if s.label == job.context.split(".")[2])
    ctx = StepContext(ROW, 1, trace.layers[1], None, stream, step, stream.residency(step), [1], trace.segment_ids())
    keys, attended = ctx.attended_anyway()
    rows = ctx.group_queries(1)
    d = rows.shape[1]
    w = ROW.dre.wtu
    for i, (row_q, m) in enumerate(zip(rows, job.resident)):
        ok = attended[i // ctx.group]
        vals = (row_q @ trace.layers[1].k[keys[ok], 1].T / math.sqrt(d) * LOG2E).tolist()
        q = quantize_scores(vals, w.score_bits, w.score_frac_bits)
        assert resident_mass(q, ExpParams.from_config(ROW), w.resident_sum_bits) == tuple(m)


def test_engines_agree(trace):
    """engine = reference: resident_mass and select_row row by row; tensor: the twins on whole jobs."""
    ref, ref_stats = _fetched(ROW, trace, "reference")
    tensor, tensor_stats = _fetched(ROW, trace)
    assert tensor == ref and ref_stats["wtu"] == tensor_stats["wtu"]


def test_p_is_monotone_and_rows_fetching_nothing_are_reported(trace):
    prev = None
    for p in (0.05, 0.5, 0.9, 0.99, 1.0):
        cur, stats = _fetched(ROW.with_overrides({"resv.row_mass_p": p, "resv.text_row_mass_p": p}), trace)
        if prev is not None:
            assert all(prev[k][h] <= cur[k][h] for k in cur for h in range(len(cur[k]))), p
        prev = cur
        frame = stats["wtu"]["frame"]
        if p == 0.05:
            assert frame["rows_fetching_nothing"] > 0.5 and frame["jobs_fetching_nothing"] > 0
        if p == 1.0:
            assert frame["rows_fetching_nothing"] == 0.0
    stream = Stream(ROW, trace)
    offloaded = {s.index: set(stream.residency(s).offloaded) for s in stream.steps}
    assert all(v == offloaded[k[1]] for k, sel in prev.items() for v in sel)          # p = 1: every offloaded token


def test_the_row_rule_fetches_less_than_the_offloaded_rule_at_the_same_input(trace):
    """At the same ratio input p the row rule's target on the offloaded part, p·(r + W) - r = p·W - (1 - p)·r, is
    lower than the offloaded rule's p·W: it fetches fewer tokens, and only it lets rows fetch nothing."""
    row, _ = _fetched(ROW, trace)
    off, off_stats = _fetched(ROW.with_overrides({"resv.threshold_mass": "offloaded", "resv.wicsum_ratio": 0.9,
                                                  "resv.text_wicsum_ratio": 0.8}), trace)
    assert sum(len(h) for v in row.values() for h in v) < sum(len(h) for v in off.values() for h in v)
    assert off_stats["wtu"]["frame"]["rows_fetching_nothing"] == 0.0


def test_float_exp_transform_runs_the_row_rule(trace):
    cfg = ROW.with_overrides({"resv.score_transform": "exp"})
    lo, _ = _fetched(cfg.with_overrides({"resv.row_mass_p": 0.3}), trace)
    hi, stats = _fetched(cfg, trace)
    assert all(lo[k][h] <= hi[k][h] for k in hi for h in range(len(hi[k])))
    assert 0 <= stats["wtu"]["frame"]["rows_fetching_nothing"] <= 1


def test_online_selections_equal_the_trace_evaluation(trace):
    """The e2e driver (keys arriving step by step, future buffers still zero) gives the trace evaluation's
    selections: the resident input reads no key beyond the step."""
    settings = BaselineSettings()
    methods = ("resv", "resv_exact")
    logs = {}

    def record(p, log):
        select = p.select

        def wrapped(ctx):
            out = select(ctx)
            log[(p.name, ctx.layer, ctx.step.index)] = [f.tolist() for f in out]
            return out
        p.select = wrapped
        return p

    import vrex.golden.evaluation.offline as offline_mod
    real = offline_mod.make_policies
    offline_mod.make_policies = lambda *a, **k: [record(p, logs.setdefault("off", {})) for p in real(*a, **k)]
    try:
        rep = evaluate(ROW, trace, methods=methods, settings=settings)
    finally:
        offline_mod.make_policies = real
    shape = (ROW.model.layers, trace.query_heads, trace.kv_heads, trace.head_dim)
    on = logs.setdefault("on", {})
    for p in make_policies(ROW, methods, settings):
        run = OnlineRun(ROW, record(p, on), trace.segments, shape, retrieval_layers=trace.layer_ids,
                        settings=settings)
        for step in run.steps:
            for l in trace.layer_ids:
                x = trace.layers[l]
                run.write(l, step, x.q[step.start:step.end], x.k[step.start:step.end], x.v[step.start:step.end])
                run.select(l, step)
        stages = run.finish()
        assert 0 <= stages["frame"]["fetched_nothing"] <= 1
    assert logs["off"] == on and any(len(f) for sel in on.values() for f in sel)
    assert rep["resv"]["resv"]["wtu"]["frame"]["rows_fetching_nothing"] is not None
