"""Run ReSV and the baselines over a trace and measure them uniformly.

For every evaluated layer and step in which some tokens are offloaded, the true attention of the step's query
rows (query token × query head, causal over all keys) is computed once; each policy's fetched set then defines
its *light attention*: the same logits with every key outside sinks ∪ recent window ∪ fetched ∪ current step
(causal) masked out. Metrics (docs/golden.md §Metrics):

- **retrieval ratio** — Σ fetched / Σ offloaded tokens over (layers, KV heads, steps); ``full`` reports 1.0 (it
  attends everything) with 0 bytes fetched, since it keeps the whole cache in device memory;
- **recall** — mean over rows of the true softmax mass on the attended keys (``recall_p5``: its 5th percentile
  over the rows, linear interpolation);
- **output error** — mean over rows of ‖o_light − o_full‖₂ / ‖o_full‖₂;
- **bytes fetched** — fetched tokens × 2 (K and V) × head_dim × ``model.kv_bytes`` (per layer and KV head);
- ReSV extras: clusters and mean cluster size per context, WTU early-exit statistics, HCU events, and the
  correlation of hash Hamming distance with key cosine similarity between adjacent frames (paper Fig. 7b).

Steps without offloaded tokens (the start of the session) do not enter the averages. Stages: ``frame`` (frame
steps), ``text`` (question and answer steps), and the parts ``question`` and ``answer``.
"""

from __future__ import annotations

import math
import platform
import time
from dataclasses import dataclass, field

import numpy
import torch

from vrex.errors import UsageError

from vrex.golden.resv.hashing import hash_contexts, pair_similarities, pearson
from vrex.golden.resv.policies import BASELINES, PAPER_BUDGETS, BaselineSettings, OracleTopP, QuestPages, StepContext
from vrex.golden.resv.session import ReSVPolicy
from vrex.golden.resv.stream import STAGES, Stream
from vrex.golden.threads import torch_threads
from vrex.golden.traces.trace import Trace

__all__ = ["METHODS", "VARIANTS", "variant_overrides", "check_methods", "evaluate", "make_policies", "format_table", "hash_correlation",
           "light_mask", "true_attention", "group_values"]

METHODS = ("full", "flexgen", "infinigen", "rekv", "quest", "oracle_topp", "resv")
# ReSV variants measured beside the default: the exact sorted WiCSum, fixed top-k clusters (WTU topk mode), the
# golden-only float exp transform, the paper's linear rule (shift_min, bucket granularity), rows over all
# clusters with their full counts, the exp2 rule on a share of the offloaded mass alone (`resv_offloaded`, the
# shipped rule until issue 23: its ratios are the config's wicsum_ratio / text_wicsum_ratio) and the row-mass rule.
_OFFLOADED = {"resv.threshold_mass": "offloaded"}     # the rules that count only the offloaded mass
VARIANTS = {"resv_exact": {"resv.selection": "exact"}, "resv_topk": {"dre.wtu.mode": "topk", **_OFFLOADED},
            "resv_exp": {"resv.score_transform": "exp"},
            "resv_linear": {"resv.score_transform": "shift_min", "dre.wtu.mode": "early_exit", **_OFFLOADED},
            "resv_all": {"resv.retrieval_scope": "all", **_OFFLOADED},
            "resv_offloaded": {**_OFFLOADED, "resv.score_transform": "exp2", "dre.wtu.mode": "histogram"},
            "resv_row": {"resv.threshold_mass": "row", "resv.score_transform": "exp2", "dre.wtu.mode": "histogram"}}
STAGE_PARTS = {"frame": ("frame",), "text": ("question", "answer"), "question": ("question",),
               "answer": ("answer",)}


def variant_overrides(method: str) -> dict | None:
    """The config overrides of a ReSV variant: a name of :data:`VARIANTS`, or ``resv_row@P`` / ``resv_row@F:T``
    (the row-mass rule with ``row_mass_p`` F and ``text_row_mass_p`` T, both P in the first form); None for a
    method that is not a variant. A malformed ``@`` suffix raises :class:`UsageError`."""
    if method in VARIANTS:
        return VARIANTS[method]
    base, at, arg = method.partition("@")
    if not at or base != "resv_row":
        return None
    try:
        ps = [float(x) for x in arg.split(":")]
    except ValueError:
        ps = []
    if len(ps) not in (1, 2) or not all(0.0 < x <= 1.0 for x in ps):
        raise UsageError(f"method {method!r}: write resv_row@P or resv_row@F:T with p values in (0, 1].")
    return {**VARIANTS["resv_row"], "resv.row_mass_p": ps[0], "resv.text_row_mass_p": ps[-1]}


