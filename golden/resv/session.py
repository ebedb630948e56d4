"""ReSV as a streaming session: hash, cluster (HCU reference), score, WiCSum-select (WTU reference), fetch.

For every layer and step (docs/golden.md §ReSV session):

1. **Hash** — every key of the layer is hashed once with the context's hyperplanes (:mod:`.hashing`).
2. **Cluster** — the step's tokens are clustered in order, in HCU jobs of at most ``cfg.hcu_frame_tokens``
   tokens, by :func:`vrex.golden.dre.hcu.reference.hcu_assign` on the open clusters staged by the table
   (:class:`.cluster_table.ClusterTable`); the table updates codes, running-mean keys, members and counts.
   With ``resv.cluster_text_tokens = false`` text tokens become closed singleton clusters without an HCU job.
3. **Score** — when tokens are offloaded: the WTU row of a query row (query token × query head of the KV head's
   GQA group, token-major) holds ``q · mean_key / √d`` (float32) for each *candidate* cluster, in ascending
   cluster id: the clusters with offloaded members, weighted by their offloaded member count
   (``resv.retrieval_scope = offloaded``), or all clusters with their token count (``all``). Scores are
   quantised with ``quantize_scores(score_bits, score_frac_bits)`` (round half to even, saturating; the number of
   saturated scores is reported) and counts saturate at ``2^count_bits - 1``.
4. **Select** — each row is selected by the WTU rule the config names (``dre.wtu.mode``: ``early_exit`` /
   ``histogram`` with ``resv.selection`` = ``bucketed`` or ``exact``; ``topk`` for a fixed top-k), rows are
   OR-aggregated per KV head (``resv.gqa_aggregation = group``) or over the layer (``global``). A row longer than
   the score memory is split into tiles (``resv.row_overflow``). ``resv.score_transform = exp`` is golden-only:
   float64 ``exp(s - max)`` with the exact rule, unquantised. With ``resv.threshold_mass = row`` each row also
   gets its **resident mass**: the scores ``q · k / √d`` (log2 units for exp2) of the keys it attends anyway
   (:meth:`StepContext.attended_anyway`: sinks, recent window, current step causally), quantised like the cluster
   scores, reduced to the WTU's ``(max, total)`` input by
   :func:`~vrex.golden.dre.wtu.exp_tensor.resident_mass_rows` (:func:`~vrex.golden.dre.wtu.exp.resident_mass` row by
   row with ``engine = "reference"``); every tile of the row gets the same input. The share of rows (and of KV-head
   jobs) that fetch nothing is reported (``rows_fetching_nothing``, ``jobs_fetching_nothing``).
5. **Fetch** — the offloaded members of the selected clusters. Layers below ``resv.dense_layers`` fetch every
   offloaded token. With ``resv.predict_from = previous_layer`` the rows use layer ``l - 1``'s queries.

``engine = "tensor"`` selects with the vectorised twins in :mod:`.wtu_tensor` (bit-identical, proven by
tests); ``engine = "reference"`` calls :func:`vrex.golden.dre.wtu.linear.select_row` row by row. A :class:`JobRecorder`
receives every HCU and WTU job exactly as handed to the block references, with the session's own outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from vrex.errors import TraceError, VrexError

from vrex.golden.resv.cluster_table import ClusterTable, JobOutcome
from vrex.golden.resv.hashing import hash_bits, hash_contexts, pack_codes
from vrex.golden.dre.jobs import HCUJob, WTUJob
from vrex.golden.resv.policies import RetrievalPolicy, StepContext
from vrex.golden.threads import torch_threads
from vrex.golden.traces.trace import FRAME
from vrex.golden.dre.wtu.exp import ExpParams, resident_mass
from vrex.golden.dre.wtu.exp_tensor import resident_mass_rows, select_rows_mass_float
from vrex.golden.dre.wtu.linear import aggregate_masks, mask_to_indices, select_row, select_row_kwargs
from vrex.golden.dre.wtu.linear_tensor import mask_int, quantize_counted, select_rows, select_rows_float_exact

__all__ = ["ReSVPolicy", "JobRecorder", "WTUOutcome", "RecordingDone", "run_session", "LOG2E"]

LOG2E = 1.0 / math.log(2.0)       # exp2 transform: scores in log2 units


class RecordingDone(Exception):
    """Raised by a recorder with ``stop_when_full`` once it holds ``max_jobs`` of each kind."""


@dataclass
class WTUOutcome:
    clusters: list[int]           # cluster id of each row position
    row_masks: list[int]          # the session's selection of each row (bit j = position j)
    mask: int                     # OR of the rows
    ratio_q: int = 0              # the ratio input of the job (per stage: resv.wicsum_ratio / text_wicsum_ratio)


@dataclass
class JobRecorder:
    """Collects block jobs (and the session's outcomes) as the session hands them to the references."""

    max_jobs: int | None = None
    stop_when_full: bool = False
    hcu: list[HCUJob] = field(default_factory=list)
    wtu: list[WTUJob] = field(default_factory=list)
    hcu_outcomes: list[JobOutcome] = field(default_factory=list)
    wtu_outcomes: list[WTUOutcome] = field(default_factory=list)

    def wants(self, kind: str) -> bool:
        return self.max_jobs is None or len(getattr(self, kind)) < self.max_jobs

    def check_full(self) -> None:
        if self.stop_when_full and not self.wants("hcu") and not self.wants("wtu"):
            raise RecordingDone()


class _WTUStats:
    def __init__(self):
        self.rows = self.jobs = self.tiles = 0
        self.buckets_walked = self.buckets_total = 0
        self.selected_fraction = 0.0
        self.aggregated_fraction = 0.0
        self.clusters = 0
        self.scores = self.saturated = 0
        self.refine_rows = self.refine_walked = 0
        self.nothing_rows = self.nothing_jobs = 0
        self.resident_scores = self.resident_saturated = 0

    def add_refinement(self, walks) -> None:
        """Sub-bins walked per refinement pass of each row (rows that selected everything have none)."""
        for row in walks:
            if row and any(row):
                self.refine_rows += 1
                self.refine_walked += sum(row)

    def as_dict(self) -> dict:
        r, j = max(1, self.rows), max(1, self.jobs)
        return {"rows": self.rows, "jobs": self.jobs, "tiles": self.tiles,
                "mean_clusters_per_row": self.clusters / j,
                "mean_buckets_walked": self.buckets_walked / r if self.buckets_total else None,
                "mean_bucket_fraction": self.buckets_walked / self.buckets_total if self.buckets_total else None,
                "mean_row_selected_fraction": self.selected_fraction / r,
                "mean_group_selected_fraction": self.aggregated_fraction / j,
                "saturated_scores": self.saturated, "scores": self.scores,
                "refined_rows": self.refine_rows,
                "mean_refine_bins_walked": self.refine_walked / self.refine_rows if self.refine_rows else None,
                "rows_fetching_nothing": self.nothing_rows / r, "jobs_fetching_nothing": self.nothing_jobs / j,
                "resident_scores": self.resident_scores, "saturated_resident_scores": self.resident_saturated}


class _LayerState:
    """One layer's ReSV state: hashing contexts, their codes (hashed as keys arrive) and their HC tables."""

    def __init__(self, cfg, layer, data, heads, engine: str = "tensor", numerics=None):
        """``numerics``: the codes come from its hashing (every key of the layer at once; the codes of a key do not
        depend on when it is hashed) and the tables use its sums and means."""
        self.layer, self.heads, self.hashed = layer, list(heads), 0
        self.keys, self.planes, self.bits, self.codes, self.tables = {}, {}, {}, {}, {}
        if numerics is not None:
            numerics.begin_layer(cfg, layer, data, self.heads)
        for c, k, planes in hash_contexts(cfg, layer, data, self.heads):
            self.keys[c], self.planes[c] = k, planes
            if numerics is not None:
                self.bits[c], self.codes[c] = None, numerics.hash_codes(c, planes)
                self.hashed = k.shape[0]
            else:
                self.bits[c] = torch.zeros(k.shape[0], planes.shape[1], dtype=torch.bool)
                self.codes[c] = [0] * k.shape[0]
            self.tables[c] = ClusterTable(cfg, k.shape[0], k.shape[1], engine, numerics=numerics, context=c)

    def hash_upto(self, end: int) -> None:
        """Hash the keys ``[hashed, end)``: each step hashes its own tokens, offline and online alike."""
        if end <= self.hashed:
            return
        for c, k in self.keys.items():
            bits = hash_bits(k[self.hashed:end], self.planes[c])
            self.bits[c][self.hashed:end] = bits
            self.codes[c][self.hashed:end] = pack_codes(bits)
        self.hashed = end


class ReSVPolicy(RetrievalPolicy):
    """The ReSV session for one run.

    Each layer's state (hash codes, HC tables) lives from :meth:`begin_layer` to :meth:`end_layer`, so a run may
    process layers one after the other (the trace evaluation) or all layers step by step (the e2e loop, where the
    keys arrive as the model runs). Keys are hashed when their step is selected, so both orders give the same
    codes, clusters and selections on the same Q/K.
    """

    def __init__(self, cfg, *, name: str = "resv", engine: str = "tensor", recorder: JobRecorder | None = None,
                 numerics=None):
        """``numerics``: hashing, key sums, means and scores in another number format than float (the LXE's:
        :class:`vrex.golden.core.session.LxeNumerics`); its scores, the resident keys' ones of
        ``resv.threshold_mass = row`` included, are already in the WTU's format."""
        if engine not in ("tensor", "reference"):
            raise ValueError(f"unknown engine {engine!r}")
        self.cfg, self.name, self.engine, self.recorder = cfg, name, engine, recorder
        self.numerics = numerics
        self.cluster_stats: list[dict] = []
        self.wtu_stats: dict[str, _WTUStats] = {}
        self.states: dict[int, _LayerState] = {}
        self.tables: dict = {}

    # ---- per layer ------------------------------------------------------------------------------------------------

    def begin_layer(self, cfg, layer, data, heads, stream):
        self.states[layer] = _LayerState(self.cfg, layer, data, heads, self.engine, self.numerics)
        self._use(layer)

    def _use(self, layer) -> None:
        st = self.states[layer]
        self.layer, self.heads, self.state = layer, st.heads, st
        self.keys, self.bits, self.codes, self.tables = st.keys, st.bits, st.codes, st.tables

    def end_layer(self, layer) -> None:
        st = self.states.pop(layer, None)
        if st is not None:
            for c, t in st.tables.items():
                self.cluster_stats.append({"layer": layer, "head": c, **t.stats()})

    def stats(self) -> dict:
        for layer in sorted(self.states):
            self.end_layer(layer)
        return {"clusters": self.cluster_stats, "wtu": {k: v.as_dict() for k, v in self.wtu_stats.items()},
                "engine": self.engine}

    # ---- per step -------------------------------------------------------------------------------------------------

    def _context_label(self, c, step) -> str:
        return f"L{self.layer}.{step.label}" if c is None else f"L{self.layer}.H{c}.{step.label}"

    def _cluster_step(self, ctx: StepContext) -> None:
        r, step = self.cfg.resv, ctx.step
        tokens = list(range(step.start, step.end))
        for c, table in self.tables.items():
            codes, keys, bits = self.codes[c], self.keys[c], self.bits[c] if table.majority else None
            pick = (lambda idx: bits[idx]) if bits is not None else (lambda idx: None)
            if step.kind != FRAME and not r.cluster_text_tokens:
                table.add_singletons(tokens, codes[step.start:step.end], keys[step.start:step.end],
                                     pick(slice(step.start, step.end)))
                continue
            chunk = self.cfg.hcu_frame_tokens
            parts = [tokens[i:i + chunk] for i in range(0, len(tokens), chunk)]
            for i, part in enumerate(parts):
                sl = slice(part[0], part[-1] + 1)
                out = table.run_job(ctx.res.window_start, part, codes[sl], keys[sl], pick(sl))
                rec = self.recorder
                if rec is not None and rec.wants("hcu"):
                    label = self._context_label(c, step) + (f".c{i}" if len(parts) > 1 else "")
                    rec.hcu.append(HCUJob(label, tuple(out.open_codes), tuple(out.token_codes)))
                    rec.hcu_outcomes.append(out)
                    rec.check_full()

    def _row_masks(self, scores: torch.Tensor, counts: torch.Tensor, cand: torch.Tensor, label: str,
                   substage: str, *, quantized: bool = False, resident=None) -> torch.Tensor:
        """Selection (bool ``(rows, N)``) of every row of one KV head's WTU job (tiles included); ``quantized``:
        ``scores`` are already in the WTU's fixed-point format; ``resident``: ``(scores (rows, n), attended (rows,
        n))`` of the keys each row attends anyway, float like ``scores`` (``resv.threshold_mass = row``)."""
        cfg, r, w = self.cfg, self.cfg.resv, self.cfg.dre.wtu
        st = self.wtu_stats.setdefault(substage, _WTUStats())
        R, N = scores.shape
        st.jobs += 1
        st.clusters += N
        st.rows += R
        stage = "frame" if substage == "frame" else "text"
        if r.score_transform == "exp":
            ratio = cfg.stage_ratio(stage)
            if resident is not None:
                masks = select_rows_mass_float(scores, counts, *resident, ratio, base2=False)[0]
            else:
                masks = select_rows_float_exact(scores, counts, ratio)
            st.selected_fraction += float((masks.sum(1).double() / max(N, 1)).sum())
            st.aggregated_fraction += float(masks.any(0).sum()) / max(N, 1)
            self._count_nothing(st, masks)
            return masks
        if quantized:                            # the core's LXE numerics already gave WTU-format scores
            q, saturated = scores, 0
        else:
            if r.score_transform == "exp2":      # the LXE folds log2(e) into the query: scores in log2 units
                scores = scores * LOG2E
            q, saturated = quantize_counted(scores, w.score_bits, w.score_frac_bits)
        st.scores += q.numel()
        st.saturated += saturated
        rmass = self._resident_input(st, resident, quantized) if resident is not None else None
        sat = counts.clamp(max=(1 << w.count_bits) - 1)
        cap = w.row_capacity
        if N > cap and r.row_overflow == "error":
            raise VrexError(f"a WTU row of {label} has {N} clusters but the score memory holds {cap} "
                            "(dre.wtu.score_memory_bytes); set resv.row_overflow: tile or enlarge the score memory.")
        masks = torch.zeros(R, N, dtype=torch.bool)
        tiles = [(i, min(N, i + cap)) for i in range(0, N, cap)] or [(0, 0)]
        st.tiles += len(tiles)
        kw = select_row_kwargs(cfg, stage)
        exp2 = r.score_transform == "exp2" and w.mode != "topk"
        for t, (a, b) in enumerate(tiles):
            qs, cs = q[:, a:b], sat[a:b]
            if self.engine == "tensor":
                js = select_rows(qs, cs, **kw, **({"resident": rmass[:2]} if rmass is not None else {}))
                tile_masks, walked = js.masks, js.buckets_walked
                tops = torch.full_like(walked, w.buckets - 1) if exp2 else js.top_bucket
                refine = js.refine_walks.tolist() if exp2 else None
            else:
                sels = [select_row(row, cs.tolist(), **kw, **({"resident": rmass[2][i]} if rmass is not None else {}))
                        for i, row in enumerate(qs.tolist())]
                tile_masks = torch.zeros(R, b - a, dtype=torch.bool)
                for i, s in enumerate(sels):
                    tile_masks[i, mask_to_indices(s.mask)] = True
                walked = torch.tensor([s.buckets_walked for s in sels])
                tops = torch.tensor([w.buckets - 1 if exp2 else s.top_bucket for s in sels])
                refine = [list(s.refine_walks) for s in sels] if exp2 else None
            masks[:, a:b] = tile_masks
            if w.mode != "topk" and r.selection == "bucketed" and b > a:
                st.buckets_walked += int(walked.sum())
                st.buckets_total += int((tops + 1).sum())
                if exp2:
                    st.add_refinement(refine)
            rec = self.recorder
            if rec is not None and rec.wants("wtu"):
                name = label + (f".t{t}" if len(tiles) > 1 else "")
                res_in = () if rmass is None else tuple(zip(rmass[0].tolist(), rmass[1].tolist()))
                rec.wtu.append(WTUJob(name, tuple(cs.tolist()), tuple(tuple(row) for row in qs.tolist()), res_in))
                row_bits = [mask_int(m) for m in tile_masks]
                rec.wtu_outcomes.append(WTUOutcome(cand[a:b].tolist(), row_bits, aggregate_masks(row_bits),
                                                   kw["ratio_q"]))
                rec.check_full()
        if N:
            st.selected_fraction += float((masks.sum(1).double() / N).sum())
            st.aggregated_fraction += float(masks.any(0).sum()) / N
        self._count_nothing(st, masks)
        return masks

    @staticmethod
    def _count_nothing(st: _WTUStats, masks: torch.Tensor) -> None:
        """Rows (and jobs: the OR of a KV head's rows) that fetch nothing: the resident window holds p (row mode)."""
        if masks.shape[1]:
            st.nothing_rows += int((~masks.any(1)).sum())
            st.nothing_jobs += int(not masks.any())

    def _resident_input(self, st: _WTUStats, resident, quantized: bool = False):
        """The WTU's resident-mass input of every row from the scores of the keys it attends anyway: float scores
        are quantised like the cluster scores (log2 units, round half to even, saturating; ``quantized``: already
        WTU-format integers, the LXE numerics'), then ``(max (R,), total (R,))`` by the tensor twin, and with
        ``engine = "reference"`` also per row by :func:`resident_mass` (the third item)."""
        w = self.cfg.dre.wtu
        values, attended = resident
        if quantized:
            rq, saturated = torch.where(attended, values, 0), 0
        else:
            rq, saturated = quantize_counted(torch.where(attended, values * LOG2E, 0.0), w.score_bits,
                                             w.score_frac_bits)
        st.resident_scores += int(attended.sum())
        st.resident_saturated += saturated
        p = ExpParams.from_config(self.cfg)
        rmax, rsum = resident_mass_rows(rq, attended, p, w.resident_sum_bits)
        rows = None
        if self.engine == "reference":
            rows = [resident_mass([v for v, ok in zip(vals, oks) if ok], p, w.resident_sum_bits)
                    for vals, oks in zip(rq.tolist(), attended.tolist())]
        return rmax, rsum, rows

    def select(self, ctx: StepContext) -> list[torch.Tensor]:
        self._use(ctx.layer)
        self.state.hash_upto(ctx.step.end)
        self._cluster_step(ctx)
        r, res = self.cfg.resv, ctx.res
        off = ctx.offloaded
        if not len(off):
            return [off for _ in self.heads]
        if self.layer < r.dense_layers:
            return [off for _ in self.heads]
        lo, hi = res.offloaded.start, res.offloaded.stop
        qsrc = ctx.data
        if r.predict_from == "previous_layer" and self.layer > 0:
            if ctx.prev is None:
                raise TraceError(f"resv.predict_from = previous_layer needs layer {self.layer - 1} in the trace.")
            qsrc = ctx.prev
        queries = qsrc.q if r.hashed_key == "post_rope" else qsrc.q_pre
        d = queries.shape[-1]
        fetched = {}
        selected_global = None
        row_mass = r.threshold_mass == "row"
        if row_mass:
            res_keys, attended = ctx.attended_anyway()
            attended = attended.repeat_interleave(ctx.group, 0)          # rows are token-major
        for c, table in self.tables.items():
            offc = table.offloaded_counts(lo, hi)
            if r.retrieval_scope == "offloaded":
                cand = torch.nonzero(offc > 0).flatten()
                counts = offc[cand]
            else:
                cand = torch.arange(table.n)
                counts = table.counts[: table.n]
            means = table.means(cand)
            heads = [c] if c is not None else self.heads
            per_head = {}
            for h in heads:
                rows = ctx.group_queries(h, queries)
                label = f"L{self.layer}.H{h}.{ctx.step.label}"
                if self.numerics is not None:
                    scores = self.numerics.scores(rows, means)
                else:
                    m_h = means if c is not None else means[:, h * d:(h + 1) * d]
                    scores = rows @ m_h.T / math.sqrt(d)
                resident = None
                if row_mass and self.numerics is not None:
                    resident = (self.numerics.resident_scores(c, rows, res_keys), attended)
                elif row_mass:
                    k_res = self.keys[c][res_keys] if c is not None else self.keys[c][res_keys, h * d:(h + 1) * d]
                    resident = (rows @ k_res.to(rows.dtype).T / math.sqrt(d), attended)
                per_head[h] = self._row_masks(scores, counts, cand, label, ctx.step.substage,
                                              quantized=self.numerics is not None, resident=resident).any(0)
            if r.gqa_aggregation == "global":
                selected_global = torch.stack(list(per_head.values())).any(0)
                per_head = {h: selected_global for h in heads}
            tc = table.token_cluster[lo:hi]
            for h, sel in per_head.items():
                chosen = torch.zeros(table.n, dtype=torch.bool)
                chosen[cand[sel]] = True
                fetched[h] = off[chosen[tc]]
        return [fetched[h] for h in self.heads]


def run_session(cfg, trace, *, layers=None, heads=None, engine: str = "tensor",
                recorder: JobRecorder | None = None, policy: ReSVPolicy | None = None, on_step=None) -> ReSVPolicy:
    """Run the ReSV session alone (no attention metrics) over ``trace``; returns the policy with its stats.

    A recorder with ``stop_when_full`` ends the run early once it holds ``max_jobs`` jobs of each kind.
    ``on_step(policy, ctx, fetched)`` is called after every (layer, step) with the fetched tokens per KV head
    (the KVMU model reads the clustering and the selection there).
    """
    from vrex.golden.resv.stream import Stream

    layers = trace.layer_ids if layers is None else list(layers)
    heads = list(range(trace.kv_heads)) if heads is None else sorted(set(heads))
    policy = policy or ReSVPolicy(cfg, engine=engine, recorder=recorder)
    stream = Stream(cfg, trace)
    seg_ids = trace.segment_ids()
    try:
        with torch_threads():
            _run_layers(cfg, trace, layers, heads, policy, stream, seg_ids, on_step)
    except RecordingDone:
        pass
    return policy


def _run_layers(cfg, trace, layers, heads, policy, stream, seg_ids, on_step=None):
    for l in layers:
        data = trace.layers[l]
        policy.begin_layer(cfg, l, data, heads, stream)
        for step in stream.steps:
            ctx = StepContext(cfg, l, data, trace.layers.get(l - 1), stream, step, stream.residency(step), heads,
                              seg_ids)
            fetched = policy.select(ctx)
            if on_step is not None:
                on_step(policy, ctx, fetched)
        policy.end_layer(l)
