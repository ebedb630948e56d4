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

from vrex.errors import VrexError

from vrex.golden.dre.wtu.exp import ExpParams, ResidentMass, select_exp2, select_exp2_exact

__all__ = ["RowSelection", "transform_scores", "wicsum_threshold", "select_exact", "select_bucketed",
           "select_topk", "select_row", "select_row_kwargs", "aggregate_masks", "signed_range", "quantize_scores",
           "mask_to_indices",
           # job level and cycle model of the RTL (hdl/dre/wtu/linear.py)
           "WTUJobError", "JobSelection", "check_job", "wtu_job", "topk_refinement", "RowCycles",
           "wtu_row_cycles", "wtu_job_cycles", "wtu_schedule"]


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
               transform: str = "shift_min", rule: str = "bucketed", exp: ExpParams | None = None,
               resident: ResidentMass | None = None):
    """Selection of one row as the WTU ``mode`` computes it (``rule="exact"`` for the sorted reference).

    With ``transform = "exp2"`` the row goes to :func:`vrex.golden.dre.wtu.exp.select_exp2` (``exp`` gives its format)
    and the result is an :class:`~vrex.golden.dre.wtu.exp.Exp2Selection`; otherwise a :class:`RowSelection`.
    ``resident``: the row's resident mass (``resv.threshold_mass = row``, exp2 only); ``None``: the offloaded rule.
    """
    if resident is not None and (transform != "exp2" or mode == "topk"):
        raise ValueError("a resident mass (threshold_mass = row) needs the exp2 transform in a WiCSum mode")
    if mode == "topk":
        return select_topk(scores, k)
    if transform == "exp2":
        if exp is None:
            raise ValueError("the exp2 transform needs its format (exp=ExpParams...)")
        fn = select_exp2_exact if rule == "exact" else select_exp2
        return fn(list(scores), list(counts), ratio_q=ratio_q, ratio_bits=ratio_bits, params=exp, resident=resident)
    if rule == "exact":
        return select_exact(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, transform=transform)
    return select_bucketed(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, buckets=buckets,
                           transform=transform)


def select_row_kwargs(cfg, stage: str = "frame") -> dict:
    """The keyword arguments of :func:`select_row` (and the tensor twin) that a :class:`vrex.config.Config` names
    for a ``frame`` or ``text`` step (the ratio input differs per stage: the ratio, or p with ``resv.threshold_mass =
    row``, whose per-row ``resident`` input the caller adds)."""
    w, r = cfg.dre.wtu, cfg.resv
    return dict(mode=w.mode, ratio_q=cfg.stage_ratio_fixed(stage), ratio_bits=w.ratio_bits, buckets=w.buckets,
                k=w.topk_k, transform=r.score_transform, rule=r.selection,
                exp=ExpParams.from_config(cfg) if r.score_transform == "exp2" else None)


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


def signed_range(bits: int) -> tuple[int, int]:
    """``(lo, hi)`` of a ``bits``-bit two's complement number."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def quantize_scores(values, score_bits: int, frac_bits: int) -> list[int]:
    """Float scores -> signed fixed point: round half to even, saturate to the B-bit range."""
    lo, hi = signed_range(score_bits)
    out = []
    for v in values:
        x = float(v) * (1 << frac_bits)
        if math.isnan(x):
            raise ValueError("NaN score")
        q = round(x) if math.isfinite(x) else (hi if x > 0 else lo)
        out.append(min(hi, max(lo, int(q))))
    return out


# ==============================================================================================================
# Job-level reference and cycle model of the WTU RTL (hdl/dre/wtu/linear.py). Appended by the WTU block; the functions
# above stay the selection contract.
# ==============================================================================================================


class WTUJobError(VrexError, ValueError):
    """A WTU job that the unit rejects: no rows, N = 0, N > row capacity, or a row whose length is not N."""


@dataclass(frozen=True)
class JobSelection:
    rows: tuple                # RowSelection per row, in order
    group_mask: int            # OR of the row masks (the GQA group's selection)


def check_job(counts, rows, capacity: int | None = None) -> int:
    """Return N after checking the job's shape; raise :class:`WTUJobError` with the reason otherwise."""
    n = len(counts)
    if not rows:
        raise WTUJobError("a WTU job needs at least one score row")
    if n == 0:
        raise WTUJobError("a WTU job needs at least one cluster (N = 0); the RTL flags such a job with error = 1")
    if capacity is not None and n > capacity:
        raise WTUJobError(f"the job has {n} clusters but the WTU row capacity is {capacity} "
                          "(dre.wtu.score_memory_bytes); the RTL flags such a job with error = 1")
    for r, row in enumerate(rows):
        if len(row) != n:
            raise WTUJobError(f"row {r} has {len(row)} scores but the job has {n} counts")
    return n