def check_methods(methods, *, prefix: str = "") -> None:
    """Raise :class:`UsageError` (message starting with ``prefix``) naming the first unknown method."""
    known = METHODS + tuple(VARIANTS)
    for m in methods:
        if m not in known and variant_overrides(m) is None:
            raise UsageError(f"{prefix}unknown method {m!r}; methods are {', '.join(known)}, and resv_row@P.")


def make_policies(cfg, methods, settings: BaselineSettings, engine: str = "tensor", recorder=None):
    check_methods(methods)
    out = []
    for m in methods:
        if m == "resv":
            out.append(ReSVPolicy(cfg, engine=engine, recorder=recorder))
        elif variant_overrides(m) is not None:
            out.append(ReSVPolicy(cfg.with_overrides(variant_overrides(m), source=f"method {m}"), name=m,
                                  engine=engine))
        elif m == "quest":
            out.append(QuestPages(settings.page_tokens))
        elif m == "oracle_topp":
            out.append(OracleTopP(settings.top_p))
        else:
            out.append(BASELINES[m]())
    return sorted(out, key=lambda p: p.name != "resv")       # ReSV first: "matched" budgets follow it


@dataclass
class _Cell:
    offloaded: int = 0
    fetched: int = 0
    rows: int = 0
    recall: float = 0.0
    error: float = 0.0
    steps: int = 0
    row_recall: list = field(default_factory=list)     # per-row recall tensors (for the percentiles)

    def add(self, other: "_Cell"):
        for f in ("offloaded", "fetched", "rows", "recall", "error", "steps", "row_recall"):
            setattr(self, f, getattr(self, f) + getattr(other, f))


@dataclass
class _Acc:
    cells: dict = field(default_factory=dict)       # (method, substage, layer, head) -> _Cell

    def cell(self, *key) -> _Cell:
        return self.cells.setdefault(key, _Cell())


def true_attention(data, step, heads, e):
    """Logits, true probabilities and outputs of the step's rows over keys ``[0, e)``, shapes ``(H, n, e)``,
    ``(H, n, e)``, ``(H, n, d)`` with ``H = len(heads) · group`` (row ``i·group + j``: query head ``j`` of the
    ``i``-th evaluated KV head), the causal mask ``(n, e)`` and the values ``(len(heads), e, d)``.

    The query heads of a GQA group are multiplied with their KV head's keys in one batched product (no copy of
    the keys per query head)."""
    s, n = step.start, step.tokens
    hkv, d = data.k.shape[1], data.q.shape[-1]
    g, hk = data.q.shape[1] // hkv, len(heads)
    every = list(heads) == list(range(hkv))
    q = data.q[s:step.end].view(n, hkv, g, d)
    q = (q if every else q[:, list(heads)]).permute(1, 2, 0, 3).reshape(hk, g * n, d)
    k = data.k[:e] if every else data.k[:e, list(heads)]
    v = data.v[:e] if every else data.v[:e, list(heads)]
    logits = torch.bmm(q, k.permute(1, 2, 0)).view(hk * g, n, e) / math.sqrt(d)
    causal = torch.arange(e)[None, :] <= (s + torch.arange(n))[:, None]    # (n, e)
    logits = logits.masked_fill(~causal[None], -math.inf)
    probs = torch.softmax(logits, -1)
    values = v.transpose(0, 1)
    return logits, probs, group_values(probs, values), causal, values


