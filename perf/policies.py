"""Retrieval policies: what each method fetches, how it predicts, and what the prediction costs.

| policy | frame / text ratio (Table II) | predictor | layout on the offload tier |
|---|---|---|---|
| FlexGen | full fetch | none | ``full`` |
| InfiniGen | 100% / 6.8% | partial query × partial keys of every token, top-k per head | ``token_scattered`` |
| InfiniGenP | 50.8% / 6.8% | same as InfiniGen | ``token_scattered`` |
| ReKV | 58.4% / 31.2% | mean query × one mean key per block (frame), top-k blocks per layer | ``block_contiguous`` |
| ReSV | 32.7% / 2.5% | hash + Hamming clustering; Q × Key_cluster; WiCSum | V-Rex: ``dre.kvmu.layout``; GPU: scattered |

A retrieval ratio is the fraction of the retrieval *candidates* (tokens older than the sinks and recent window) a
step selects (docs/decisions.md Q8); the window and the current tokens are always attended. Selected candidates
still in device DRAM are read there, the others cross the link (``vrex.perf.memory``). Ratios come from the config
(defaults = Table II) or, per policy and stage, from golden-model JSONs: one report gives a constant, several
reports at different session lengths a fit in the number of candidates (``vrex.perf.ratios``, ``perf.ratio_fit``).

A prediction is split into the work on the main compute engine (projections and scoring, reading representatives
from DRAM) and the data-dependent part (clustering compares, thresholding / top-k rows). On V-Rex the
data-dependent part runs on the HCU and WTU; on a GPU it runs on the CUDA cores as *irregular* operations:
``3 · n_open`` per clustered token (XOR, popcount, compare) and ``N · log2 N`` per ranked row of N entries, and the
clustering of a frame's tokens is sequential (a token may join a cluster opened by the previous one), so it costs
one kernel launch per token.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

from .golden_input import MeasuredRatios
from .ratios import RatioFit, fit_ratio
from .workload import KVGeometry, Step, Work

__all__ = ["Policy", "Prediction", "BASELINES", "policies", "clustering_prediction",
           "selection_prediction", "gpu_work", "n_open_clusters", "clusters_per_context"]

BASELINES = ("flexgen", "infinigen", "infinigenp", "rekv")
LABELS = {"flexgen": "FlexGen", "infinigen": "InfiniGen", "infinigenp": "InfiniGenP", "rekv": "ReKV", "resv": "ReSV"}


@dataclass(frozen=True)
class Policy:
    name: str
    frame_ratio: float
    text_ratio: float
    predictor: Literal["none", "partial_key", "block_mean", "cluster_hash"]
    gpu_layout: str
    source: str
    partial_ratio: float = 1.0
    block_tokens: int = 1
    frame_fit: RatioFit | None = None
    text_fit: RatioFit | None = None
    tokens_per_cluster: float | None = None     # ReSV: measured mean cluster size (None: perf.tokens_per_cluster)

    @property
    def label(self) -> str:
        return LABELS[self.name]

    def ratio(self, stage: str, candidates: float | None = None) -> float:
        """The ratio of ``stage``; from the measured fit at ``candidates`` tokens per stream when there is one."""
        fit = self.frame_fit if stage == "frame" else self.text_fit
        if fit is not None and candidates is not None:
            return fit(candidates)
        return self.frame_ratio if stage == "frame" else self.text_ratio


def policies(cfg, measured: MeasuredRatios | None = None) -> dict[str, Policy]:
    """Every policy with its ratios: measured ones where ``measured`` has them, else the config's (Table II)."""
    p = cfg.perf
    base = {
        "flexgen": (1.0, 1.0, "none", "full", {}),
        "infinigen": (p.infinigen.frame_ratio, p.infinigen.text_ratio, "partial_key", "token_scattered",
                      {"partial_ratio": p.infinigen.partial_ratio}),
        "infinigenp": (p.infinigenp.frame_ratio, p.infinigenp.text_ratio, "partial_key", "token_scattered",
                       {"partial_ratio": p.infinigenp.partial_ratio}),
        "rekv": (p.rekv.frame_ratio, p.rekv.text_ratio, "block_mean", "block_contiguous",
                 {"block_tokens": p.rekv.block_tokens or cfg.model.tokens_per_frame}),
        "resv": (p.frame_ratio, p.text_ratio, "cluster_hash", "token_scattered", {}),
    }
    out = {}
    for name, (fr, tr, predictor, layout, extra) in base.items():
        given = "full fetch" if name == "flexgen" else "config (paper Table II)"
        src = {"frame": given, "text": given}
        fits = {"frame": None, "text": None}
        if measured is not None:
            for stage in ("frame", "text"):
                pts = measured.points(name, stage)
                if not pts:
                    continue
                fit = _fit(pts, p.ratio_fit, measured.sources(name, stage))
                fits[stage] = fit
                src[stage] = f"measured ({', '.join(measured.sources(name, stage))}; {fit.form})"
            fr = fits["frame"].a if fits["frame"] is not None and fits["frame"].form == "constant" else fr
            tr = fits["text"].a if fits["text"] is not None and fits["text"].form == "constant" else tr
        source = src["frame"] if src["frame"] == src["text"] else f"frame {src['frame']}, text {src['text']}"
        out[name] = Policy(name, fr, tr, predictor, layout, source, frame_fit=fits["frame"], text_fit=fits["text"],
                           **extra)
    tpc = measured.tokens_per_cluster() if measured is not None else None
    if tpc is not None:
        out["resv"] = dataclasses.replace(out["resv"], tokens_per_cluster=tpc[0])
    return out