def wtu_job(counts, rows, *, mode: str, ratio_q: int, ratio_bits: int, buckets: int, k: int,
            transform: str = "shift_min", capacity: int | None = None, reference=None,
            exp: ExpParams | None = None, resident=None) -> JobSelection:
    """Selections of every row of a job and their OR (what the WTU emits on ``row`` and ``group``).

    ``reference`` replaces :func:`select_row` (same signature), e.g. to check that a wrong reference is caught.
    ``resident``: one :class:`~vrex.golden.dre.wtu.exp.ResidentMass` (or ``(max, total)`` pair) per row in the row
    mode (``resv.threshold_mass = row``); ``None`` for the offloaded rule.
    """
    check_job(counts, rows, capacity)
    ref = reference or select_row
    extra = {"exp": exp} if exp is not None else {}
    if resident is not None and len(resident) != len(rows):
        raise WTUJobError(f"the job has {len(rows)} rows but {len(resident)} resident masses")
    res = [None] * len(rows) if resident is None else [ResidentMass(*m) for m in resident]
    sel = tuple(ref(list(row), list(counts), mode=mode, ratio_q=ratio_q, ratio_bits=ratio_bits, buckets=buckets,
                    k=k, transform=transform, **extra, **({"resident": m} if m is not None else {}))
                for row, m in zip(rows, res))
    return JobSelection(sel, aggregate_masks(s.mask for s in sel))


def topk_refinement(scores, k: int, buckets: int):
    """The top-k bucket select of the RTL: ``(v, ties, walks)``.

    ``v`` is the k-th largest score, ``ties`` how many scores equal to ``v`` are kept (lowest indices first),
    ``walks`` the bins walked in each refinement pass. Only defined for ``0 < k < len(scores)``.
    Bins: ``2**D`` with ``D = floor(log2(buckets))``; the first window is ``[min, min + 2**(sh + D))`` with the
    smallest ``sh`` such that ``(max - min) >> sh < 2**D``; each pass counts the scores of each bin of width
    ``2**sh`` in the window, walks the bins from the top until the count reaches the remaining rank, and makes
    that bin the next window (``sh`` shrinks by D) until the bin width is 1.
    """
    d_bits = buckets.bit_length() - 1
    bins = 1 << d_bits
    base, rng = min(scores), max(scores) - min(scores)
    sh = bucket_shift(0, rng, bins)
    wsh, top, k_rem, walks = sh + d_bits, rng >> sh, k, []
    while True:
        cnt = [0] * bins
        for x in scores:
            d = x - base
            if d >= 0 and d >> wsh == 0:
                cnt[d >> sh] += 1
        cum, b, walked = 0, top, 0
        while True:
            walked += 1
            if cum + cnt[b] >= k_rem or b == 0:
                break
            cum += cnt[b]
            b -= 1
        walks.append(walked)
        k_rem -= cum
        base += b << sh
        if sh == 0:
            return base, k_rem, walks
        wsh, top, sh = sh, (1 << min(d_bits, sh)) - 1, max(sh - d_bits, 0)


# ---- cycle model -------------------------------------------------------------------------------------------
#
# Exact cycles of hdl/dre/wtu/linear.py with every input offered and every output ready on every cycle. With
# W = ceil(N / lanes) words per row (docs/formats.md §WTU, docs/results-rtl.md):
#
#   job              = W + Σ_rows row                       (count beats, then the rows)
#   row              = 2W + 6 + selection                   (load W + 2 drain + 3 finish; mask pass W + 1)
#   early_exit       = P · (W + 3)                          (P bucket passes; 0 if top = 0 or T ≥ total)
#   histogram        = W + 2 + walked                       (binning pass + one cycle per walked bucket; 0 as above)
#   topk             = Σ_passes (W + 2 + bins walked)       (0 if k = 0 or k ≥ N)
#   rejected job     = max(1, W) + R · (max(1, W) + 1)

def exp2_latencies(p: ExpParams, pipeline_stages: int, ratio_bits: int) -> dict:
    """Fixed latencies of the exp2 datapath (hdl/dre/wtu/exp.py), in cycles: ``pass`` from a pass's last word to its
    last accumulation (memory and capture registers, the ``pipeline_stages - 1`` optional cuts, the accumulator),
    ``prefix`` the Kogge-Stone levels over the accumulator slots (one per register), ``fin`` / ``walk`` the
    post-load / post-refinement pipelines (``fin`` includes the ratio product: a ``ceil(log2(ratio_bits + 1))``-level
    adder tree whose adds are split into two staggered carry segments, the RTL's ``RATIO_SEGMENTS``), and
    the states they make: ``fin_state`` (after the load), ``walk_state`` (after a refinement pass's words),
    ``mask_tail`` (after the masking pass's words)."""
    cuts = min(pipeline_stages - 1, 6)
    slots = 1 << (max(p.buckets, p.refine_bins) - 1).bit_length()
    prefix = max(1, (slots - 1).bit_length())
    ratio_latency = ratio_bits.bit_length() + 1          # tree levels + one cycle of carry stagger
    out = {"pass": 3 + cuts, "prefix": prefix, "fin": prefix + ratio_latency + 6, "walk": prefix + 4}
    out.update(fin_state=out["pass"] + out["fin"] + 1, walk_state=out["pass"] + out["walk"], mask_tail=2)
    return out


