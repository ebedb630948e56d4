"""Bit-exact reference of the WTU's ``exp2`` selection: softmax-like weights in fixed point, bins anchored at the
row maximum, refinement passes over the exit bin, and an optional greedy fill of the final bin.

Scores arrive in **log2 units**: the LXE folds ``log2(e)/√d`` into the query (``q' = q · log2(e)/√d``, one
multiply per query element), so a score ``s`` (signed ``B`` bits, ``F = score_frac_bits`` fraction bits) stands for
the attention logit ``s · ln 2`` and its softmax weight is ``2^s`` up to the row's normalisation. Everything below
is integer arithmetic on ``s`` (docs/formats.md §WTU exp2):

- **Bins.** A bin is ``2^S`` score units wide, ``S = log2(bucket_octaves) + F`` (``bucket_octaves`` octaves of
  weight), aligned on absolute multiples of ``2^S``: score ``s`` is in bin ``b(s) = s >> S`` at position
  ``p(s) = s - b(s)·2^S``. The *window* is the ``buckets`` (``K``) bins ``A, A-1, …, A-K+1`` below and including
  the bin ``A`` of the row's maximum; bin ``A - i`` is window index ``i``. Scores below the window are *flushed*:
  their weight is 0 (more than ``(K-1)·bucket_octaves`` octaves below the maximum's bin).
- **Weight term** of a cluster with count ``c`` in the window: ``p = I·2^F + f`` (``I`` whole octaves, ``f`` the
  fraction), ``m = LUT[f >> (F - log2 E)]`` with the ``E = exp_lut_entries``-entry centre LUT
  ``LUT[x] = round(2^(M-1) · 2^((x + ½)/E))`` of ``M = exp_mantissa_bits`` bits (``2^(M-1) ≤ m < 2^M``), and
  ``term = (c · m) << I``: the weight ``2^(p/2^F)`` relative to the bin's bottom, times the count, in units of
  ``2^(1-M)``.
- **Bin masses.** ``M_i = Σ term`` over the members of window bin ``i`` (relative to that bin's bottom); relative to
  the top bin's bottom, ``q_i = M_i >> (i · bucket_octaves)`` (floor). ``total = Σ q_i``,
  ``T = (total · ratio_q) >> R``. The sums are order-independent, so the RTL can bin while the row streams in.
- **Walk.** From window index 0 (the top) down, ``acc += q_i``; the *exit bin* ``e`` is the first after which
  ``acc > T``. If ``T ≥ total`` (ratio 1.0, all counts 0) every cluster is selected (flushed ones too).
- **Refinement** (``refine_passes`` passes, ``2^D = refine_bins`` sub-bins each): the current window
  ``[L, L + 2^w)`` (first the exit bin, ``w = S``) is split into sub-bins of ``2^(w-D)`` score units; each
  sub-bin's mass is the sum of its members' terms (the same terms, in the exit bin's local units). The sub-bins are
  walked from the top with a local running sum ``R_loc`` (starting at ``R_base``, the local mass above the window,
  0 at the first pass), and the pass exits at the first sub-bin ``u`` with ``acc_before + (R_loc >> k) > T``,
  ``k = e · bucket_octaves``, ``acc_before`` = the walk's sum before bin ``e``. The window becomes that sub-bin and
  ``R_base`` the local mass above it. The exit always lies inside the window, since the window's mass is what
  carried the sum past ``T`` one level up. Passes need ``refine_passes · D ≤ S``. A pass is skipped (and the
  remaining ones) when the window holds fewer than 2 clusters: it could not change the selection.
- **Fill** of the final window ``[L, L + 2^w)``: ``bucket`` selects every cluster with ``s ≥ L``; ``greedy``
  selects every cluster with ``s ≥ L + 2^w`` and, of the window's members in cluster order, each one before whose
  term the sum ``acc_before + ((R_base + Σ earlier members' terms) >> k)`` is still ``≤ T`` (up to and including
  the member that carries the sum past ``T``).

Ties: equal scores share a bin and a sub-bin (selected together by ``bucket`` fill); ``greedy`` takes the lower
cluster index first.

**Row mass** (``resv.threshold_mass = row``; docs/formats.md §WTU row mass). The row also carries its *resident
mass*, a :class:`ResidentMass` ``(max_score, total)``: the maximum of the scores of what the row attends anyway
(sinks, recent window, current step), in the score format, and ``total`` = the WTU's own row total over those
scores as count-1 clusters (:func:`resident_mass`: bins anchored at the bin ``b_res = max_score >> S``), saturated
to ``dre.wtu.resident_sum_bits``. The WTU then

- anchors the window at the **joint** top bin ``A = max(A_off, b_res)`` (``A = A_off`` when ``total = 0``: no
  resident mass, no resident maximum); offloaded scores below the joint window are flushed;
- rescales the resident total to the joint anchor: ``r = total >> ((A - b_res) · bucket_octaves)`` (floor; a
  right shift only, since ``A ≥ b_res``);
- thresholds the offloaded part: ``T = ((r + total_off) · ratio_q) >> R  -  r`` (signed). ``T < 0``: the resident
  mass alone exceeds the target, the row selects **nothing**; otherwise the walk, refinement and fill above run
  unchanged with this ``T`` (``T ≥ total_off`` selects everything).

With ``r = 0`` (no resident input, or one whose total is 0 or shifted out) ``T`` is the offloaded rule's threshold
bit for bit and the anchor is ``A_off``: the row rule then *is* the offloaded rule at the same ratio input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["ExpParams", "Exp2Selection", "ResidentMass", "exp_lut", "exp_term", "select_exp2", "select_exp2_exact",
           "exp2_weight", "resident_mass", "row_threshold", "EXP_FILLS"]

EXP_FILLS = ("bucket", "greedy")


@dataclass(frozen=True)
class ExpParams:
    """Format of the ``exp2`` selection (``ExpParams.from_config``; tests build it directly)."""

    frac_bits: int             # F = dre.wtu.score_frac_bits
    buckets: int               # K = dre.wtu.buckets
    bucket_octaves: int        # dre.wtu.bucket_octaves (power of two)
    lut_entries: int           # E = dre.wtu.exp_lut_entries (power of two, ≤ 2^F)
    mantissa_bits: int         # M = dre.wtu.exp_mantissa_bits
    refine_passes: int = 1     # dre.wtu.refine_passes
    refine_bins: int = 16      # 2^D = dre.wtu.refine_bins (power of two)
    fill: str = "bucket"       # dre.wtu.exit_fill

    @classmethod
    def from_config(cls, cfg) -> "ExpParams":
        w = cfg.dre.wtu
        return cls(w.score_frac_bits, w.buckets, w.bucket_octaves, w.exp_lut_entries, w.exp_mantissa_bits,
                   w.refine_passes, w.refine_bins, w.exit_fill)

    @property
    def bin_shift(self) -> int:
        """S: log2 of the bin width in score units."""
        return self.bucket_octaves.bit_length() - 1 + self.frac_bits

    @property
    def digit_bits(self) -> int:
        """D: bits of the in-bin position resolved per refinement pass."""
        return self.refine_bins.bit_length() - 1

    @property
    def lut_bits(self) -> int:
        return self.lut_entries.bit_length() - 1

    @property
    def octave_shift(self) -> int:
        """log2(bucket_octaves): octaves per bin as a shift."""
        return self.bucket_octaves.bit_length() - 1


def exp_lut(entries: int, mantissa_bits: int) -> tuple[int, ...]:
    """``LUT[x] = round(2^(M-1) · 2^((x + ½)/E))``: the centre value of each fraction cell, ``M`` bits."""
    return tuple(int(math.floor((1 << (mantissa_bits - 1)) * 2.0 ** ((x + 0.5) / entries) + 0.5))
                 for x in range(entries))


def exp_term(position: int, count: int, p: ExpParams, lut=None) -> int:
    """``(c · LUT[f >> (F - log2 E)]) << I`` for the in-bin position ``p = I·2^F + f``."""
    lut = lut or exp_lut(p.lut_entries, p.mantissa_bits)
    octave, frac = position >> p.frac_bits, position & ((1 << p.frac_bits) - 1)
    return (count * lut[frac >> (p.frac_bits - p.lut_bits)]) << octave


def exp2_weight(score: int, p: ExpParams, lut=None) -> float:
    """The term of a count-1 cluster as a real number relative to ``2^(b·2^S / 2^F)`` (for error studies):
    ``term / 2^(M-1)``, which approximates ``2^(p/2^F)``."""
    b = score >> p.bin_shift
    return exp_term(score - (b << p.bin_shift), 1, p, lut) / (1 << (p.mantissa_bits - 1))


@dataclass(frozen=True)
class Exp2Selection:
    """Everything the exp2 rule decides for one row (see the module docstring)."""

    mask: int
    total: int
    threshold: int
    accumulated: int           # acc_before + (R_loc >> k) at the final exit (total when all are selected)
    top_bin: int               # A (absolute bin of the row maximum)
    exit_bin: int              # e (window index of the exit bin; 0 when everything is selected)
    bins_walked: int           # window bins walked (e + 1; 0 when everything is selected: no walk)
    refine_walks: tuple        # sub-bins walked in each refinement pass run (skipped passes are absent)
    bound: int                 # L: lower bound of the final window (score units)
    bound_shift: int           # w: the final window is [L, L + 2^w)
    all_selected: bool
    resident: int = 0          # r: the resident mass at the joint anchor (threshold_mass = row; 0 otherwise)
    none_selected: bool = False   # T < 0: the resident mass alone reaches the target (row mode only)

    # the names the row output and the bench use for every WiCSum rule
    @property
    def exit_bucket(self) -> int:
        return self.exit_bin

    @property
    def buckets_walked(self) -> int:
        return self.bins_walked

    def count(self) -> int:
        return self.mask.bit_count()


class ResidentMass(NamedTuple):
    """The WTU's per-row resident-mass input (threshold_mass = row): the resident maximum in the score format and
    the resident total relative to the bottom of its bin (unsigned ``resident_sum_bits``, saturated)."""

    max_score: int
    total: int


def resident_mass(scores: list[int], params: ExpParams, sum_bits: int, lut=None) -> ResidentMass:
    """The resident-mass input of one row from the quantised scores of what it attends anyway: ``max_score`` = their
    maximum; ``total`` = :func:`select_exp2`'s ``total`` of a row of those scores with count 1 each (bins anchored at
    the maximum's bin, per-bin floor shifts, the 32-octave window), saturated to ``2^sum_bits - 1``. ``(0, 0)`` for
    no scores."""
    if not scores:
        return ResidentMass(0, 0)
    p = params
    lut = lut or exp_lut(p.lut_entries, p.mantissa_bits)
    _, masses, _ = _bins(scores, [1] * len(scores), p, lut)
    total = sum(m >> (i << p.octave_shift) for i, m in enumerate(masses))
    return ResidentMass(max(scores), min(total, (1 << sum_bits) - 1))


def row_threshold(total: int, resident: int, ratio_q: int, ratio_bits: int) -> int:
    """``T = ((resident + total) · ratio_q) >> ratio_bits  -  resident`` (signed; the offloaded rule's threshold when
    ``resident = 0``)."""
    return (((resident + total) * ratio_q) >> ratio_bits) - resident


def _joint_anchor(scores, p: ExpParams, resident: ResidentMass | None) -> tuple[int, int]:
    """``(A, r)``: the joint top bin and the resident total rescaled to it (``(A_off, 0)`` without resident mass)."""
    S = p.bin_shift
    top = max(s >> S for s in scores)
    if resident is None or resident.total == 0:
        return top, 0
    b_res = resident.max_score >> S
    joint = max(top, b_res)
    return joint, resident.total >> ((joint - b_res) << p.octave_shift)


def _bins(scores, counts, p: ExpParams, lut, top=None):
    S = p.bin_shift
    top = max(s >> S for s in scores) if top is None else top
    masses = [0] * p.buckets
    terms = []
    for s, c in zip(scores, counts):
        b = s >> S
        i = top - b
        t = exp_term(s - (b << S), c, p, lut) if i < p.buckets else 0
        terms.append(t)
        if i < p.buckets:
            masses[i] += t
    return top, masses, terms


def select_exp2(scores: list[int], counts: list[int], *, ratio_q: int, ratio_bits: int, params: ExpParams,
                lut=None, resident: ResidentMass | None = None) -> Exp2Selection:
    """The exp2 rule for one row (``N ≥ 0`` clusters); see the module docstring. ``resident``: the row's resident
    mass (threshold_mass = row); ``None`` is the offloaded rule."""
    if len(scores) != len(counts):
        raise ValueError(f"{len(scores)} scores but {len(counts)} counts")
    p = params
    if not scores:
        return Exp2Selection(0, 0, 0, 0, 0, 0, 0, (), 0, 0, False)
    lut = lut or exp_lut(p.lut_entries, p.mantissa_bits)
    S, o = p.bin_shift, p.octave_shift
    top, r = _joint_anchor(scores, p, resident)
    top, masses, terms = _bins(scores, counts, p, lut, top)
    q = [m >> (i << o) for i, m in enumerate(masses)]
    total = sum(q)
    thr = row_threshold(total, r, ratio_q, ratio_bits)
    n = len(scores)
    if thr < 0:
        return Exp2Selection(0, total, thr, 0, top, 0, 0, (), 0, 0, False, r, True)
    if thr >= total:
        return Exp2Selection((1 << n) - 1, total, thr, total, top, 0, 0, (), 0, 0, True, r)
    acc, e = 0, 0
    while True:
        acc += q[e]
        if acc > thr:
            break
        e += 1
    acc_before, k = acc - q[e], e << o
    low, w, r_base, walks = (top - e) << S, S, 0, []
    D = p.digit_bits
    r_loc = r_base + masses[e]
    for _ in range(p.refine_passes):
        if sum(1 for s in scores if low <= s < low + (1 << w)) < 2:
            break                  # one member: a finer window selects the same clusters, so the pass is skipped
        sub = [0] * p.refine_bins
        for s, t in zip(scores, terms):
            if low <= s < low + (1 << w):
                sub[(s - low) >> (w - D)] += t
        r_loc, u = r_base, p.refine_bins - 1
        while True:
            r_loc += sub[u]
            if acc_before + (r_loc >> k) > thr or u == 0:
                break
            u -= 1
        walks.append(p.refine_bins - u)
        r_base = r_loc - sub[u]
        low, w = low + (u << (w - D)), w - D
    if p.fill == "bucket":
        mask = sum(1 << j for j, s in enumerate(scores) if s >= low)
        accumulated = acc_before + (r_loc >> k)
    else:
        hi = low + (1 << w)
        mask, run = 0, r_base
        for j, (s, t) in enumerate(zip(scores, terms)):
            if s >= hi:
                mask |= 1 << j
            elif s >= low and acc_before + (run >> k) <= thr:
                mask |= 1 << j
                run += t
        accumulated = acc_before + (run >> k)
    return Exp2Selection(mask, total, thr, accumulated, top, e, e + 1, tuple(walks), low, w, False, r)


def select_exp2_exact(scores: list[int], counts: list[int], *, ratio_q: int, ratio_bits: int, params: ExpParams,
                      lut=None, resident: ResidentMass | None = None) -> Exp2Selection:
    """The exact sorted rule on the same integer weights (a reference, not hardware): clusters in descending score
    (ties: lower index), each adding ``term >> (i · bucket_octaves)`` (its window index ``i``); select up to and
    including the first after which the sum exceeds ``T = (total · ratio_q) >> R``, where ``total`` is the sum of
    all those values (all clusters when it never does). With ``resident``: the joint anchor and
    ``T = ((r + total) · ratio_q) >> R - r``, nothing selected when ``T < 0`` (as :func:`select_exp2`)."""
    p = params
    if not scores:
        return Exp2Selection(0, 0, 0, 0, 0, 0, 0, (), 0, 0, False)
    lut = lut or exp_lut(p.lut_entries, p.mantissa_bits)
    top, r = _joint_anchor(scores, p, resident)
    top, _, terms = _bins(scores, counts, p, lut, top)
    vals = [t >> ((top - (s >> p.bin_shift)) << p.octave_shift) for s, t in zip(scores, terms)]
    total = sum(vals)
    thr = row_threshold(total, r, ratio_q, ratio_bits)
    if thr < 0:
        return Exp2Selection(0, total, thr, 0, top, 0, 0, (), 0, 0, False, r, True)
    acc, mask = 0, 0
    for j in sorted(range(len(scores)), key=lambda j: (-scores[j], j)):
        acc += vals[j]
        mask |= 1 << j
        if acc > thr:
            break
    return Exp2Selection(mask, total, thr, acc, top, 0, 0, (), 0, 0, acc <= thr, r)
