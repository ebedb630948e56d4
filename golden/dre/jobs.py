"""Block-level jobs: the integer inputs of the HCU and the WTU, as a streaming session produces them.

These are the trace-driven stimulus of the RTL testbenches and of the power flow. A ReSV session
(``vrex.golden.resv.session``) records the jobs it hands to its bit-exact HCU and WTU references. The RTL benches
replay them, and the expected outputs come from ``golden/dre/hcu/reference.py`` and ``golden/dre/wtu/linear.py``.

- :class:`HCUJob`: the open-cluster codes preloaded for one (layer, KV head) context, and the token codes of
  one frame (or text turn) to cluster, in order.
- :class:`WTUJob`: the token counts of a context's clusters, and the rows of quantised cluster scores
  (one row = one query token × one query head of the GQA group), in the WTU's number formats.

:func:`random_jobs` makes statistically plausible jobs without a session, for unit tests.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from vrex.golden.dre.wtu.linear import signed_range

__all__ = ["HCUJob", "WTUJob", "save_jobs", "load_jobs", "random_jobs"]


@dataclass(frozen=True)
class HCUJob:
    context: str                      # e.g. "L3.H2.F17" (layer, KV head, frame) — for reports only
    open_codes: tuple[int, ...]       # preloaded slots 0..n-1, oldest first
    token_codes: tuple[int, ...]      # codes to assign, in order


@dataclass(frozen=True)
class WTUJob:
    context: str
    counts: tuple[int, ...]           # unsigned count_bits, one per cluster
    rows: tuple[tuple[int, ...], ...]  # signed score_bits fixed-point scores, len(row) == len(counts)
    # resv.threshold_mass = row: per row the resident-mass input (max score, total) (docs/formats.md §WTU row mass);
    # empty for the offloaded rule
    resident: tuple[tuple[int, int], ...] = ()


def _wtu_dict(job: WTUJob) -> dict:
    d = asdict(job)
    if not job.resident:
        del d["resident"]               # files of the offloaded rule keep their format
    return d


def save_jobs(path, hcu_jobs, wtu_jobs, meta=None) -> None:
    """Write jobs as JSON (``{"meta":…, "hcu":[…], "wtu":[…]}``)."""
    Path(path).write_text(json.dumps({"meta": meta or {}, "hcu": [asdict(j) for j in hcu_jobs],
                                      "wtu": [_wtu_dict(j) for j in wtu_jobs]}))


def load_jobs(path) -> tuple[list[HCUJob], list[WTUJob], dict]:
    d = json.loads(Path(path).read_text())
    hcu = [HCUJob(j["context"], tuple(j["open_codes"]), tuple(j["token_codes"])) for j in d.get("hcu", [])]
    wtu = [WTUJob(j["context"], tuple(j["counts"]), tuple(tuple(r) for r in j["rows"]),
                  tuple(tuple(m) for m in j.get("resident", ()))) for j in d.get("wtu", [])]
    return hcu, wtu, d.get("meta", {})


def random_jobs(cfg, n_hcu: int = 8, n_wtu: int = 8, seed: int = 0) -> tuple[list[HCUJob], list[WTUJob]]:
    """Jobs with clustered codes and peaked score rows, sized by ``cfg`` (no session needed).

    HCU: a few centre codes; tokens are centres with a few flipped bits, so joins, near misses and new clusters
    all occur; the preload fills 0–100% of the capacity. WTU: rows with a handful of large scores over a noisy
    floor (some negative), counts from 1 to 64, 1 to the full row capacity clusters.
    """
    rng = random.Random(seed)
    bits, cap = cfg.resv.hash_bits, cfg.hcu_capacity
    hcu = []
    for j in range(n_hcu):
        centres = [rng.getrandbits(bits) for _ in range(rng.randint(1, 8))]

        def near():
            c = rng.choice(centres)
            for b in rng.sample(range(bits), rng.randint(0, min(bits, cfg.resv.hamming_threshold + 2))):
                c ^= 1 << b
            return c

        n_open = rng.choice([0, rng.randint(1, cap), cap])
        hcu.append(HCUJob(f"random.{j}", tuple(near() for _ in range(n_open)),
                          tuple(near() for _ in range(rng.randint(1, cfg.hcu_frame_tokens)))))
    w = cfg.dre.wtu
    lo, hi = signed_range(w.score_bits)
    wtu = []
    for j in range(n_wtu):
        n = rng.choice([1, rng.randint(2, w.row_capacity), w.row_capacity])
        counts = tuple(min(rng.randint(1, 64), (1 << w.count_bits) - 1) for _ in range(n))
        rows = []
        for _ in range(rng.randint(1, cfg.model.group_size)):
            floor = rng.randint(lo // 4, hi // 8)
            row = [min(hi, max(lo, floor + int(rng.gauss(0, hi / 32)))) for _ in range(n)]
            for k in rng.sample(range(n), min(n, rng.randint(1, 6))):
                row[k] = rng.randint(hi // 2, hi)
            rows.append(tuple(row))
        wtu.append(WTUJob(f"random.{j}", counts, tuple(rows)))
    return hcu, wtu
