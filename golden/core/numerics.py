"""The retrieval path in the LXE's numerics: where the float ReSV session and the BF16 hardware meet.

The float session (:mod:`vrex.golden.resv.session`) hashes float32 keys, keeps float64 key sums and scores in float32 before
quantising. The core computes every step on the LXE (docs/formats.md §LXE, §Core), and this module is its
contract, step by step:

1. **Operands.** Keys, queries and values of the trace (float32) and the hyperplanes (float32 Gaussian) reach the
   LXE as BF16: :func:`bf16_of` (RNE, FTZ, canonical NaN — :func:`vrex.golden.lxe.numerics.from_float`).
2. **Hash bit** m of a key: the MAC tree's dot product of the BF16 key and the BF16 hyperplane m (``lxe.dpe_inputs``
   per beat, one RNE to FP32), then the VPE ``sign`` op: 1 iff the FP32 result is > 0 (zeros, NaN and ±Inf give 0).
3. **Key sum** of a cluster: FP32, starting at +0; each member, in token order, is added by the VPE ``add`` op
   (``a`` = the FP32 sum, ``b`` = the BF16 key element; one RNE to FP32 per addition).
4. **Mean key**: VPE ``mul`` of the FP32 sum by ``recip(count)``, the BF16 RNE of 1/count (:func:`recip_bf16`), the
   product rounded once to BF16.
5. **Score** of a query row and a cluster: the MAC tree's dot product of the BF16 query and the BF16 mean key
   (FP32), then the VPE ``fixed`` op with ``b`` = BF16(1/√d), or BF16(log2(e)/√d) for ``exp2`` scores
   (``Config.score_scale``): the WTU's signed fixed-point
   score (``dre.wtu.score_bits``, ``score_frac_bits``; RNE, saturating). No further quantisation.

Everything after the score (WiCSum / top-k selection, aggregation) and before the hash (the HCU's assignment) is the
blocks' own bit-exact contract, unchanged.
"""

from __future__ import annotations

import math

from ..lxe.mac_tree import dot
from ..lxe.numerics import BF16, FP32, from_float, round_scaled
from ..lxe.vpe import lane_op

__all__ = ["bf16_of", "bf16_rows", "recip_bf16", "inv_sqrt_bf16", "hash_code", "add_key", "mean_key", "score",
           "LxeParams"]


def bf16_of(x: float) -> int:
    """BF16 bits of a float (RNE, FTZ after rounding, canonical NaN)."""
    return from_float(float(x), BF16)


def bf16_rows(t) -> list[list[int]]:
    """BF16 bits of a 2-D float tensor, row by row."""
    return [[from_float(v, BF16) for v in row] for row in t.tolist()]


def recip_bf16(count: int) -> int:
    """BF16 bits of 1/count rounded once (RNE) from the exact quotient; ``count`` ≥ 1."""
    if count < 1:
        raise ValueError("a cluster count is at least 1")
    k = count.bit_length() + 10
    q, r = divmod(1 << k, count)
    return round_scaled(2 * q + (r != 0), -k - 1, BF16)


def inv_sqrt_bf16(head_dim: int) -> int:
    """BF16 bits of 1/√head_dim."""
    return bf16_of(1.0 / math.sqrt(head_dim))


class LxeParams:
    """The LXE parameters the retrieval path uses, from a config."""

    def __init__(self, cfg):
        x, w = cfg.lxe, cfg.dre.wtu
        self.n, self.G = x.dpe_inputs, x.guard_bits
        self.score_bits, self.score_frac = w.score_bits, w.score_frac_bits
        self.scale = bf16_of(cfg.score_scale)       # 1/√d, × log2(e) for exp2 scores


def hash_code(p: LxeParams, key: list[int], planes: list[list[int]]) -> int:
    """The hash code of a BF16 key: bit m from hyperplane ``planes[m]`` (BF16, one list per hyperplane)."""
    code = 0
    for m, plane in enumerate(planes):
        fp32, _ = dot(key, plane, p.n, p.G)
        if lane_op("sign", fp32, 0, guard_bits=p.G).flag:
            code |= 1 << m
    return code


def add_key(p: LxeParams, sums: list[int] | None, key: list[int]) -> list[int]:
    """FP32 sum + BF16 key, element by element (``None``: a new cluster, the sum starts at +0)."""
    base = sums if sums is not None else [0] * len(key)
    return [lane_op("add", a, b, guard_bits=p.G).value for a, b in zip(base, key, strict=True)]


def mean_key(p: LxeParams, sums: list[int], count: int) -> list[int]:
    """BF16 mean key: each FP32 sum element times BF16(1/count), rounded once to BF16."""
    r = recip_bf16(count)
    return [lane_op("mul", a, r, guard_bits=p.G).bf16 for a in sums]


def score(p: LxeParams, query: list[int], mean: list[int]) -> int:
    """The WTU score of a BF16 query row against a BF16 mean key."""
    fp32, _ = dot(query, mean, p.n, p.G)
    v = lane_op("fixed", fp32, p.scale, guard_bits=p.G, fixed_bits=p.score_bits, fixed_frac=p.score_frac).value
    return v - (1 << 32) if v >> 31 else v


def fp32_to_float(bits: int) -> float:
    """For reports: an FP32 pattern as a float."""
    from ..lxe.numerics import to_float

    return to_float(bits, FP32)
