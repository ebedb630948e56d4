"""Vectorised twin of the exp2 rule (:mod:`.wtu_exp`) for whole WTU jobs: many rows over one cluster set.

Returns, row by row, exactly the fields of :class:`vrex.golden.dre.wtu.exp.Exp2Selection` that
:func:`~vrex.golden.dre.wtu.exp.select_exp2` computes (tests/dre/test_wtu_exp_golden.py proves it with Hypothesis over
random formats, rows, ties, flushed and saturated scores). int64 throughout: a term has at most
``count_bits + mantissa_bits + bucket_octaves - 1 ≤ 48`` bits and a row sum at most 60 (checked at config load).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vrex.golden.dre.wtu.exp import Exp2Selection, ExpParams, exp_lut
from vrex.golden.dre.wtu.wicsum_tensor import mask_int, sorted_wicsum, wicsum_thresholds

__all__ = ["Exp2JobSelection", "select_rows_exp2", "select_rows_exp2_exact", "exp2_terms"]


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

    @classmethod
    def empty(cls, rows: int, passes: int) -> "Exp2JobSelection":
        """The selection of ``rows`` rows over no clusters (``passes`` refinement-walk columns)."""
        z = torch.zeros(rows, dtype=torch.int64)
        return cls(torch.zeros(rows, 0, dtype=torch.bool), z, z, z, z, z, z,
                   torch.zeros(rows, passes, dtype=torch.int64), z, z, torch.zeros(rows, dtype=torch.bool))

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
                             int(self.bins_walked[i]), walks, int(self.bound[i]), int(self.bound_shift[i]), alls)


def exp2_terms(scores: torch.Tensor, counts: torch.Tensor, p: ExpParams):
    """``(top bin A (R,), window index i (R, N), in window (R, N), term (R, N))`` of every cluster of every row."""
    S = p.bin_shift
    b = scores >> S
    top = b.max(1).values
    idx = top[:, None] - b
    inside = idx < p.buckets
    pos = scores - (b << S)
    lut = torch.tensor(exp_lut(p.lut_entries, p.mantissa_bits), dtype=torch.int64)
    m = lut[(pos & ((1 << p.frac_bits) - 1)) >> (p.frac_bits - p.lut_bits)]
    term = torch.where(inside, (counts[None, :] * m) << (pos >> p.frac_bits), 0)
    return top, idx, inside, term


def select_rows_exp2(scores: torch.Tensor, counts: torch.Tensor, *, ratio_q: int, ratio_bits: int,
                     params: ExpParams) -> Exp2JobSelection:
    """:func:`vrex.golden.dre.wtu.exp.select_exp2` for every row of ``scores`` ``(R, N)`` with ``counts`` ``(N,)``."""
    p = params
    scores, counts = scores.to(torch.int64), counts.to(torch.int64)
    R, N = scores.shape
    z = torch.zeros(R, dtype=torch.int64)
    if N == 0:
        return Exp2JobSelection.empty(R, p.refine_passes)
    S, o, K, D = p.bin_shift, p.octave_shift, p.buckets, p.digit_bits
    top, idx, inside, term = exp2_terms(scores, counts, p)
    masses = torch.zeros(R, K, dtype=torch.int64).scatter_add_(1, torch.where(inside, idx, 0), term)
    q = masses >> (torch.arange(K) << o)[None, :]
    total = q.sum(1)
    thr = wicsum_thresholds(total, ratio_q, ratio_bits)
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
    running = ~alls
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
    masks = masks | alls[:, None]
    return Exp2JobSelection(masks, total, thr, torch.where(alls, total, acc), top, e,
                            torch.where(alls, 0, e + 1), torch.where(alls[:, None], 0, walks_t),
                            torch.where(alls, 0, low), torch.where(alls, 0, w), alls)


def select_rows_exp2_exact(scores: torch.Tensor, counts: torch.Tensor, *, ratio_q: int, ratio_bits: int,
                           params: ExpParams) -> Exp2JobSelection:
    """:func:`vrex.golden.dre.wtu.exp.select_exp2_exact` for every row (the exact sorted rule on the exp2 weights)."""
    p = params
    scores, counts = scores.to(torch.int64), counts.to(torch.int64)
    R, N = scores.shape
    z = torch.zeros(R, dtype=torch.int64)
    zw = torch.zeros(R, 0, dtype=torch.int64)
    if N == 0:
        return Exp2JobSelection.empty(R, 0)
    top, idx, inside, term = exp2_terms(scores, counts, p)
    vals = term >> torch.where(inside, idx << p.octave_shift, 0)
    total = vals.sum(1)
    thr = wicsum_thresholds(total, ratio_q, ratio_bits)
    masks, acc = sorted_wicsum(scores, vals, thr)
    return Exp2JobSelection(masks, total, thr, acc, top, z, z, zw, z, z, acc <= thr)
