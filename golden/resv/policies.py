"""Retrieval policies behind one interface, and the baselines ReSV is compared with.

A :class:`RetrievalPolicy` is called once per (layer, step), steps in session order, with a :class:`StepContext`
(the layer's Q/K/V, the step, the residency and the true attention probabilities). It returns, for each
evaluated KV head, the **offloaded tokens it fetches** (sorted indices). Light attention then runs over
sinks ∪ recent window ∪ fetched ∪ current step (causal) — the same rule for every policy (:mod:`.evaluate`).

Baselines (docs/golden.md §Baselines; budgets are fractions ``f`` of the step's offloaded tokens, see
:class:`BaselineSettings`):

=============  ==========================================================================================
``full``       no retrieval: the whole cache stays in device memory (nothing offloaded, nothing fetched)
``flexgen``    FlexGen-style: the whole offloaded cache is fetched at every step
``infinigen``  token-level top-k per KV head: score of token t = max over the step's queries and the
               group's query heads of q·k_t/√d (exact keys: an upper bound on InfiniGen's speculation);
               k = ⌈f·offloaded⌉; ties to the lower token index
``rekv``       frame-block top-k per layer (ReKV): a block is the offloaded part of a segment (frame or text
               turn); score = Σ_h mean_queries(q_h) · mean_block(k_g(h)) over all query heads; ⌈f·blocks⌉
               blocks, the same for every KV head; ties to the earlier block
``quest``      Quest pages of ``page_tokens`` (aligned on token index) per KV head: page bound
               Σ_d max(q_d·max_d, q_d·min_d), max over the step's query rows of the group;
               ⌈f·offloaded/page_tokens⌉ pages; ties to the earlier page
``oracle_topp`` Twilight-style ideal dynamic budget on the **true** attention: per query row the fewest
               offloaded tokens (largest probability first) such that resident + fetched mass ≥ p;
               the KV head fetches the union over its rows
=============  ==========================================================================================

Per-query-head scores are combined per KV head because one KV head's tokens are fetched once for its whole
GQA group. ReKV's original scores pre-RoPE keys; traces carry post-RoPE keys, which are used here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch

from vrex.errors import UsageError

from vrex.golden.resv.stream import Residency, Step, Stream
from vrex.golden.traces.trace import LayerQKV

__all__ = ["StepContext", "RetrievalPolicy", "BaselineSettings", "FullAttention", "FlexGen", "InfiniGenTopK",
           "ReKVBlocks", "QuestPages", "OracleTopP", "BASELINES", "PAPER_BUDGETS"]

# Operating points of paper Table II (frame stage, generation stage): InfiniGenP 50.8 % / 6.8 %, ReKV 58.4 % /
# 31.2 %. Quest is not in the paper and gets InfiniGenP's budget.
PAPER_BUDGETS = {"infinigen": {"frame": 0.508, "text": 0.068}, "rekv": {"frame": 0.584, "text": 0.312},
                 "quest": {"frame": 0.508, "text": 0.068}}


@dataclass(frozen=True)
class BaselineSettings:
    """Budgets of the fixed-budget baselines and parameters of the others.

    ``budget``: ``"paper"`` (the Table II operating points, :data:`PAPER_BUDGETS`), ``"matched"`` (each step gets
    the fraction ReSV fetched at that layer and step: iso-budget comparison), or a number in (0, 1] used for every
    step. ``top_p`` is the oracle's mass target (Twilight: 0.85); ``page_tokens`` Quest's page size (16).
    """

    budget: str | float = "paper"
    top_p: float = 0.85
    page_tokens: int = 16

    def __post_init__(self):
        b = self.budget
        if not (b in ("paper", "matched") or (isinstance(b, float) and 0.0 < b <= 1.0)):
            raise UsageError(f"--budget {b!r}: use paper, matched, or a fraction in (0, 1].")
        if not 0.0 < self.top_p <= 1.0:
            raise UsageError(f"--top-p {self.top_p}: must be in (0, 1].")
        if self.page_tokens < 1:
            raise UsageError(f"--page-tokens {self.page_tokens}: must be ≥ 1.")

    def fraction(self, method: str, stage: str, resv_fraction: float | None) -> float:
        if self.budget == "paper":
            return PAPER_BUDGETS[method][stage]
        if self.budget == "matched":
            if resv_fraction is None:
                raise UsageError("--budget matched needs the resv method in the run.")
            return resv_fraction
        return float(self.budget)

    def describe(self) -> dict:
        return {**asdict(self), "paper_budgets": PAPER_BUDGETS}


@dataclass
class StepContext:
    cfg: object
    layer: int
    data: LayerQKV                 # this layer's Q/K/V
    prev: LayerQKV | None          # the previous layer's (resv.predict_from = previous_layer), if stored
    stream: Stream
    step: Step
    res: Residency
    heads: list[int]               # KV heads evaluated
    segment_ids: torch.Tensor      # (T,) segment index of every token
    probs: torch.Tensor | None = None   # (len(heads)·group, n, e) true attention of the step's rows, or None
    budgets: dict = field(default_factory=dict)   # method → budget fraction for this step

    @property
    def offloaded(self) -> torch.Tensor:
        r = self.res.offloaded
        return torch.arange(r.start, r.stop)

    @property
    def group(self) -> int:
        return self.data.q.shape[1] // self.data.k.shape[1]

    def attended_anyway(self) -> tuple[torch.Tensor, torch.Tensor]:
        """What every policy's light attention keeps whatever is fetched (``light_mask`` of
        :mod:`vrex.golden.evaluation.offline` without the fetched tokens): ``(keys (n_res,), attended (step tokens,
        n_res))``: the sinks, the recent window and the current step's tokens as key indices, and per query token
        of the step which of them it attends (causal in the current step; only the query itself without
        ``resv.include_current_frame``)."""
        res, step = self.res, self.step
        keys = torch.cat([torch.arange(res.sinks), torch.arange(res.window_start, step.start),
                          torch.arange(step.start, step.end)])
        query = (step.start + torch.arange(step.tokens))[:, None]
        current = keys[None, :] >= step.start
        if self.cfg.resv.include_current_frame:
            return keys, ~current | (keys[None, :] <= query)
        return keys, ~current | (keys[None, :] == query)

    def group_queries(self, head: int, q: torch.Tensor | None = None) -> torch.Tensor:
        """Query rows of KV head ``head`` for this step, ``(tokens · group, d)``, token-major."""
        q = self.data.q if q is None else q
        g = self.group
        return q[self.step.start:self.step.end, head * g:(head + 1) * g].reshape(-1, q.shape[-1])


class RetrievalPolicy:
    """One retrieval method, called between ``begin_layer(l)`` and ``end_layer(l)`` for every step of layer ``l`` in
    session order. Layers come one after the other (trace evaluation) or interleaved step by step (the e2e loop,
    where a step's keys exist only once the model has run it); ``ctx.data`` holds valid Q/K up to the step's end."""

    name = "policy"
    offloads = True        # False: nothing is offloaded (full attention); bytes fetched are 0
    needs_probs = False    # True: select reads ctx.probs (the step's true attention)

    def begin_layer(self, cfg, layer: int, data: LayerQKV, heads: list[int], stream: Stream) -> None:
        pass

    def end_layer(self, layer: int) -> None:
        """The run is done with ``layer`` (its state may be released)."""

    def select(self, ctx: StepContext) -> list[torch.Tensor]:
        raise NotImplementedError

    def stats(self) -> dict:
        return {}


def _topk_lower_index(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` largest scores, ties to the lower index, returned sorted ascending."""
    k = max(0, min(k, scores.numel()))
    order = torch.sort(scores, descending=True, stable=True).indices[:k]
    return torch.sort(order).values


class FullAttention(RetrievalPolicy):
    name, offloads = "full", False

    def select(self, ctx):
        return [ctx.offloaded for _ in ctx.heads]


class FlexGen(RetrievalPolicy):
    name = "flexgen"

    def select(self, ctx):
        return [ctx.offloaded for _ in ctx.heads]


class InfiniGenTopK(RetrievalPolicy):
    name = "infinigen"

    def select(self, ctx):
        off = ctx.offloaded
        if not len(off):
            return [off for _ in ctx.heads]
        d = ctx.data.k.shape[-1]
        k = math.ceil(ctx.budgets[self.name] * len(off))
        out = []
        for h in ctx.heads:
            s = (ctx.group_queries(h) @ ctx.data.k[off, h].T / math.sqrt(d)).max(0).values
            out.append(off[_topk_lower_index(s, k)])
        return out


class ReKVBlocks(RetrievalPolicy):
    name = "rekv"

    def select(self, ctx):
        off = ctx.offloaded
        if not len(off):
            return [off for _ in ctx.heads]
        seg = ctx.segment_ids[off]
        blocks, inverse = torch.unique(seg, return_inverse=True)             # sorted: earlier blocks first
        nb, g = len(blocks), ctx.group
        sizes = torch.bincount(inverse, minlength=nb).to(torch.float32)
        kmean = torch.zeros(nb, *ctx.data.k.shape[1:]).index_add_(0, inverse, ctx.data.k[off]) / sizes[:, None, None]
        qmean = ctx.data.q[ctx.step.start:ctx.step.end].mean(0)               # (Hq, d)
        kexp = kmean.repeat_interleave(g, dim=1)                              # (nb, Hq, d): GQA expanded
        score = (kexp * qmean[None]).sum((1, 2))
        keep = _topk_lower_index(score, math.ceil(ctx.budgets[self.name] * nb))
        chosen = torch.zeros(nb, dtype=torch.bool)
        chosen[keep] = True
        fetched = off[chosen[inverse]]
        return [fetched for _ in ctx.heads]


class QuestPages(RetrievalPolicy):
    name = "quest"

    def __init__(self, page_tokens: int = 16):
        self.page_tokens = page_tokens

    def select(self, ctx):
        off = ctx.offloaded
        if not len(off):
            return [off for _ in ctx.heads]
        P, lo, hi = self.page_tokens, int(off[0]), int(off[-1]) + 1
        first, last = lo // P, (hi - 1) // P
        n_pages = last - first + 1
        span = torch.arange(first * P, (last + 1) * P)
        valid = ((span >= lo) & (span < hi))[:, None]
        page_of = off // P - first                                             # page index of each offloaded token
        budget = math.ceil(ctx.budgets[self.name] * len(off) / P)
        out = []
        for h in ctx.heads:
            k = torch.zeros(len(span), ctx.data.k.shape[-1])
            k[lo - first * P: hi - first * P] = ctx.data.k[lo:hi, h]
            kmax = torch.where(valid, k, -math.inf).view(n_pages, P, -1).amax(1)
            kmin = torch.where(valid, k, math.inf).view(n_pages, P, -1).amin(1)
            q = ctx.group_queries(h)                                           # (rows, d)
            bound = (torch.maximum(q[:, None, :] * kmax[None], q[:, None, :] * kmin[None]).sum(-1)
                     .max(0).values)
            keep = torch.zeros(n_pages, dtype=torch.bool)
            keep[_topk_lower_index(bound, budget)] = True
            out.append(off[keep[page_of]])
        return out


class OracleTopP(RetrievalPolicy):
    name = "oracle_topp"
    needs_probs = True

    def __init__(self, top_p: float = 0.85):
        self.top_p = top_p

    def select(self, ctx):
        off = ctx.offloaded
        if not len(off):
            return [off for _ in ctx.heads]
        g, out = ctx.group, []
        lo, hi = off[0].item(), off[-1].item() + 1
        for i, h in enumerate(ctx.heads):
            p = ctx.probs[i * g:(i + 1) * g].reshape(-1, ctx.probs.shape[-1])       # (rows, e)
            p_off = p[:, lo:hi]
            need = self.top_p - (p.sum(-1) - p_off.sum(-1))                        # mass still missing
            srt, order = torch.sort(p_off, dim=1, descending=True, stable=True)
            cum = torch.cumsum(srt, 1)
            count = ((cum < need[:, None]).sum(1) + 1).clamp(max=p_off.shape[1])
            count = torch.where(need > 0, count, torch.zeros_like(count))
            take = torch.arange(p_off.shape[1])[None, :] < count[:, None]
            mask = torch.zeros_like(take).scatter_(1, order, take).any(0)
            out.append(off[mask])
        return out


BASELINES = {"full": FullAttention, "flexgen": FlexGen, "infinigen": InfiniGenTopK, "rekv": ReKVBlocks,
             "quest": QuestPages, "oracle_topp": OracleTopP}
