"""One step of a streaming session on one system, layer by layer, as a task timeline.

Per decoder layer l the compute engine (V-Rex LXE or GPU) runs, in this order::

    qkv[l] → (hash[l]) → (score[t]) → attn[l] → ffn[l]

``hash[l]`` hashes the step's new keys, then the HCU clusters them (V-Rex: ``hcu`` resource; GPU: on the compute
engine, one launch per token). ``score[t]`` scores the representatives for the *target* layer t and thresholds
them (V-Rex: WTU on the ``wtu`` resource; GPU: top-k / sort on the compute engine); then ``fetch[t]`` brings the
selected KV of layer t over the link (``offload`` resource), and ``attn[t]`` waits for it. The overlap policy
(``perf.overlap``) picks the target:

- ``prefetch`` (paper Fig. 5/6; all systems, as the paper configures its baselines): t = l + 1, so layer l+1's
  transfer overlaps layer l's attention and FFN. Layer 0 has no previous layer; it predicts for itself.
- ``serial``: t = l; prediction and transfer of a layer sit between its QKV generation and its attention.

Where each stream's KV lives is the system's device tier (``vrex.perf.memory``): the sinks and recent window, then
the newest older KV up to the capacity, the rest in the host tier. A step selects ``ratio × candidates`` of the
older tokens; the host-tier share of that selection is fetched (``fetch[t]``), the rest is read from device DRAM by
attention. ``evict[l]`` writes the KV pushed out of the full device tier to the host tier after the layer's
fetches; a cache that fits evicts and fetches nothing. The
vision tower runs before layer 0 of a frame step, the LM head after the last layer. The latency of the step is
the timeline's makespan; the critical path splits it into exposed time per category (vision, llm, prediction,
retrieval, eviction).

With the core's figures record (``retrieval_path``, :mod:`vrex.sim.core.cycle_model`) V-Rex's ``hash``, ``hcu``,
``score`` and ``wtu`` durations are the core's modelled phases per (stream, KV head) context instead of the LXE's
roofline and the HCU / WTU formulas (:mod:`.dre_timing`).

The Fig. 16 ablation is a choice of system: GPU + ReSV (prediction on the GPU, token-order layout), V-Rex with the
KVPU but a token-order layout (``dre.kvmu.layout = token_order``), and full V-Rex (cluster-contiguous layout).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dre_timing import DRETiming
from .energy import Counters, step_energy
from .memory import DeviceTier, gpu_tier, vrex_tier, window_tier
from .platforms import Platform, gpu_platform, vrex_platform
from .policies import Policy, clustering_prediction, gpu_work, n_open_clusters, selection_prediction
from .timeline import Timeline
from .transfer import Link, read_transfer, write_transfer
from .workload import (KVGeometry, Step, Work, attention_work, eviction_tokens, ffn_work, lm_head_work, qkv_work,
                       vision_work)

__all__ = ["System", "StepResult", "simulate_step", "vrex_system", "gpu_system"]


@dataclass(frozen=True)
class System:
    key: str
    label: str
    platform: Platform
    policy: Policy
    layout: str
    overlap: str
    tier: DeviceTier = field(default_factory=window_tier)
    kvmu_runs: dict = field(default_factory=dict)    # stage -> (token slices per command, moved per payload byte)


def vrex_system(cfg, pols: dict[str, Policy], *, layout: str | None = None, key: str = "vrex",
                label: str | None = None, figures=None, kvmu=None) -> System:
    """V-Rex running ReSV with its DRE; layout from ``dre.kvmu.layout`` unless given; measured LXE figures and KVMU
    traffic (``vrex.perf.golden_input.KVMUTraffic``) where given."""
    if layout is None:
        layout = "cluster_contiguous" if cfg.dre.kvmu.layout == "cluster_contiguous" else "token_scattered"
    plat = vrex_platform(cfg, figures)
    runs = {st: kvmu.run(st) for st in ("frame", "text") if kvmu is not None and kvmu.run(st)}
    return System(key, label or f"{plat.name} + ReSV", plat, pols["resv"], layout, cfg.perf.overlap, vrex_tier(cfg),
                  runs)


def gpu_system(cfg, pols: dict[str, Policy], policy: str) -> System:
    plat = gpu_platform(cfg)
    pol = pols[policy]
    return System(f"gpu:{policy}", f"{plat.name} + {pol.label}", plat, pol, pol.gpu_layout, cfg.perf.overlap,
                  gpu_tier(cfg))


@dataclass
class StepResult:
    """One step on one system. Times in seconds, energies in joules."""

    system: str
    step: Step
    latency: float
    exposed: dict                  # critical-path time per category (sums to latency)
    busy: dict                     # busy time per resource
    energy: dict                   # joules per part (vrex.perf.energy)
    counters: Counters = field(repr=False)
    weight_floor: float = 0.0      # weights streamed / peak DRAM bandwidth
    compute_floor: float = 0.0     # matrix / matrix peak + vector / vector peak
    link_floor: float = 0.0        # fetched payload / peak link bandwidth
    dram_floor: float = 0.0        # every device-DRAM byte of the step's tasks / peak DRAM bandwidth
    busy_by_category: dict = field(default_factory=dict)
    geometry: object = None        # the KVGeometry of the step
    timeline: object = field(default=None, repr=False)     # the step's Timeline (per-layer views)

    @property
    def energy_total(self) -> float:
        return sum(self.energy.values())

    @property
    def throughput(self) -> float:
        """Steps of all streams per second (frames per second for a frame step)."""
        return self.step.batch / self.latency

    def as_dict(self) -> dict:
        return {"kind": self.step.kind, "kv_tokens": self.step.kv_tokens, "batch": self.step.batch,
                "latency_s": self.latency, "throughput_per_s": self.throughput,
                "energy_j": self.energy_total, "energy_per_stream_j": self.energy_total / self.step.batch,
                "energy_parts_j": self.energy, "exposed_s": self.exposed, "busy_s": self.busy,
                "busy_by_category_s": self.busy_by_category,
                "floors_s": {"weights": self.weight_floor, "compute": self.compute_floor, "link": self.link_floor,
                             "dram": self.dram_floor},
                "kv_tier": _tier_dict(self.geometry), "counters": self.counters.as_dict()}


def _tier_dict(g) -> dict:
    if g is None:
        return {}
    return {"window_tokens": g.window, "candidate_tokens": g.candidates, "device_older_tokens": g.device_old,
            "host_tokens": g.host}


def _split_kernels(total: int) -> tuple[int, int, int]:
    third = total // 3
    return third, third, total - 2 * third


def simulate_step(cfg, system: System, step: Step, dre: DRETiming) -> StepResult:
    """Build the step's task timeline on ``system`` (see the module notes) and account its time and energy."""
    plat, pol = system.platform, system.policy
    m, layers = cfg.model, cfg.model.layers
    geom = KVGeometry.of(cfg, step.kv_tokens, system.tier, step.batch)
    link = Link.of(cfg, plat, dre.kvmu_bytes_per_s if plat.has_dre else None)
    tl, cnt = Timeline(), Counters()
    gpu = plat.kind == "gpu"
    k_qkv, k_attn, k_ffn = _split_kernels(plat.llm_kernels_per_layer) if gpu else (0, 0, 0)

    def compute(name, category, work: Work, deps, seconds=None):
        cnt.work = cnt.work + work
        cnt.compute_busy += plat.compute_busy(work)
        cnt.compute_active += max(plat.compute_busy(work), plat.memory_busy(work))
        return tl.add(name, category, "compute", plat.time(work) if seconds is None else seconds, deps)

    def ratio(layer: int) -> float:
        if pol.predictor == "cluster_hash" and layer < cfg.resv.dense_layers:
            return 1.0
        return pol.ratio(step.stage, geom.candidates)

    # regions of one layer: (K or V) x KV head of head slices; ReKV's blocks hold all heads per (K or V)
    if system.layout == "block_contiguous":
        regions, slice_bytes, run = 2, m.kv_heads * geom.slice_bytes, pol.block_tokens
    else:
        regions, slice_bytes, run = 2 * m.kv_heads, geom.slice_bytes, cfg.perf.cluster_run_tokens
    reuse = 1.0 - cfg.perf.reuse_fraction
    sel_pred = selection_prediction(cfg, pol, step, geom)
    clu_pred = clustering_prediction(cfg, pol, step, geom)
    fetched, reads = {}, {}     # fetch task per layer; transfer per retrieval ratio
    sel_gpu = gpu_work(sel_pred, plat) if gpu else None
    clu_gpu = gpu_work(clu_pred, plat) if gpu else None
    # with the core's record, the retrieval path of each (stream, KV head) context is the core's cycle model: H and
    # S score time the LXE's hash and score, X + C + K + R the HCU task, S select the WTU task (dre_timing)
    n_ctx = step.batch * m.kv_heads
    ctx_units = max(1, min(plat.cores, n_ctx))
    path = None
    if plat.has_dre and pol.predictor == "cluster_hash":
        path = dre.path_phases(cfg, tokens=step.tokens, exits=step.tokens if geom.candidates > 0 else 0,
                               n_open=n_open_clusters(cfg, geom, pol),
                               tokens_per_cluster=pol.tokens_per_cluster or cfg.perf.tokens_per_cluster,
                               clusters=0 if sel_pred.empty else sel_pred.select_row_len)

    def path_seconds(cycles):
        return cycles * n_ctx / (ctx_units * plat.clock_hz)

    def predict_and_fetch(target: int, after):
        gate = after
        if not sel_pred.empty:
            if plat.has_dre:
                gate = compute(f"score{target}", "prediction", sel_pred.compute, [after],
                               seconds=None if path is None else path_seconds(path["score"]))
                rows, row_len = sel_pred.select_rows, sel_pred.select_row_len
                if path is None:
                    # one WTU job per (stream, GQA group): it reads the group's count words once
                    cycles = dre.wtu_cycles(cfg, rows, row_len, jobs=step.batch * m.kv_heads)
                    # rows are spread over the cores' WTUs
                    wtus = min(plat.cores, rows)
                else:
                    cycles, wtus = path["select"] * n_ctx, ctx_units
                cnt.wtu_cycles += cycles
                cnt.wtu_visits += dre.wtu_score_visits(cfg, rows, row_len)
                gate = tl.add(f"wtu{target}", "prediction", "wtu", cycles / (wtus * plat.clock_hz), [gate],
                              meta={"cycles": cycles, "rows": rows, "row_len": row_len, "units": wtus})
            else:
                gate = compute(f"score{target}", "prediction", sel_gpu, [after])
        r = ratio(target)
        if r not in reads:
            measured = system.kvmu_runs.get(step.stage) if system.layout == "cluster_contiguous" else None
            reads[r] = read_transfer(link, system.layout, offloaded=geom.host, selected=r * geom.host * reuse,
                                     regions=regions * step.batch, slice_bytes=slice_bytes, run_tokens=run,
                                     measured_run=measured)
        tr = reads[r]
        cnt.read = cnt.read + tr
        fetched[target] = tl.add(f"fetch{target}", "retrieval", "offload", tr.seconds, [gate],
                                 meta={"moved": tr.moved, "payload": tr.payload})

    prev = None
    if step.vision:
        prev = compute("vision", "vision", vision_work(cfg, step), [])
    evict_tokens = eviction_tokens(step, geom)
    qkv_w = qkv_work(cfg, step).with_kernels(k_qkv)
    ffn_w = ffn_work(cfg, step).with_kernels(k_ffn)
    attn_w = {}     # by retrieval ratio (dense layers differ)
    wr = write_transfer(link, system.layout, tokens=evict_tokens, regions=regions * step.batch,
                        slice_bytes=slice_bytes)
    for layer in range(layers):
        qkv = compute(f"qkv{layer}", "llm", qkv_w, [prev])
        if not clu_pred.empty:
            if plat.has_dre:
                h = compute(f"hash{layer}", "prediction", clu_pred.compute, [qkv],
                            seconds=None if path is None else path_seconds(path["hash"]))
                if path is None:
                    cycles = dre.hcu_cycles(cfg, clu_pred.cluster_tokens, clu_pred.cluster_open)
                    # contexts (stream, KV head) are spread over the cores' HCUs
                    hcus = min(plat.cores, clu_pred.cluster_tokens / step.tokens)
                else:
                    cycles = sum(path[p] for p in ("exits", "cluster", "kvmu", "records")) * n_ctx
                    hcus = ctx_units
                cnt.hcu_cycles += cycles
                cnt.hcu_compares += dre.hcu_compares(clu_pred.cluster_tokens, clu_pred.cluster_open)
                tl.add(f"hcu{layer}", "prediction", "hcu", cycles / (hcus * plat.clock_hz), [h],
                       meta={"cycles": cycles, "tokens": clu_pred.cluster_tokens, "open": clu_pred.cluster_open,
                             "units": hcus})
            else:
                compute(f"cluster{layer}", "prediction", clu_gpu, [qkv])
        if system.overlap == "serial":
            predict_and_fetch(layer, qkv)
        else:
            if layer == 0:
                predict_and_fetch(0, qkv)
            if layer + 1 < layers:
                predict_and_fetch(layer + 1, qkv)
        r = ratio(layer)
        if r not in attn_w:
            attended = geom.window + r * geom.candidates + step.tokens
            attn_w[r] = attention_work(cfg, step, attended).with_kernels(k_attn)
        attn = compute(f"attn{layer}", "llm", attn_w[r], [qkv, fetched[layer]])
        prev = compute(f"ffn{layer}", "llm", ffn_w, [attn])
        cnt.write = cnt.write + wr
        if wr.seconds:
            tl.add(f"evict{layer}", "eviction", "offload", wr.seconds, [qkv], meta={"moved": wr.moved})
    compute("lm_head", "llm", lm_head_work(cfg, step).with_kernels(1 if gpu else 0), [prev])

    latency = tl.makespan
    w = cnt.work
    return StepResult(
        system.key, step, latency, tl.exposed(), tl.busy(), step_energy(cfg, plat, cnt, latency, dre), cnt,
        weight_floor=w.weight_bytes / plat.dram_bw,
        compute_floor=w.matmul_flops / plat.matmul_peak + w.vector_ops / plat.vector_peak,
        link_floor=cnt.read.payload / plat.link_bw, dram_floor=w.dram_bytes / plat.dram_bw,
        busy_by_category=tl.busy_by_category(), geometry=geom, timeline=tl)
