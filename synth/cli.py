"""Sub-commands ``vrex verilog``, ``vrex synth``, ``vrex report`` and ``vrex sweep``."""

from __future__ import annotations

import json
from pathlib import Path

from vrex.cli import add_config_option, load_config_arg

__all__ = ["register"]


def _components(args):
    from vrex.hdl.registry import component_names, get_component

    if getattr(args, "all", False) or args.component is None:
        return component_names()
    get_component(args.component)   # raises a clear error for an unknown name
    return [args.component]


def _cmd_verilog(args) -> int:
    from vrex.synth.verilog import emit

    cfg = load_config_arg(args)
    names = _components(args)
    for name in names:
        out = Path(args.output) / name if args.output and len(names) > 1 else args.output
        e = emit(name, cfg, out, force=True)
        print(f"{name}: {e.verilog}  (file list {e.filelist.name}, config snapshot config.yaml, hash {cfg.hash()})")
    return 0


def _print_library_figures(r) -> None:
    from .report import fmt_value

    lib = r.get("liberty")
    if not lib:
        print(f"  library figures    none ({r['missing'].get('liberty', 'no library')})")
        return
    print(f"  library            {lib['description']} (clock {r['clock_mhz']:g} MHz)")
    print(f"  area               {r['area_um2']:.1f} µm² ({r['cells']} cells; logic {r['logic_area_um2']:.1f} µm²)")
    for path, a in sorted(r["area_breakdown"].items(), key=lambda kv: -kv[1])[:8]:
        print(f"    {path:<40} {a:10.1f} µm²")
    for m in r["memories"]:
        print(f"  memory             {m['path']}/{m['name']}: {m['words']} x {m['bits']} bits -> {m['kind']} "
              f"({m['reason']})")
    t = r.get("timing")
    if t and t.get("critical_path_ns") is not None:
        print(f"  critical path      {t['critical_path_ns']:.3f} ns ({t['startpoint']} -> {t['endpoint']}); slack "
              f"{t['slack_ns']:.3f} ns at {t['clock_mhz']:g} MHz; fmax {t['fmax_mhz']:.1f} MHz")
    elif "timing" in r["missing"]:
        print(f"  timing             none ({r['missing']['timing']})")
    for key, label in (("power_mw", "power (SAIF)"), ("power_default_activity_mw", "power (default act.)")):
        p = r.get(key)
        if p:
            print(f"  {label:<18} {p['total']:.4g} mW = internal {p['internal']:.4g} + switching {p['switching']:.4g}"
                  f" + leakage {p['leakage']:.3g} mW" + (f" (SRAM {p['memory']:.3g})" if p.get("memory") else "")
                  + (f"; stimulus {p['stimulus']['kind']}" if p.get("stimulus") else ""))
        elif key in r["missing"]:
            print(f"  {label:<18} none ({r['missing'][key]})")
    s = r.get("scaled")
    if s:
        power, fmax = fmt_value(s["power_mw"], none="n/a"), fmt_value(s["fmax_mhz"], none="n/a")
        print(f"  scaled             {s['area_mm2']:.5f} mm², {power} mW, fmax {fmax} MHz"
              f" at {s['node_nm']:g} nm / {s['voltage']:g} V / {s['clock_mhz']:g} MHz")
        print(f"  scaling method     {s['method']}")


def _cmd_synth(args) -> int:
    from vrex.synth.figures import component_figures

    cfg = load_config_arg(args)
    records = {}
    for name in _components(args):
        r = component_figures(name, cfg, liberty=args.liberty, clock_mhz=args.clock_mhz,
                              require_library=args.liberty is not None, activity=not args.no_activity,
                              transactions=args.transactions, use_cache=not args.no_cache)
        records[name] = r
        g = r["generic"]
        print(f"{name} (config {cfg.name}, hash {cfg.hash()}):")
        print(f"  generic cells      {g['cells']}")
        print(f"  flip-flop bits     {g['flops']}")
        print(f"  transistors (CMOS) {g['transistors']}")
        print(f"  logic depth        {g['logic_depth']} gates")
        _print_library_figures(r)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2, default=str) + "\n")
    return 0