def _fit(points, form: str, sources) -> RatioFit:
    """A fit through (n, r) points; points without a length make the fit a constant (their mean with the rest)."""
    if any(n is None for n, _ in points):
        return fit_ratio([(1.0, r) for _, r in points], "constant", sources)
    return fit_ratio(points, form, sources)


# ---- prediction demand --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    """The work of one prediction for one layer and the whole batch."""

    compute: Work = Work()
    cluster_tokens: float = 0.0     # tokens compared with the open clusters (HCU)
    cluster_open: int = 0           # open clusters per comparison
    select_rows: float = 0.0        # rows thresholded (WTU) or ranked (top-k)
    select_row_len: int = 0         # entries per row
    sequential_steps: float = 0.0   # dependent steps within the layer (GPU kernel launches)

    @property
    def empty(self) -> bool:
        return (self.compute == Work() and not self.cluster_tokens and not self.select_rows
                and not self.sequential_steps)


def _tokens_per_cluster(cfg, policy: Policy | None) -> float:
    return policy.tokens_per_cluster if policy is not None and policy.tokens_per_cluster else cfg.perf.tokens_per_cluster


def clusters_per_context(cfg, kv_tokens: int, policy: Policy | None = None) -> int:
    """Clusters one row scores: the context's share of the KV cache at the mean cluster size (measured by the
    golden model when given, else ``perf.tokens_per_cluster``)."""
    return math.ceil(kv_tokens / _tokens_per_cluster(cfg, policy)) if kv_tokens else 0


def n_open_clusters(cfg, geom: KVGeometry, policy: Policy | None = None) -> int:
    """Open clusters a new token is compared with: those of the recent window, bounded by the HCU capacity."""
    return min(cfg.hcu_capacity, math.ceil(geom.window / _tokens_per_cluster(cfg, policy)))


def _contexts(cfg) -> int:
    return cfg.model.kv_heads if cfg.resv.cluster_scope == "kv_head" else 1


def clustering_prediction(cfg, policy: Policy, step: Step, geom: KVGeometry) -> Prediction:
    """ReSV: hash the step's new keys (LXE / GPU) and cluster them against the open clusters (HCU / GPU)."""
    if policy.predictor != "cluster_hash" or (step.stage == "text" and not cfg.resv.cluster_text_tokens):
        return Prediction()
    m, t = cfg.model, step.query_tokens
    bits = cfg.resv.hash_bits
    hyperplanes = m.kv_heads * m.head_dim * bits * m.kv_bytes
    mean_update = t * m.kv_heads * m.head_dim * 2 * 4          # read + write the fp32 running sums
    compute = (Work(matmul_flops=2 * t * m.kv_heads * m.head_dim * bits,
                    vector_ops=t * m.kv_heads * (bits + m.head_dim))
               + Work(dram_bytes=hyperplanes + mean_update, sram_bytes=2 * (hyperplanes + mean_update)))
    return Prediction(compute, cluster_tokens=t * _contexts(cfg), cluster_open=n_open_clusters(cfg, geom, policy),
                      sequential_steps=step.tokens)


def selection_prediction(cfg, policy: Policy, step: Step, geom: KVGeometry) -> Prediction:
    """Score and select the candidates of one target layer (nothing to do when every token is in the window)."""
    if geom.candidates <= 0 or policy.predictor == "none":
        return Prediction()
    m, t, b, n = cfg.model, step.query_tokens, step.batch, geom.kv_tokens
    if policy.predictor == "cluster_hash":
        c = clusters_per_context(cfg, n, policy)
        reps = b * c * m.kv_heads * m.head_dim * m.kv_bytes      # Key_cluster of every context, from the HC table
        compute = (Work(matmul_flops=2 * t * m.query_heads * m.head_dim * c, vector_ops=2 * t * m.query_heads * c)
                   + Work(dram_bytes=reps, sram_bytes=2 * reps))
        return Prediction(compute, select_rows=t * m.query_heads, select_row_len=c)
    if policy.predictor == "partial_key":
        cols = m.head_dim * policy.partial_ratio
        w_partial = m.hidden * m.query_heads * cols * m.weight_bytes
        keys = b * n * m.kv_heads * cols * m.kv_bytes
        compute = (Work(matmul_flops=2 * t * m.hidden * m.query_heads * cols + 2 * t * m.query_heads * cols * n,
                        vector_ops=t * m.query_heads * n)        # sum the query tokens' scores per head
                   + Work(dram_bytes=w_partial + keys, weight_bytes=w_partial, sram_bytes=2 * (w_partial + keys)))
        return Prediction(compute, select_rows=b * m.query_heads, select_row_len=n)
    if policy.predictor == "block_mean":
        blocks = math.ceil(n / policy.block_tokens)
        reps = b * blocks * m.query_heads * m.head_dim * m.kv_bytes   # mean keys expanded to query heads (ReKV)
        compute = (Work(matmul_flops=2 * b * m.query_heads * m.head_dim * blocks,
                        vector_ops=t * m.query_heads * m.head_dim)
                   + Work(dram_bytes=reps, sram_bytes=2 * reps))
        return Prediction(compute, select_rows=b, select_row_len=blocks)
    raise ValueError(policy.predictor)


def gpu_work(pred: Prediction, platform) -> Work:
    """A prediction executed entirely on a GPU: data-dependent parts become irregular operations and launches."""
    if pred.empty:
        return Work()
    irregular = 3 * pred.cluster_tokens * pred.cluster_open
    if pred.select_rows:
        irregular += pred.select_rows * pred.select_row_len * max(1.0, math.log2(max(2, pred.select_row_len)))
    kernels = pred.sequential_steps if pred.cluster_tokens else platform.prediction_kernels_per_layer
    return pred.compute + Work(irregular_ops=irregular, kernels=kernels)
