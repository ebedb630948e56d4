"""The e2e loop: online policies equal the trace evaluation on the same Q/K; the model in the loop (tiny random
Llama) — full attention reproduces the unmodified model bit for bit, the metrics, the CLI contract."""

import json

import pytest
import torch

import llm_fixtures
from vrex.cli import main
from vrex.config import load_config
from vrex.golden.evaluation import offline as evaluate_mod
from vrex.golden.evaluation.offline import METHODS, VARIANTS, evaluate, make_policies
from vrex.golden.evaluation.e2e import _Loop, _predicting, e2e_metrics, run_e2e, run_steps
from vrex.golden.resv.online import OnlineRun
from vrex.golden.traces.llm.session import LLMSpec, load_session
from vrex.golden.resv.policies import BaselineSettings, RetrievalPolicy
from vrex.golden.resv.stream import session_steps
from vrex.golden.traces.trace import Trace
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.golden.traces.video import VideoSpec

pytest.importorskip("transformers")
ALL = METHODS + tuple(VARIANTS)


def _recording(policy, log):
    select = policy.select

    def wrapped(ctx):
        out = select(ctx)
        log[(policy.name, ctx.layer, ctx.step.index)] = [f.tolist() for f in out]
        return out

    policy.select = wrapped
    return policy


def _offline(cfg, trace, settings, monkeypatch):
    log = {}
    real = evaluate_mod.make_policies
    monkeypatch.setattr(evaluate_mod, "make_policies",
                        lambda *a, **k: [_recording(p, log) for p in real(*a, **k)])
    evaluate(cfg, trace, methods=ALL, settings=settings)
    monkeypatch.undo()
    return log


def _online(cfg, trace, settings, methods=ALL):
    """Every method step-major: for each step, every layer in turn, Q/K/V written as they 'arrive'."""
    log, matched = {}, None
    shape = (cfg.model.layers, trace.query_heads, trace.kv_heads, trace.head_dim)
    for p in make_policies(cfg, methods, settings):
        run = OnlineRun(cfg, _recording(p, log), trace.segments, shape, retrieval_layers=trace.layer_ids,
                        settings=settings, matched=matched)
        for step in run.steps:
            for l in trace.layer_ids:
                x = trace.layers[l]
                run.write(l, step, x.q[step.start:step.end], x.k[step.start:step.end], x.v[step.start:step.end])
                run.select(l, step)
        run.finish()
        if p.name == "resv":
            matched = run.fractions
    return log


@pytest.fixture(autouse=True)
def one_thread():
    from vrex.golden.threads import torch_threads

    with torch_threads():
        yield


@pytest.mark.parametrize("overrides,budget", [
    ({}, "paper"),
    ({"resv.predict_from": "previous_layer", "resv.selection": "exact"}, "matched"),
    ({"resv.cluster_scope": "layer", "resv.hyperplane_sharing": "per_layer", "resv.gqa_aggregation": "global",
      "resv.sink_tokens": 4, "dre.kvmu.eviction_granularity": "token"}, "paper")],
    ids=["default-paper", "previous-layer-exact-matched", "layer-global-sinks-token-paper"])
def test_online_selections_equal_the_trace_evaluation(overrides, budget, monkeypatch):
    cfg = load_config("tiny").with_overrides({"resv.recent_window_tokens": 32, **overrides})
    trace = make_trace(cfg, "synthetic", options=TraceOptions(frames=10))
    settings = BaselineSettings(budget=budget)
    off = {k: v for k, v in _offline(cfg, trace, settings, monkeypatch).items() if k[0] != "full"}
    on = _online(cfg, trace, settings)                          # full is never consulted online: it drops nothing
    assert set(off) == set(on) and len(off) == (len(ALL) - 1) * 2 * len(session_steps(trace))
    fetched = sum(len(f) for sel in off.values() for f in sel)
    assert fetched > 0                                          # some steps have offloaded tokens
    assert off == on