def _cmd_report(args) -> int:
    from vrex.synth.report import write_report

    cfg = load_config_arg(args)
    path = write_report(cfg, Path(args.output) if args.output else None, workers=args.jobs, liberty=args.liberty,
                        clock_mhz=args.clock_mhz, transactions=args.transactions, activity=not args.no_activity,
                        use_cache=not args.no_cache)
    print(f"report: {path} (also index.html, figures.json and plots in {path.parent})")
    return 0


def _cmd_sweep(args) -> int:
    from vrex.synth.sweep import run_sweep

    result = run_sweep(args.spec, out_dir=Path(args.output) if args.output else None, workers=args.jobs,
                       use_cache=not args.no_cache)
    print(f"sweep {result.name}: {len(result.rows)} configs measured, {len(result.invalid)} invalid grid points "
          f"skipped, {len(result.failed)} failed; rows in {result.csv} and {result.json}; plots: "
          + (", ".join(p.name for p in result.plots) or "none"))
    return 1 if result.failed else 0


def _add_figure_options(p) -> None:
    p.add_argument("--liberty", metavar="LIB",
                   help="sky130, asap7 (embedded in vrex; VREX_PDK_DIR or technology.pdk_dir name another folder) or "
                        "a .lib/.lib.gz path (default: technology.liberty)")
    p.add_argument("--clock-mhz", type=float, metavar="F", help="clock constraint (default: technology.clock_mhz)")
    p.add_argument("--transactions", type=int, metavar="N",
                   help="input transactions of the SAIF power run (default: technology.activity_transactions)")
    p.add_argument("--no-activity", action="store_true", help="skip the SAIF run (default-activity power only)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached record exists")


def register(sub) -> None:
    v = sub.add_parser("verilog", help="generate Verilog for a component",
                       description="Write <top>.v, a file list (files.f) and the config snapshot (config.yaml) "
                                   "for a component built from the config.")
    v.add_argument("--component", metavar="NAME", help="component name (see `vrex verilog --list`); default: all")
    v.add_argument("--all", action="store_true", help="every registered component")
    add_config_option(v)
    v.add_argument("-o", "--output", metavar="DIR", help="output folder (default: build/rtl/<component>-<hash>)")
    v.set_defaults(func=_cmd_verilog)

    s = sub.add_parser("synth", help="synthesis figures of a component",
                       description="Generic Yosys figures (cells, flip-flops, CMOS transistor estimate, logic "
                                   "depth) of a component built from the config and, with a Liberty library, "
                                   "mapped area per hierarchy level, memories, OpenSTA timing and power (SAIF "
                                   "activity and default activity) and figures scaled to technology.target_*.")
    s.add_argument("--component", metavar="NAME", help="component name; default: all")
    add_config_option(s)
    _add_figure_options(s)
    s.add_argument("--json", metavar="OUT", help="also write the figures records as JSON")
    s.set_defaults(func=_cmd_synth)

    r = sub.add_parser("report", help="the main job: Verilog and figures of every block for a config",
                       description="Generate Verilog for every component, run its figures (area, timing, power, "
                                   "cycles) and write build/report/ (report.md, index.html, figures.json, plots) "
                                   "beside the paper's Table III. Missing tools or libraries give a partial report "
                                   "that says what is missing.")
    add_config_option(r)
    _add_figure_options(r)
    r.add_argument("-j", "--jobs", type=int, default=2, metavar="N", help="worker processes (default 2)")
    r.add_argument("-o", "--output", metavar="DIR", help="report folder (default: build/report)")
    r.set_defaults(func=_cmd_report)

    w = sub.add_parser("sweep", help="figures over a grid of parameters (docs/figures.md, sweep spec)",
                       description="Expand SPEC.yaml (a base config and dotted-key grids) into named configs, run "
                                   "the figures in parallel worker processes, and write one CSV/JSON row per config "
                                   "and Pareto plots into build/sweeps/<name>/. Invalid grid points are reported and "
                                   "skipped; an interrupted sweep resumes from its cache.")
    w.add_argument("spec", metavar="SPEC.yaml", help="sweep specification")
    w.add_argument("-j", "--jobs", type=int, default=2, metavar="N", help="worker processes (default 2)")
    w.add_argument("-o", "--output", metavar="DIR", help="output folder (default: build/sweeps/<name>)")
    w.add_argument("--no-cache", action="store_true", help="recompute every point")
    w.set_defaults(func=_cmd_sweep)
