"""One cell of the needle benchmark: a (context, method) pair run with retrieval in the loop.

The context's frames are prefilled step by step (one step per frame) with the method's selection deciding the
attention at every retrieval layer, as ``vrex golden --e2e`` does (:mod:`vrex.golden.evaluation.e2e`: the same
attention function, the same :class:`~vrex.golden.resv.online.OnlineRun`). Each needle's question is then a
*branch* from the cached state after the haystack, and each option a branch from the state after its question:

- the model's KV cache is put back to the branch point after a branch (its layers' tensors are kept by reference:
  :func:`_checkpoint`; a crop cannot roll back a sliding-window layer);
- the method's state is a deep copy of the run at the branch point, except the Q/K/V buffers, which the branches
  share: a branch writes only positions after the branch point and reads only up to its current step, and the
  branches run one after the other;
- the run is retargeted to the branch's segments (question length, option length).

So a cell costs one haystack prefill plus, per needle, one question step and one short decode per option. The
option's log-likelihood is the sum of the log-probabilities of its tokens, teacher forced (the last question
token predicts the first option token). Exact match (LongVA's scoring) holds when the argmax at every answer
position equals the true option's token.

The needle's **hit rate**: over the question and option steps of its own branch, the fraction of (step, layer, KV
head) selections with the needle's tokens offloaded that fetched at least one of them (a needle in the resident
window is counted apart, as resident).
"""

from __future__ import annotations

import copy
import time

import torch

from vrex.golden.evaluation.e2e import _in_loop, _Loop, full_attention_layers
from vrex.golden.evaluation.offline import make_policies
from vrex.golden.resv.online import OnlineRun
from vrex.golden.resv.stream import session_steps
from vrex.golden.threads import torch_threads
from vrex.golden.traces.trace import ANSWER, QUESTION, Trace, segments_from_lengths

__all__ = ["run_cell", "option_scores"]


class _NeedleWatch:
    """Counts, for one needle, the selections that fetched its tokens (observer of an OnlineRun)."""

    def __init__(self, tokens: range):
        self.tokens = torch.tensor(list(tokens))
        self.offloaded = self.hit = self.resident = 0

    def __call__(self, layer, step, res, fetched):
        if step.kind == 0:            # frame steps are not the question's retrieval
            return
        lo, hi = self.tokens[0].item(), self.tokens[-1].item()
        offloaded = hi >= res.sinks and lo < res.window_start
        if not offloaded:
            self.resident += len(fetched)
            return
        for f in fetched:
            self.offloaded += 1
            self.hit += bool(len(f)) and bool(torch.isin(self.tokens, torch.as_tensor(f)).any())

    def as_dict(self) -> dict:
        return {"selections": self.offloaded, "hits": self.hit, "resident_selections": self.resident,
                "hit_rate": self.hit / self.offloaded if self.offloaded else None}


def _branch(run: OnlineRun) -> OnlineRun:
    """A deep copy of ``run`` sharing its Q/K/V buffers and its tallies (see the module docstring).

    The policy's state holds views of the buffers (a KV head's keys), so the buffers' *storages* are shared
    (``torch.UntypedStorage.__deepcopy__`` memoises storages under ``memo["torch"]``): a copied view then sees what a
    branch writes into the buffer, as the original does."""
    memo = {id(run.tally): run.tally}
    storages = memo.setdefault("torch", {})
    for buf in run.buffers.values():
        for t in (buf.q, buf.k, buf.v):
            memo[id(t)] = t
            storages[t.untyped_storage()._cdata] = t.untyped_storage()
        memo[id(buf)] = buf
    return copy.deepcopy(run, memo)


def _advance(model, embeds: torch.Tensor, steps, cache, loop) -> torch.Tensor:
    """Run ``steps`` (tokens ``embeds[step.start - offset …]`` given as absolute rows of ``embeds``); the last-token
    log-probabilities of the last step."""
    r = None
    for st in steps:
        if loop is not None:
            loop.step = st
        r = model(inputs_embeds=embeds[st.start:st.end][None], cache=cache, use_cache=True, logits_to_keep=1)
    return torch.log_softmax(r.logits[0, -1].double(), -1)


def _checkpoint(cache) -> list[dict]:
    """The cache at a branch point: each layer's attributes (a shallow copy). A layer's ``update`` concatenates into
    new tensors and never writes the old ones, so holding the references keeps the state exactly, at no cost; a
    sliding-window layer (Gemma 3), which drops its oldest keys as it goes and cannot be cropped back, included."""
    return [dict(vars(layer)) for layer in cache.layers]


def _restore(cache, saved: list[dict]) -> None:
    """Put the cache back to a :func:`_checkpoint`."""
    for layer, state in zip(cache.layers, saved):
        vars(layer).clear()
        vars(layer).update(state)


def option_scores(ll: dict, ref: dict) -> dict:
    """Calibrated scores: option log-likelihood with the needle minus without it (domain-conditional PMI)."""
    return {o: ll[o] - ref[o] for o in ll}