def test_hashing_keys_before_they_arrive_is_caught(monkeypatch):
    """Mutant: a ReSV state that hashes every key when its layer begins (right for a finished trace, wrong online,
    where the buffers are still empty) must make the online selections differ."""
    from vrex.golden.resv import session as resv

    cfg = load_config("tiny").with_overrides({"resv.recent_window_tokens": 32})
    trace = make_trace(cfg, "synthetic", options=TraceOptions(frames=10))
    settings = BaselineSettings()
    off = {k: v for k, v in _offline(cfg, trace, settings, monkeypatch).items() if k[0] == "resv"}
    real_init = resv._LayerState.__init__

    def eager(self, cfg, layer, data, heads, *engine):
        real_init(self, cfg, layer, data, heads, *engine)
        self.hash_upto(data.k.shape[0])

    monkeypatch.setattr(resv._LayerState, "__init__", eager)
    assert _online(cfg, trace, settings, ("resv",)) != off


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = llm_fixtures.save_tiny_llm(tmp_path_factory.mktemp("tiny-llm"))
    cfg = llm_fixtures.tiny_cfg()
    opts = TraceOptions(frames=12, video=VideoSpec(clips=("carphone_pristine",), fps=2.0),
                        llm=LLMSpec(model=str(folder)))
    trace, session, lm = load_session(cfg, opts, need_model=True)
    return cfg, trace, session, lm, folder


def test_full_in_the_loop_is_the_unmodified_model_bit_for_bit(tiny):
    cfg, trace, session, lm, _ = tiny
    steps = session_steps(Trace(session.segments, {}, {}))
    every = range(len(steps))
    plain = run_steps(lm.model, session.embeds, steps, every)                     # the model's own sdpa
    shape = (2, 4, 2, 16)
    for name in ("full", "flexgen"):                                             # flexgen drops nothing either
        policy = make_policies(cfg, [name], BaselineSettings())[0]
        online = OnlineRun(cfg, policy, session.segments, shape, retrieval_layers=[0, 1], settings=BaselineSettings())
        looped = run_steps(lm.model, session.embeds, steps, every, _Loop(online, {0, 1}))
        assert torch.equal(plain, looped), name
    with torch.no_grad():                                                        # and close to one forward pass
        whole = lm.model(inputs_embeds=session.embeds[None]).logits[0, [s.end - 1 for s in steps]]
    assert torch.allclose(whole, plain, atol=1e-4)
    assert lm.model.config._attn_implementation == "sdpa"


def test_loop_keys_are_the_runs_own(tiny):
    """With retrieval in the loop the cached keys of later steps change (errors propagate); without, they equal
    the trace's."""
    cfg, trace, session, lm, _ = tiny
    steps = session_steps(Trace(session.segments, {}, {}))
    shape = (2, 4, 2, 16)
    runs = {}
    for name in ("full", "infinigen"):
        policy = make_policies(cfg, [name], BaselineSettings(budget=0.05))[0]
        online = OnlineRun(cfg, policy, session.segments, shape, retrieval_layers=[0, 1],
                           settings=BaselineSettings(budget=0.05))
        run_steps(lm.model, session.embeds, steps, [], _Loop(online, {0, 1}))
        runs[name] = online.buffers
    assert torch.allclose(runs["full"][1].k, trace.layers[1].k, atol=2e-3)      # trace: float16-rounded
    assert torch.equal(runs["full"][0].k, runs["infinigen"][0].k)                # layer 0 keys: inputs only
    assert not torch.allclose(runs["full"][1].k, runs["infinigen"][1].k, atol=1e-5)


class DropAll(RetrievalPolicy):
    """Fetches nothing: light attention = sinks ∪ window ∪ current step."""

    name = "drop_all"

    def select(self, ctx):
        return [ctx.offloaded[:0] for _ in ctx.heads]


