"""The KVMU on a recorded ReSV session: the jobs a sequencer would hand it, and the traffic they cause.

:func:`session_jobs` runs the ReSV session (:func:`vrex.golden.resv.session.run_session`) and, after every (layer, step),
turns each clustering context into one :class:`~.jobs.Job`: the step's new tokens with their cluster ids (and
whether each starts a segment: frame, question, answer), and — when tokens are offloaded — the mask of the clusters
whose offloaded members ReSV fetched. The first context of every (layer, step) restarts the staging cursor in half
``layer mod 2`` (one layer is consumed while the next is prefetched).

:func:`kvmu_report` runs the jobs through :class:`~.model.KVMUModel` (counters only) and gives the ``"kvmu"``
object of ``vrex golden --json``: per stage (``frame``, ``text``) ``payload_bytes``, ``bytes_moved``, ``bursts``,
``commands``, ``stalls``, with the eviction / prefetch split, and the capacity and map used. Only the evaluated
layers and KV heads are counted (``contexts_evaluated`` of ``contexts``).
"""

from __future__ import annotations

import time

from vrex.golden.dre.kvmu.bursts import EVICT, PREFETCH
from vrex.golden.dre.kvmu.jobs import Job, mask_beats
from vrex.golden.dre.kvmu.model import KVMUModel

__all__ = ["session_jobs", "kvmu_report", "run_jobs"]

STAGE_KEYS = ("jobs", "payload_bytes", "bytes_moved", "bursts", "commands", "stalls", "errors")
MODE_KEYS = ("payload_bytes", "bytes_moved", "bursts", "commands")


def session_jobs(cfg, trace, *, layers=None, heads=None, max_jobs=None) -> list[Job]:
    """KVMU jobs of a ReSV session on ``trace`` (a :class:`vrex.golden.traces.trace.Trace`), in session order."""
    import torch

    from vrex.golden.resv import session as resv

    lanes = cfg.dre.wtu.lanes
    starts = {s.start for s in trace.segments}
    per_layer = 1 if cfg.resv.cluster_scope == "layer" else cfg.model.kv_heads
    jobs: list[Job] = []

    class _Enough(Exception):
        pass

    def on_step(policy, ctx, fetched):
        step = ctx.step
        offloaded = len(ctx.offloaded) > 0
        for i, (c, table) in enumerate(policy.tables.items()):
            context = ctx.layer * per_layer + (0 if c is None else c)
            tc = table.token_cluster
            arrivals = tuple((int(tc[t]), t in starts) for t in range(step.start, step.end))
            mask = None
            if offloaded:
                f = fetched[0 if c is None else policy.heads.index(c)]
                chosen = torch.unique(tc[f]).tolist() if len(f) else []
                mask = mask_beats(chosen, table.n, lanes)
            jobs.append(Job(context, step.index, restart=i == 0, buffer=ctx.layer & 1, arrivals=arrivals,
                            mask=mask, stage=step.stage))
            if max_jobs is not None and len(jobs) >= max_jobs:
                raise _Enough

    try:
        resv.run_session(cfg, trace, layers=layers, heads=heads, on_step=on_step)
    except _Enough:
        pass
    return jobs


def run_jobs(model: KVMUModel, jobs) -> dict:
    """Run ``jobs`` on ``model``; per-stage counters with the eviction / prefetch split."""
    stages: dict = {}
    for job in jobs:
        before = dict(model.stats)
        modes_before = {m: dict(v) for m, v in model.by_mode.items()}
        model.run_job(job)
        st = stages.setdefault(job.stage, {k: 0 for k in STAGE_KEYS} | {
            "evict": {k: 0 for k in MODE_KEYS}, "prefetch": {k: 0 for k in MODE_KEYS}, "steps": set()})
        for k in STAGE_KEYS:
            st[k] += model.stats[k] - before[k]
        for mode, name in ((EVICT, "evict"), (PREFETCH, "prefetch")):
            for k in MODE_KEYS:
                st[name][k] += model.by_mode[mode][k] - modes_before[mode][k]
        st["steps"].add(job.step)
    for st in stages.values():
        st["steps"] = len(st["steps"])
    return stages


def kvmu_report(cfg, trace, *, layers=None, heads=None) -> dict:
    """The ``"kvmu"`` object of the golden JSON report (see the module docstring)."""
    t0 = time.time()
    km = cfg.kvmu_map
    base = {"config_hash": cfg.hash(), "capacity_bytes": km.capacity_bytes,
            "capacity_source": "dre.kvmu.device_capacity_bytes" if cfg.dre.kvmu.device_capacity_bytes else "auto",
            "stream_capacity_bytes": km.stream_capacity_bytes, "batch": km.batch, "ring_tokens": km.ring_tokens,
            "staging_bytes": km.staging_bytes, "table_bytes": km.table_bytes, "record_bytes": km.record_bytes,
            "block_tokens": km.block_tokens, "coalesce_gap_bytes": cfg.dre.kvmu.coalesce_gap_bytes,
            "layout": cfg.dre.kvmu.layout, "eviction_granularity": cfg.dre.kvmu.eviction_granularity,
            "contexts": km.contexts}
    if cfg.dre.kvmu.layout != "cluster_contiguous":
        return base | {"measured": False, "reason": "the KVMU model implements the cluster_contiguous layout only"}
    jobs = session_jobs(cfg, trace, layers=layers, heads=heads)
    model = KVMUModel(cfg, data=False)
    stages = run_jobs(model, jobs)
    empty = {k: 0 for k in STAGE_KEYS} | {"evict": {k: 0 for k in MODE_KEYS},
                                           "prefetch": {k: 0 for k in MODE_KEYS}, "steps": 0}
    out = base | {"measured": True, "contexts_evaluated": len({j.context for j in jobs}),
                  "host_blocks_used": model.next_block, "seconds": round(time.time() - t0, 2)}
    for stage in ("frame", "text"):
        out[stage] = stages.get(stage, empty)
    return out
