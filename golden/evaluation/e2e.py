"""End-to-end accuracy with retrieval in the loop: the LLM runs the session step by step, and at every layer and
step each method's selection decides which offloaded tokens its queries attend to (``vrex golden --e2e``).

For each method the model is run afresh over the session's steps (one prefill step per frame, one per question
segment, one decode step per answer token; the answer is the model's own greedy answer from the trace, teacher
forced) with a ``transformers`` ``DynamicCache``. Its attention goes through a function registered in transformers'
``AttentionInterface`` (``vrex_e2e``): every layer hands it the step's post-RoPE queries and the cache's keys and
values; an :class:`.online.OnlineRun` stores them, runs the method's policy on *that run's* Q/K (so a wrong
selection changes the keys of every later step and layer, as on the device) and returns the light-attention mask
(sinks ∪ recent window ∪ fetched ∪ current step, the trace evaluation's rule). Where nothing is dropped the
function calls transformers' own ``sdpa`` attention unchanged, so method ``full`` reproduces the unmodified model
run step by step bit for bit (tested); elsewhere it runs ``torch.nn.functional.scaled_dot_product_attention`` with
the mask.

Metrics per method, over the answer positions (the last token of each question segment and every answer token but
the last: the positions whose next token is an answer token), against the ``full`` run:

- ``top1_agreement`` — fraction of positions where the method's most likely next token equals full attention's;
- ``logit_kl`` — mean KL(p_full ‖ p_method) of the next-token distributions (nats);
- ``answer_nll`` — mean −log p_method(answer token), teacher forced (the answer is full attention's own greedy
  answer, so full's NLL is the reference);
- ``ratio`` — fetched / offloaded tokens over the question and answer steps of this run (all retrieval layers and
  KV heads); ``frame_ratio`` beside it, and ``recall`` (text: the run's own true attention mass on the attended
  keys) when ``recall=True`` or for the oracle, which computes that attention anyway.

This is the project's stand-in for the paper's COIN accuracy (docs/golden.md §End-to-end): it measures whether the
model's own next-token predictions change when retrieval decides its attention, on real video and a trained LLM.
It does not measure task accuracy against ground-truth answers (no COIN data or labels offline; the 135M model's
answers are not meaningful descriptions of the video), nor the effect on sampled (non-greedy) text.
"""

from __future__ import annotations

import contextlib
import time

import torch

from vrex.errors import TraceError, UsageError

from vrex.golden.evaluation.offline import make_policies
from vrex.golden.resv.policies import BaselineSettings
from vrex.golden.threads import torch_threads
from vrex.golden.traces.trace import ANSWER
from vrex.golden.resv.online import OnlineRun

__all__ = ["E2E_NAME", "run_e2e", "run_steps", "e2e_metrics", "format_e2e"]

E2E_NAME = "vrex_e2e"
_ACTIVE: list = []
_SDPA: list = []


class _Loop:
    """What the attention function needs during one method's run (``online``: one run, or one per sequence of a
    batch)."""

    def __init__(self, online, retrieval: set[int]):
        self.online, self.retrieval = online, retrieval
        self.step = None
        self.layer_seconds: dict[int, float] = {}


