"""KVMU jobs: what the sequencer hands the KVMU for one context and step, and random jobs for unit tests.

A :class:`Job` is one control beat ``{context, step, restart, buffer, arrive, prefetch}`` followed by its
arrival descriptors (``arrivals``: ``(cluster, segment_start)`` per new token, in token order; ``None`` = no
arrival phase) and its prefetch mask (``mask``: beats of ``dre.wtu.lanes`` bits, bit j of beat k = cluster
``k·lanes + j``; ``None`` = no prefetch phase). docs/formats.md §KVMU gives the stream formats.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Job", "mask_beats", "save_kvmu_jobs", "load_kvmu_jobs", "random_kvmu_jobs"]


@dataclass(frozen=True)
class Job:
    context: int
    step: int
    restart: bool = False
    buffer: int = 0
    arrivals: tuple[tuple[int, bool], ...] | None = None
    mask: tuple[int, ...] | None = None
    stage: str = "frame"        # for the per-stage counters only (not sent to the hardware)


def mask_beats(clusters, n_clusters: int, lanes: int) -> tuple[int, ...]:
    """The mask beats selecting ``clusters`` of a context with ``n_clusters`` clusters (at least one beat)."""
    beats = [0] * max(1, -(-n_clusters // lanes))
    for c in clusters:
        beats[c // lanes] |= 1 << (c % lanes)
    return tuple(beats)


def save_kvmu_jobs(path, jobs, meta=None) -> None:
    Path(path).write_text(json.dumps({"meta": meta or {}, "kvmu": [asdict(j) for j in jobs]}))


def load_kvmu_jobs(path) -> list[Job]:
    d = json.loads(Path(path).read_text())
    out = []
    for j in d.get("kvmu", []):
        arr = None if j["arrivals"] is None else tuple((int(c), bool(s)) for c, s in j["arrivals"])
        mask = None if j["mask"] is None else tuple(j["mask"])
        out.append(Job(j["context"], j["step"], j["restart"], j["buffer"], arr, mask, j.get("stage", "frame")))
    return out


def random_kvmu_jobs(cfg, n_steps: int, seed: int = 0, *, bad: float = 0.02, min_tokens: int = 1) -> list[Job]:
    """A random session: every step, each context gets ``min_tokens`` to ``max_step_tokens`` new tokens (segments of random
    length; cluster ids mostly reused, sometimes new, with probability ``bad`` out of range) and a random
    prefetch mask (sometimes naming an unknown cluster)."""
    rng = random.Random(seed)
    km, lanes = cfg.kvmu_map, cfg.dre.wtu.lanes
    clusters = [0] * km.contexts
    tokens = [0] * km.contexts
    seg_left = [0] * km.contexts
    jobs = []
    for step in range(n_steps):
        for ctx in rng.sample(range(km.contexts), km.contexts):
            if tokens[ctx] + km.max_step_tokens > km.context_tokens:
                continue
            arrivals = []
            for _ in range(rng.randint(min(min_tokens, km.max_step_tokens), km.max_step_tokens)
                           if rng.random() < 0.95 else 0):
                start = seg_left[ctx] == 0
                if start:
                    seg_left[ctx] = rng.randint(1, 2 * cfg.model.tokens_per_frame)
                seg_left[ctx] -= 1
                u = rng.random()
                if u < bad / 2:
                    c = clusters[ctx] + rng.randint(1, 3)                # skips ids: unknown cluster
                elif u < bad:
                    c = km.table_clusters + rng.randint(0, 3)            # beyond the table: capacity
                elif clusters[ctx] < km.table_clusters and (clusters[ctx] == 0 or rng.random() < 0.3):
                    c = clusters[ctx]
                else:
                    c = rng.randrange(max(1, clusters[ctx]))
                if c == clusters[ctx]:
                    clusters[ctx] += 1
                arrivals.append((c, start))
            tokens[ctx] += len(arrivals)
            n = clusters[ctx]
            chosen = [c for c in range(n) if rng.random() < rng.choice((0.05, 0.3, 0.8))]
            if rng.random() < bad and n:
                chosen.append(n + rng.randint(0, lanes - 1))
            mask = mask_beats(chosen, max(n, max(chosen, default=0) + 1), lanes) if rng.random() < 0.8 else None
            jobs.append(Job(ctx, step, restart=rng.random() < 0.3, buffer=rng.randint(0, 1),
                            arrivals=tuple(arrivals) if arrivals else None, mask=mask))
    return jobs
