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

So a cell costs one haystack prefill plus, per question, one question step and one short decode per option.

**Batches.** Several contexts of one layout (the same segments and the same questions' tokens: the haystacks of
one length, the needles at other depths) run as one batch, one :class:`OnlineRun` and one policy per sequence
(:mod:`vrex.golden.evaluation.e2e` hands each sequence's Q/K/V to its own run): the model's weights are read once
per step for all of them. Each sequence's numbers are those of its own run alone, up to the floating-point order of
the batched matrix products. The
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
from vrex.errors import UsageError
from vrex.golden.evaluation.offline import check_methods, make_policies
from vrex.golden.resv.policies import BaselineSettings, RetrievalPolicy
from vrex.golden.resv.online import OnlineRun
from vrex.golden.resv.stream import session_steps
from vrex.golden.threads import torch_threads
from vrex.golden.traces.trace import ANSWER, QUESTION, Trace, segments_from_lengths

__all__ = ["run_cell", "option_scores", "NIAH_METHODS", "method_policy", "check_niah_methods"]

# Methods only the needle benchmark has (they read where the needles are): the oracle that fetches exactly the
# needles' tokens, and full attention with the needles' tokens never fetched (the control that the needle matters).
NIAH_METHODS = ("needle_oracle", "full_minus_needle")
BUDGET_SWEPT = ("rekv", "quest", "infinigen")


class _NeedleWatch:
    """Counts, for one needle, the selections that fetched its tokens (observer of an OnlineRun)."""

    def __init__(self, tokens: range):
        self.tokens = torch.tensor(list(tokens))
        self.offloaded = self.hit = self.resident = 0
        self.missed: dict[str, int] = {}          # "layer.kv_head" → selections that fetched none of the needle
        self.layer_selections: dict[int, int] = {}
        self.kv_heads = 0

    def __call__(self, layer, step, res, fetched):
        if step.kind == 0:            # frame steps are not the question's retrieval
            return
        lo, hi = self.tokens[0].item(), self.tokens[-1].item()
        offloaded = hi >= res.sinks and lo < res.window_start
        if not offloaded:
            self.resident += len(fetched)
            return
        self.layer_selections[layer] = self.layer_selections.get(layer, 0) + len(fetched)
        self.kv_heads = len(fetched)
        for h, f in enumerate(fetched):
            self.offloaded += 1
            got = bool(len(f)) and bool(torch.isin(self.tokens, torch.as_tensor(f)).any())
            self.hit += got
            if not got:
                key = f"{layer}.{h}"
                self.missed[key] = self.missed.get(key, 0) + 1

    def as_dict(self) -> dict:
        return {"selections": self.offloaded, "hits": self.hit, "resident_selections": self.resident,
                "hit_rate": self.hit / self.offloaded if self.offloaded else None, "missed": dict(self.missed),
                "layer_selections": {str(k): v for k, v in self.layer_selections.items()}, "kv_heads": self.kv_heads}


class _NeedleFrames(RetrievalPolicy):
    """Fetches the offloaded tokens of the needles' frames (``keep`` True: only them; False: all but them)."""

    def __init__(self, name: str, tokens: list[range], keep: bool):
        self.name, self.keep = name, keep
        self.tokens = torch.tensor(sorted({t for r in tokens for t in r}), dtype=torch.long)

    def select(self, ctx):
        off = ctx.offloaded
        inside = torch.isin(off, self.tokens)
        got = off[inside] if self.keep else off[~inside]
        return [got for _ in ctx.heads]


def check_niah_methods(methods, prefix: str = "--methods: ") -> None:
    """The methods ``vrex golden`` knows, the benchmark's own (:data:`NIAH_METHODS`), ``M@F`` for a baseline of
    :data:`BUDGET_SWEPT` at budget fraction F and ``oracle_topp@P`` at mass P; anything else is refused."""
    for m in methods:
        base, at, arg = m.partition("@")
        if m in NIAH_METHODS:
            continue
        if at and base in BUDGET_SWEPT + ("oracle_topp",):
            try:
                x = float(arg)
            except ValueError:
                x = -1.0
            if not 0.0 < x <= 1.0:
                raise UsageError(f"{prefix}method {m!r}: a budget or mass after @ is a fraction in (0, 1].")
            continue
        check_methods((m,), prefix=prefix)


def method_policy(cfg, method: str, settings: BaselineSettings, engine: str, needle_tokens: dict):
    """(policy, settings) of ``method`` for one context (the needle methods read its needles' tokens)."""
    if method in NIAH_METHODS:
        return _NeedleFrames(method, list(needle_tokens.values()), method == "needle_oracle"), settings
    base, at, arg = method.partition("@")
    if at and base in BUDGET_SWEPT:
        st = BaselineSettings(budget=float(arg), top_p=settings.top_p, page_tokens=settings.page_tokens)
        return make_policies(cfg, (base,), st, engine)[0], st
    if at and base == "oracle_topp":
        st = BaselineSettings(budget=settings.budget, top_p=float(arg), page_tokens=settings.page_tokens)
        return make_policies(cfg, (base,), st, engine)[0], st
    return make_policies(cfg, (method,), settings, engine)[0], settings


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


def _advance(model, embeds: torch.Tensor, steps, cache, loop, logits: bool = True) -> torch.Tensor | None:
    """Run ``steps`` over the batch ``embeds`` ``(B, tokens, hidden)`` (a step's tokens are its absolute rows); the
    last-token log-probabilities of the last step, ``(B, vocab)``. Only the last step runs the output head (and none
    when ``logits`` is False: then None): the other steps' logits are never read, so they run the decoder alone
    (``model.base_model``, the same hidden states and cache)."""
    r = None
    for i, st in enumerate(steps):
        if loop is not None:
            loop.step = st
        x = embeds[:, st.start:st.end]
        if logits and i == len(steps) - 1:
            r = model(inputs_embeds=x, cache=cache, use_cache=True, logits_to_keep=1)
        else:
            model.base_model(inputs_embeds=x, cache=cache, use_cache=True)
    return torch.log_softmax(r.logits[:, -1].double(), -1) if r is not None else None


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
             progress=None):
    """Run ``method`` on ``ctx`` (one :class:`~.haystack.Context`, or a list of contexts of one layout run as a
    batch: then a list of results, and ``matched`` a list too); per branch the options' log-likelihoods, the exact
    match of the truth, the needle's hit rate; the run's frame/text retrieval ratios; and (for resv) the fractions a
    matched-budget run follows (``"fractions"``: per branch key, (layer, step) → fraction)."""
    single = not isinstance(ctx, (list, tuple))
    ctxs = [ctx] if single else list(ctx)
    per = [matched] if single else list(matched or [None] * len(ctxs))
    with torch_threads(), torch.no_grad():
        out = _run_cell(cfg, lm, ctxs, method, settings, layers, engine, per, progress)
    return out[0] if single else out


