"""What one step of a streaming session asks of the hardware, layer by layer.

A *step* is one pass of a batch of B streams through the model:

- ``frame``: the vision tower + projector turns each stream's frame into ``model.tokens_per_frame`` tokens, which
  are prefilled through every decoder layer (iterative prefill), then ``perf.frame_lm_head_tokens`` LM-head rows
  (VideoLLM-online decides after every frame whether to speak);
- ``question``: the ``model.question_tokens`` of a turn are prefilled (prefill stage: frame-stage retrieval ratio);
- ``decode``: one generated token per stream (generation stage: text retrieval ratio).

Work is counted in :class:`Work` records (matrix FLOPs at 2 per MAC, elementwise operations, data-dependent
compare operations, device-memory bytes, weight bytes, on-chip SRAM bytes, GPU kernel launches). Records add up,
so a task's work is the sum of its operations and a step's work is the sum of its tasks.

Counting rules (documented in docs/perf.md):

- every weight is read from device DRAM once per step; all B·n tokens of the step reuse it;
- attention reads the K and V of every attended token once per KV head (GQA) and per stream;
- new K/V of the step are written to DRAM; activations stay on chip (V-Rex SRAM, GPU L2) and are not counted;
- the vision tower is counted as its linear layers (2 · params · tokens); its attention (≈ 7% of its FLOPs for
  SigLIP-L at 577 tokens) and elementwise work are neglected;
- SRAM traffic (V-Rex energy only): every DRAM byte is staged through SRAM once (write + read).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

__all__ = ["Work", "Step", "KVGeometry", "frame_step", "question_step", "decode_step", "qkv_work", "attention_work",
           "ffn_work", "lm_head_work", "vision_work", "eviction_tokens"]


@dataclass(frozen=True)
class Work:
    """An additive amount of work on one engine."""

    matmul_flops: float = 0.0     # 2 per multiply-accumulate
    vector_ops: float = 0.0       # elementwise / reduction operations (norms, RoPE, softmax, binarisation)
    irregular_ops: float = 0.0    # data-dependent compares (top-k, sort, clustering) on an engine without a DRE
    dram_bytes: float = 0.0       # device-memory bytes read + written
    weight_bytes: float = 0.0     # the part of dram_bytes that is weights (the weight-streaming floor)
    sram_bytes: float = 0.0       # on-chip SRAM bytes (V-Rex energy)
    kernels: float = 0.0          # GPU kernel launches

    def _values(self) -> tuple:
        return (self.matmul_flops, self.vector_ops, self.irregular_ops, self.dram_bytes, self.weight_bytes,
                self.sram_bytes, self.kernels)

    def __add__(self, other: "Work") -> "Work":
        return Work(*(a + b for a, b in zip(self._values(), other._values())))

    def with_kernels(self, kernels: float) -> "Work":
        return dataclasses.replace(self, kernels=kernels)


def _dram(nbytes: float, weights: float = 0.0) -> Work:
    """DRAM traffic, staged through SRAM once (write + read)."""
    return Work(dram_bytes=nbytes, weight_bytes=weights, sram_bytes=2 * nbytes)


@dataclass(frozen=True)
class Step:
    kind: Literal["frame", "question", "decode"]
    stage: Literal["frame", "text"]   # which retrieval ratio applies (prefill steps use the frame-stage ratio)
    tokens: int                       # query tokens per stream
    batch: int
    kv_tokens: int                    # KV cache size per stream before the step
    vision: bool
    lm_head_tokens: int               # LM-head rows per stream

    @property
    def query_tokens(self) -> int:
        """Query tokens of the whole batch."""
        return self.batch * self.tokens


def frame_step(cfg, kv_tokens: int, batch: int) -> Step:
    return Step("frame", "frame", cfg.model.tokens_per_frame, batch, kv_tokens, True, cfg.perf.frame_lm_head_tokens)


def question_step(cfg, kv_tokens: int, batch: int) -> Step:
    return Step("question", "frame", cfg.model.question_tokens, batch, kv_tokens, False, 1)


def decode_step(cfg, kv_tokens: int, batch: int) -> Step:
    return Step("decode", "text", 1, batch, kv_tokens, False, 1)


@dataclass(frozen=True)
class KVGeometry:
    """Where one stream's KV cache lives (``vrex.perf.memory``): the sinks and recent window (always attended), the
    older *candidates* retrieval selects from, of which the newest ``device_old`` are still in device DRAM and the
    other ``host`` in the host tier.

    Token counts are per stream; bytes per token and layer unless named otherwise.
    """

    kv_tokens: int
    window: int            # sinks + recent window, in device DRAM and always attended
    candidates: int        # older tokens: retrieval selects among them
    device_old: int        # candidates still in device DRAM (selected ones cost DRAM reads only)
    host: int              # candidates in the host tier (selected ones cross the link)
    slice_bytes: float     # K (or V) of one token in one KV head: head_dim x kv_bytes
    token_layer_bytes: float  # K and V of one token in one layer, all KV heads

    @classmethod
    def of(cls, cfg, kv_tokens: int, tier=None, batch: int = 1) -> "KVGeometry":
        """The geometry at ``kv_tokens`` per stream for ``batch`` streams on ``tier`` (default: window only)."""
        m = cfg.model
        window = min(kv_tokens, cfg.resv.recent_window_tokens + cfg.resv.sink_tokens)
        device = window if tier is None else tier.device_tokens(cfg, batch, kv_tokens)
        candidates = kv_tokens - window
        slice_bytes = m.head_dim * m.kv_bytes
        return cls(kv_tokens, window, candidates, device - window, kv_tokens - device, slice_bytes,
                   2 * m.kv_heads * slice_bytes)

    @property
    def host_share(self) -> float:
        """Fraction of the candidates (and so of a selection, taken uniformly over them) in the host tier."""
        return self.host / self.candidates if self.candidates else 0.0


def eviction_tokens(step: Step, geom: KVGeometry) -> int:
    """Tokens per stream and layer written to the host tier by this step.

    In steady state the cache size is held at ``kv_tokens`` (the paper's "KV length precomputed and maintained"),
    so once the device tier is full every new token pushes the oldest device token out (whole frames at a time,
    the same rate on average); a cache that fits in the device tier evicts nothing.
    """
    return step.tokens if geom.host > 0 else 0


# ---- decoder layer ------------------------------------------------------------------------------------------------


def qkv_work(cfg, step: Step) -> Work:
    """RMSNorm, Q/K/V projections, RoPE, and the new K/V written to DRAM."""
    m, t = cfg.model, step.query_tokens
    out = (m.query_heads + 2 * m.kv_heads) * m.head_dim
    weights = m.hidden * out * m.weight_bytes
    new_kv = t * 2 * m.kv_heads * m.head_dim * m.kv_bytes
    vector = t * (4 * m.hidden + 3 * (m.query_heads + m.kv_heads) * m.head_dim)
    return Work(matmul_flops=2 * t * m.hidden * out, vector_ops=vector) + _dram(weights + new_kv, weights)


def attention_work(cfg, step: Step, attended: float) -> Work:
    """Scores, softmax and weighted values over ``attended`` tokens per stream, then the output projection.

    GQA: each KV head's K and V are read once per stream and shared by its query heads.
    """
    m, t, b = cfg.model, step.query_tokens, step.batch
    scores = 4 * t * m.query_heads * m.head_dim * attended          # Q·K^T and P·V
    kv_read = b * attended * 2 * m.kv_heads * m.head_dim * m.kv_bytes
    softmax = 5 * t * m.query_heads * attended
    o_weights = m.query_heads * m.head_dim * m.hidden * m.weight_bytes
    o_proj = 2 * t * m.query_heads * m.head_dim * m.hidden
    return (Work(matmul_flops=scores + o_proj, vector_ops=softmax + t * m.hidden)
            + _dram(kv_read + o_weights, o_weights))


def ffn_work(cfg, step: Step) -> Work:
    """RMSNorm, SwiGLU FFN (gate, up, down) and the residual add."""
    m, t = cfg.model, step.query_tokens
    weights = 3 * m.hidden * m.ffn_dim * m.weight_bytes
    vector = t * (4 * m.hidden + 5 * m.ffn_dim + m.hidden)
    return Work(matmul_flops=2 * t * 3 * m.hidden * m.ffn_dim, vector_ops=vector) + _dram(weights, weights)


def lm_head_work(cfg, step: Step) -> Work:
    m = cfg.model
    rows = step.batch * step.lm_head_tokens
    if rows == 0:
        return Work()
    weights = m.lm_head_params * m.weight_bytes
    return Work(matmul_flops=2 * rows * m.lm_head_params, vector_ops=3 * rows * m.vocab) + _dram(weights, weights)


def vision_work(cfg, step: Step) -> Work:
    """Vision tower + MLP projector for one frame per stream (linear layers; see the module notes)."""
    if not step.vision:
        return Work()
    m = cfg.model
    weights = m.vision_params * m.weight_bytes
    return Work(matmul_flops=2 * m.vision_params * m.vision_tokens * step.batch) + _dram(weights, weights)
