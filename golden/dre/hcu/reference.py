"""Bit-exact functional reference of the HCU (hash-bit cluster unit): the per-token assignment sequence.

One HCU *job* clusters the tokens of one frame for one (layer, KV head) context (docs/formats.md §HCU):

1. the job starts with ``open_codes`` preloaded into slots ``0 .. n-1`` of the code memory (the open clusters
   of that context, oldest first, as the HC-table updater staged them);
2. tokens are processed strictly in order; each compares its code with every occupied slot:

   - ``assignment = "nearest"``: the slot with the smallest Hamming distance; ties go to the lowest slot;
   - ``assignment = "first"``: the lowest slot whose distance is below the threshold;

   the token **joins** that slot if its distance is strictly below ``threshold`` (``< Th_hd``);
3. otherwise it **opens** a new cluster in the next free slot (slot ``count``) whose code is the token's own code
   (cluster code policy ``first``), so later tokens of the same frame can join it;
4. when no slot is free (``count == capacity``) the behaviour is flagged (``full = True``) and follows
   ``full_policy``:

   - ``"spill"``: the token becomes a singleton cluster that is *not* stored (slot id ``capacity``, ``new = True``);
   - ``"join_nearest"``: the token joins its nearest slot whatever the distance (``new = False``).

Slot ids are local to the job; the HC-table updater maps them to global cluster ids (slot ``k`` of the preload is
the ``k``-th open cluster it staged; new slots are new clusters in order of creation). ``distance`` is the
distance to the joined slot, and 0 for a new or spilled cluster (its own code).

Early exit (``dre.hcu.early_exit``) and the lane/bit schedule change only the cycle count, never the result.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Assignment", "HCUResult", "check_job", "hcu_assign", "hcu_assign_for", "HCUTokenTiming", "HCUCycles", "hcu_cycles",
           "hcu_cycles_for", "hcu_worst_token_cycles", "early_exit_saving"]


@dataclass(frozen=True)
class Assignment:
    token: int       # index of the token within the job
    cluster: int     # slot id 0..capacity-1, or capacity for a spilled singleton
    new: bool        # the token opened a cluster (or spilled)
    distance: int    # Hamming distance to the joined slot; 0 when new
    full: bool       # the code memory was full when this token needed a new slot


@dataclass(frozen=True)
class HCUResult:
    assignments: list[Assignment]
    codes: list[int]          # code memory contents at the end of the job (slot order)


def check_job(n_open: int, *, code_bits: int, threshold: int, capacity: int, assignment: str,
              full_policy: str) -> None:
    """Raise ``ValueError`` for a job the HCU cannot run (too many preloaded codes, threshold, unknown rule)."""
    if n_open > capacity:
        raise ValueError(f"{n_open} preloaded codes exceed the capacity of {capacity} slots")
    if not 0 <= threshold <= code_bits + 1:
        raise ValueError(f"threshold {threshold} is outside 0..{code_bits + 1}")
    if assignment not in ("nearest", "first") or full_policy not in ("spill", "join_nearest"):
        raise ValueError(f"unknown assignment {assignment!r} or full policy {full_policy!r}")


def hcu_assign(open_codes: list[int], token_codes: list[int], *, code_bits: int, threshold: int, capacity: int,
               assignment: str = "nearest", full_policy: str = "spill") -> HCUResult:
    """Assign each token of a job to a cluster slot; see the module docstring for the rules."""
    check_job(len(open_codes), code_bits=code_bits, threshold=threshold, capacity=capacity, assignment=assignment,
              full_policy=full_policy)
    mask = (1 << code_bits) - 1
    codes = [c & mask for c in open_codes]
    out = []
    for t, code in enumerate(token_codes):
        code &= mask
        best_slot, best_d, hit = None, None, None
        for s, c in enumerate(codes):
            d = (code ^ c).bit_count()
            if best_d is None or d < best_d:
                best_slot, best_d = s, d
            if d < threshold and hit is None:
                hit = s
                if assignment == "first":
                    break
        if assignment == "nearest" and best_d is not None and best_d < threshold:
            out.append(Assignment(t, best_slot, False, best_d, False))
        elif assignment == "first" and hit is not None:
            out.append(Assignment(t, hit, False, (code ^ codes[hit]).bit_count(), False))
        elif len(codes) < capacity:
            out.append(Assignment(t, len(codes), True, 0, False))
            codes.append(code)
        elif full_policy == "join_nearest" and best_slot is not None:
            out.append(Assignment(t, best_slot, False, best_d, True))
        else:
            out.append(Assignment(t, capacity, True, 0, True))
    return HCUResult(out, codes)


# --------------------------------------------------------------------------------------------------------------
# Cycle model of the RTL (hdl/dre/hcu.py)


@dataclass(frozen=True)
class HCUTokenTiming:
    """How the RTL spends the cycles of one token (no back-pressure)."""

    cycles: int        # from the token's acceptance to the acceptance of the next item
    worst: int         # the same token's cycles with early exit disabled (the worst case)
    open_slots: int    # occupied slots the token was compared with
    groups: int        # lane groups started
    slices: int        # comparison cycles that did useful work (sum of slices over started groups)
    group_exits: int   # groups that ended before their last bit slice (every lane exited)
    scan_stop: bool    # the scan ended before the last open group (first hit, or nothing can win any more)


@dataclass(frozen=True)
class HCUCycles:
    """Cycle model of one HCU job, and the assignments its scan schedule produces."""

    preload: int                    # cycles spent storing the preloaded codes (one per code)
    tokens: list[HCUTokenTiming]
    assignments: list[Assignment]   # must equal hcu_assign(...).assignments (tested)

    @property
    def total(self) -> int:
        return self.preload + sum(t.cycles for t in self.tokens)

    @property
    def worst_total(self) -> int:
        return self.preload + sum(t.worst for t in self.tokens)


def hcu_worst_token_cycles(open_slots: int, *, lanes: int, slices: int, pipeline_stages: int = 1) -> int:
    """Cycles of one token without early exit: 1 with no open slot, else P + ceil(n/lanes) * slices."""
    if open_slots == 0:
        return 1
    return pipeline_stages + -(-open_slots // lanes) * slices


def early_exit_saving(timings, cycles: int, *, lanes: int, slices: int, early_exit: bool = True) -> tuple[float, int]:
    """``(saving, comparison cycles of the worst case)`` of a list of :class:`HCUTokenTiming`.

    ``cycles`` is the tokens' total (measured or modelled); saving = comparison cycles early exit saved /
    comparison cycles of the worst case (``ceil(n_open / lanes) * slices`` per token), 0 without early exit.
    """
    compare = sum(-(-t.open_slots // lanes) * slices for t in timings)
    worst = sum(t.worst for t in timings)
    return ((worst - cycles) / compare if compare and early_exit else 0.0), compare


def hcu_cycles(open_codes: list[int], token_codes: list[int], *, code_bits: int, threshold: int, capacity: int,
               lanes: int, bits_per_cycle: int, early_exit: bool = True, pipeline_stages: int = 1,
               assignment: str = "nearest", full_policy: str = "spill") -> HCUCycles:
    """Exact cycle count of the HCU RTL for one job under no back-pressure (docs/formats.md §HCU).

    The RTL spends one cycle per preloaded code, then for each token:

    - **scan**: the occupied slots are compared in lane groups of ``lanes`` slots (group ``g`` = slots
      ``g*lanes ..``), in order; each group takes one cycle per bit slice of ``bits_per_cycle`` bits, so at most
      ``S = code_bits / bits_per_cycle`` cycles;
    - **bound**: a lane can still win only while its partial distance is below the *bound*: the threshold
      (``assignment = first``), or the smaller of the threshold and the best distance of the earlier groups
      (``nearest``; equal does not win because ties keep the lower slot). When the table is full and
      ``full_policy = join_nearest`` the threshold does not bound (the nearest slot is needed anyway).
    - **early exit** (``early_exit``): a group ends after the first slice after which no lane is below the
      bound; the scan ends after a group that produced a ``first`` hit, or when the bound becomes 0; a token
      whose initial bound is 0 (threshold 0) is not compared at all.
    - **pipeline**: with ``P = pipeline_stages`` the early-exit decision of a slice is known ``P - 1`` cycles
      after the next slices were issued; the slices of an exiting group issued meanwhile are discarded (those of
      the next group are kept), so a group that ran ``n`` slices occupies ``min(S, n + P - 1)`` issue cycles,
      and the decision on the last group of a scan comes ``P`` cycles after its last slice was issued.

    So a token costs 1 cycle without comparisons, else ``sum_{g < f} min(S, n(g) + P - 1) + n(f) + P`` with
    ``n(g)`` the slices group ``g`` ran and ``f`` the last group scanned.
    """
    if len(open_codes) > capacity:
        raise ValueError(f"{len(open_codes)} preloaded codes exceed the capacity of {capacity} slots")
    if code_bits % bits_per_cycle:
        raise ValueError(f"bits_per_cycle {bits_per_cycle} must divide code_bits {code_bits}")
    if not 0 <= threshold <= code_bits + 1:
        raise ValueError(f"threshold {threshold} is outside 0..{code_bits + 1}")
    if assignment not in ("nearest", "first") or full_policy not in ("spill", "join_nearest"):
        raise ValueError(f"unknown assignment {assignment!r} or full policy {full_policy!r}")
    if lanes < 1 or pipeline_stages < 1:
        raise ValueError(f"lanes ({lanes}) and pipeline_stages ({pipeline_stages}) must be ≥ 1")
    mask = (1 << code_bits) - 1
    n_slices, slice_mask, extra = code_bits // bits_per_cycle, (1 << bits_per_cycle) - 1, pipeline_stages - 1
    unbounded = code_bits + 1
    codes = [c & mask for c in open_codes]
    timings, out = [], []
    for t, code in enumerate(token_codes):
        code &= mask
        n = len(codes)
        full = n == capacity
        join_any = full and full_policy == "join_nearest"
        track_nearest = assignment == "nearest" or join_any
        bound = unbounded if join_any else threshold
        hit = near = None                                  # (slot, distance)
        issued = slices = groups = exits = 0
        stopped = False
        if n and not (early_exit and bound == 0):
            n_groups = -(-n // lanes)
            for g in range(n_groups):
                slots = range(g * lanes, min(n, (g + 1) * lanes))
                partial = dict.fromkeys(slots, 0)
                ran = n_slices
                for s in range(n_slices):
                    for k in slots:
                        partial[k] += (((code ^ codes[k]) >> (s * bits_per_cycle)) & slice_mask).bit_count()
                    if early_exit and s < n_slices - 1 and all(partial[k] >= bound for k in slots):
                        ran = s + 1
                        break
                groups += 1
                slices += ran
                exits += ran < n_slices
                cands = [k for k in slots if ran == n_slices and partial[k] < bound]
                hits = [k for k in cands if partial[k] < threshold]
                if assignment == "first" and hits and hit is None:
                    hit = (hits[0], partial[hits[0]])
                if track_nearest and cands:
                    w = min(cands, key=lambda k: (partial[k], k))
                    near, bound = (w, partial[w]), partial[w]
                last = g == n_groups - 1
                if last or (early_exit and ((assignment == "first" and hits) or bound == 0)):
                    issued += ran
                    stopped = not last
                    break
                issued += min(n_slices, ran + extra)
            cycles = issued + 1 + extra
        else:
            cycles = 1
        if assignment == "nearest" and near is not None and near[1] < threshold:
            out.append(Assignment(t, near[0], False, near[1], False))
        elif assignment == "first" and hit is not None:
            out.append(Assignment(t, hit[0], False, hit[1], False))
        elif not full:
            out.append(Assignment(t, n, True, 0, False))
            codes.append(code)
        elif full_policy == "join_nearest":
            out.append(Assignment(t, near[0], False, near[1], True))
        else:
            out.append(Assignment(t, capacity, True, 0, True))
        worst = hcu_worst_token_cycles(n, lanes=lanes, slices=n_slices, pipeline_stages=pipeline_stages)
        timings.append(HCUTokenTiming(cycles, worst, n, groups, slices, exits, stopped))
    return HCUCycles(len(open_codes), timings, out)


def hcu_assign_for(cfg, open_codes, token_codes, *, threshold=None) -> HCUResult:
    """:func:`hcu_assign` with every parameter taken from a :class:`vrex.config.Config`."""
    return hcu_assign(open_codes, token_codes, code_bits=cfg.resv.hash_bits,
                      threshold=cfg.resv.hamming_threshold if threshold is None else threshold,
                      capacity=cfg.hcu_capacity, assignment=cfg.resv.assignment, full_policy=cfg.dre.hcu.full_policy)


def hcu_cycles_for(cfg, open_codes, token_codes, *, threshold=None) -> HCUCycles:
    """:func:`hcu_cycles` with every parameter taken from a :class:`vrex.config.Config`."""
    h = cfg.dre.hcu
    return hcu_cycles(open_codes, token_codes, code_bits=cfg.resv.hash_bits,
                      threshold=cfg.resv.hamming_threshold if threshold is None else threshold,
                      capacity=cfg.hcu_capacity, lanes=h.lanes, bits_per_cycle=h.bits_per_cycle,
                      early_exit=h.early_exit, pipeline_stages=h.pipeline_stages, assignment=cfg.resv.assignment,
                      full_policy=h.full_policy)