def run_cell(cfg, lm, ctx, method: str, settings, *, layers=None, engine: str = "tensor", matched=None,
             progress=None) -> dict:
    """Run ``method`` on ``ctx``; per branch the options' log-likelihoods, the exact match of the truth, the
    needle's hit rate; the run's frame/text retrieval ratios; and (for resv) the fractions a matched-budget run
    follows (``"fractions"``: per branch key, (layer, step) → fraction)."""
    with torch_threads(), torch.no_grad():
        return _run_cell(cfg, lm, ctx, method, settings, layers, engine, matched, progress)


def _segments(ctx, q: int, a: int):
    rows = list(ctx.segments) + [(QUESTION, q)] + ([(ANSWER, a)] if a else [])
    return segments_from_lengths(rows)


def _run_cell(cfg, lm, ctx, method, settings, layers, engine, matched, progress):
    from transformers import DynamicCache

    model, tok = lm.model, lm.tokenizer
    embed = model.get_input_embeddings()
    shape = (model.config.num_hidden_layers, cfg.model.query_heads, cfg.model.kv_heads, cfg.model.head_dim)
    full_layers = set(full_attention_layers(model.config))
    retrieval = full_layers if layers is None else set(layers)
    q_max = max(len(b.question_ids) for b in ctx.branches)
    a_max = max(len(i) - 1 for b in ctx.branches for i in b.option_ids)
    policy = make_policies(cfg, (method,), settings, engine)[0]
    run = OnlineRun(cfg, policy, _segments(ctx, q_max, a_max), shape, retrieval_layers=retrieval,
                    settings=settings, matched=None if matched is None else matched.get("prefill"))
    loop = _Loop(run, retrieval)
    cache = DynamicCache(config=model.config)
    t0 = time.perf_counter()
    prefix_steps = session_steps(Trace(segments_from_lengths(ctx.segments), {}, {}))
    with _in_loop(model, loop):
        _advance(model, ctx.embeds, prefix_steps, cache, loop)
    prefill_s = time.perf_counter() - t0
    if progress:
        progress("prefill", prefill_s)
    at_prefix = _checkpoint(cache)
    prefill_fractions = dict(run.fractions)
    out = {"branches": {}, "fractions": {"prefill": prefill_fractions}}
    for b in ctx.branches:
        t1 = time.perf_counter()
        watch = _NeedleWatch(ctx.needle_tokens[b.needle]) if b.needle in ctx.needle_tokens else None
        q_ids = torch.tensor(b.question_ids)
        q_emb = embed(q_ids).float()
        lls, em, key_q = {}, None, f"{b.key}/Q"
        br = _branch(run)
        br.fractions = dict(prefill_fractions)
        br.matched = None if matched is None else matched.get(key_q)
        br.observer = watch
        longest = max(len(i) for i in b.option_ids) - 1
        br.retarget(_segments(ctx, len(q_ids), longest))
        emb = torch.cat([ctx.embeds, q_emb])
        loop.online = br
        with _in_loop(model, loop):
            q_lp = _advance(model, emb, [br.steps[len(prefix_steps)]], cache, loop)
        if method == "resv" or matched is None:
            out["fractions"][key_q] = dict(br.fractions)
        after_q = _checkpoint(cache)
        for oi, (opt, ids) in enumerate(zip(b.options, b.option_ids)):
            ll = float(q_lp[ids[0]])
            argmax_ok = [int(q_lp.argmax()) == ids[0]]
            if len(ids) > 1:
                key_o = f"{b.key}/{opt}"
                bo = _branch(br)
                bo.fractions = dict(br.fractions)
                bo.matched = None if matched is None else matched.get(key_o)
                bo.observer = watch if oi == b.truth else None
                bo.retarget(_segments(ctx, len(q_ids), len(ids) - 1))
                o_emb = torch.cat([emb, embed(torch.tensor(ids[:-1])).float()])
                loop.online = bo
                lp = []
                with _in_loop(model, loop):
                    for st in bo.steps[len(prefix_steps) + 1:]:
                        lp.append(_advance(model, o_emb, [st], cache, loop))
                for j, nxt in enumerate(ids[1:]):
                    ll += float(lp[j][nxt])
                    argmax_ok.append(int(lp[j].argmax()) == nxt)
                if method == "resv" or matched is None:
                    out["fractions"][key_o] = dict(bo.fractions)
                _restore(cache, after_q)
            lls[opt] = ll
            if oi == b.truth:
                em = all(argmax_ok)
        _restore(cache, at_prefix)
        out["branches"][b.key] = {
            "needle_name": b.needle, "order": b.order, "options": list(b.options), "truth": b.options[b.truth], "log_likelihood": lls, "exact_match": em,
            "greedy_first_token": tok.decode([int(q_lp.argmax())]), "depth": ctx.depths.get(b.needle),
            "needle": watch.as_dict() if watch is not None else None,
            "seconds": round(time.perf_counter() - t1, 3)}
        if progress:
            progress(b.key, time.perf_counter() - t1)
    loop.online = run
    stages = run.finish()
    out.update({"method": method, "frame_ratio": stages["frame"]["retrieval_ratio"],
                "text_ratio": stages["text"]["retrieval_ratio"], "stages": stages,
                "seconds": {"prefill": round(prefill_s, 3), "total": round(time.perf_counter() - t0, 3)}})
    return out