def group_values(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``probs`` ``(Hk·g, n, e)`` times each group's values ``(Hk, e, d)`` → ``(Hk·g, n, d)``."""
    hk, e, d = values.shape
    rows, n = probs.shape[0], probs.shape[1]
    return torch.bmm(probs.reshape(hk, (rows // hk) * n, e), values).view(rows, n, d)


def light_mask(res, step, fetched, kvidx: torch.Tensor, causal: torch.Tensor, include_current: bool) -> torch.Tensor:
    """Keys each query row attends under a policy: sinks ∪ recent window ∪ fetched ∪ current step, causal.

    ``fetched``: offloaded token indices per evaluated KV head; ``kvidx`` ``(H,)``: the KV-head position of each
    query head row; ``causal`` ``(n, e)``. Returns bool ``(H, n, e)``. Without ``include_current`` only the query
    itself is kept of the current step. The trace evaluation and the e2e loop both use this one rule.
    """
    e = causal.shape[1]
    base = torch.zeros(len(fetched), e, dtype=torch.bool)
    base[:, : res.sinks] = True
    base[:, res.window_start: step.start] = True
    for i, f in enumerate(fetched):
        base[i, f] = True
    base[:, step.start:] = include_current
    mask = base[kvidx][:, None, :] & causal[None]
    if not include_current:
        diag = torch.arange(e)[None, :] == (step.start + torch.arange(step.tokens))[:, None]
        mask |= diag[None]
    return mask


def hash_correlation(cfg, trace: Trace, layers, heads, max_pairs: int = 32) -> dict:
    """Pearson r of key cosine similarity vs −Hamming distance of their codes, over the token pairs of adjacent
    frames (up to ``max_pairs`` frame pairs spread over the session), per context (paper Fig. 7b: 0.8)."""
    frames = trace.frames()
    if len(frames) < 2:
        return {"frame_pairs": 0, "contexts": 0, "mean": None, "min": None, "max": None, "per_context": []}
    n = min(max_pairs, len(frames) - 1)
    idx = sorted({round(i * (len(frames) - 2) / max(1, n - 1)) for i in range(n)})
    out = []
    for l in layers:
        for h, k, planes in hash_contexts(cfg, l, trace.layers[l], heads):
            pairs = [pair_similarities(k[frames[i].start:frames[i].end], k[frames[i + 1].start:frames[i + 1].end],
                                       planes) for i in idx]
            cos = torch.cat([c for c, _ in pairs])
            ham = torch.cat([hm for _, hm in pairs])
            out.append({"layer": l, "head": h, "r": pearson(cos, -ham), "pairs": cos.numel()})
    rs = [o["r"] for o in out if not math.isnan(o["r"])]
    return {"definition": "Pearson r between cosine similarity and -Hamming distance of the key pairs of adjacent "
                          "frames, per context",
            "frame_pairs": len(idx), "contexts": len(out), "mean": sum(rs) / len(rs) if rs else None,
            "min": min(rs) if rs else None, "max": max(rs) if rs else None, "per_context": out}


def evaluate(cfg, trace: Trace, *, methods=METHODS, layers=None, heads=None,
             settings: BaselineSettings = BaselineSettings(), engine: str = "tensor", progress=None) -> dict:
    """Run ``methods`` over ``trace``; return the report dict (see :func:`format_table` and docs/golden.md)."""
    with torch_threads():
        return _evaluate(cfg, trace, methods, layers, heads, settings, engine, progress)


def _evaluate(cfg, trace, methods, layers, heads, settings, engine, progress) -> dict:
    t0 = time.perf_counter()
    trace.check(cfg)
    layers = trace.layer_ids if layers is None else list(layers)
    heads = list(range(trace.kv_heads)) if heads is None else sorted(set(heads))
    if any(h < 0 or h >= trace.kv_heads for h in heads):
        raise UsageError(f"--heads {heads}: KV heads are 0..{trace.kv_heads - 1}.")
    policies = make_policies(cfg, methods, settings, engine)
    names = [p.name for p in policies]
    if settings.budget == "matched" and "resv" not in names:
        raise UsageError("--budget matched needs the resv method in the run.")
    stream = Stream(cfg, trace)
    seg_ids = trace.segment_ids()
    g = trace.query_heads // trace.kv_heads
    kvidx = torch.tensor([i for i in range(len(heads)) for _ in range(g)])
    acc = _Acc()
    cur = cfg.resv.include_current_frame
    for li, l in enumerate(layers):
        data = trace.layers[l]
        for p in policies:
            p.begin_layer(cfg, l, data, heads, stream)
        for step in stream.steps:
            res = stream.residency(step)
            n_off = res.n_offloaded
            e = step.end
            logits = probs = out_full = None
            if n_off:
                logits, probs, out_full, causal, v = true_attention(data, step, heads, e)
            ctx = StepContext(cfg, l, data, trace.layers.get(l - 1), stream, step, res, heads, seg_ids, probs)
            resv_fraction = None
            for p in policies:
                if p.name in PAPER_BUDGETS:
                    ctx.budgets[p.name] = settings.fraction(p.name, step.stage, resv_fraction)
                fetched = p.select(ctx)
                if p.name == "resv":
                    resv_fraction = sum(len(f) for f in fetched) / (n_off * len(heads)) if n_off else 0.0
                if not n_off:
                    continue
                mask = light_mask(res, step, fetched, kvidx, causal, cur)
                light = group_values(torch.softmax(logits.masked_fill(~mask, -math.inf), -1), v)
                recall = (probs * mask).sum(-1)                                        # (H, n)
                err = (light - out_full).norm(dim=-1) / out_full.norm(dim=-1).clamp_min(1e-30)
                for i, h in enumerate(heads):
                    c = acc.cell(p.name, step.substage, l, h)
                    c.offloaded += n_off
                    c.fetched += len(fetched[i])
                    c.rows += g * step.tokens
                    c.recall += float(recall[i * g:(i + 1) * g].sum())
                    c.row_recall.append(recall[i * g:(i + 1) * g].flatten().float())
                    c.error += float(err[i * g:(i + 1) * g].sum())
                    c.steps += 1
        for p in policies:
            p.end_layer(l)
        if progress:
            progress(li + 1, len(layers), l)
    report = _report(cfg, trace, policies, acc, layers, heads, settings, engine)
    report["hash_cosine"] = hash_correlation(cfg, trace, layers, heads)
    report["run"]["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def _stage_summary(cfg, trace, acc, method, stage, layers, heads, offloads) -> dict:
    tot = _Cell()
    for l in layers:
        for h in heads:
            for part in STAGE_PARTS[stage]:
                c = acc.cells.get((method, part, l, h))
                if c is not None:
                    tot.add(c)
    per_token_bytes = 2 * trace.head_dim * cfg.model.kv_bytes
    ratio = (tot.fetched / tot.offloaded if offloads else 1.0) if tot.offloaded else None
    rows = torch.cat(tot.row_recall).double() if tot.row_recall else None
    return {"retrieval_ratio": ratio,
            "recall": tot.recall / tot.rows if tot.rows else None,
            "recall_p5": float(torch.quantile(rows, 0.05)) if rows is not None else None,
            "output_error": tot.error / tot.rows if tot.rows else None,
            "bytes_fetched": tot.fetched * per_token_bytes if offloads else 0,
            "fetched_tokens": tot.fetched if offloads else 0, "offloaded_tokens": tot.offloaded if offloads else 0,
            "rows": tot.rows, "layer_head_steps": tot.steps}


def _ratio_matrix(acc, method, stage, layers, heads, offloads):
    out = []
    for l in layers:
        row = []
        for h in heads:
            off = sum(acc.cells[(method, p, l, h)].offloaded for p in STAGE_PARTS[stage] if (method, p, l, h) in acc.cells)
            got = sum(acc.cells[(method, p, l, h)].fetched for p in STAGE_PARTS[stage] if (method, p, l, h) in acc.cells)
            row.append((got / off if offloads else 1.0) if off else None)
        out.append(row)
    return out


def _report(cfg, trace, policies, acc, layers, heads, settings, engine) -> dict:
    methods, per_lh, resv = {}, {}, {}
    for p in policies:
        methods[p.name] = {st: _stage_summary(cfg, trace, acc, p.name, st, layers, heads, p.offloads)
                           for st in STAGE_PARTS}
        per_lh[p.name] = {st: _ratio_matrix(acc, p.name, st, layers, heads, p.offloads) for st in STAGES}
        if isinstance(p, ReSVPolicy):
            st = p.stats()
            cl = st["clusters"]
            n_cl = sum(c["clusters"] for c in cl)
            toks = sum(c["tokens"] for c in cl)
            resv[p.name] = {"clusters_per_context": n_cl / len(cl) if cl else 0,
                            "mean_cluster_size": toks / n_cl if n_cl else 0.0,
                            "max_cluster_size": max((c["max_size"] for c in cl), default=0),
                            "hcu": {k: sum(c[k] for c in cl) for k in ("jobs", "spilled", "full_events",
                                                                        "closed_by_capacity")},
                            "wtu": st["wtu"], "engine": st["engine"], "per_context": cl}
    return {"config": cfg.name, "config_hash": cfg.hash(), "trace": trace.describe(),
            "layers": layers, "heads": heads, "methods": methods,
            "per_layer_head": {"layers": layers, "heads": heads, "retrieval_ratio": per_lh},
            "resv": resv, "settings": settings.describe(),
            "run": {"engine": engine, "torch": torch.__version__, "numpy": numpy.__version__,
                    "python": platform.python_version(), "threads": torch.get_num_threads()}}


def _fmt(x, pct=True):
    if x is None:
        return "—"
    return f"{100 * x:6.1f}%" if pct else f"{x:.3f}"


def format_table(report: dict) -> str:
    """One table: retrieval ratio, recall and output error per method and stage."""
    head = (f"{'method':<12} | {'frame: ratio':>12} {'recall':>8} {'out err':>8} | "
            f"{'text: ratio':>12} {'recall':>8} {'out err':>8} | {'GB fetched':>10}")
    lines = [head, "-" * len(head)]
    for m, st in report["methods"].items():
        f, t = st["frame"], st["text"]
        gb = (f["bytes_fetched"] + t["bytes_fetched"]) / 1e9
        lines.append(f"{m:<12} | {_fmt(f['retrieval_ratio']):>12} {_fmt(f['recall']):>8} "
                     f"{_fmt(f['output_error']):>8} | {_fmt(t['retrieval_ratio']):>12} {_fmt(t['recall']):>8} "
                     f"{_fmt(t['output_error']):>8} | {gb:>10.4f}")
    return "\n".join(lines)
