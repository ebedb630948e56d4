"""The documented small transformer that turns token embeddings into per-layer post-RoPE Q/K/V.

The synthetic and the real-video traces share it: only the embeddings differ. Its **weights are random**
(seeded), its attention shapes come from the config (``model.layers``, ``query_heads``, ``kv_heads``,
``head_dim``), and it runs causal full attention, so the Q/K/V it records are self-consistent: the keys of layer
``l + 1`` depend on what layer ``l`` attended to.

Per layer ``l`` (pre-norm residual block, RMSNorm without weights, ``α = 1/√layers``)::

    h = rmsnorm(x)
    k = h W_k,  v = h W_v                          W_k, W_v ~ N(0, 1/W)         (kv_heads · head_dim columns)
    q_h = h (ρ_h W_k[g(h)] + √(1-ρ_h²) G_h)        G_h ~ N(0, 1/W), ρ_h ~ U(qk_coupling_min, qk_coupling_max)
    q, k = rope(q, pos), rope(k, pos)              rotate-half RoPE, base rope_theta, pos = token index
    o = softmax(q kᵀ/√d + causal) v  W_o           W_o ~ N(0, 1/(query_heads · head_dim))
    x = x + α·rmsnorm(o)
    x = x + α·rmsnorm(gelu(rmsnorm(x) W_1) W_2)    W_1 ~ N(0, 1/W), W_2 ~ N(0, 1/F), F = ffn_mult · W

``g(h)`` is the KV head of query head ``h`` (GQA). The coupling ``ρ_h`` makes a query head look for keys whose
content resembles its own token (logit ≈ ρ_h·√d·cos(x_i, x_j) for similar tokens), so attention concentrates on
similar tokens as in trained vision-language models; heads with small ``ρ_h`` attend diffusely. Independent
random ``W_q`` and ``W_k`` would give a random bilinear form whose attention ignores token similarity. The
residual width ``W`` (``width``, capped at ``model.hidden``) is smaller than the real model's so that edge-shaped
traces stay cheap; the attention shapes are the config's.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from vrex.errors import TraceError

from vrex.golden.traces.trace import LayerQKV

__all__ = ["TransformerSpec", "run_transformer", "rope", "seeded_generator", "rms_normalize"]


@dataclass(frozen=True)
class TransformerSpec:
    width: int = 512               # residual width W (capped at model.hidden)
    ffn_mult: float = 2.0          # FFN width F = ffn_mult · W
    rope_theta: float = 500000.0   # RoPE base (Llama-3: 500000)
    qk_coupling_min: float = 0.0   # ρ_h range, drawn per (layer, query head)
    qk_coupling_max: float = 0.9
    seed: int = 0

    def resolved_width(self, cfg) -> int:
        return max(8, min(self.width, cfg.model.hidden))

    def describe(self, cfg) -> dict:
        return {**asdict(self), "width": self.resolved_width(cfg), "weights": "random (seeded)"}


def seeded_generator(*keys) -> torch.Generator:
    """A CPU generator whose seed is a stable hash of ``keys`` (independent streams per layer, head, …)."""
    digest = hashlib.sha256(".".join(str(k) for k in keys).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


def rms_normalize(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate-half RoPE on ``x`` of shape ``(T, heads, d)`` at integer ``positions`` ``(T,)``."""
    d = x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = positions.to(torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)[:, None, :]
    half = torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + half * sin


def _normal(gen, *shape, std):
    return torch.randn(*shape, generator=gen) * std


def run_transformer(cfg, embeddings: torch.Tensor, layers, spec: TransformerSpec = TransformerSpec(), *,
                    keep_pre_rope: bool = False) -> dict[int, LayerQKV]:
    """Run the small transformer over ``embeddings`` ``(T, W)``; return Q/K/V of the requested ``layers``.

    Layers ``0 .. max(layers)`` are computed (each needs the one before); only the requested ones are kept.
    ``embeddings`` must have the resolved width (:meth:`TransformerSpec.resolved_width`).
    """
    m = cfg.model
    hq, hkv, d = m.query_heads, m.kv_heads, m.head_dim
    if d % 2:
        raise TraceError(f"model.head_dim = {d} is odd; RoPE needs an even head dimension.")
    layers = sorted(set(layers))
    if not layers or layers[0] < 0 or layers[-1] >= m.layers:
        raise TraceError(f"layers {layers} are outside 0..{m.layers - 1} (model.layers = {m.layers}).")
    T, W = embeddings.shape
    if W != spec.resolved_width(cfg):
        raise ValueError(f"embeddings have width {W}, the transformer expects {spec.resolved_width(cfg)}")
    ffn = max(8, int(spec.ffn_mult * W))
    alpha = 1.0 / math.sqrt(m.layers)
    pos = torch.arange(T)
    group = hq // hkv
    x = rms_normalize(embeddings.to(torch.float32))
    out: dict[int, LayerQKV] = {}
    with torch.no_grad():
        for l in range(layers[-1] + 1):
            gen = seeded_generator("transformer", spec.seed, l)
            wk = _normal(gen, hkv, d, W, std=W ** -0.5)
            wv = _normal(gen, hkv, d, W, std=W ** -0.5)
            rho = spec.qk_coupling_min + (spec.qk_coupling_max - spec.qk_coupling_min) * torch.rand(hq, generator=gen)
            noise = _normal(gen, hq, d, W, std=W ** -0.5)
            wq = rho[:, None, None] * wk.repeat_interleave(group, 0) + (1 - rho ** 2).sqrt()[:, None, None] * noise
            wo = _normal(gen, W, hq * d, std=(hq * d) ** -0.5)
            w1 = _normal(gen, ffn, W, std=W ** -0.5)
            w2 = _normal(gen, W, ffn, std=ffn ** -0.5)
            h = rms_normalize(x)
            q_pre = torch.einsum("tw,hdw->thd", h, wq)
            k_pre = torch.einsum("tw,hdw->thd", h, wk)
            v = torch.einsum("tw,hdw->thd", h, wv)
            q, k = rope(q_pre, pos, spec.rope_theta), rope(k_pre, pos, spec.rope_theta)
            if l in layers:
                out[l] = LayerQKV(q.contiguous(), k.contiguous(), v.contiguous(),
                                  q_pre.contiguous() if keep_pre_rope else None,
                                  k_pre.contiguous() if keep_pre_rope else None)
            if l == layers[-1]:
                break
            o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                               v.transpose(0, 1)[None], is_causal=True, enable_gqa=True)
            o = o[0].transpose(0, 1).reshape(T, hq * d) @ wo.T
            x = x + alpha * rms_normalize(o)
            x = x + alpha * rms_normalize(F.gelu(rms_normalize(x) @ w1.T) @ w2.T)
    return out
