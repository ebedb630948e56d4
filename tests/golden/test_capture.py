"""HF capture helper, offline, on a tiny randomly initialised Qwen2 (GQA 8 query / 2 KV heads, head_dim 16)."""

import pytest
import torch

from vrex.errors import TraceError
from vrex.golden.traces.capture import capture_trace
from vrex.golden.evaluation.offline import evaluate
from vrex.golden.traces.trace import load_trace, save_trace

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def qwen2():
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                                   num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096)
    return transformers.Qwen2ForCausalLM(cfg).eval()


SEGMENTS = [(0, 6)] * 8 + [(1, 5), (2, 7)]        # 8 frames of 6 tokens, a question of 5, an answer of 7


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 1000, (1, 60), generator=torch.Generator().manual_seed(1))


def test_capture_records_post_rope_qkv_of_every_layer(qwen2, ids):
    with torch.no_grad():
        ref = qwen2(ids, use_cache=True)
    impl = qwen2.config._attn_implementation
    trace = capture_trace(qwen2, SEGMENTS, input_ids=ids)
    assert qwen2.config._attn_implementation == impl                 # restored
    assert trace.layer_ids == [0, 1, 2] and trace.tokens == 60
    assert trace.layers[0].q.shape == (60, 8, 16) and trace.layers[2].v.shape == (60, 2, 16)
    cache = ref.past_key_values
    for l in range(3):                                                 # the cache holds post-RoPE keys
        assert torch.equal(trace.layers[l].k, cache.layers[l].keys[0].transpose(0, 1))
        assert torch.equal(trace.layers[l].v, cache.layers[l].values[0].transpose(0, 1))
    with torch.no_grad():                                              # the forward pass was not changed
        again = qwen2(ids).logits
    assert torch.equal(again, ref.logits)


def test_captured_queries_reproduce_the_models_attention(qwen2, ids):
    trace = capture_trace(qwen2, SEGMENTS, input_ids=ids)
    qwen2.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            att = qwen2(ids, output_attentions=True).attentions
    finally:
        qwen2.set_attn_implementation("sdpa")
    for l in range(3):
        q, k = trace.layers[l].q.transpose(0, 1), trace.layers[l].k.transpose(0, 1).repeat_interleave(4, 0)
        logits = q @ k.transpose(1, 2) / 4.0
        logits = logits.masked_fill(torch.ones(60, 60, dtype=torch.bool).triu(1), -torch.inf)
        assert torch.allclose(torch.softmax(logits, -1), att[l][0], atol=1e-5)


def test_captured_trace_saves_loads_and_runs(qwen2, ids, tmp_path):
    from vrex.config import load_config

    cfg = load_config("tiny").with_overrides({"model.layers": 3, "model.query_heads": 8, "model.tokens_per_frame": 6,
                                              "resv.recent_window_tokens": 12})
    trace = capture_trace(qwen2, SEGMENTS, input_ids=ids, layers=[1, 2])
    path = save_trace(trace, tmp_path / "qwen2.safetensors")
    back = load_trace(path, cfg)
    assert back.layer_ids == [1, 2] and back.segments == trace.segments
    rep = evaluate(cfg, back, methods=("full", "resv", "rekv"))
    assert rep["methods"]["resv"]["frame"]["retrieval_ratio"] is not None
    assert rep["methods"]["full"]["text"]["output_error"] == 0.0


def test_capture_errors(qwen2, ids):
    with pytest.raises(TraceError, match="the segments cover 10 tokens but the input has 60"):
        capture_trace(qwen2, [(0, 10)], input_ids=ids)
    with pytest.raises(TraceError, match=r"batch size 1; the input has shape \(2, 60\)"):
        capture_trace(qwen2, SEGMENTS, input_ids=ids.repeat(2, 1))
    with pytest.raises(TraceError, match="not a transformers PreTrainedModel"):
        capture_trace(torch.nn.Linear(2, 2), [(0, 60)], input_ids=ids)
