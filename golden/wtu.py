"""Bit-exact functional reference of the WTU (WiCSum threshold unit) and of the GQA row aggregation.

Number formats (docs/formats.md §WTU), with ``B = score_bits``, ``C = count_bits``, ``R = ratio_bits``:

- score ``s``: signed two's complement, B bits, fixed point with ``score_frac_bits`` fraction bits (the LXE
  quantises ``q·k_cluster/√d`` with round-half-even and saturation, :func:`quantize_scores`);
- count ``c``: unsigned C bits (token count of the cluster, saturated by the table updater);
- transformed score ``s'``: unsigned B bits. ``shift_min``: ``s' = s - min_row(s)``; ``relu``: ``s' = max(s, 0)``;
- product ``s'·c``: unsigned B + C bits; sums: unsigned ``acc_bits = B + C + ceil(log2(row_capacity))``, which
  cannot overflow over a full row;
- ratio: unsigned ``Q0.R``, ``ratio_q = floor(ratio · 2^R + 1/2)`` (1.0 is representable as ``2^R``);
- threshold ``T = (total · ratio_q) >> R`` (floor).

Selection rules for one row (``N`` clusters, ``N ≤ row_capacity``):

- **exact**: visit clusters in descending ``s'`` (ties: lower cluster index first), adding ``s'·c``; select every
  visited cluster up to and including the first one after which the running sum is ``> T``. If the sum never
  exceeds ``T`` (``T ≥ total``, e.g. ratio 1.0 or an all-zero row), every cluster is selected.
- **bucketed** (hardware, both ``early_exit`` and ``histogram`` modes select the same set): with
  ``lo = min s'``, ``hi = max s'``, the shift ``sh`` is the smallest ``≥ 0`` with ``(hi - lo) >> sh < buckets``;
  cluster ``j`` falls in bucket ``(s'_j - lo) >> sh`` (power-of-two widths, no divider). Buckets are walked from
  the top bucket ``(hi - lo) >> sh`` down, adding each bucket's ``Σ s'·c``; the walk stops at the first bucket
  after which the running sum is ``> T`` (the *exit bucket*) and every cluster in a walked bucket is selected
  (bucket granularity, as in paper Fig. 11). If the sum never exceeds ``T`` all buckets are walked and all
  clusters selected. When every bucket holds one distinct value, the selection is the exact rule's with all
  clusters tied at the crossing score included.
- **topk**: the ``k`` clusters with the largest raw score ``s`` (ties: lower index), all of them if ``N ≤ k``.
  Top-k ignores the transform (it ranks raw scores, as the baselines do).

Aggregation: the cluster mask of a KV head is the OR of its rows' masks (``gqa_aggregation = group``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RowSelection", "transform_scores", "wicsum_threshold", "select_exact", "select_bucketed",
           "select_topk", "select_row", "aggregate_masks", "quantize_scores", "mask_to_indices"]


@dataclass(frozen=True)
class RowSelection:
    mask: int                 # bit j set: cluster j selected
    total: int                # Σ s'·c over the row
    threshold: int            # T
    accumulated: int          # running sum when the selection stopped (Σ s'·c over the selected clusters)
    lo: int = 0               # min s'
    hi: int = 0               # max s'
    shift: int = 0            # bucket width = 2**shift
    top_bucket: int = 0
    exit_bucket: int = 0      # lowest walked bucket (bucketed rule); 0 when all were walked
    buckets_walked: int = 0

    def count(self) -> int:
        return self.mask.bit_count()


def transform_scores(scores: list[int], transform: str) -> list[int]:
    """Non-negative transformed scores ``s'`` (unsigned, same width as the scores)."""
    if not scores:
        return []
    if transform == "shift_min":
        m = min(scores)
        return [s - m for s in scores]
    if transform == "relu":
        return [max(s, 0) for s in scores]
    raise ValueError(f"score transform {transform!r} has no integer form (only shift_min and relu)")


