"""Vectorised twins of the WTU reference (golden/wtu.py) for whole WTU jobs: many rows over one cluster set.

The ReSV session calls these for speed; they return, row by row, exactly the fields of
:class:`vrex.golden.wtu.RowSelection` that :func:`~vrex.golden.wtu.select_row` computes, and exactly the
integers of :func:`~vrex.golden.wtu.quantize_scores`. tests/test_golden_wtu_tensor.py proves the equality with
Hypothesis over random formats, row lengths, ties, negative and saturated scores; the session's ``engine =
"reference"`` calls the reference functions row by row instead, and ``record_jobs`` replays recorded jobs through
them. Integer arithmetic is int64 throughout: products fit in ``score_bits + count_bits ≤ 48`` bits and row sums
in 60 bits; the threshold ``(total · ratio_q) >> R`` is split as ``(total >> R)·ratio_q + ((total mod 2^R)·ratio_q
>> R)``, which is exact and cannot overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .wtu import RowSelection, signed_range

__all__ = ["JobSelection", "mask_int", "quantize_tensor", "quantize_counted", "select_rows", "select_rows_float_exact"]


def mask_int(row: torch.Tensor) -> int:
    """A bool row as the reference's integer mask (bit ``j`` set: cluster ``j`` selected)."""
    return sum(1 << j for j in torch.nonzero(row).flatten().tolist())


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
    """:func:`vrex.golden.wtu.quantize_scores` on a tensor: round half to even, saturate; int64 result."""
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


def _threshold(total: torch.Tensor, ratio_q: int, ratio_bits: int) -> torch.Tensor:
    low = total & ((1 << ratio_bits) - 1)
    return (total >> ratio_bits) * ratio_q + ((low * ratio_q) >> ratio_bits)


def _sorted_wicsum(sp: torch.Tensor, prod: torch.Tensor, thr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact rule on ``(R, N)`` rows, ``N ≥ 1``: visit clusters in descending ``sp`` (ties: lower index), select
    up to and including the first after which ``Σ prod > thr`` (all if never); bool masks and the sum at the stop."""
    R, N = sp.shape
    order = torch.sort(sp, dim=1, descending=True, stable=True).indices
    cum = torch.cumsum(torch.gather(prod, 1, order), 1)
    over = cum > thr[:, None]
    stop = torch.where(over.any(1), over.to(torch.int8).argmax(1), torch.full((R,), N - 1))
    picked = torch.arange(N)[None, :] <= stop[:, None]
    masks = torch.zeros(R, N, dtype=torch.bool).scatter_(1, order, picked)
    return masks, torch.gather(cum, 1, stop[:, None])[:, 0]


def select_rows(scores: torch.Tensor, counts: torch.Tensor, *, mode: str, ratio_q: int, ratio_bits: int,
                buckets: int, k: int, transform: str = "shift_min", rule: str = "bucketed", exp=None):
    """:func:`vrex.golden.wtu.select_row` for every row of ``scores`` ``(R, N)`` int64 with ``counts`` ``(N,)``
    (an :class:`~vrex.golden.wtu_exp_tensor.Exp2JobSelection` for the exp2 transform)."""
    scores = scores.to(torch.int64)
    counts = counts.to(torch.int64)
    R, N = scores.shape
    z = _zeros(R)
    if transform == "exp2" and mode != "topk":
        from .wtu_exp_tensor import select_rows_exp2, select_rows_exp2_exact
        fn = select_rows_exp2_exact if rule == "exact" else select_rows_exp2
        return fn(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, params=exp)
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
    thr = _threshold(total, ratio_q, ratio_bits)
    lo, hi = sp.min(1).values, sp.max(1).values
    if rule == "exact":
        masks, acc = _sorted_wicsum(sp, prod, thr)
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
    return _sorted_wicsum(sp, prod, ratio * prod.sum(1))[0]