def test_metrics_and_a_policy_that_fetches_nothing(tiny):
    cfg, trace, session, lm, _ = tiny
    steps = session_steps(Trace(session.segments, {}, {}))
    keep = _predicting(steps, session.segments)
    assert [steps[i].end for i in keep] == session.answer_positions()
    answer = session.token_ids[session.answer_positions()]
    ref = run_steps(lm.model, session.embeds, steps, keep)
    online = OnlineRun(cfg, DropAll(), session.segments, (2, 4, 2, 16), retrieval_layers=[0, 1],
                       settings=BaselineSettings(), recall=True)
    got = run_steps(lm.model, session.embeds, steps, keep, _Loop(online, {0, 1}))
    m = e2e_metrics(ref, got, answer)
    assert m["positions"] == 5 and m["logit_kl"] > 0 and not torch.equal(ref, got)
    same = e2e_metrics(ref, ref, answer)
    assert same["top1_agreement"] == 1.0 and same["logit_kl"] == 0.0
    lp = torch.log_softmax(ref.double(), -1)
    assert abs(same["answer_nll"] + float(lp[torch.arange(5), answer].mean())) < 1e-12
    st = online.finish()
    assert st["frame"]["retrieval_ratio"] == 0.0 and st["text"]["retrieval_ratio"] == 0.0
    assert st["text"]["recall"] < 1.0


def test_run_e2e_report(tiny):
    cfg, trace, session, lm, _ = tiny
    rep = run_e2e(cfg, session, lm, methods=("resv", "rekv", "full", "oracle_topp"))
    assert list(rep["methods"]) == ["full", "resv", "rekv", "oracle_topp"]
    full = rep["methods"]["full"]
    assert full["top1_agreement"] == 1.0 and full["logit_kl"] == 0.0 and full["ratio"] == 1.0
    assert full["answer_nll"] == rep["reference"]["answer_nll"]
    for m in ("resv", "rekv", "oracle_topp"):
        r = rep["methods"][m]
        assert 0 <= r["top1_agreement"] <= 1 and r["logit_kl"] >= 0 and 0 < r["ratio"] <= 1
    assert rep["methods"]["rekv"]["ratio"] < 0.6                  # the paper budget (31.2 %, rounded up per step)
    assert set(rep["run"]["per_method"]["resv"]["attention_seconds_per_layer"]) == {0, 1}


def test_cli_e2e_writes_the_contract(tiny, tmp_path, capsys, monkeypatch):
    *_, folder = tiny
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path / "build"))
    cfg = tmp_path / "tiny-llm.yaml"
    cfg.write_text(llm_fixtures.tiny_cfg().dump_yaml())
    js = tmp_path / "r.json"
    code = main(["golden", "-c", str(cfg), "--trace", "llm-video", "--model", str(folder), "--frames", "12",
                 "--clips", "carphone_pristine", "--fps", "2", "--methods", "resv,rekv,full", "--e2e",
                 "--json", str(js), "-q"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "e2e method" in out.out and "top-1 agree" in out.out
    assert "targets (issues 23, 32) of resv" in out.out
    rep = json.loads(js.read_text())
    checked = {t["name"]: t for t in rep["targets"]}
    assert {"frame traffic", "text traffic", "frame recall", "text recall", "e2e KL(full‖m)"} <= set(checked)
    kl = checked["e2e KL(full‖m)"]
    assert kl["value"] == rep["methods"]["resv"]["e2e"]["logit_kl"] and kl["bound"] == rep["methods"]["rekv"]["e2e"]["logit_kl"]
    for m in ("resv", "rekv", "full"):
        e = rep["methods"][m]["e2e"]
        assert {"top1_agreement", "logit_kl", "answer_nll", "ratio"} <= set(e)
        assert rep["methods"][m]["frame"]["retrieval_ratio"] is not None
    assert rep["trace"]["kind"] == "llm-video" and rep["trace"]["model"]["sha256"]
    assert rep["e2e"]["retrieval_layers"] == [0, 1]
    assert main(["golden", "-c", "tiny", "--trace", "synthetic", "--e2e"]) == 2
    assert "use it with --trace llm-video" in capsys.readouterr().err


def test_e2e_benchmark_reports_methods_and_layers(tiny):
    from vrex.golden.evaluation.benchmark import format_e2e_benchmark, run_e2e_benchmark

    cfg, *_, folder = tiny
    import yaml

    path = folder.parent / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    r = run_e2e_benchmark(str(path), model=str(folder), methods=("resv", "full"), frames=12, fps=2.0)
    assert set(r["methods"]) == {"resv", "full"} and r["layers"] == 2
    for m in r["methods"].values():
        assert set(m["attention_seconds_per_layer"]) == {0, 1} and m["seconds"] >= m["attention_seconds"] > 0
    assert "ms per layer" in format_e2e_benchmark(r)