def _segments(ctx, q: int, a: int):
    rows = list(ctx.segments) + [(QUESTION, q)] + ([(ANSWER, a)] if a else [])
    return segments_from_lengths(rows)


def _layout(c) -> list:
    return [(b.question, len(b.question_ids), dict(zip(b.options, b.option_ids))) for b in c.branches]


def _check_layout(ctxs) -> None:
    """A batch runs in lockstep: the same segments, and per branch the same question with as many tokens and the
    same options (their order in the question may differ: the option orders of the Latin square)."""
    first = ctxs[0]
    for c in ctxs[1:]:
        if c.segments != first.segments or _layout(c) != _layout(first):
            raise ValueError("a batch of contexts needs one layout: the same segments and the same questions")


def _run_cell(cfg, lm, ctxs, method, settings, layers, engine, matched, progress):
    from transformers import DynamicCache

    _check_layout(ctxs)
    base, B = ctxs[0], len(ctxs)
    model, tok = lm.model, lm.tokenizer
    dtype = next(model.parameters()).dtype
    embed = model.get_input_embeddings()
    shape = (model.config.num_hidden_layers, cfg.model.query_heads, cfg.model.kv_heads, cfg.model.head_dim)
    full_layers = set(full_attention_layers(model.config))
    retrieval = full_layers if layers is None else set(layers)
    q_max = max(len(b.question_ids) for b in base.branches)
    a_max = max(len(i) - 1 for b in base.branches for i in b.option_ids)
    runs = []
    for c, m in zip(ctxs, matched):
        policy, st = method_policy(cfg, method, settings, engine, c.needle_tokens)
        runs.append(OnlineRun(cfg, policy, _segments(base, q_max, a_max), shape, retrieval_layers=retrieval,
                              settings=st, matched=None if m is None else m.get("prefill")))
    loop = _Loop(runs, retrieval)
    cache = DynamicCache(config=model.config)
    embeds = torch.stack([c.embeds for c in ctxs]).to(dtype)
    t0 = time.perf_counter()
    prefix_steps = session_steps(Trace(segments_from_lengths(base.segments), {}, {}))
    with _in_loop(model, loop):
        _advance(model, embeds, prefix_steps, cache, loop, logits=False)
    prefill_s = time.perf_counter() - t0
    if progress:
        progress("prefill", prefill_s)
    at_prefix = _checkpoint(cache)
    prefill_fractions = [dict(r.fractions) for r in runs]
    outs = [{"branches": {}, "fractions": {"prefill": f}} for f in prefill_fractions]
    keep_fractions = method == "resv" or all(m is None for m in matched)
    for bi, b in enumerate(base.branches):
        t1 = time.perf_counter()
        watches = [_NeedleWatch(c.needle_tokens[b.needle]) if b.needle in c.needle_tokens else None for c in ctxs]
        q_ids = torch.tensor([c.branches[bi].question_ids for c in ctxs])
        q_emb = embed(q_ids).to(dtype)
        truths = [c.branches[bi].options[c.branches[bi].truth] for c in ctxs]
        key_q = f"{b.question}/Q"
        brs = []
        for r, pf, w, m in zip(runs, prefill_fractions, watches, matched):
            br = _branch(r)
            br.fractions = dict(pf)
            br.matched = None if m is None else m.get(key_q)
            br.observer = w
            longest = max(len(i) for i in b.option_ids) - 1
            br.retarget(_segments(base, q_ids.shape[1], longest))
            brs.append(br)
        emb = torch.cat([embeds, q_emb], 1)
        loop.online = brs
        with _in_loop(model, loop):
            q_lp = _advance(model, emb, [brs[0].steps[len(prefix_steps)]], cache, loop)
        if keep_fractions:
            for o, br in zip(outs, brs):
                o["fractions"][key_q] = dict(br.fractions)
        after_q = _checkpoint(cache)
        lls = [{} for _ in ctxs]
        oks = [{} for _ in ctxs]
        for oi, (opt, ids) in enumerate(zip(b.options, b.option_ids)):
            ll = [float(q_lp[k, ids[0]]) for k in range(B)]
            ok = [[int(q_lp[k].argmax()) == ids[0]] for k in range(B)]
            if len(ids) > 1:
                key_o = f"{b.question}/{opt}"
                bos = []
                for k, (br, m) in enumerate(zip(brs, matched)):
                    bo = _branch(br)
                    bo.fractions = dict(br.fractions)
                    bo.matched = None if m is None else m.get(key_o)
                    bo.observer = watches[k] if opt == truths[k] else None
                    bo.retarget(_segments(base, q_ids.shape[1], len(ids) - 1))
                    bos.append(bo)
                o_emb = torch.cat([emb, embed(torch.tensor(ids[:-1])).to(dtype)[None].expand(B, -1, -1)], 1)
                loop.online = bos
                lp = []
                with _in_loop(model, loop):
                    for st in bos[0].steps[len(prefix_steps) + 1:]:
                        lp.append(_advance(model, o_emb, [st], cache, loop))
                for j, nxt in enumerate(ids[1:]):
                    for k in range(B):
                        ll[k] += float(lp[j][k, nxt])
                        ok[k].append(int(lp[j][k].argmax()) == nxt)
                if keep_fractions:
                    for o, bo in zip(outs, bos):
                        o["fractions"][key_o] = dict(bo.fractions)
                _restore(cache, after_q)
            for k in range(B):
                lls[k][opt] = ll[k]
                oks[k][opt] = all(ok[k])
        _restore(cache, at_prefix)
        seconds = round((time.perf_counter() - t1) / B, 3)
        for k, c in enumerate(ctxs):
            cb = c.branches[bi]
            outs[k]["branches"][cb.key] = {
                "needle_name": b.needle, "kind": b.kind, "question": b.question, "subjects": list(b.subjects),
                "counted": cb.counted, "order": cb.order, "options": list(cb.options), "truth": truths[k],
                "log_likelihood": lls[k], "exact_match": oks[k][truths[k]],
                "greedy_first_token": tok.decode([int(q_lp[k].argmax())]), "depth": c.depths.get(b.needle),
                "needle": watches[k].as_dict() if watches[k] is not None else None, "seconds": seconds}
        if progress:
            progress(b.key, time.perf_counter() - t1)
    total = round(time.perf_counter() - t0, 3)
    for o, r in zip(outs, runs):
        loop.online = r
        stages = r.finish()
        o.update({"method": method, "frame_ratio": stages["frame"]["retrieval_ratio"],
                  "text_ratio": stages["text"]["retrieval_ratio"], "stages": stages,
                  "seconds": {"prefill": round(prefill_s / B, 3), "total": round(total / B, 3), "batch": B,
                              "batch_total": total}})
    return outs
