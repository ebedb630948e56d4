"""Each baseline's selection rule and the metrics, on a hand-built session where the answers are known."""

import math

import pytest
import torch

from vrex.config import load_config
from vrex.golden.evaluation.offline import evaluate
from vrex.golden.resv.policies import (BaselineSettings, FlexGen, FullAttention, InfiniGenTopK, OracleTopP, QuestPages,
                                  ReKVBlocks, StepContext)
from vrex.golden.resv.stream import Stream
from vrex.golden.traces.trace import FRAME, QUESTION, LayerQKV, Trace, segments_from_lengths

CFG = load_config("tiny").with_overrides({"model.layers": 1, "model.query_heads": 2, "model.kv_heads": 1,
                                          "model.head_dim": 4, "model.tokens_per_frame": 2,
                                          "resv.recent_window_tokens": 2})
E = torch.eye(4)


@pytest.fixture
def trace():
    """4 frames of 2 tokens and a 2-token question; before the question tokens 0..5 are offloaded, 6..7 resident."""
    k = torch.stack([3 * E[0], E[1], 2 * E[1], 2 * E[0], 0.5 * E[0], 2 * E[0], E[2], E[3], E[2], E[3]])[:, None]
    q = torch.zeros(10, 2, 4)
    q[:, 0], q[:, 1] = E[0], E[1]                         # query head 0 looks along e0, head 1 along e1
    v = torch.arange(40, dtype=torch.float32).reshape(10, 1, 4) / 10
    segs = segments_from_lengths([(FRAME, 2)] * 4 + [(QUESTION, 2)])
    return Trace(segs, {0: LayerQKV(q, k, v)}, {"kind": "hand"})


def _ctx(trace, budget, probs=None):
    stream = Stream(CFG, trace)
    step = stream.steps[-1]
    res = stream.residency(step)
    assert list(res.offloaded) == [0, 1, 2, 3, 4, 5] and res.window_start == 6
    return StepContext(CFG, 0, trace.layers[0], None, stream, step, res, [0], trace.segment_ids(), probs,
                       {"infinigen": budget, "rekv": budget, "quest": budget})


def test_infinigen_token_topk_ties_to_the_lower_index(trace):
    # scores (max over rows): t0 3, t1 1, t2 2, t3 2, t4 .5, t5 2 -> top 3 = t0 and the two earliest 2s
    assert InfiniGenTopK().select(_ctx(trace, 0.5))[0].tolist() == [0, 2, 3]
    assert InfiniGenTopK().select(_ctx(trace, 1.0))[0].tolist() == [0, 1, 2, 3, 4, 5]


def test_rekv_frame_blocks_by_mean_query_and_mean_key(trace):
    # block scores Σ_h mean(q_h)·mean(k): frame 0: 2, frame 1: 2, frame 2: 1.25
    assert ReKVBlocks().select(_ctx(trace, 0.3))[0].tolist() == [0, 1]           # 1 block, tie -> earlier
    assert ReKVBlocks().select(_ctx(trace, 0.6))[0].tolist() == [0, 1, 2, 3]


def test_quest_pages_by_channel_bounds(trace):
    # page bounds (max over rows): page 0: 3, page 1: 2, page 2: 2
    assert QuestPages(2).select(_ctx(trace, 0.5))[0].tolist() == [0, 1, 2, 3]
    assert QuestPages(2).select(_ctx(trace, 0.2))[0].tolist() == [0, 1]
    assert QuestPages(4).select(_ctx(trace, 0.5))[0].tolist() == [0, 1, 2, 3]    # page 0..3 (bound 3) first


def test_full_and_flexgen_take_everything(trace):
    for pol in (FullAttention(), FlexGen()):
        assert pol.select(_ctx(trace, 0.5))[0].tolist() == [0, 1, 2, 3, 4, 5]
    assert not FullAttention.offloads and FlexGen.offloads


def _true_probs(trace):
    d = trace.layers[0]
    q, k = d.q[8:10].transpose(0, 1), d.k[:10, 0]
    logits = q @ k.T / 2.0
    causal = torch.arange(10)[None, :] <= torch.tensor([8, 9])[:, None]
    return torch.softmax(logits.masked_fill(~causal[None], -math.inf), -1)        # (2 heads, 2 tokens, 10 keys)


@pytest.mark.parametrize("p", [0.3, 0.6, 0.85, 0.99, 1.0])
def test_oracle_fetches_the_fewest_tokens_that_reach_p_per_row(trace, p):
    probs = _true_probs(trace)
    got = set(OracleTopP(p).select(_ctx(trace, 0.5, probs))[0].tolist())
    want = set()
    for row in probs.reshape(-1, 10):
        have = float(row.sum() - row[:6].sum())
        for t in sorted(range(6), key=lambda t: (-float(row[t]), t)):
            if have >= p - 1e-6:
                break
            want.add(t)
            have += float(row[t])
        assert have >= p - 1e-5
    assert got == want


def test_metrics_recall_is_true_mass_and_error_is_relative_output_error(trace):
    rep = evaluate(CFG, trace, methods=("full", "infinigen"), settings=BaselineSettings(budget=0.5))
    probs = _true_probs(trace)
    v = trace.layers[0].v[:10, 0]
    attended = torch.zeros(10, dtype=torch.bool)
    attended[[0, 2, 3, 6, 7, 8, 9]] = True                       # fetched t0, t2, t3 + window + current (causal)
    recall = (probs * attended).sum(-1)
    light = torch.softmax(torch.log(probs).masked_fill(~attended, -math.inf), -1) @ v
    full = probs @ v
    err = (light - full).norm(dim=-1) / full.norm(dim=-1)
    q = rep["methods"]["infinigen"]["question"]
    assert q["retrieval_ratio"] == 0.5 and q["fetched_tokens"] == 3 and q["offloaded_tokens"] == 6
    assert q["recall"] == pytest.approx(float(recall.mean()), abs=1e-6)
    assert q["output_error"] == pytest.approx(float(err.mean()), abs=1e-6)
    assert q["bytes_fetched"] == 3 * 2 * 4 * 2.0
    f = rep["methods"]["full"]["question"]
    assert (f["retrieval_ratio"], f["recall"], f["output_error"], f["bytes_fetched"]) == (1.0, pytest.approx(1.0), 0.0, 0)
