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

__all__ = ["Assignment", "HCUResult", "hcu_assign"]


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


def hcu_assign(open_codes: list[int], token_codes: list[int], *, code_bits: int, threshold: int, capacity: int,
               assignment: str = "nearest", full_policy: str = "spill") -> HCUResult:
    """Assign each token of a job to a cluster slot; see the module docstring for the rules."""
    if len(open_codes) > capacity:
        raise ValueError(f"{len(open_codes)} preloaded codes exceed the capacity of {capacity} slots")
    if not 0 <= threshold <= code_bits + 1:
        raise ValueError(f"threshold {threshold} is outside 0..{code_bits + 1}")
    if assignment not in ("nearest", "first") or full_policy not in ("spill", "join_nearest"):
        raise ValueError(f"unknown assignment {assignment!r} or full policy {full_policy!r}")
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
