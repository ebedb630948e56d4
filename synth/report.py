"""``vrex report``: Verilog, lint and figures of every registered component for one config, beside Table III.

Writes ``report.md``, ``index.html``, ``figures.json`` and PNG plots into ``build/report/`` (or ``-o DIR``).
Components run in parallel worker processes (``--jobs``). A missing optional tool or library gives a partial
report that says what is missing and how to get it; the figures that need it are null with the reason.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from vrex.paths import build_dir, git_revision, pdk_source
from vrex.tools import find

from .measured import figure_tools
from .html import markdown_to_html
from .text import fmt_value
from .paper import CORE_TOTAL, DRE_MEMORY_KB, PAPER_BLOCKS, PAPER_NODE, TABLE_III
from .parallel import run_jobs, worker_pool
from .stopwatch import timing_summary

__all__ = ["write_report", "collect_figures", "render_report", "flat_numbers", "fmt_value", "activity_label"]


def collect_figures(cfg, *, workers: int = 2, liberty=None, clock_mhz=None, transactions=None, activity=True,
                    skip_tools=(), use_cache=True, progress=True, fpga: dict | None = None, components=None) -> dict:
    """figures.json content for every registered component (or the ``components`` named; errors of one component
    are recorded, not fatal). ``fpga`` (``{"family", "device", "package"}``, None values from ``cfg.fpga``) adds each
    component's FPGA record under ``fpga``."""
    from vrex.hdl.registry import component_names

    from .hierarchy import dependency_waves, leaf_members

    names = component_names() if components is None else list(components)
    options = {"liberty": liberty, "clock_mhz": clock_mhz, "transactions": transactions, "activity": activity,
               "skip_tools": tuple(skip_tools), "use_cache": use_cache}
    fpga_meta = None
    if fpga:
        from .fpga import fpga_available, fpga_settings, fpga_tools

        fpga_meta = fpga_settings(cfg, **fpga)
        options["fpga"] = {k: fpga_meta[k] for k in ("family", "device", "package")}
        fpga_meta["tools"] = None if fpga_available() else fpga_tools()
    lint_ok = "verilator" not in skip_tools and find("verilator").found
    options["lint"] = lint_ok          # each component synthesised whole is linted in its own job, once
    records, errors, timings, linted = {}, {}, {}, {}
    t0 = time.time()
    pool = worker_pool(workers)
    try:
        # Parts (and glues) of composites first, in parallel; composites then add up their cached records.
        for wave in dependency_waves(names, cfg):
            for name, record, error, _ in run_jobs([(n, n, cfg, options) for n in wave], workers, "report", progress,
                                                   timings=timings, pool=pool):
                if record is not None and "lint_clean" in record:
                    linted[name] = record["lint_clean"]
                if error:
                    errors[name] = error
                elif name in names:
                    records[name] = record
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    components = records
    for name in components:
        components[name]["lint_clean"] = (all(_linted(n, cfg, linted) for n in leaf_members(name, cfg))
                                          if lint_ok else None)
    tech = cfg.technology
    first = next(iter(components.values()), {})
    missing_tools = {t: find(t).install for t in ("yosys", "sta", "verilator") if not find(t).found or t in skip_tools}
    meta = {"config": cfg.name, "config_hash": cfg.hash(), "git": git_revision(), "tools": figure_tools(),
            "liberty": first.get("liberty"), "liberty_folder": pdk_source(cfg.technology.pdk_dir),
            "clock_mhz": first.get("clock_mhz") or clock_mhz or tech.clock_mhz,
            "target": {"node_nm": tech.target_node_nm, "voltage": tech.target_voltage,
                       "clock_mhz": tech.target_clock_mhz},
            "missing_tools": missing_tools, "errors": errors, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "paper": {"table_iii": {k: dict(zip(("area_mm2", "area_pct", "power_mw", "power_pct"), v))
                                    for k, v in TABLE_III.items()},
                      "core_total": {"area_mm2": CORE_TOTAL[0], "power_mw": CORE_TOTAL[1]},
                      "dre_memory_kb": DRE_MEMORY_KB, **PAPER_NODE}}
    if fpga_meta:
        meta["fpga"] = fpga_meta
    meta["timing"] = timing_summary(timings, time.time() - t0, workers)
    from .core_section import core_summary

    return {"meta": meta, "components": components, "core": core_summary(components, cfg)}


