"""Vectorised twins of the WTU reference (golden/dre/wtu/linear.py) for whole WTU jobs: many rows over one cluster set.

The ReSV session calls these for speed; they return, row by row, exactly the fields of
:class:`vrex.golden.dre.wtu.linear.RowSelection` that :func:`~vrex.golden.dre.wtu.linear.select_row` computes, and exactly the
integers of :func:`~vrex.golden.dre.wtu.linear.quantize_scores`. tests/dre/test_wtu_tensor_golden.py proves the equality with
Hypothesis over random formats, row lengths, ties, negative and saturated scores; the session's ``engine =
"reference"`` calls the reference functions row by row instead, and ``record_jobs`` replays recorded jobs through
them. Integer arithmetic is int64 throughout: products fit in ``score_bits + count_bits ≤ 48`` bits and row sums
in 60 bits; the threshold ``(total · ratio_q) >> R`` is split as ``(total >> R)·ratio_q + ((total mod 2^R)·ratio_q
>> R)``, which is exact and cannot overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vrex.golden.dre.wtu.linear import RowSelection, signed_range
from vrex.golden.dre.wtu.wicsum_tensor import mask_int, sorted_wicsum, wicsum_thresholds

__all__ = ["JobSelection", "mask_int", "quantize_tensor", "quantize_counted", "select_rows", "select_rows_float_exact"]


@dataclass
class JobSelection:
    """Per-row results of one WTU job (``R`` rows over ``N`` clusters)."""

    masks: torch.Tensor            # bool (R, N)
    total: torch.Tensor            # int64 (R,)
    threshold: torch.Tensor
    accumulated: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor
    shift: torch.Tensor
    top_bucket: torch.Tensor
    exit_bucket: torch.Tensor
    buckets_walked: torch.Tensor

    def row(self, i: int) -> RowSelection:
        """Row ``i`` as the reference's :class:`RowSelection` (mask bit ``j`` = cluster ``j``)."""
        f = [int(getattr(self, n)[i]) for n in ("total", "threshold", "accumulated", "lo", "hi", "shift",
                                                 "top_bucket", "exit_bucket", "buckets_walked")]
        return RowSelection(mask_int(self.masks[i]), *f)


def quantize_tensor(values: torch.Tensor, score_bits: int, frac_bits: int) -> torch.Tensor:
    """:func:`vrex.golden.dre.wtu.linear.quantize_scores` on a tensor: round half to even, saturate; int64 result."""
    return quantize_counted(values, score_bits, frac_bits)[0]


def quantize_counted(values: torch.Tensor, score_bits: int, frac_bits: int) -> tuple[torch.Tensor, int]:
    """:func:`quantize_tensor` and the number of values that saturated (rounded outside the B-bit range)."""
    x = values.to(torch.float64) * float(1 << frac_bits)
    if torch.isnan(x).any():
        raise ValueError("NaN score")
    lo, hi = signed_range(score_bits)
    rounded = torch.round(x)
    return rounded.clamp(lo, hi).to(torch.int64), int(((rounded > hi) | (rounded < lo)).sum())


def _zeros(r: int) -> torch.Tensor:
    return torch.zeros(r, dtype=torch.int64)


def select_rows(scores: torch.Tensor, counts: torch.Tensor, *, mode: str, ratio_q: int, ratio_bits: int,
                buckets: int, k: int, transform: str = "shift_min", rule: str = "bucketed", exp=None, resident=None):
    """:func:`vrex.golden.dre.wtu.linear.select_row` for every row of ``scores`` ``(R, N)`` int64 with ``counts`` ``(N,)``
    (an :class:`~vrex.golden.dre.wtu.exp_tensor.Exp2JobSelection` for the exp2 transform); ``resident``: ``(max (R,),
    total (R,))`` of the row rule (``resv.threshold_mass = row``, exp2 only)."""
    scores = scores.to(torch.int64)
    counts = counts.to(torch.int64)
    R, N = scores.shape
    z = _zeros(R)
    if resident is not None and (transform != "exp2" or mode == "topk"):
        raise ValueError("a resident mass (threshold_mass = row) needs the exp2 transform in a WiCSum mode")
    if transform == "exp2" and mode != "topk":
        from vrex.golden.dre.wtu.exp_tensor import select_rows_exp2, select_rows_exp2_exact
        fn = select_rows_exp2_exact if rule == "exact" else select_rows_exp2
        return fn(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, params=exp, resident=resident)
    if mode == "topk":
        masks = torch.zeros(R, N, dtype=torch.bool)
        if N:
            order = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :k]
            masks.scatter_(1, order, True)
        return JobSelection(masks, z, z, z, z, z, z, z, z, z)
    if N == 0:
        return JobSelection(torch.zeros(R, 0, dtype=torch.bool), z, z, z, z, z, z, z, z, z)
    if transform == "shift_min":
        sp = scores - scores.min(1, keepdim=True).values
    elif transform == "relu":
        sp = scores.clamp(min=0)
    else:
        raise ValueError(f"score transform {transform!r} has no integer form (only shift_min and relu)")
    prod = sp * counts[None, :]
    total = prod.sum(1)
    thr = wicsum_thresholds(total, ratio_q, ratio_bits)
    lo, hi = sp.min(1).values, sp.max(1).values
    if rule == "exact":
        masks, acc = sorted_wicsum(sp, prod, thr)
        return JobSelection(masks, total, thr, acc, lo, hi, z, z, z, z)
    span = hi - lo
    sh = _zeros(R)
    while True:
        more = (span >> sh) >= buckets
        if not more.any():
            break
        sh = sh + more.to(torch.int64)
    top = span >> sh
    idx = (sp - lo[:, None]) >> sh[:, None]
    sums = torch.zeros(R, buckets, dtype=torch.int64).scatter_add_(1, idx, prod)
    suffix = torch.flip(torch.cumsum(torch.flip(sums, [1]), 1), [1])        # Σ of buckets ≥ b
    b = torch.arange(buckets)[None, :]
    over = (suffix > thr[:, None]) & (b <= top[:, None])
    exit_b = torch.where(over.any(1), (over.to(torch.int64) * (b + 1)).max(1).values - 1, _zeros(R))
    acc = torch.gather(suffix, 1, exit_b[:, None])[:, 0]
    masks = idx >= exit_b[:, None]
    return JobSelection(masks, total, thr, acc, lo, hi, sh, top, exit_b, top - exit_b + 1)


def select_rows_float_exact(values: torch.Tensor, counts: torch.Tensor, ratio: float) -> torch.Tensor:
    """Golden-only ``exp`` transform: ``s' = exp(s - max_row)`` in float64, exact sorted WiCSum; bool masks."""
    R, N = values.shape
    if N == 0:
        return torch.zeros(R, 0, dtype=torch.bool)
    sp = torch.exp(values.to(torch.float64) - values.to(torch.float64).max(1, keepdim=True).values)
    prod = sp * counts.to(torch.float64)[None, :]
    return sorted_wicsum(sp, prod, ratio * prod.sum(1))[0]