ROW_OVERHEAD = 6          # 2 pipeline-drain cycles after the load, 3 finishing cycles, 1 after the mask pass
PASS_OVERHEAD = {"early_exit": 3, "histogram": 2, "topk": 2}


@dataclass(frozen=True)
class RowCycles:
    words: int             # W = ceil(N / lanes)
    selection_passes: int  # passes over the row besides the load and the mask pass
    walk_cycles: int       # histogram / top-k: cycles spent walking buckets or bins
    cycles: int            # the row's cycles (from its first score beat to the next row's first score beat)

    @property
    def passes(self) -> int:
        """All passes over the row: load + selection passes + mask."""
        return self.selection_passes + 2


def wtu_row_cycles(scores, counts, *, mode: str, lanes: int, ratio_q: int, ratio_bits: int, buckets: int,
                   k: int, transform: str = "shift_min", exp: ExpParams | None = None,
                   pipeline_stages: int = 6, resident=None) -> RowCycles:
    """Cycles of one row of a valid job (1 ≤ N ≤ capacity) under no back-pressure. ``resident``: the row's resident
    mass (``resv.threshold_mass = row``; a row that fetches nothing runs no refinement pass, the same cycles
    otherwise)."""
    n = len(scores)
    w = -(-n // lanes)
    passes = walk = 0
    if transform == "exp2" and mode != "topk":
        sel = select_exp2(list(scores), list(counts), ratio_q=ratio_q, ratio_bits=ratio_bits, params=exp,
                          resident=None if resident is None else ResidentMass(*resident))
        lat = exp2_latencies(exp, pipeline_stages, ratio_bits)
        passes = len(sel.refine_walks)
        cycles = w + lat["fin_state"] + passes * (w + lat["walk_state"]) + w + lat["mask_tail"]
        return RowCycles(w, passes, 0, cycles)
    if mode == "topk":
        if 0 < k < n:
            walks = topk_refinement(scores, k, buckets)[2]
            passes, walk = len(walks), sum(walks)
    else:
        sel = select_bucketed(scores, counts, ratio_q=ratio_q, ratio_bits=ratio_bits, buckets=buckets,
                              transform=transform)
        if sel.top_bucket and sel.threshold < sel.total:
            if mode == "early_exit":
                passes = min(sel.buckets_walked, sel.top_bucket)
            else:
                passes, walk = 1, sel.buckets_walked
    cycles = 2 * w + ROW_OVERHEAD + passes * (w + PASS_OVERHEAD[mode]) + walk
    return RowCycles(w, passes, walk, cycles)


def wtu_job_cycles(counts, rows, *, capacity: int, lanes: int, resident=None, **params) -> int:
    """Cycles of one job under no back-pressure: from its first count beat to the next job's first count beat
    (``resident``: one resident mass per row, or None)."""
    n = len(counts)
    w = max(1, -(-n // lanes))
    if n == 0 or n > capacity:
        return w + len(rows) * (w + 1)
    res = resident or [None] * len(rows)
    return w + sum(wtu_row_cycles(row, counts, lanes=lanes, resident=m, **params).cycles for row, m in zip(rows, res))


def wtu_schedule(jobs, *, capacity: int, lanes: int, **params) -> dict:
    """Handshake cycle of every beat on every port, relative to the first count beat, under no back-pressure.

    ``jobs`` are ``(counts, rows)`` pairs, or ``(counts, rows, resident)`` with one resident mass per row
    (``resv.threshold_mass = row``); ``params`` as :func:`wtu_row_cycles`. Keys: ``in:counts``, ``in:scores``,
    ``row``, ``group`` (the port names of hdl/dre/wtu/linear.py).
    """
    out = {"in:counts": [], "in:scores": [], "row": [], "group": []}
    t = 0
    for job in jobs:
        counts, rows = job[0], job[1]
        resident = (job[2] if len(job) > 2 else None) or [None] * len(rows)
        n = len(counts)
        w = max(1, -(-n // lanes))
        out["in:counts"] += range(t, t + w)
        t += w
        for r, (row, res) in enumerate(zip(rows, resident)):
            last_row = r == len(rows) - 1
            out["in:scores"] += range(t, t + w)
            if n == 0 or n > capacity:                 # rejected: one flagged beat per row, one per group
                out["row"].append(t + w + 1)
                if last_row:
                    out["group"].append(t + w + 1)
                t += w + 1
                continue
            rc = wtu_row_cycles(row, counts, lanes=lanes, resident=res, **params)
            mask_start = t + rc.cycles - w - 1
            beats = list(range(mask_start + 2, mask_start + 2 + w))
            out["row"] += beats
            if last_row:
                out["group"] += beats
            t += rc.cycles
    return out
