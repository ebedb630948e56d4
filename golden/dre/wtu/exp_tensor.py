"""Vectorised twin of the exp2 rule (:mod:`.wtu_exp`) for whole WTU jobs: many rows over one cluster set.

Returns, row by row, exactly the fields of :class:`vrex.golden.dre.wtu.exp.Exp2Selection` that
:func:`~vrex.golden.dre.wtu.exp.select_exp2` computes (tests/dre/test_wtu_exp_golden.py proves it with Hypothesis over
random formats, rows, ties, flushed and saturated scores). int64 throughout: a term has at most
``count_bits + mantissa_bits + bucket_octaves - 1 ≤ 48`` bits and a row sum at most 60 (checked at config load).

With ``resident`` (``resv.threshold_mass = row``) every row also carries its resident mass ``(max (R,), total
(R,))`` (:func:`resident_mass_rows`, the twin of :func:`~vrex.golden.dre.wtu.exp.resident_mass`), and the rule is
:func:`~vrex.golden.dre.wtu.exp.select_exp2`'s row form. :func:`select_rows_mass_float` is the exact float form of
the same rule (golden only: the ``exp`` transform, and the yardstick of the fixed-point one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from vrex.golden.dre.wtu.exp import Exp2Selection, ExpParams, exp_lut
from vrex.golden.dre.wtu.wicsum_tensor import mask_int, sorted_wicsum, wicsum_thresholds

__all__ = ["Exp2JobSelection", "select_rows_exp2", "select_rows_exp2_exact", "exp2_terms", "resident_mass_rows",
           "select_rows_mass_float"]


@dataclass
class Exp2JobSelection:
    masks: torch.Tensor          # bool (R, N)
    total: torch.Tensor          # int64 (R,)
    threshold: torch.Tensor
    accumulated: torch.Tensor
    top_bin: torch.Tensor
    exit_bin: torch.Tensor
    bins_walked: torch.Tensor
    refine_walks: torch.Tensor   # int64 (R, refine_passes); 0 for a pass not run
    bound: torch.Tensor
    bound_shift: torch.Tensor
    all_selected: torch.Tensor   # bool (R,)
    resident: torch.Tensor       # int64 (R,): r, the resident mass at the joint anchor (0 without resident input)
    none_selected: torch.Tensor  # bool (R,): T < 0, the row selects nothing (row mode only)

    @classmethod
    def empty(cls, rows: int, passes: int) -> "Exp2JobSelection":
        """The selection of ``rows`` rows over no clusters (``passes`` refinement-walk columns)."""
        z = torch.zeros(rows, dtype=torch.int64)
        f = torch.zeros(rows, dtype=torch.bool)
        return cls(torch.zeros(rows, 0, dtype=torch.bool), z, z, z, z, z, z,
                   torch.zeros(rows, passes, dtype=torch.int64), z, z, f, z, f)

    @property
    def buckets_walked(self) -> torch.Tensor:
        return self.bins_walked

    @property
    def top_bucket(self) -> torch.Tensor:
        return self.top_bin

    def row(self, i: int) -> Exp2Selection:
        alls = bool(self.all_selected[i])
        walks = () if alls else tuple(int(x) for x in self.refine_walks[i] if x)
        return Exp2Selection(mask_int(self.masks[i]), int(self.total[i]), int(self.threshold[i]),
                             int(self.accumulated[i]), int(self.top_bin[i]), int(self.exit_bin[i]),
                             int(self.bins_walked[i]), walks, int(self.bound[i]), int(self.bound_shift[i]), alls,
                             int(self.resident[i]), bool(self.none_selected[i]))


def exp2_terms(scores: torch.Tensor, counts: torch.Tensor, p: ExpParams, top: torch.Tensor | None = None):
    """``(top bin A (R,), window index i (R, N), in window (R, N), term (R, N))`` of every cluster of every row
    (``top``: the anchor bin of each row instead of the row maximum's, e.g. the joint one of the row rule)."""
    S = p.bin_shift
    b = scores >> S
    top = b.max(1).values if top is None else top
    idx = top[:, None] - b
    inside = idx < p.buckets
    pos = scores - (b << S)
    lut = torch.tensor(exp_lut(p.lut_entries, p.mantissa_bits), dtype=torch.int64)
    m = lut[(pos & ((1 << p.frac_bits) - 1)) >> (p.frac_bits - p.lut_bits)]
    term = torch.where(inside, (counts[None, :] * m) << (pos >> p.frac_bits), 0)
    return top, idx, inside, term


def resident_mass_rows(scores: torch.Tensor, valid: torch.Tensor, params: ExpParams,
                       sum_bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`vrex.golden.dre.wtu.exp.resident_mass` of every row: ``scores`` ``(R, n)`` quantised resident scores,
    ``valid`` ``(R, n)`` which of them the row attends; ``(max (R,), total (R,))`` int64, ``(0, 0)`` for a row with
    none."""
    p = params
    scores = scores.to(torch.int64)
    R, n = scores.shape
    z = torch.zeros(R, dtype=torch.int64)
    if n == 0:
        return z, z.clone()
    has = valid.any(1)
    low = torch.iinfo(torch.int64).min
    mx = torch.where(valid, scores, low).max(1).values
    mx = torch.where(has, mx, 0)
    _, idx, inside, term = exp2_terms(scores, torch.ones(n, dtype=torch.int64), p, mx >> p.bin_shift)
    inside = inside & valid
    masses = torch.zeros(R, p.buckets, dtype=torch.int64).scatter_add_(1, torch.where(inside, idx, 0),
                                                                         torch.where(inside, term, 0))
    total = (masses >> (torch.arange(p.buckets) << p.octave_shift)[None, :]).sum(1)
    return mx, torch.where(has, total.clamp(max=(1 << sum_bits) - 1), 0)


def _joint_anchor(scores: torch.Tensor, p: ExpParams, resident):
    """``(A (R,), r (R,))``: :func:`vrex.golden.dre.wtu.exp._joint_anchor` of every row."""
    top = (scores >> p.bin_shift).max(1).values
    if resident is None:
        return top, torch.zeros_like(top)
    rmax, rsum = (x.to(torch.int64) for x in resident)
    has = rsum > 0
    b_res = rmax >> p.bin_shift
    joint = torch.where(has, torch.maximum(top, b_res), top)
    shift = ((joint - b_res) << p.octave_shift).clamp(0, 63)
    return joint, torch.where(has, rsum >> shift, 0)


def select_rows_exp2(scores: torch.Tensor, counts: torch.Tensor, *, ratio_q: int, ratio_bits: int,
                     params: ExpParams, resident=None) -> Exp2JobSelection:
    """:func:`vrex.golden.dre.wtu.exp.select_exp2` for every row of ``scores`` ``(R, N)`` with ``counts`` ``(N,)``;
    ``resident``: ``(max (R,), total (R,))`` of the row rule, or ``None``."""
    p = params
    scores, counts = scores.to(torch.int64), counts.to(torch.int64)
    R, N = scores.shape
    z = torch.zeros(R, dtype=torch.int64)
    if N == 0:
        return Exp2JobSelection.empty(R, p.refine_passes)
    S, o, K, D = p.bin_shift, p.octave_shift, p.buckets, p.digit_bits
    top, r = _joint_anchor(scores, p, resident)
    top, idx, inside, term = exp2_terms(scores, counts, p, top)
    masses = torch.zeros(R, K, dtype=torch.int64).scatter_add_(1, torch.where(inside, idx, 0), term)
    q = masses >> (torch.arange(K) << o)[None, :]
    total = q.sum(1)
    thr = wicsum_thresholds(r + total, ratio_q, ratio_bits) - r
    none = thr < 0
    alls = thr >= total
    cum = torch.cumsum(q, 1)
    over = cum > thr[:, None]
    e = torch.where(alls, 0, over.to(torch.int8).argmax(1).to(torch.int64))
    acc_before = torch.gather(cum - q, 1, e[:, None])[:, 0]
    k = e << o
    low = (top - e) << S
    w = torch.full((R,), S, dtype=torch.int64)
    r_base = z.clone()
    r_loc = torch.gather(masses, 1, e[:, None])[:, 0]
    walks = []
    nb = 1 << D
    running = ~alls & ~none
    for _ in range(p.refine_passes):
        win = (scores >= low[:, None]) & (scores < (low + (1 << w))[:, None])
        running = running & (win.sum(1) >= 2)        # a window of one member is not refined (nor below it)
        u_idx = torch.where(win, (scores - low[:, None]) >> (w - D)[:, None], 0)
        sub = torch.zeros(R, nb, dtype=torch.int64).scatter_add_(1, u_idx, torch.where(win, term, 0))
        run = r_base[:, None] + torch.cumsum(torch.flip(sub, [1]), 1)          # column t: sub-bin nb-1-t
        hit = (acc_before[:, None] + (run >> k[:, None])) > thr[:, None]
        t = torch.where(hit.any(1), hit.to(torch.int8).argmax(1).to(torch.int64), nb - 1)
        u = nb - 1 - t
        r_loc = torch.where(running, torch.gather(run, 1, t[:, None])[:, 0], r_loc)
        r_base = torch.where(running, r_loc - torch.gather(sub, 1, u[:, None])[:, 0], r_base)
        low = torch.where(running, low + (u << (w - D)), low)
        w = torch.where(running, w - D, w)
        walks.append(torch.where(running, t + 1, 0))
    if p.fill == "bucket":
        masks = scores >= low[:, None]
        acc = acc_before + (r_loc >> k)
    else:
        hi = low + (1 << w)
        above = scores >= hi[:, None]
        win = (scores >= low[:, None]) & ~above
        t_win = torch.where(win, term, 0)
        before = r_base[:, None] + torch.cumsum(t_win, 1) - t_win
        take = win & ((acc_before[:, None] + (before >> k[:, None])) <= thr[:, None])
        masks = above | take
        acc = acc_before + ((r_base + torch.where(take, term, 0).sum(1)) >> k)
    walks_t = torch.stack(walks, 1) if walks else torch.zeros(R, 0, dtype=torch.int64)
    masks = (masks | alls[:, None]) & ~none[:, None]
    fixed = alls | none                          # rows without a walk
    return Exp2JobSelection(masks, total, thr, torch.where(alls, total, torch.where(none, 0, acc)), top,
                            torch.where(fixed, 0, e), torch.where(fixed, 0, e + 1),
                            torch.where(fixed[:, None], 0, walks_t), torch.where(fixed, 0, low),
                            torch.where(fixed, 0, w), alls, r, none)


def select_rows_exp2_exact(scores: torch.Tensor, counts: torch.Tensor, *, ratio_q: int, ratio_bits: int,
                           params: ExpParams, resident=None) -> Exp2JobSelection:
    """:func:`vrex.golden.dre.wtu.exp.select_exp2_exact` for every row (the exact sorted rule on the exp2 weights)."""
    p = params
    scores, counts = scores.to(torch.int64), counts.to(torch.int64)
    R, N = scores.shape
    z = torch.zeros(R, dtype=torch.int64)
    zw = torch.zeros(R, 0, dtype=torch.int64)
    if N == 0:
        return Exp2JobSelection.empty(R, 0)
    top, r = _joint_anchor(scores, p, resident)
    top, idx, inside, term = exp2_terms(scores, counts, p, top)
    vals = term >> torch.where(inside, idx << p.octave_shift, 0)
    total = vals.sum(1)
    thr = wicsum_thresholds(r + total, ratio_q, ratio_bits) - r
    none = thr < 0
    masks, acc = sorted_wicsum(scores, vals, thr)
    acc = torch.where(none, 0, acc)
    return Exp2JobSelection(masks & ~none[:, None], total, thr, acc, top, z, z, zw, z, z, (acc <= thr) & ~none, r,
                            none)


def select_rows_mass_float(values: torch.Tensor, counts: torch.Tensor, resident: torch.Tensor,
                           resident_valid: torch.Tensor, ratio: float, *, base2: bool = True):
    """The exact float form of the row rule: ``(masks (R, N) bool, none (R,) bool)``.

    ``values`` ``(R, N)`` cluster scores, ``resident`` ``(R, n)`` the scores of what each row attends anyway
    (``resident_valid`` marks them), in log2 units (``base2``: weights ``2^(s - M)``) or natural ones (``exp(s -
    M)``), float64, all against one row maximum ``M`` over both. ``m = Σ resident weights``, ``W = Σ c·w``; clusters
    in descending score (ties: lower index) are selected up to and including the first after which their sum exceeds
    ``T = ratio·(m + W) - m``; nothing when ``T < 0``, everything when the sum never exceeds ``T``."""
    R, N = values.shape
    if N == 0:
        return torch.zeros(R, 0, dtype=torch.bool), torch.zeros(R, dtype=torch.bool)
    fn = torch.exp2 if base2 else torch.exp
    v = values.to(torch.float64)
    u = torch.where(resident_valid, resident.to(torch.float64), -math.inf)
    top = v.max(1).values
    if u.shape[1]:
        top = torch.maximum(top, u.max(1).values)
    w = fn(v - top[:, None]) * counts.to(torch.float64)[None, :]
    m = fn(u - top[:, None]).sum(1)
    thr = ratio * (m + w.sum(1)) - m
    none = thr < 0
    return sorted_wicsum(v, w, thr)[0] & ~none[:, None], none
