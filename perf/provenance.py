"""Where every input of an evaluation came from, and which values nothing measured (printed and in the JSON).

``describe_inputs`` returns three things: ``sources`` (one line per input family: ratios, tier, DRE cycles and
power, LXE, KVMU traffic), ``notes`` (fallbacks and provenance warnings of the input files) and ``assumed`` (the
parameters that stay assumptions in this run, each with its value and why nothing replaces it).
"""

from __future__ import annotations

from .inputs import check_provenance

__all__ = ["describe_inputs"]


def _ratio_sources(pols, candidates: dict) -> dict:
    out = {}
    for name, p in pols.items():
        parts = [p.source]
        for stage, fit in (("frame", p.frame_fit), ("text", p.text_fit)):
            if fit is not None:
                parts.append(f"{stage} {fit.describe(candidates.get(name))}")
        out[name] = "; ".join(parts)
    return out


def describe_inputs(cfg, measured, figures, systems: dict, dre, *, strict: bool = False,
                    kv_max_candidates: int = 0) -> tuple[dict, list, list]:
    vrex = systems["vrex"]
    pols = {k.split(":")[-1] if k.startswith("gpu:") else "resv": s.policy for k, s in systems.items()}
    notes: list[str] = []
    # ---- provenance of the files --------------------------------------------------------------------------------
    if measured is not None:
        notes += list(measured.notes)
        for run in measured.runs:
            replaces = [f"{p} {st} ratio" for p, stages in sorted(run.points.items()) for st in sorted(stages)]
            if run.kvmu:
                replaces.append("the KVMU's cluster runs")
            if run.mean_cluster_size:
                replaces.append("perf.tokens_per_cluster")
            w = check_provenance("golden JSON", run.path, run.config_name, run.config_hash, cfg, replaces, strict)
            if w:
                notes.append(w)
            if run.predict_from == "same_layer" and cfg.perf.overlap == "prefetch":
                notes.append(f"golden JSON {run.path} measured its ratios with same-layer prediction; the prefetch "
                             "overlap predicts from the previous layer (resv.predict_from = previous_layer), whose "
                             "ratios and accuracy may differ.")
    if figures is not None:
        notes += list(figures.notes)
        w = check_provenance("figures JSON", figures.path, None, figures.config_hash, cfg, figures.replaced_values(),
                             strict)
        if w:
            notes.append(w)

    # ---- sources ------------------------------------------------------------------------------------------------
    kvmu = measured.kvmu() if measured is not None else None
    batch = max(cfg.perf.batches)
    sources = {
        "ratios": _ratio_sources(pols, {n: kv_max_candidates for n in pols}),
        "dre_cycles": dre.cycles_source, "dre_power": dre.power_source,
        "lxe": "; ".join(f"{what} {where}" for what, where in vrex.platform.sources),
        "device_tier": f"V-Rex {vrex.tier.describe(cfg, batch)}; GPU baselines "
                       f"{systems['gpu:flexgen'].tier.describe(cfg, batch)}",
        "kvmu_traffic": (f"measured ({', '.join(kvmu.paths)}): {kvmu.describe()}" if kvmu is not None and vrex.kvmu_runs
                         else f"analytic cluster runs of perf.cluster_run_tokens = {cfg.perf.cluster_run_tokens:g}"),
        "tokens_per_cluster": (f"measured {pols['resv'].tokens_per_cluster:.2f} ({', '.join(measured.tokens_per_cluster()[1])})"
                               if pols["resv"].tokens_per_cluster else
                               f"assumed {cfg.perf.tokens_per_cluster:g} (perf.tokens_per_cluster, paper §VI-D)"),
        "gpu": systems["gpu:flexgen"].platform.name, "overlap": cfg.perf.overlap,
    }
    if measured is not None:
        e2e = {m: v for r in measured.runs for m, v in r.e2e.items()}
        if e2e:
            sources["e2e_accuracy"] = "; ".join(
                f"{m}: " + ", ".join(f"{k} {v:.3g}" for k, v in vals.items()) for m, vals in sorted(e2e.items()))
    if figures is not None and (figures.core_power_mw or figures.dre_power_mw):
        parts = []
        if figures.core_power_mw:
            parts.append(f"core {figures.core_power_mw:g} mW" + (f", {figures.core_area_mm2:g} mm²"
                                                               if figures.core_area_mm2 else ""))
        if figures.dre_power_mw:
            parts.append(f"DRE {figures.dre_power_mw:g} mW")
        sources["core_figures"] = f"{', '.join(parts)} per core ({figures.path}; reported, not used by the model)"

    # ---- assumed values -----------------------------------------------------------------------------------------
    p, e, v, g = cfg.perf, cfg.perf.energy, cfg.perf.vrex, cfg.perf.gpu
    assumed = []
    for name, pol in pols.items():
        if name == "flexgen":
            continue
        for stage, fit in (("frame", pol.frame_fit), ("text", pol.text_fit)):
            if fit is None:
                assumed.append(f"{pol.label} {stage} ratio {pol.ratio(stage):.3f} (config = paper Table II; no golden "
                               "JSON measured it)")
    for what, where in vrex.platform.sources:
        if not where.startswith(("measured", "core power")):
            assumed.append(f"{what}: {where}")
    if "formula" in dre.cycles_source:
        assumed.append("HCU / WTU cycles: documented formulas (perf.hcu_token_overhead_cycles, "
                       "perf.wtu_row_overhead_cycles, perf.wtu_passes_per_row)")
    if dre.core_path is None:
        assumed.append("retrieval path: no core record (its cycle model); the layer's hash and score on the LXE's "
                       "roofline, the HCU / WTU tasks from their per-token / per-row cycles")
    for unit in ("HCU", "WTU", "KVMU"):
        if f"{unit} energy from paper Table III" in dre.power_source:
            assumed.append(f"{unit} energy: paper Table III")
    if not vrex.kvmu_runs:
        assumed.append(f"KVMU cluster runs: perf.cluster_run_tokens = {p.cluster_run_tokens:g} tokens")
    if not pols["resv"].tokens_per_cluster:
        assumed.append(f"perf.tokens_per_cluster = {p.tokens_per_cluster:g} (paper §VI-D)")
    assumed += [
        f"perf.vrex.dram_efficiency = {v.dram_efficiency:g}, perf.vrex.link_efficiency = {v.link_efficiency:g} "
        "(no DRAM or PCIe model in the project)",
        "selected candidates are spread uniformly over the device and host tiers (the golden model does not report "
        "the age of what it selects)",
        f"perf.reuse_fraction = {p.reuse_fraction:g}",
        f"energies: DRAM {e.dram_pj_per_bit:g} pJ/bit, SRAM {e.sram_pj_per_byte:g} pJ/B, offload tier "
        f"{e.offload_read_pj_per_byte:g} / {e.offload_write_pj_per_byte:g} pJ/B, link "
        f"{cfg.system.link.watts_per_lane:g} W per lane, static {e.static_w:g} W",
        f"GPU baseline {g.name}: matmul {g.matmul_efficiency:g}, vector {g.vector_efficiency:g}, irregular "
        f"{g.irregular_efficiency:g}, DRAM {g.dram_efficiency:g}, link {g.link_efficiency:g}, launch "
        f"{g.launch_overhead_us:g} µs, idle {g.idle_w:g} W (checked against published runs: docs/results-perf.md)",
    ]
    return sources, notes, assumed
