"""The golden ReSV session in the LXE's numerics, and what the core does on each (layer, step).

:class:`LxeNumerics` plugs the LXE's number formats (:mod:`.numerics`) into the ReSV session
(:class:`vrex.golden.resv.session.ReSVPolicy` and its :class:`~vrex.golden.resv.cluster_table.ClusterTable`): BF16 hashing on
the MAC tree, FP32 key sums and BF16 means on the VPE, scores on the MAC tree and the VPE's fixed-point
conversion; with ``resv.threshold_mass = row`` also the resident keys' scores, from which the session derives each
row's resident input (:func:`vrex.golden.dre.wtu.exp.resident_mass`). Everything else (preload staging, the HCU
assignment, WiCSum, aggregation, residency) is the session's own code, unchanged.

:func:`core_session` runs that session on one layer for the first ``steps`` steps of a trace and records, per step
and KV head (a *context* of the core), exactly what the core's sequencer hands its blocks and what it must leave in
memory: the HCU jobs and their assignments, the WTU job and its row and group masks, the KVMU job (the step's
token descriptors and the cluster mask of the selection), and a snapshot of the HC table after the step
(:class:`TableSnapshot`, the content of the core's HC-table regions, :mod:`.table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from vrex.errors import VrexError

from vrex.golden.dre.jobs import HCUJob, WTUJob
from vrex.golden.dre.kvmu.jobs import Job, mask_beats
from vrex.golden.traces.trace import FRAME
from .numerics import LxeParams, add_key, bf16_rows, hash_code, mean_key, score

__all__ = ["LxeNumerics", "TableSnapshot", "ContextStep", "CoreStep", "core_session", "record_bytes"]


class LxeNumerics:
    """Hashing, key sums, means and scores of the ReSV session in the LXE's numerics (docs/formats.md §Core)."""

    def __init__(self, cfg):
        r = cfg.resv
        if r.cluster_scope != "kv_head" or r.cluster_code != "first":
            raise VrexError("the LXE numerics of the retrieval path cover resv.cluster_scope = kv_head and "
                            "resv.cluster_code = first (the core's contexts and the HCU's write-once codes).")
        self.p = LxeParams(cfg)
        self.keys: dict = {}
        self.planes: dict = {}
        self.sums: dict = {}
        self._means: dict = {}

    def begin_layer(self, cfg, layer, data, heads) -> None:
        keys = data.k if cfg.resv.hashed_key == "post_rope" else data.k_pre
        self.keys = {h: bf16_rows(keys[:, h]) for h in heads}
        self.planes, self.sums, self._means = {}, {h: {} for h in heads}, {}

    def hash_codes(self, context, planes: torch.Tensor) -> list[int]:
        """Codes of every key of the layer (``planes``: ``(head_dim, hash_bits)`` float hyperplanes)."""
        self.planes[context] = bf16_rows(planes.T)
        return [hash_code(self.p, key, self.planes[context]) for key in self.keys[context]]

    def add(self, table, cid: int, token: int) -> None:
        sums = self.sums[table.context]
        sums[cid] = add_key(self.p, sums.get(cid), self.keys[table.context][token])

    def mean(self, context, cid: int, count: int) -> list[int]:
        key = (context, cid, count)
        if key not in self._means:
            self._means[key] = mean_key(self.p, self.sums[context][cid], count)
        return self._means[key]

    def means(self, table, ids: torch.Tensor) -> list[list[int]]:
        return [self.mean(table.context, c, int(table.counts[c])) for c in ids.tolist()]

    def scores(self, rows: torch.Tensor, means: list[list[int]]) -> torch.Tensor:
        """``(rows, clusters)`` WTU scores (int64) of float query rows against BF16 mean keys."""
        q = bf16_rows(rows)
        return torch.tensor([[score(self.p, row, m) for m in means] for row in q], dtype=torch.int64).reshape(
            len(q), len(means))

    def resident_scores(self, context, rows: torch.Tensor, key_ids: torch.Tensor) -> torch.Tensor:
        """``(rows, keys)`` WTU scores of float query rows against the layer's own BF16 keys ``key_ids`` (the keys
        a row attends anyway, ``resv.threshold_mass = row``): the same MAC-tree dot product and VPE ``fixed`` with
        the same constant as the cluster scores (docs/formats.md §Core, "The resident input", step 1)."""
        keys = self.keys[context]
        return self.scores(rows, [keys[k] for k in key_ids.tolist()])


@dataclass(frozen=True)
class TableSnapshot:
    """One context's HC table after a step (what the core's HC-table regions hold for it)."""

    codes: list[int]               # per cluster: its code (the first member's)
    counts: list[int]              # members
    offloaded: list[int]           # members older than the step's recent window (and not sinks)
    sums: list[list[int]]          # FP32 bits of the key sums
    means: list[list[int]]         # BF16 bits of the mean keys
    open_list: list[tuple[int, int, int]]   # (cluster, newest member, code) of the open clusters, ascending id
    token_clusters: list[int]      # cluster of every token so far

    @property
    def clusters(self) -> int:
        return len(self.codes)


