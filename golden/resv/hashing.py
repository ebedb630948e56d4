"""Hash bits of keys: N_hp random hyperplanes per context, sign binarisation, packing into integer codes.

- Hyperplanes ``W`` ``(dim, hash_bits)``: Gaussian ``N(0, 1)`` or Rademacher ``±1`` (``resv.hyperplanes``), drawn
  from a generator seeded by ``(resv.hyperplane_seed, layer, head)`` — the layer and head parts are dropped for
  ``hyperplane_sharing`` = ``per_layer`` / ``global``. ``dim`` is ``head_dim`` (``cluster_scope: kv_head``) or
  ``kv_heads · head_dim`` (``cluster_scope: layer``, keys of all KV heads concatenated).
- Code bit ``m`` of key ``k`` is ``1`` iff ``k · W[:, m] > 0`` (paper §IV-B: ``x ≤ 0 → 0``), computed in float32.
- Packing: bit ``m`` of the integer code is hyperplane ``m`` (bit 0 = hyperplane 0), the convention of the HCU's
  code words (docs/formats.md).
"""

from __future__ import annotations

import torch

from vrex.errors import TraceError

from vrex.golden.traces.transformer import seeded_generator

__all__ = ["hyperplanes", "hash_contexts", "hash_bits", "pack_codes", "hash_codes", "hamming_matrix",
           "pair_similarities", "pearson"]


def hyperplanes(cfg, layer: int, head: int, dim: int) -> torch.Tensor:
    r = cfg.resv
    keys = {"per_layer_head": (layer, head), "per_layer": (layer, -1), "global": (-1, -1)}[r.hyperplane_sharing]
    gen = seeded_generator("hyperplanes", r.hyperplane_seed, *keys)
    w = torch.randn(dim, r.hash_bits, generator=gen)
    if r.hyperplanes == "rademacher":
        w = torch.where(w >= 0, 1.0, -1.0)
    return w


def hash_contexts(cfg, layer: int, data, heads) -> list[tuple[int | None, torch.Tensor, torch.Tensor]]:
    """The hashing contexts of one layer as ``(head, keys (T, dim), hyperplanes (dim, hash_bits))``.

    ``resv.hashed_key`` picks post- or pre-RoPE keys; ``cluster_scope: kv_head`` gives one context per KV head in
    ``heads``, ``layer`` one context (head ``None``) over the keys of all KV heads concatenated.
    """
    keys = data.k if cfg.resv.hashed_key == "post_rope" else data.k_pre
    if keys is None:
        raise TraceError("resv.hashed_key = pre_rope needs pre-RoPE keys (kpre.<l>) in the trace.")
    T, hkv, d = keys.shape
    if cfg.resv.cluster_scope == "kv_head":
        return [(h, keys[:, h], hyperplanes(cfg, layer, h, d)) for h in heads]
    return [(None, keys.reshape(T, hkv * d), hyperplanes(cfg, layer, -1, hkv * d))]


def hash_bits(keys: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
    """Boolean ``(n, hash_bits)``: bit ``m`` = ``keys · planes[:, m] > 0``."""
    return (keys.to(torch.float32) @ planes) > 0


def pack_codes(bits: torch.Tensor) -> list[int]:
    """Pack boolean rows into Python integers, bit ``m`` of the code = column ``m``."""
    n, width = bits.shape
    if width <= 62:
        weights = torch.ones(width, dtype=torch.int64) << torch.arange(width, dtype=torch.int64)
        return (bits.to(torch.int64) * weights).sum(1).tolist()
    out = []
    for row in bits.tolist():
        code = 0
        for m, b in enumerate(row):
            if b:
                code |= 1 << m
        out.append(code)
    return out


def hash_codes(keys: torch.Tensor, planes: torch.Tensor) -> list[int]:
    return pack_codes(hash_bits(keys, planes))


def hamming_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamming distances between boolean code rows ``a`` ``(n, N)`` and ``b`` ``(m, N)`` → ``(n, m)``."""
    af, bf = a.to(torch.float32), b.to(torch.float32)
    return (af @ (1 - bf).T + (1 - af) @ bf.T).round().to(torch.int64)


def pair_similarities(keys_a: torch.Tensor, keys_b: torch.Tensor, planes: torch.Tensor):
    """Cosine similarity and Hamming distance of every pair ``a × b``, flattened (float64)."""
    na = torch.nn.functional.normalize(keys_a.float(), dim=-1)
    nb = torch.nn.functional.normalize(keys_b.float(), dim=-1)
    ham = hamming_matrix(hash_bits(keys_a, planes), hash_bits(keys_b, planes))
    return (na @ nb.T).flatten().to(torch.float64), ham.flatten().to(torch.float64)


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation; NaN when either input is constant."""
    x, y = x - x.mean(), y - y.mean()
    den = (x.square().sum() * y.square().sum()).sqrt()
    return float((x * y).sum() / den) if den > 0 else float("nan")