def _linted(name, cfg, linted: dict) -> bool:
    """Whether leaf ``name`` lints clean: from its job, or (a job that failed) linted here."""
    if name not in linted:
        from .lint import lint_clean
        from .verilog import emit

        linted[name] = lint_clean(emit(name, cfg))
    return linted[name]


def _scaled(rec, key):
    s = rec.get("scaled") if rec else None
    return s.get(key) if s else None


def _memory_list(memories) -> str:
    """The memories of a record, identical shapes counted once (``64 × 8×1024 sram``), in order of appearance."""
    from collections import Counter

    shapes = Counter(f"{m['words']}×{m['bits']} {m['kind']}" for m in memories)
    return ", ".join(f"{n} × {shape}" if n > 1 else shape for shape, n in shapes.items()) or "none"


def _memory_kb(records) -> float | None:
    bits = [m["total_bits"] for r in records for m in r.get("memories", [])]
    return sum(bits) / 8 / 1024 if records else None


def _paper_rows(components):
    rows = []
    for block, comp in PAPER_BLOCKS.items():
        if block == "DRE":
            parts = [components[c] for c in ("hcu", "wtu", "kvmu") if c in components]
            rec = components.get("dre")
            paper_area = sum(TABLE_III[b][0] for b in ("HCU", "WTU", "KVMU"))
            paper_power = sum(TABLE_III[b][2] for b in ("HCU", "WTU", "KVMU"))
            if rec is None:
                status = "`dre` top is not registered yet" + (" (the blocks shown summed)" if parts else "")
                area = sum(_scaled(p, "area_mm2") or 0 for p in parts) if parts else None
                power = sum(_scaled(p, "power_mw") or 0 for p in parts) if parts else None
                fmax = min((_scaled(p, "fmax_mhz") for p in parts if _scaled(p, "fmax_mhz")), default=None)
                mem = _memory_kb(parts) if parts else None
            else:
                status = "measured (HCU + WTU + KVMU)" if rec.get("scaled") else \
                    "partial: " + "; ".join(sorted(rec["missing"]))
                area, power, fmax = _scaled(rec, "area_mm2"), _scaled(rec, "power_mw"), _scaled(rec, "fmax_mhz")
                mem = _memory_kb([rec])
            rows.append(("DRE (HCU+WTU+KVMU)", paper_area, paper_power, area, power, fmax, status, mem))
            continue
        area_p, _, power_p, _ = TABLE_III[block]
        if comp is None:
            rows.append((block, area_p, power_p, None, None, None, "no RTL in this project yet (paper row only)",
                         None))
        elif comp not in components:
            rows.append((block, area_p, power_p, None, None, None, f"`{comp}` is not registered yet", None))
        else:
            r = components[comp]
            status = "measured" if r.get("scaled") else "partial: " + "; ".join(sorted(r["missing"]))
            rows.append((block, area_p, power_p, _scaled(r, "area_mm2"), _scaled(r, "power_mw"),
                         _scaled(r, "fmax_mhz"), status, _memory_kb([r])))
    return rows


def activity_label(record) -> str:
    """The report's "activity" cell of a record: ``SAIF``, ``default 0.1 (<reason>)`` or, for a composite,
    ``SAIF (all 4 parts)`` / ``3 of 4 parts SAIF; default 0.1: <part> (<reason>)``."""
    from .hierarchy import default_reason

    p, pd = record.get("power_mw"), record.get("power_default_activity_mw") or {}
    default = f"default {pd.get('activity', 0.1):g}"
    if p is None:
        return f"{default} ({default_reason(record)})" if pd else "none (no power figure)"
    parts = p.get("activity_parts")
    if parts is None:
        return "SAIF" if p.get("activity_source") == "saif" else f"{default} ({default_reason(record)})"
    n = len(parts["saif"]) + len(parts["default"])
    if not parts["default"]:
        return f"SAIF (all {n} parts)"
    return (f"{len(parts['saif'])} of {n} parts SAIF; {default}: "
            + ", ".join(f"{b} ({why})" for b, why in parts["default"].items()))