def _attend(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    loop = _ACTIVE[-1] if _ACTIVE else None
    l = getattr(module, "layer_idx", None)
    if loop is None or loop.online is None or l is None:
        return _SDPA[0](module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    t0 = time.perf_counter()
    step = loop.step
    s, e = step.start, step.end
    if l not in loop.retrieval and key.shape[2] != e:        # a sliding-window layer: it keeps its own window
        return _SDPA[0](module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    if key.shape[2] != e or query.shape[2] != e - s:
        raise TraceError(f"layer {l} attends {key.shape[2]} keys with {query.shape[2]} queries at step {step.label} "
                         f"(expected {e} and {e - s}); the e2e loop needs a fresh cache per run.")
    runs = loop.online if isinstance(loop.online, list) else [loop.online]
    if query.shape[0] != len(runs):
        raise TraceError(f"layer {l}: a batch of {query.shape[0]} sequences for {len(runs)} runs in the loop.")
    masks = []
    for b, run in enumerate(runs):              # a batch: one run per sequence (the needle grid's haystacks)
        run.write(l, step, query[b].transpose(0, 1), key[b, :, s:e].transpose(0, 1), value[b, :, s:e].transpose(0, 1))
        masks.append(run.select(l, step) if l in loop.retrieval else None)
    if all(m is None for m in masks):
        out = _SDPA[0](module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    else:
        causal = None
        for b, m in enumerate(masks):
            if m is None:                       # this sequence attends every causal key
                if causal is None:
                    causal = (torch.arange(e)[None, :] <= (s + torch.arange(e - s))[:, None]).expand(
                        query.shape[1], -1, -1)
                masks[b] = causal
        o = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=torch.stack(masks),
                                                             scale=scaling, enable_gqa=True)
        out = (o.transpose(1, 2).contiguous(), None)
    loop.layer_seconds[l] = loop.layer_seconds.get(l, 0.0) + time.perf_counter() - t0
    return out


def _register():
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if not _SDPA:
        _SDPA.append(sdpa_attention_forward)
        AttentionInterface.register(E2E_NAME, _attend)
        AttentionMaskInterface.register(E2E_NAME, sdpa_mask)


@contextlib.contextmanager
def _in_loop(model, loop: _Loop | None):
    """Route ``model``'s attention through the e2e function (``loop`` None: the model's own ``sdpa``)."""
    if loop is None:
        yield
        return
    _register()
    before = model.config._attn_implementation
    model.set_attn_implementation(E2E_NAME)
    _ACTIVE.append(loop)
    try:
        yield
    finally:
        _ACTIVE.pop()
        model.set_attn_implementation(before)


def full_attention_layers(hf_config) -> list[int]:
    """Layers that attend the whole causal context (not a sliding window); all layers for most models."""
    c = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    types = getattr(c, "layer_types", None) or ["full_attention"] * c.num_hidden_layers
    return [i for i, t in enumerate(types) if t != "sliding_attention"]


def _predicting(steps, segments) -> list[int]:
    """Indices of the steps whose last token's logits predict an answer token."""
    answer = {t for s in segments if s.kind == ANSWER for t in range(s.start, s.end)}
    return [i for i, st in enumerate(steps) if st.end in answer]


def run_steps(model, embeds: torch.Tensor, steps, keep, loop: _Loop | None = None) -> torch.Tensor:
    """Run ``model`` over ``steps`` with a fresh cache; the last-token logits of the steps in ``keep``
    ``(len(keep), vocab)`` float32. ``loop`` None runs the unmodified model (its own attention)."""
    from transformers import DynamicCache

    keep = set(keep)
    cache = DynamicCache(config=model.config)
    out = []
    with torch.no_grad(), torch_threads(), _in_loop(model, loop):
        for i, st in enumerate(steps):
            if loop is not None:
                loop.step = st
            r = model(inputs_embeds=embeds[st.start:st.end][None], cache=cache, use_cache=True,
                      logits_to_keep=1)
            if i in keep:
                out.append(r.logits[0, -1].float())
    return torch.stack(out) if out else torch.zeros(0, model.config.vocab_size)


def e2e_metrics(ref: torch.Tensor, got: torch.Tensor, answer: torch.Tensor) -> dict:
    """Top-1 agreement, mean KL(ref ‖ got) and mean NLL of ``answer`` under ``got`` (rows = positions)."""
    lp_ref, lp = torch.log_softmax(ref.double(), -1), torch.log_softmax(got.double(), -1)
    kl = (lp_ref.exp() * (lp_ref - lp)).sum(-1)
    nll = -lp.gather(1, answer[:, None])[:, 0]
    return {"top1_agreement": float((ref.argmax(-1) == got.argmax(-1)).double().mean()),
            "logit_kl": float(kl.mean()), "answer_nll": float(nll.mean()), "positions": int(len(answer))}


def run_e2e(cfg, session, lm, *, methods, settings: BaselineSettings = BaselineSettings(), layers=None,
            engine: str = "tensor", progress=None, recall: bool = False) -> dict:
    """Run ``methods`` in the loop; ``{"methods": {name: e2e dict}, "reference": ..., "run": ...}``.

    ``layers``: the layers whose attention retrieval decides (default every full-attention layer: a model's
    sliding-window layers, as in Gemma 3, keep their own window and are never given to retrieval).
    """
    with torch_threads():
        return _run_e2e(cfg, session, lm, methods, settings, layers, engine, progress, recall)


def _run_e2e(cfg, session, lm, methods, settings, layers, engine, progress, recall) -> dict:
    from vrex.golden.resv.stream import session_steps
    from vrex.golden.traces.trace import Trace

    model = lm.model
    if cfg.resv.hashed_key != "post_rope":
        raise UsageError("--e2e hashes the keys the model caches (post-RoPE); set resv.hashed_key: post_rope.")
    shape = (model.config.num_hidden_layers, cfg.model.query_heads, cfg.model.kv_heads, cfg.model.head_dim)
    full_layers = set(full_attention_layers(model.config))
    retrieval = full_layers if layers is None else set(layers)
    if retrieval - full_layers:
        raise UsageError(f"--layers: layers {sorted(retrieval - full_layers)} of this model use sliding-window "
                         f"attention (they never see offloaded tokens); choose among {sorted(full_layers)}.")
    steps = session_steps(Trace(list(session.segments), {}, {}))
    keep = _predicting(steps, session.segments)
    answer = torch.tensor([steps[i].end for i in keep])
    answer_ids = session.token_ids[answer]
    t_all = time.perf_counter()
    policies = make_policies(cfg, ("full",) + tuple(m for m in methods if m != "full"), settings, engine)
    order = sorted(policies, key=lambda p: (p.name != "full", p.name != "resv"))     # reference, then resv
    out, matched, ref, timing = {}, None, None, {}
    for p in order:
        t0 = time.perf_counter()
        online = OnlineRun(cfg, p, session.segments, shape, retrieval_layers=retrieval, settings=settings,
                           matched=matched, recall=recall)
        loop = _Loop(online, retrieval)
        logits = run_steps(model, session.embeds, steps, keep, loop)
        stages = online.finish()
        if p.name == "resv":
            matched = online.fractions
        if ref is None:
            ref = logits
        m = e2e_metrics(ref, logits, answer_ids)
        out[p.name] = {**m, "ratio": stages["text"]["retrieval_ratio"],
                       "frame_ratio": stages["frame"]["retrieval_ratio"], "recall": stages["text"]["recall"],
                       "frame_recall": stages["frame"]["recall"], "stages": stages}
        dt = time.perf_counter() - t0
        timing[p.name] = {"seconds": round(dt, 3),
                          "attention_seconds_per_layer": {l: round(v, 4) for l, v in sorted(loop.layer_seconds.items())}}
        if progress:
            progress(p.name, dt)
    out = {k: out[k] for k in ["full"] + [m for m in methods if m != "full"] if k in out}
    if "full" not in methods:
        out.pop("full")
    return {"methods": out, "reference": {"method": "full", "answer_nll": float(
                e2e_metrics(ref, ref, answer_ids)["answer_nll"]), "positions": len(keep)},
            "retrieval_layers": sorted(retrieval), "steps": len(steps),
            "run": {"seconds": round(time.perf_counter() - t_all, 3), "per_method": timing}}


def _pct(x):
    return "—" if x is None else f"{100 * x:6.1f}%"


def format_e2e(rep: dict) -> str:
    """The e2e table: per method top-1 agreement, KL, NLL and the run's text / frame ratios."""
    head = (f"{'e2e method':<12} | {'top-1 agree':>11} {'KL(full‖m)':>11} {'answer NLL':>10} | "
            f"{'text ratio':>10} {'frame ratio':>11} | {'seconds':>8}")
    lines = [head, "-" * len(head)]
    for m, r in rep["methods"].items():
        secs = rep["run"]["per_method"][m]["seconds"]
        lines.append(f"{m:<12} | {_pct(r['top1_agreement']):>11} {r['logit_kl']:>11.4f} {r['answer_nll']:>10.3f} | "
                     f"{_pct(r['ratio']):>10} {_pct(r['frame_ratio']):>11} | {secs:>8.1f}")
    return "\n".join(lines)

