"""Vectorised twin of the HCU reference (:func:`vrex.golden.dre.hcu.reference.hcu_assign`) for the ReSV session.

The reference compares each token with every occupied slot in a Python loop. Here the Hamming distances of all
the job's tokens to the preloaded codes are one NumPy ``bitwise_count`` of an XOR matrix, and each token adds only
its distances to the slots opened earlier in the same job (at most the job's token count). The rules are the
reference's, applied to the same distance vector: ``nearest`` = the first minimum (lowest slot), ``first`` = the
lowest slot below the threshold, join if ``< threshold``, else open a slot while there is room, else
``full_policy``. The result (assignments, final code memory) equals the reference's field for field —
tests/dre/test_hcu_golden.py proves it with Hypothesis over code widths, thresholds, capacities, both assignment
rules, both full policies and full memories — so the session's ``engine = "tensor"`` clusters with this twin and
``engine = "reference"`` with :func:`~vrex.golden.dre.hcu.reference.hcu_assign`; the RTL is checked against the reference.
Codes wider than 64 bits go to the reference (NumPy words are 64 bits).
"""

from __future__ import annotations

import numpy as np

from vrex.golden.dre.hcu.reference import Assignment, HCUResult, check_job, hcu_assign

__all__ = ["hcu_assign_vectorised", "hcu_assign_engine"]


def hcu_assign_vectorised(open_codes: list[int], token_codes: list[int], *, code_bits: int, threshold: int,
                          capacity: int, assignment: str = "nearest", full_policy: str = "spill") -> HCUResult:
    """:func:`vrex.golden.dre.hcu.reference.hcu_assign`, vectorised over the slots."""
    check_job(len(open_codes), code_bits=code_bits, threshold=threshold, capacity=capacity, assignment=assignment,
              full_policy=full_policy)
    if code_bits > 64:
        return hcu_assign(open_codes, token_codes, code_bits=code_bits, threshold=threshold, capacity=capacity,
                          assignment=assignment, full_policy=full_policy)
    mask = (1 << code_bits) - 1
    codes = [c & mask for c in open_codes]
    toks = np.array([c & mask for c in token_codes], dtype=np.uint64)
    pre = np.bitwise_count(toks[:, None] ^ np.array(codes, dtype=np.uint64)[None, :]).astype(np.int64)
    opened = np.zeros(len(token_codes), dtype=np.uint64)          # codes of the slots opened in this job
    n_new, out = 0, []
    nearest, join_any = assignment == "nearest", full_policy == "join_nearest"
    for t in range(len(token_codes)):
        code = toks[t]
        d = pre[t] if not n_new else np.concatenate(
            [pre[t], np.bitwise_count(opened[:n_new] ^ code).astype(np.int64)])
        n = d.shape[0]
        best = int(np.argmin(d)) if n else None
        if nearest:
            hit = best if n and d[best] < threshold else None
        else:
            below = np.flatnonzero(d < threshold)
            hit = int(below[0]) if below.size else None
        if hit is not None:
            out.append(Assignment(t, hit, False, int(d[hit]), False))
        elif n < capacity:
            out.append(Assignment(t, n, True, 0, False))
            opened[n_new] = code
            n_new += 1
            codes.append(int(code))
        elif join_any and best is not None:
            out.append(Assignment(t, best, False, int(d[best]), True))
        else:
            out.append(Assignment(t, capacity, True, 0, True))
    return HCUResult(out, codes)


def hcu_assign_engine(cfg, open_codes, token_codes, *, engine: str = "tensor") -> HCUResult:
    """The session's HCU call: the twin (``tensor``) or the reference, parameters from ``cfg``."""
    fn = hcu_assign_vectorised if engine == "tensor" else hcu_assign
    return fn(open_codes, token_codes, code_bits=cfg.resv.hash_bits, threshold=cfg.resv.hamming_threshold,
              capacity=cfg.hcu_capacity, assignment=cfg.resv.assignment, full_policy=cfg.dre.hcu.full_policy)
