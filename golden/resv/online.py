"""Retrieval policies driven online: keys and queries arrive step by step, every layer's state alive at once.

The trace evaluation (:func:`vrex.golden.evaluation.offline.evaluate`) walks a finished trace layer by layer. A model that
runs with retrieval in its attention produces each step's Q/K/V only when it reaches that step, for every layer
in turn, and the next step's keys depend on what this step attended to. :class:`OnlineRun` serves that order for
one policy: per layer it keeps float buffers of the session's length (the policy sees a :class:`LayerQKV` view of
them, valid up to the current step's end), and for each (step, layer) it

1. writes the step's queries, keys and values;
2. computes the step's true attention when tokens are offloaded and the policy reads it (the oracle) or
   ``recall`` is asked for (:func:`vrex.golden.evaluation.offline.true_attention`);
3. calls the policy with the same :class:`StepContext` the trace evaluation builds (residency, budgets: ``paper``
   from the stage, ``matched`` from the fractions a ReSV run recorded at that layer and step);
4. returns the light-attention mask of :func:`vrex.golden.evaluation.offline.light_mask` — sinks ∪ recent window ∪ fetched
   ∪ current step, causal — or ``None`` when nothing is dropped (the caller then runs its unmodified attention).

A policy that offloads nothing (``full``) is not consulted: its mask is always ``None``. Per stage the run reports
the retrieval ratio, recall and ``fetched_nothing``: the share of (layer, step, KV head) selections with offloaded
tokens that fetched none (with ``resv.threshold_mass = row``, those whose resident window already held p; the
policy computes that mass itself from the same :class:`StepContext`, :meth:`StepContext.attended_anyway`).

On the same Q/K the selections equal those of the trace evaluation step for step (tests/golden/test_e2e.py).
"""

from __future__ import annotations

import torch

from vrex.errors import UsageError

from vrex.golden.evaluation.offline import light_mask, true_attention
from vrex.golden.resv.policies import PAPER_BUDGETS, StepContext
from vrex.golden.resv.stream import Stream
from vrex.golden.traces.trace import LayerQKV, Trace

__all__ = ["OnlineRun"]


class _Tally:
    FIELDS = ("offloaded", "fetched", "rows", "recall", "selections", "nothing")

    def __init__(self):
        self.offloaded = self.fetched = self.rows = 0
        self.selections = self.nothing = 0          # (layer, step, KV head) selections with offloaded tokens; of
        self.recall = 0.0                           # them, the ones that fetched nothing

    def as_dict(self, offloads: bool) -> dict:
        return {"retrieval_ratio": (self.fetched / self.offloaded if offloads else 1.0) if self.offloaded else None,
                "recall": self.recall / self.rows if self.rows else None,
                "fetched_tokens": self.fetched if offloads else 0, "offloaded_tokens": self.offloaded,
                "fetched_nothing": self.nothing / self.selections if self.selections else None}