@dataclass
class ContextStep:
    head: int
    context: int                   # the KVMU's context id (layer · kv_heads + head)
    hcu_jobs: list[HCUJob]
    assignments: list              # per HCU job: vrex.golden.dre.hcu.reference.HCUResult
    wtu_job: WTUJob | None
    row_masks: list[int] | None    # per row: bit j = candidate position j selected
    group_mask: int | None         # OR of the rows
    candidates: list[int] | None   # cluster id of each candidate position
    kvmu_job: Job
    table: TableSnapshot


@dataclass
class CoreStep:
    index: int
    start: int
    tokens: int
    window_start: int
    segment_start: bool
    kind: int
    contexts: list[ContextStep] = field(default_factory=list)


def _snapshot(numerics: LxeNumerics, head, table, res, end: int) -> TableSnapshot:
    n = table.n
    counts = table.counts[:n].tolist()
    off = table.offloaded_counts(res.sinks, max(res.sinks, res.window_start)).tolist()
    open_ids = [c for c in range(n) if not bool(table.closed[c]) and int(table.newest[c]) >= res.window_start]
    sums = [list(numerics.sums[head][c]) for c in range(n)]
    return TableSnapshot(list(table.codes[:n]), counts, off, sums,
                         [numerics.mean(head, c, counts[c]) for c in range(n)],
                         [(c, int(table.newest[c]), table.codes[c]) for c in open_ids],
                         table.token_cluster[:end].tolist())


def core_session(cfg, trace, *, layer: int = 0, steps: int | None = None) -> list[CoreStep]:
    """The first ``steps`` steps (default: all) of the LXE-numerics ReSV session on ``layer`` of ``trace``."""
    from vrex.golden.resv.session import JobRecorder, ReSVPolicy, RecordingDone, run_session

    numerics = LxeNumerics(cfg)
    rec = JobRecorder()
    policy = ReSVPolicy(cfg, engine="reference", recorder=rec, numerics=numerics)
    starts = {s.start for s in trace.segments}
    lanes, kv_heads = cfg.dre.wtu.lanes, cfg.model.kv_heads
    out: list[CoreStep] = []
    seen = {"hcu": 0, "wtu": 0}

    def on_step(pol, ctx, fetched):
        step, res = ctx.step, ctx.res
        cs = CoreStep(step.index, step.start, step.tokens, res.window_start, step.start in starts, step.kind)
        hcu = rec.hcu[seen["hcu"]:]
        hcu_out = rec.hcu_outcomes[seen["hcu"]:]
        wtu = rec.wtu[seen["wtu"]:]
        wtu_out = rec.wtu_outcomes[seen["wtu"]:]
        seen["hcu"], seen["wtu"] = len(rec.hcu), len(rec.wtu)
        chunks = -(-step.tokens // cfg.hcu_frame_tokens)
        offloaded = len(ctx.offloaded) > 0
        if offloaded and len(wtu) != len(pol.heads):
            raise VrexError(f"step {step.label}: a WTU row was split into tiles (more candidates than the score "
                            "memory holds); the core does not tile rows.")
        for i, (h, table) in enumerate(pol.tables.items()):
            jobs, results = hcu[i * chunks:(i + 1) * chunks], hcu_out[i * chunks:(i + 1) * chunks]
            tc = table.token_cluster
            arrivals = tuple((int(tc[t]), t in starts) for t in range(step.start, step.end))
            wjob = wout = chosen = None
            mask = None
            if offloaded:
                wjob, wout = wtu[i], wtu_out[i]
                chosen = [wout.clusters[j] for j in range(len(wout.clusters)) if wout.mask >> j & 1]
                mask = mask_beats(chosen, table.n, lanes)
            context = layer * kv_heads + h
            kjob = Job(context, step.index, restart=i == 0, buffer=layer & 1, arrivals=arrivals, mask=mask,
                       stage=step.stage)
            cs.contexts.append(ContextStep(h, context, list(jobs), [o.result for o in results], wjob,
                                           None if wout is None else list(wout.row_masks),
                                           None if wout is None else wout.mask,
                                           None if wout is None else list(wout.clusters), kjob,
                                           _snapshot(numerics, h, table, res, step.end)))
        out.append(cs)
        if steps is not None and len(out) >= steps:
            raise RecordingDone()

    run_session(cfg, trace, layers=[layer], policy=policy, on_step=on_step)
    return out


def record_bytes(trace, layer: int, head: int, token: int) -> bytes:
    """The KV record the core writes for a token: its BF16 key, then its BF16 value, little endian."""
    from .numerics import bf16_of

    data = trace.layers[layer]
    values = [bf16_of(x) for x in data.k[token, head].tolist()] + [bf16_of(x) for x in data.v[token, head].tolist()]
    return b"".join(v.to_bytes(2, "little") for v in values)


def frame_steps(trace) -> int:
    """Steps of the session before its first text turn after a frame: the frames, and a chat opening before them
    (the llm-video trace opens with the model's chat template; the synthetic and video traces start with frames)."""
    n, seen_frame = 0, False
    for seg in trace.segments:
        if seg.kind != FRAME and seen_frame:
            break
        seen_frame |= seg.kind == FRAME
        n += 1
    return n