def wicsum_threshold(total: int, ratio_q: int, ratio_bits: int) -> int:
    """``T = (total · ratio_q) >> ratio_bits``."""
    return (total * ratio_q) >> ratio_bits


def _check(scores, counts):
    if len(scores) != len(counts):
        raise ValueError(f"{len(scores)} scores but {len(counts)} counts")


def select_exact(scores: list[int], counts: list[int], *, ratio_q: int, ratio_bits: int,
                 transform: str = "shift_min") -> RowSelection:
    _check(scores, counts)
    sp = transform_scores(scores, transform)
    total = sum(a * c for a, c in zip(sp, counts))
    t = wicsum_threshold(total, ratio_q, ratio_bits)
    acc, mask = 0, 0
    for j in sorted(range(len(sp)), key=lambda j: (-sp[j], j)):
        acc += sp[j] * counts[j]
        mask |= 1 << j
        if acc > t:
            break
    return RowSelection(mask, total, t, acc, min(sp, default=0), max(sp, default=0))


def bucket_shift(lo: int, hi: int, buckets: int) -> int:
    sh = 0
    while (hi - lo) >> sh >= buckets:
        sh += 1
    return sh


def select_bucketed(scores: list[int], counts: list[int], *, ratio_q: int, ratio_bits: int, buckets: int,
                    transform: str = "shift_min") -> RowSelection:
    _check(scores, counts)
    sp = transform_scores(scores, transform)
    if not sp:
        return RowSelection(0, 0, 0, 0)
    total = sum(a * c for a, c in zip(sp, counts))
    t = wicsum_threshold(total, ratio_q, ratio_bits)
    lo, hi = min(sp), max(sp)
    sh = bucket_shift(lo, hi, buckets)
    top = (hi - lo) >> sh
    sums = [0] * (top + 1)
    for a, c in zip(sp, counts):
        sums[(a - lo) >> sh] += a * c
    acc, b = 0, top
    while True:
        acc += sums[b]
        if acc > t or b == 0:
            break
        b -= 1
    mask = sum(1 << j for j, a in enumerate(sp) if (a - lo) >> sh >= b)
    return RowSelection(mask, total, t, acc, lo, hi, sh, top, b, top - b + 1)


def select_topk(scores: list[int], k: int) -> RowSelection:
    order = sorted(range(len(scores)), key=lambda j: (-scores[j], j))[:k]
    return RowSelection(sum(1 << j for j in order), 0, 0, 0)


def select_row(scores, counts, *, mode: str, ratio_q: int, ratio_bits: int, buckets: int, k: int,
               transform: str = "shift_min", rule: str = "bucketed") -> RowSelection:
    """Selection of one row as the WTU ``mode`` computes it (``rule="exact"`` for the sorted reference)."""
    if mode == "topk":
        return select_topk(scores, k)
    if rule == "exact":
        return select_exact(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, transform=transform)
    return select_bucketed(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, buckets=buckets,
                           transform=transform)


def aggregate_masks(masks) -> int:
    """OR of row masks (the selection of a GQA group / KV head)."""
    out = 0
    for m in masks:
        out |= m
    return out


def mask_to_indices(mask: int) -> list[int]:
    out, j = [], 0
    while mask:
        if mask & 1:
            out.append(j)
        mask >>= 1
        j += 1
    return out


def quantize_scores(values, score_bits: int, frac_bits: int) -> list[int]:
    """Float scores -> signed fixed point: round half to even, saturate to the B-bit range."""
    lo, hi = -(1 << (score_bits - 1)), (1 << (score_bits - 1)) - 1
    out = []
    for v in values:
        x = float(v) * (1 << frac_bits)
        if math.isnan(x):
            raise ValueError("NaN score")
        q = round(x) if math.isfinite(x) else (hi if x > 0 else lo)
        out.append(min(hi, max(lo, int(q))))
    return out