class OnlineRun:
    """One policy over one session, step-major. ``retrieval_layers``: layers whose attention the policy decides."""

    def __init__(self, cfg, policy, segments, shape: tuple[int, int, int, int], *, retrieval_layers, settings,
                 matched: dict | None = None, recall: bool = False):
        layers_total, hq, hkv, d = shape
        self.cfg, self.policy, self.settings, self.matched = cfg, policy, settings, matched
        self.recall = recall
        skeleton = Trace(list(segments), {}, {})
        self.stream = Stream(cfg, skeleton)
        self.steps = self.stream.steps
        self.seg_ids = skeleton.segment_ids()
        T = skeleton.tokens
        self.heads = list(range(hkv))
        self.group = hq // hkv
        self.kv_of_row = torch.tensor([h for h in self.heads for _ in range(self.group)])
        self.buffers = {l: LayerQKV(torch.zeros(T, hq, d), torch.zeros(T, hkv, d), torch.zeros(T, hkv, d))
                        for l in range(layers_total)}
        self.retrieval = sorted(set(retrieval_layers))
        self.fractions: dict[tuple[int, int], float] = {}       # (layer, step) → fetched fraction
        self.tally = {st: _Tally() for st in ("frame", "question", "answer")}
        self.observer = None        # called as observer(layer, step, residency, fetched) after each selection
        if settings.budget == "matched" and policy.name in PAPER_BUDGETS and matched is None:
            raise UsageError("--budget matched needs the resv method in the run.")
        for l in self.retrieval:
            policy.begin_layer(cfg, l, self.buffers[l], self.heads, self.stream)

    def write(self, layer: int, step, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store the step's ``q`` ``(n, Hq, d)``, ``k`` and ``v`` ``(n, Hkv, d)`` of ``layer``."""
        b = self.buffers[layer]
        b.q[step.start:step.end] = q
        b.k[step.start:step.end] = k
        b.v[step.start:step.end] = v

    def _budget(self, layer, step) -> dict:
        name = self.policy.name
        if name not in PAPER_BUDGETS:
            return {}
        resv = self.matched.get((layer, step.index)) if self.matched is not None else None
        return {name: self.settings.fraction(name, step.stage, resv)}

    def select(self, layer: int, step) -> torch.Tensor | None:
        """The policy's light-attention mask ``(Hq, n, e)`` for ``layer`` at ``step`` (after :meth:`write`), or
        ``None`` when every causal key is attended (nothing offloaded, or everything fetched)."""
        cfg, policy = self.cfg, self.policy
        data = self.buffers[layer]
        res = self.stream.residency(step)
        n_off = res.n_offloaded
        if not policy.offloads:
            self.tally[step.substage].offloaded += n_off * len(self.heads)
            return None
        e = step.end
        probs = None
        if n_off and (policy.needs_probs or self.recall):
            probs = true_attention(data, step, self.heads, e)[1]
        ctx = StepContext(cfg, layer, data, self.buffers.get(layer - 1), self.stream, step, res, self.heads,
                          self.seg_ids, probs, self._budget(layer, step))
        fetched = policy.select(ctx)
        if self.observer is not None:
            self.observer(layer, step, res, fetched)
        got = sum(len(f) for f in fetched)
        self.fractions[(layer, step.index)] = got / (n_off * len(self.heads)) if n_off else 0.0
        if not n_off:
            return None
        causal = torch.arange(e)[None, :] <= (step.start + torch.arange(step.tokens))[:, None]
        mask = light_mask(res, step, fetched, self.kv_of_row, causal, cfg.resv.include_current_frame)
        t = self.tally[step.substage]
        t.offloaded += n_off * len(self.heads)
        t.fetched += got
        t.selections += len(fetched)
        t.nothing += sum(1 for f in fetched if not len(f))      # the window held p (resv.threshold_mass = row)
        if probs is not None:
            t.rows += probs.shape[0] * probs.shape[1]
            t.recall += float((probs * mask).sum())
        if got == n_off * len(self.heads) and cfg.resv.include_current_frame:
            return None                                   # every causal key attended: the model's own attention
        return mask

    def retarget(self, segments) -> None:
        """Continue with ``segments`` (the same prefix as so far, another tail): the needle benchmark branches a
        question and its options from one prefill. Buffers keep their length, so the new session must not be longer
        than the one the run was built for."""
        skeleton = Trace(list(segments), {}, {})
        if skeleton.tokens > len(next(iter(self.buffers.values())).k):
            raise ValueError(f"retarget: {skeleton.tokens} tokens, beyond the run's buffers")
        self.stream.__init__(self.cfg, skeleton)        # in place: the policy holds the same Stream object
        self.steps = self.stream.steps
        self.seg_ids = skeleton.segment_ids()

    def finish(self) -> dict:
        """Close the policy's layers; retrieval ratio and recall per stage of this run."""
        for l in self.retrieval:
            self.policy.end_layer(l)
        off = self.policy.offloads
        text = _Tally()
        for st in ("question", "answer"):
            for f in _Tally.FIELDS:
                setattr(text, f, getattr(text, f) + getattr(self.tally[st], f))
        return {"frame": self.tally["frame"].as_dict(off), "text": text.as_dict(off),
                **{st: self.tally[st].as_dict(off) for st in ("question", "answer")}}
