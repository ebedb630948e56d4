"""The DRE against the LXE on one decoder layer (issue 23): does the retrieval engine stay off the critical path?

For each KV size and step (a frame step and a decode step of the text stage) this simulates V-Rex's step
(:func:`vrex.perf.model.simulate_step`, the same task graph as every other ``vrex perf`` figure) and reads one
layer's tasks back from its timeline. The tasks *of layer l* are those issued from ``qkv[l]`` up to ``qkv[l+1]``
(program order): the LXE's ``qkv``, ``hash``, ``score``, ``attn`` and ``ffn`` of that layer, and the DRE work it
issues:

- **HCU**: clustering of the step's new keys of layer l (``hcu[l]``; cycles per token measured or the formula);
- **WTU**: thresholding every score row of the target layer (``wtu[l+1]`` with ``perf.overlap = prefetch``, plus
  ``wtu[0]`` on layer 0, which predicts for itself; cycles per row measured or the formula);
- **KVMU**: its own work on the layer, one engine per core running its jobs in order from layer to layer, each as
  soon as its input is ready: the arrival of the new tokens' K/V into their cluster regions (after ``qkv[l]``;
  measured cycles per token, else the K/V bytes at the AXI width), the prefetch of the fetched bytes (once the WTU
  has selected them; measured prefetch bytes per cycle, else the AXI width) and the eviction writes (after
  ``qkv[l]``). The KVMU is not a resource of the model's timeline (the transfers it drives are: ``offload``,
  bounded by the KVMU's rate when figures give it), so this part changes no latency; the time a transfer takes
  beyond the KVMU's own is the link's or the storage's (the model's retrieval), not the DRE's (decisions.md).

Per layer, with I(x) the busy intervals of x::

    overlap = |I(DRE) ∩ I(LXE of layer l)|      exposed = |I(DRE)| − overlap = |I(DRE) \\ I(LXE of layer l)| ≥ 0

per unit (HCU, WTU, KVMU) and for the DRE as a whole (the union of the three, which run in parallel). A DRE that
hides behind the LXE's work on its own layer has exposed = 0. *Past transfers* counts a transfer in flight (any
layer's) as cover too: DRE work that runs while the LXE waits for the link is not what delays the step. Independently of the per-layer attribution the step's
critical path says how much DRE time sets the latency (``critical_dre_s``: the durations of the HCU and WTU tasks on
it). The view reports a steady-state layer (``layers // 2``) and the worst layer of the step (the largest exposed
time; layer 0's self-prediction is where a WTU can be exposed under prefetch).

Provenance: every row carries which values were measured (figures, cycle records) and which are formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from .dre_timing import DRETiming, dre_timing
from .figures_input import Figures
from .model import StepResult, simulate_step, vrex_system
from .policies import policies
from .workload import decode_step, frame_step

__all__ = ["LAYER_KV_SIZES", "LayerView", "UnitSlot", "layer_view", "layer_timeline", "interval_measure",
           "intersection_measure", "kvmu_rates", "provenance", "dre_options", "figure_record"]

LAYER_KV_SIZES = (1024, 2048, 4096, 8192, 16384, 32768, 40960)
STEPS = {"frame": frame_step, "decode": decode_step}
UNITS = ("hcu", "wtu", "kvmu")


# ---- interval arithmetic ---------------------------------------------------------------------------------------

def _union(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def interval_measure(intervals) -> float:
    """Length of the union of ``(start, end)`` intervals."""
    return sum(b - a for a, b in _union(intervals))


def intersection_measure(xs, ys) -> float:
    """Length of (∪ xs) ∩ (∪ ys)."""
    ux, uy = _union(xs), _union(ys)
    i = j = 0
    total = 0.0
    while i < len(ux) and j < len(uy):
        a, b = max(ux[i][0], uy[j][0]), min(ux[i][1], uy[j][1])
        if b > a:
            total += b - a
        if ux[i][1] < uy[j][1]:
            i += 1
        else:
            j += 1
    return total


# ---- the KVMU's own work ----------------------------------------------------------------------------------------

def kvmu_rates(cfg, figures: Figures | None) -> dict:
    """Per-core KVMU rates: arrival cycles per token and context, prefetch and eviction bytes per cycle; measured
    (KVMU cycle figures) or the formula (the new token's K and V at the AXI width, full AXI beats)."""
    axi = cfg.dre.kvmu.axi_data_bits / 8
    m = cfg.model
    f = figures
    token_bytes = 2 * m.head_dim * m.kv_bytes          # K and V of one token of one KV head
    arrival = f.kvmu_arrival_cycles_per_token if f is not None else None
    prefetch = (f.kvmu_prefetch_bytes_per_cycle or f.kvmu_bytes_per_cycle) if f is not None else None
    evict = f.kvmu_evict_bytes_per_cycle if f is not None else None
    return {"arrival_cycles_per_token": arrival if arrival else token_bytes / axi,
            "arrival_measured": bool(arrival),
            "prefetch_bytes_per_cycle": prefetch if prefetch else axi, "prefetch_measured": bool(prefetch),
            "evict_bytes_per_cycle": evict if evict else axi, "evict_measured": bool(evict)}


def _short(path: str) -> str:
    """A path inside the working folder as a relative one (outputs name no machine paths)."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def provenance(cfg, figures: Figures | None, dre: DRETiming, plat) -> dict:
    """Which cycles and efficiencies of the view are measured, and from where."""
    f = figures
    k = kvmu_rates(cfg, f)
    src = dict(plat.sources)

    def m(flag, comp, what):
        return f"measured ({_short(f.file_of(comp))})" if flag else f"formula ({what})"

    return {
        "hcu": m(f is not None and f.has_hcu_cycles, "hcu",
                 f"{cfg.perf.hcu_token_overhead_cycles} + ⌈n_open / {cfg.dre.hcu.lanes}⌉ cycles per token"),
        "wtu": m(f is not None and f.has_wtu_cycles, "wtu",
                 f"{cfg.perf.wtu_row_overhead_cycles} + W · passes cycles per row")
        + (f", {dre.wtu_overhead:g} + {dre.wtu_per_unit:g}·W·passes + {dre.wtu_per_pass_overhead:g}·(passes − 2) "
           "cycles per row" if f is not None and f.has_wtu_cycles else ""),
        "wtu_passes": (f"measured {dre.wtu_passes:.3g} passes per row"
                       if f is not None and f.wtu_mean_passes is not None else
                       f"formula ({dre.wtu_passes:g} passes per row, perf.wtu_passes_per_row)"),
        "kvmu": (f"measured ({_short(f.file_of('kvmu'))}: arrival {k['arrival_cycles_per_token']:.3g} cycles per token, "
                 f"prefetch {k['prefetch_bytes_per_cycle']:.3g} B/cycle, eviction {k['evict_bytes_per_cycle']:.3g} "
                 "B/cycle)") if f is not None and (k["arrival_measured"] or k["prefetch_measured"])
        else f"formula (K/V bytes at the {cfg.dre.kvmu.axi_data_bits}-bit AXI width)",
        "lxe": (f"measured DPE / VPE efficiency {f.dpe_efficiency:.3g} / {f.vpe_efficiency:.3g} "
                f"({_short(f.file_of(f.efficiency_component or 'lxe'))})"
                if f is not None and f.dpe_efficiency is not None and f.vpe_efficiency is not None else
                f"DPE efficiency {src.get('DPE efficiency', '?')}; VPE efficiency {src.get('VPE efficiency', '?')}"),
        "retrieval_path": (f"core cycle model ({_short(f.file_of('core'))}: exact against the RTL; hash and score "
                           "are its H and S score, HCU its X + C + K + R, WTU its S select)")
        if dre.core_path is not None else "no core record (HCU / WTU as above, hash / score on the LXE's roofline)",
        "config_hash": cfg.hash(),
        "figures_config_hash": f.config_hash if f is not None else None,
    }


# ---- the view -----------------------------------------------------------------------------------------------------

@dataclass
class UnitSlot:
    busy_s: float = 0.0
    overlap_s: float = 0.0
    past_fetch_s: float = 0.0       # exposed time not covered by the layer's transfers either (DRE only)
    intervals: list = field(default_factory=list, repr=False)

    @property
    def exposed_s(self) -> float:
        return self.busy_s - self.overlap_s


@dataclass
class LayerView:
    """One layer of one step: busy, overlap and exposed time of the DRE's units beside the LXE."""

    kv: int
    batch: int
    step: str
    layer: int
    lxe_s: float
    units: dict                 # "hcu" / "wtu" / "kvmu" / "dre" (union) -> UnitSlot
    cycles: dict                # per unit: cycles of the layer (all cores together)
    step_latency_s: float
    critical_dre_s: float       # HCU + WTU task time on the step's critical path
    worst_layer: int = 0
    worst_exposed_s: float = 0.0
    lxe_intervals: list = field(default_factory=list, repr=False)
    fetch_s: float = 0.0        # the layer's transfers (link / storage; not the DRE)
    critical_fetch_s: float = 0.0   # transfer time on the step's critical path
    worst_past_fetch_s: float = 0.0  # the largest per-layer DRE time covered neither by the LXE nor a transfer
    critical_dre_tasks: list = field(default_factory=list)

    @property
    def dre_s(self) -> float:
        return self.units["dre"].busy_s

    @property
    def exposed_s(self) -> float:
        return self.units["dre"].exposed_s

    def as_dict(self) -> dict:
        out = {"kv": self.kv, "batch": self.batch, "step": self.step, "layer": self.layer, "lxe_us": self.lxe_s * 1e6,
               "step_latency_ms": self.step_latency_s * 1e3, "critical_dre_us": self.critical_dre_s * 1e6,
               "worst_layer": self.worst_layer, "worst_exposed_us": self.worst_exposed_s * 1e6,
               "dre_over_lxe": self.dre_s / self.lxe_s if self.lxe_s else None,
               "fetch_us": self.fetch_s * 1e6, "critical_fetch_ms": self.critical_fetch_s * 1e3,
               "critical_dre_tasks": list(self.critical_dre_tasks)}
        for name, u in self.units.items():
            out[f"{name}_us"] = u.busy_s * 1e6
            out[f"{name}_overlap_us"] = u.overlap_s * 1e6
            out[f"{name}_exposed_us"] = u.exposed_s * 1e6
        out["dre_exposed_past_fetch_us"] = self.units["dre"].past_fetch_s * 1e6
        out["worst_exposed_past_fetch_us"] = self.worst_past_fetch_s * 1e6
        out["cycles"] = dict(self.cycles)
        return out


def _layer_groups(tl) -> list[list]:
    """The timeline's tasks by the layer that issued them (from qkv[l] up to qkv[l+1]); tasks before qkv[0] (the
    vision tower) and the LM head are left out."""
    groups: list[list] = []
    for t in tl.tasks:
        if t.name.startswith("qkv"):
            groups.append([])
        if groups and t.name != "lm_head":
            groups[-1].append(t)
    return groups


def _kvmu_intervals(cfg, groups, step, rates, clock_hz, cores) -> list[tuple[list, float]]:
    """The KVMU's work per layer (one engine per core, in issue order, carried from layer to layer): the arrival of
    the layer's new K/V once QKV has produced it, the prefetch of each fetch once the WTU has selected it, the
    eviction once QKV has run. Each job starts when its input is ready and the KVMU is free, *not* when the link
    is: time the transfer spends beyond the KVMU's own is the link's / storage's (``fetch``, the model's retrieval
    category), not the DRE's. Returns (intervals, cycles of all cores) per layer."""
    contexts = step.batch * cfg.model.kv_heads
    per_core = max(1, min(cores, contexts))
    free = -math.inf
    out = []
    for group in groups:
        qkv = group[0]
        wtu_end = {t.name[3:]: t.end for t in group if t.resource == "wtu"}
        jobs = [(qkv.end, step.tokens * contexts * rates["arrival_cycles_per_token"])]
        for t in group:
            if t.name.startswith("fetch") and t.meta.get("moved"):
                jobs.append((wtu_end.get(t.name[5:], t.start), t.meta["moved"] / rates["prefetch_bytes_per_cycle"]))
            elif t.name.startswith("evict") and t.meta.get("moved"):
                jobs.append((qkv.end, t.meta["moved"] / rates["evict_bytes_per_cycle"]))
        intervals, cycles = [], 0.0
        for ready, c in jobs:
            a = max(ready, free)
            free = a + c / (per_core * clock_hz)
            intervals.append((a, free))
            cycles += c
        out.append((intervals, cycles))
    return out


def _view_of_layer(group, kvmu, transfers) -> tuple:
    lxe = [(t.start, t.end) for t in group if t.resource == "compute"]
    units = {}
    cycles = {}
    for name in ("hcu", "wtu"):
        tasks = [t for t in group if t.resource == name]
        units[name] = UnitSlot(intervals=[(t.start, t.end) for t in tasks])
        cycles[name] = sum(t.meta.get("cycles", 0.0) for t in tasks)
    units["kvmu"] = UnitSlot(intervals=kvmu[0])
    cycles["kvmu"] = kvmu[1]
    units["dre"] = UnitSlot(intervals=[iv for n in UNITS for iv in units[n].intervals])
    for u in units.values():
        u.busy_s = interval_measure(u.intervals)
        u.overlap_s = intersection_measure(u.intervals, lxe)
    dre = units["dre"]
    # the DRE's exposed time that no transfer in flight (link / storage, any layer's) covers either
    dre.past_fetch_s = dre.busy_s - intersection_measure(dre.intervals, lxe + transfers)
    return (interval_measure(lxe), units, cycles, lxe,
            sum(t.duration for t in group if t.resource == "offload"))


def layer_view(cfg, r: StepResult, figures: Figures | None, plat, layer: int | None = None) -> LayerView:
    """The per-layer view of one simulated V-Rex step ``r`` (``layer`` default: ``layers // 2``)."""
    rates = kvmu_rates(cfg, figures)
    groups = _layer_groups(r.timeline)
    layer = len(groups) // 2 if layer is None else layer
    kvmu = _kvmu_intervals(cfg, groups, r.step, rates, plat.clock_hz, plat.cores)
    transfers = [(t.start, t.end) for t in r.timeline.tasks if t.resource == "offload"]
    views = [_view_of_layer(g, k, transfers) for g, k in zip(groups, kvmu)]
    worst = max(range(len(views)), key=lambda i: (views[i][1]["dre"].exposed_s, -i))
    worst_past = max(v[1]["dre"].past_fetch_s for v in views)
    lxe_s, units, cycles, lxe_iv, fetch = views[layer]
    path = r.timeline.critical_path()
    crit_tasks = [t for t in path if t.resource in ("hcu", "wtu")]
    crit = sum(t.duration for t in crit_tasks)
    return LayerView(r.step.kv_tokens, r.step.batch, r.step.kind, layer, lxe_s, units, cycles, r.latency, crit,
                     worst, views[worst][1]["dre"].exposed_s, lxe_iv, fetch_s=fetch,
                     critical_fetch_s=sum(t.duration for t in path if t.resource == "offload"),
                     worst_past_fetch_s=worst_past, critical_dre_tasks=[t.name for t in crit_tasks])


def _rows(cfg, figures, measured, kv_sizes, batches, layer, dre=None):
    pols = policies(cfg, measured)
    dre = dre if dre is not None else dre_timing(cfg, figures)
    kvmu = measured.kvmu() if measured is not None else None
    system = vrex_system(cfg, pols, figures=figures, kvmu=kvmu)
    rows = []
    for batch in (batches or cfg.perf.batches):
        for kv in kv_sizes:
            for kind, make in STEPS.items():
                r = simulate_step(cfg, system, make(cfg, kv, batch), dre)
                rows.append(layer_view(cfg, r, figures, system.platform, layer))
    return rows, dre, system


def _exposed(v: LayerView) -> bool:
    return v.exposed_s > 0 or v.worst_exposed_s > 0 or v.critical_dre_s > 0


def layer_timeline(cfg, figures: Figures | None = None, measured=None, *, kv_sizes=LAYER_KV_SIZES,
                   batches=None, layer: int | None = None, options: bool = True, records=None) -> dict:
    """The view at every KV size, batch (default ``perf.batches``) and step (frame, decode): a JSON-safe dict with
    the rows, the provenance of the cycles, where the DRE is exposed and (``options``) what the options that
    shorten the WTU would give and cost (:func:`dre_options`; ``records``: the figures folder, default
    ``build/figures``)."""
    rows, dre, system = _rows(cfg, figures, measured, kv_sizes, batches, layer)
    exposed = [v for v in rows if _exposed(v)]
    out = {"config": cfg.name, "config_hash": cfg.hash(), "system": system.platform.name,
           "overlap": cfg.perf.overlap, "kv_sizes": list(kv_sizes), "batches": list(batches or cfg.perf.batches),
           "provenance": provenance(cfg, figures, dre, system.platform),
           "dre_cycles_source": dre.cycles_source,
           "rows": [v.as_dict() for v in rows],
           "exposed_anywhere": bool(exposed),
           "exposed_at": [{"kv": v.kv, "batch": v.batch, "step": v.step, "exposed_us": v.exposed_s * 1e6,
                           "worst_layer": v.worst_layer, "worst_exposed_us": v.worst_exposed_s * 1e6,
                           "worst_exposed_past_fetch_us": v.worst_past_fetch_s * 1e6,
                           "critical_dre_us": v.critical_dre_s * 1e6,
                           "critical_dre_share": v.critical_dre_s / v.step_latency_s} for v in exposed],
           "min_margin": min((v.lxe_s / v.dre_s for v in rows if v.dre_s), default=None),
           "min_margin_hcu_wtu": min((v.lxe_s / (v.units["hcu"].busy_s + v.units["wtu"].busy_s) for v in rows
                                      if v.units["hcu"].busy_s + v.units["wtu"].busy_s), default=None)}
    if options:
        out["options"] = dre_options(cfg, figures, measured, kv_sizes=kv_sizes, batches=batches, layer=layer,
                                     base=rows, records=records)
    return out


# ---- options that shorten the WTU -------------------------------------------------------------------------------

def figure_record(name: str, cfg, folder=None):
    """The newest synthesis figures record of component ``name`` for ``cfg`` with a scaled area
    (``build/figures/<name>-<hash>/*.json``, FPGA records left out), or None."""
    import json

    from vrex.paths import build_root

    base = Path(folder) if folder is not None else build_root() / "figures"
    found = []
    for p in (base / f"{name}-{cfg.hash()}").glob("*.json"):
        if p.name.startswith("fpga"):
            continue
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(rec.get("scaled"), dict) and rec["scaled"].get("area_mm2"):
            found.append((p.stat().st_mtime, p, rec))
    return max(found, key=lambda x: x[0])[1:] if found else None


def _summary(rows) -> dict:
    return {f"{v.batch}/{v.kv}/{v.step}": {"wtu_us": v.units["wtu"].busy_s * 1e6, "dre_us": v.dre_s * 1e6,
                                           "exposed_us": v.exposed_s * 1e6,
                                           "worst_exposed_us": v.worst_exposed_s * 1e6,
                                           "critical_dre_us": v.critical_dre_s * 1e6,
                                           "latency_ms": v.step_latency_s * 1e3} for v in rows}


def _wtu_cycles_from(cfg, figures, folder):
    """Figures whose WTU cycles are those measured with ``cfg`` (its cycle record), or None."""
    from .figures_input import cycle_records, read_figures_files

    recs = cycle_records(cfg, ("wtu",), folder=None if folder is None else Path(folder) / "cycles")
    if not recs or figures is None:
        return None
    w = read_figures_files(recs)
    return replace(figures, wtu_overhead=w.wtu_overhead, wtu_per_unit=w.wtu_per_unit,
                   wtu_mean_passes=w.wtu_mean_passes, wtu_per_pass_overhead=w.wtu_per_pass_overhead,
                   path=f"{figures.path}; WTU cycles {recs[0]}")


def _area(rec) -> float:
    return rec[1]["scaled"]["area_mm2"]


def dre_options(cfg, figures, measured=None, *, kv_sizes=LAYER_KV_SIZES, batches=None, layer=None, base=None,
                records=None) -> list[dict]:
    """What shortens the WTU, at every point of the view, and what it costs in area (per core, from the figures
    records; what is not measured says so):

    - ``dre.wtu.lanes`` × 2 (a config option the RTL generator supports): W halves; cycles from the option's own
      cycle record when there is one (else the base's measured constants), area = the two synthesised WTUs'
      difference when both records exist;
    - row overlap (a **what-if**: the RTL does not overlap rows; :class:`~vrex.perf.dre_timing.DRETiming`
      ``wtu_row_overlap``): the lane datapath sets the rate; area at least one more score-row buffer (the base
      record's ``score_mem``), the second accumulator set not synthesised.
    """
    base = base if base is not None else _rows(cfg, figures, measured, kv_sizes, batches, layer)[0]
    out = []
    base_rec = figure_record("wtu", cfg, records)
    lanes = cfg.dre.wtu.lanes
    if cfg.dre.wtu.row_capacity % (2 * lanes) == 0:
        cfg2 = cfg.with_overrides({"dre.wtu.lanes": 2 * lanes}, source="dre option")
        fig2 = _wtu_cycles_from(cfg2, figures, records)
        if figures is not None and figures.has_wtu_cycles:
            cycles = (f"measured ({_short(fig2.path.split('; WTU cycles ')[-1])})" if fig2 is not None else
                      f"the base's measured per-row constants at {2 * lanes} lanes (no cycle record for "
                      f"{cfg2.hash()})")
        else:
            cycles = "formula"
        rows2 = _rows(cfg2, fig2 or figures, measured, kv_sizes, batches, layer)[0]
        rec2 = figure_record("wtu", cfg2, records)
        if base_rec and rec2:
            d = _area(rec2) - _area(base_rec)
            sc2 = rec2[1]["scaled"]
            area = {"mm2_per_core": d, "mm2_chip": d * cfg.system.cores, "per_lane_mm2": d / lanes,
                    "base_wtu_mm2": _area(base_rec), "measured": True, "fmax_mhz": sc2.get("fmax_mhz"),
                    "base_fmax_mhz": base_rec[1]["scaled"].get("fmax_mhz"),
                    "meets_target_clock": sc2.get("meets_target_clock"), "clock_mhz": sc2.get("clock_mhz"),
                    "source": f"{_short(str(rec2[0]))} − {_short(str(base_rec[0]))} (records scaled: "
                              f"{str(base_rec[1]['scaled'].get('method', '?')).split(';')[0]})"}
        else:
            missing = [c.hash() for c, r in ((cfg, base_rec), (cfg2, rec2)) if not r]
            area = {"measured": False, "source": "no WTU figures record for config hash " + ", ".join(missing) +
                    f" (vrex synth --component wtu with dre.wtu.lanes {lanes} and {2 * lanes})"}
        out.append({"name": f"dre.wtu.lanes {lanes} → {2 * lanes}", "kind": "config option",
                    "config_hash": cfg2.hash(), "cycles": cycles, "area": area, "points": _summary(rows2)})
    dre_ov = replace(dre_timing(cfg, figures), wtu_row_overlap=True)
    rows3 = _rows(cfg, figures, measured, kv_sizes, batches, layer, dre=dre_ov)[0]
    if base_rec:
        rec = base_rec[1]
        buf = next((v for k, v in (rec.get("area_breakdown") or {}).items() if k.endswith("score_mem [sram]")), None)
        factor = (rec["scaled"].get("factors") or {}).get("area")
        area = ({"mm2_per_core_at_least": buf * factor * 1e-6, "measured": False,
                 "source": f"one more score-row buffer: the score_mem of {_short(str(base_rec[0]))} × the scaling's "
                           "area factor; "
                           "the second accumulator set is not synthesised"}
                if buf and factor else {"measured": False, "source": f"{_short(str(base_rec[0]))} has no score_mem area"})
    else:
        area = {"measured": False, "source": f"no WTU figures record for config hash {cfg.hash()}"}
    out.append({"name": "WTU row overlap", "kind": "what-if (RTL change not made)", "config_hash": cfg.hash(),
                "cycles": "the base's per-row constants, rows overlapped: (passes − 1)·W per row + one drain per "
                          "job",
                "area": area, "points": _summary(rows3)})
    out.insert(0, {"name": "as built", "kind": "base", "config_hash": cfg.hash(), "cycles": "as the view",
                   "area": {"mm2_per_core": 0.0, "measured": True, "source": "—",
                            **({"base_wtu_mm2": _area(base_rec)} if base_rec else {})},
                   "points": _summary(base)})
    return out