def _activity_section(comps) -> list[str]:
    """One row per synthesised block (the parts and glues of the composites too): where its power's activity
    comes from."""
    rows = {}
    for name, r in comps.items():
        parts = (r.get("power_mw") or {}).get("activity_parts")
        if parts is not None:
            rows.update({b: "SAIF" for b in parts["saif"]})
            act = (r.get("power_default_activity_mw") or {}).get("activity", 0.1)
            rows.update({b: f"default {act:g} ({why})" for b, why in parts["default"].items()})
        elif not r.get("hierarchy"):
            rows[name] = activity_label(r)
    if not rows:
        return []
    saif = sum(v == "SAIF" for v in rows.values())
    return ["## Power activity per block", "",
            f"{saif} of {len(rows)} synthesised blocks have activity-based (SAIF) power; a composite's power is the "
            "sum of its blocks'. A glue's SAIF is its composite's bench run on the whole composite.", "",
            "| block | activity |", "|---|---|"] + [f"| {b} | {a} |" for b, a in sorted(rows.items())] + [""]


def flat_numbers(d, prefix="") -> dict:
    """The numbers of a nested dict under dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``); booleans and
    non-numbers are left out."""
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(flat_numbers(v, f"{prefix}{k}."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[prefix + k] = v
    return out


def render_report(data: dict, out: Path) -> Path:
    """report.md, index.html and the plots from figures.json content."""
    from .plots import bar_vs_paper, breakdown_plot, cycles_plot

    meta, comps = data["meta"], data["components"]
    target = meta["target"]
    lib = meta.get("liberty") or {}
    tools = meta["tools"]
    L = [f"# vrex figures — config `{meta['config']}` (hash `{meta['config_hash']}`)", "",
         f"git `{meta['git']}` · Yosys: {tools.get('yosys') or 'missing'} · OpenSTA: {tools.get('sta') or 'missing'}"
         f" · Verilator: {tools.get('verilator') or 'missing'} · created {meta['created']}", "",
         f"Library: **{lib.get('description', 'none')}**"
         + (f" (from {'the files embedded in vrex' if meta.get('liberty_folder') == 'embedded' else meta.get('liberty_folder')})"
            if lib else "") + f"; synthesis clock {meta['clock_mhz']:g} MHz. "
         f"Scaled to **{target['node_nm']:g} nm, {target['voltage']:g} V, {target['clock_mhz']:g} MHz** "
         "(the paper's point) with the Stillmaker & Baas 2017 equations (method below).", ""]
    gaps = dict(meta.get("missing_tools", {}))
    if not lib:
        reasons = {r for c in comps.values() for k, r in c.get("missing", {}).items() if k == "liberty"}
        L += ["## Partial report", ""] + [f"- {r}" for r in sorted(reasons)] + [""]
    if gaps:
        L += ["## Missing tools", ""] + [f"- **{t}**: install with `{how}`; the figures that need it are empty."
                                          for t, how in gaps.items()] + [""]
    if meta.get("errors"):
        L += ["## Components that failed", ""] + [f"- `{n}`: {e}" for n, e in meta["errors"].items()] + [""]

    rows = _paper_rows(comps)
    L += ["## DRE beside the paper's Table III", "",
          f"Paper: Synopsys DC, 14 nm, 0.8 V, 800 MHz, one core. vrex: open flow, scaled to {target['node_nm']:g} nm /"
          f" {target['voltage']:g} V / {target['clock_mhz']:g} MHz. Power is activity-based (SAIF) where available.",
          "", "| block | paper area mm² | vrex area mm² | paper power mW | vrex power mW | vrex fmax MHz (scaled) "
          "| memory KB | status |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for block, pa, pp, a, p, fmax, status, mem in rows:
        L.append(f"| {block} | {pa:.3g} | {fmt_value(a)} | {pp:.4g} | {fmt_value(p)} | {fmt_value(fmax, '{:.0f}')} | "
                 f"{fmt_value(mem, '{:.3f}')} | {status} |")
    others = [n for n in comps if n not in PAPER_BLOCKS.values() and not comps[n].get("hierarchy")
              and n != "mac_tree"]
    if others:
        L += ["", "Other components (not rows of Table III), scaled the same way: " + "; ".join(
            f"`{n}` ({comps[n]['description']}): {fmt_value(_scaled(comps[n], 'area_mm2'))} mm², "
            f"{fmt_value(_scaled(comps[n], 'power_mw'))} mW, "
            f"fmax {fmt_value(_scaled(comps[n], 'fmax_mhz'), '{:.0f}')} MHz"
            for n in others) + "."]
    L += ["", f"Paper DRE memory: {DRE_MEMORY_KB} KB (128 B + 4 KB + 8 KB + 8 KB). Paper core: "
          f"{CORE_TOTAL[0]} mm², {CORE_TOTAL[1]} mW.", ""]
    from .core_section import core_section

    core_lines, core_plots = core_section(data.get("core"), comps, target, out)
    L += core_lines
    shares = [(b, a, p) for b, _, _, a, p, *_ in rows if b in ("HCU", "WTU") and a]
    if len(shares) == 2:
        (b1, a1, p1), (b2, a2, p2) = shares
        L += [f"Ratios (independent of absolute scaling): {b2}/{b1} area vrex {a2 / a1:.2f}× vs paper "
              f"{TABLE_III[b2][0] / TABLE_III[b1][0]:.2f}×; power vrex {fmt_value(p2 / p1 if p1 else None)}× "
              f"vs paper {TABLE_III[b2][2] / TABLE_III[b1][2]:.2f}×.", ""]
    plots = list(core_plots)
    if any(r[3] is not None for r in rows):
        plots.append(bar_vs_paper([(r[0].split()[0], r[3], r[1]) for r in rows], "area (mm²)",
                                  "Area: vrex scaled vs paper Table III", out / "area_vs_paper.png"))
        plots.append(bar_vs_paper([(r[0].split()[0], r[4], r[2]) for r in rows], "power (mW)",
                                  "Power: vrex scaled vs paper Table III", out / "power_vs_paper.png"))

    L += ["## Every component", "",
          "| component | generic cells | CMOS transistors | logic depth | area µm² (lib) | memories | crit. path ns "
          "| fmax MHz | slack ns | power mW (SAIF) | power mW (default act.) | area mm² (scaled) | power mW "
          "(scaled) | activity | lint |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for name, r in comps.items():
        g, t = r["generic"], r.get("timing") or {}
        p, pd = r.get("power_mw") or {}, r.get("power_default_activity_mw") or {}
        mems = _memory_list(r.get("memories", []))
        lint = {True: "clean", False: "WARNINGS", None: "—"}[r.get("lint_clean")]
        L.append(f"| {name} | {g['cells']} | {g['transistors']} | {g['logic_depth']} "
                 f"| {fmt_value(r.get('area_um2'), '{:.1f}')} | {mems} "
                 f"| {fmt_value(t.get('critical_path_ns'), '{:.3f}')} | {fmt_value(t.get('fmax_mhz'), '{:.0f}')} "
                 f"| {fmt_value(t.get('slack_ns'), '{:.3f}')} | {fmt_value(p.get('total'))} "
                 f"| {fmt_value(pd.get('total'))} | {fmt_value(_scaled(r, 'area_mm2'))} "
                 f"| {fmt_value(_scaled(r, 'power_mw'))} | {activity_label(r)} | {lint} |")
    L.append("")
    L += _activity_section(comps)
    for name, r in comps.items():
        if r.get("missing"):
            L += [f"Missing for `{name}`:", ""] + [f"- {k}: {v}" for k, v in r["missing"].items()] + [""]

    if meta.get("fpga"):
        L += _fpga_section(meta["fpga"], comps, out, plots)

    L += ["## Per-block breakdown", ""]
    breakdowns = {}
    for name, r in comps.items():
        bd = r.get("area_breakdown")
        if not bd:
            continue
        breakdowns[name] = bd
        total = sum(bd.values()) or 1.0
        L += [f"### {name}", "", "| hierarchy level | area µm² | share |", "|---|---:|---:|"]
        for path, a in sorted(bd.items(), key=lambda kv: -kv[1]):
            L.append(f"| `{path}` | {a:.1f} | {100 * a / total:.1f}% |")
        p = r.get("power_mw") or r.get("power_default_activity_mw")
        if p:
            L += ["", f"Power ({p['activity_source']} activity, {p['clock_mhz']:g} MHz): internal {p['internal']:.4g} mW,"
                  f" switching {p['switching']:.4g} mW, leakage {p['leakage']:.3g} mW, total {p['total']:.4g} mW "
                  f"(sequential {p.get('sequential', 0):.4g}, combinational {p.get('combinational', 0):.4g}, SRAM "
                  f"macros {p.get('memory', 0):.4g})."]
            if p.get("stimulus"):
                s, c = p["stimulus"], p.get("coverage", {})
                L.append(f"Stimulus: {s['kind']} ({s['transactions']} transactions, {p.get('sim_cycles')} cycles"
                         f"{'; ' + s['reason'] if s.get('reason') else ''}); SAIF annotated {c.get('input_bits_annotated')}"
                         f"/{c.get('input_bits')} input bits and {c.get('flop_outputs_annotated')}/"
                         f"{c.get('flop_outputs')} flop outputs.")
        for m in r.get("memories", []):
            L.append(f"- memory `{m['path']}/{m['name']}`: {m['words']} words × {m['bits']} bits, {m['read_ports']}R/"
                     f"{m['write_ports']}W, **{m['kind']}** ({m['reason']})"
                     + (f"; {m['area_lib_um2']:.1f} µm² at the library node, read {m['read_pj']:.3g} pJ, write "
                        f"{m['write_pj']:.3g} pJ, access {m['access_ns']:.3g} ns ({m['model_source']})"
                        if m["kind"] == "sram" else ""))
        L.append("")
    if breakdowns:
        plots.append(breakdown_plot(breakdowns, out / "area_breakdown.png"))

    L += ["## Cycles from simulation", ""]
    series = {}
    for name, r in comps.items():
        flat = flat_numbers(r.get("cycles"))
        if not flat:
            L.append(f"- `{name}`: {r.get('missing', {}).get('cycles', 'no cycle figures')}")
            continue
        series[name] = flat
        L += [f"### {name}", "", "| figure | value |", "|---|---:|"] + [f"| {k} | {v:.4g} |" for k, v in flat.items()]
        L.append("")
    if series:
        plots.append(cycles_plot(series, out / "cycles.png"))
    L.append("")
    if plots:
        L += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    scaled = next((r["scaled"] for r in comps.values() if r.get("scaled")), None)
    L += ["## Methodology and differences from the paper's flow", "",
          "- **Synthesis**: Yosys (yowasp) `synth` keeping the hierarchy, flops with `dfflibmap`, logic with "
          "`abc -liberty -constr -D <period>` (driving cell and output load from the config), sky130 dont-use "
          "cells excluded. The paper used Synopsys Design Compiler with a commercial 14 nm library; DC's mapping "
          "and sizing are stronger, so our logic area is pessimistic.",
          "- **Library**: an open library (sky130 130 nm 1.8 V, or ASAP7 7 nm predictive 0.7 V), then scaled to "
          "the target with Stillmaker & Baas (2017) polynomial fits; the paper synthesised directly at 14 nm, 0.8 V."
          " The scaling is approximate (sky130's 1.8 V is outside the 130 nm fit's voltage; ASAP7 is predictive); "
          "compare block ratios as well as absolutes.",
          "- **Timing**: OpenSTA (2019) on the flat mapped netlist, ideal clock, input/output delay 0, pre-layout "
          "(no wires), like the paper's pre-layout STA. Synthesis runs at the library clock "
          f"({meta['clock_mhz']:g} MHz), not at 800 MHz; fmax at the target is the critical path scaled by the "
          "delay factor.",
          "- **Power**: OpenSTA `report_power`; activity from a Verilator SAIF run of the component's own "
          "bench, or for a glue its composite's bench on the whole composite (input ports and flop outputs "
          "annotated, constants tied to ports that never toggle, OpenSTA propagates through logic; no glitch "
          "power). The paper does not name its power tool. The default-activity figure is shown beside it, and "
          "the \"activity\" column and the per-block table say which blocks' power is activity-based.",
          "- **Memories**: SRAM macros from a fit of the ASAP7 SRAM liberties (area, access energy, timing), moved to"
          " the library node, access rate from the SAIF duty of each port enable. The paper's memories come from its"
          " (unnamed) memory compiler.",
          "- **KVMU**: the paper keeps its HC table in DRAM and gives no memory for the KVMU; vrex's KVMU has a data "
          "buffer between its read and write engines (an SRAM macro) and its per-context state memory, and keeps its "
          "HC table in device DRAM behind its own AXI port.", ""]
    if scaled:
        L += [f"Scaling used: {scaled['method']}. Source: {scaled['source']}.", ""]
    from vrex.perf.system_render import system_markdown

    L += system_markdown(data.get("system"), out)[0]      # the system results of this run's figures, last
    md = "\n".join(L)
    (out / "report.md").write_text(md)
    (out / "index.html").write_text(markdown_to_html(md, f"vrex figures — {meta['config']}"))
    return out / "report.md"


def _pct(util: dict, bel: str) -> str:
    u = (util or {}).get(bel)
    return fmt_value(u and u["percent"], "{:.1f}%")


def _cell(name: str) -> str:
    """A placed cell's name without the suffixes synthesis and packing append (``x_TRELLIS_FF_Q_3`` -> ``x``)."""
    return re.sub(r"(_TRELLIS_\w*|\$\w*)$", "", name) or name


def _fpga_section(f: dict, comps: dict, out: Path, plots: list) -> list[str]:
    """The FPGA section: block resources, device utilisation and post-route fmax of every component that fits; the
    ones that do not fit with their utilisation; the ones whose flow failed with the reason."""
    from .plots import utilisation_plot

    tools = f.get("tools") or {}
    L = [f"## FPGA implementation: {f['family'].upper()} {f['device']} {f['package']}, speed grade "
         f"{f['speed_grade']}, {f['clock_mhz']:g} MHz constraint", "",
         f"Yosys `synth_ecp5` ({(tools.get('yosys') or 'missing').split(', ')[0]}) and nextpnr-ecp5 "
         f"({tools.get('nextpnr-ecp5') or 'missing'}), placer seed {f['seed']}. Each block is placed and routed out "
         "of context in a four-pin harness (inputs from a shift chain, outputs captured and shifted out). LUT4 counts "
         "two LUT4s per CCU2C carry cell; block resources are the block's own (Yosys), device utilisation (harness "
         "included) and fmax (register to register) are nextpnr's after routing; nextpnr stops improving once the "
         "constraint is met, so a met fmax is a lower bound.", "",
         "| component | LUT4 | FF | EBR (DP16KD) | MULT18 | dist. RAM 16×4 | device LUT | device FF | device EBR "
         "| device MULT18 | fmax MHz | met | critical path |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    misfits, failed, series = [], [], {}
    for name, r in comps.items():
        rec = r.get("fpga")
        if not rec:
            continue
        if rec.get("fits") is None:
            failed.append(f"- `{name}`: {rec.get('error', 'no FPGA figures')}")
            continue
        util = rec["utilisation"]
        if not rec["fits"]:
            used = ", ".join(f"{b} {u['used']}/{u['available']} ({fmt_value(u['percent'], '{:.0f}%')})"
                             for b, u in util.items() if u["used"])
            misfits.append(f"- `{name}`: {rec['reason']}. Utilisation: {used or 'not reported'}.")
            continue
        b, t = rec["block"], rec.get("timing") or {}
        series[name] = {k: (util.get(bel) or {}).get("percent") or 0.0 for k, bel in (
            ("LUT", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("EBR", "DP16KD"), ("MULT18", "MULT18X18D"))}
        path = f"`{_cell(t['startpoint'])}` → `{_cell(t['endpoint'])}`" if t.get("startpoint") else "—"
        L.append(f"| {name} | {b['lut4']} | {b['ff']} | {b['ebr']} | {b['mult18']} | {b['dist_ram']} "
                 f"| {_pct(util, 'TRELLIS_COMB')} | {_pct(util, 'TRELLIS_FF')} | {_pct(util, 'DP16KD')} "
                 f"| {_pct(util, 'MULT18X18D')} | {fmt_value(t.get('fmax_mhz'), '{:.1f}')} "
                 f"| {'yes' if t.get('met') else 'no'} | {path} |")
    L.append("")
    if misfits:
        L += [f"Components that do not fit the {f['device']}:", ""] + misfits + [""]
    if failed:
        L += ["Components without FPGA figures:", ""] + failed + [""]
    if series:
        plots.append(utilisation_plot(series, f"{f['device']} {f['package']} utilisation (post-route, harness "
                                              "included)", out / "fpga_utilisation.png"))
    return L


def write_report(cfg, out_dir: Path | None = None, *, workers: int = 2, liberty=None, clock_mhz=None,
                 transactions=None, activity=True, skip_tools=(), use_cache=True, progress=True,
                 fpga: dict | None = None, components=None) -> Path:
    out = Path(out_dir) if out_dir else build_dir("report")
    out.mkdir(parents=True, exist_ok=True)
    data = collect_figures(cfg, workers=workers, liberty=liberty, clock_mhz=clock_mhz, transactions=transactions,
                           activity=activity, skip_tools=skip_tools, use_cache=use_cache, progress=progress,
                           fpga=fpga, components=components)
    from vrex.perf.system_section import system_entry

    data["system"] = system_entry(data, cfg)
    (out / "figures.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    return render_report(data, out)
