"""Sub-commands ``vrex verilog``, ``vrex synth``, ``vrex report`` and ``vrex sweep``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vrex.cli import add_config_option, load_config_arg
from vrex.errors import input_file, output_file, output_folder

__all__ = ["register"]


def _components(args):
    from vrex.hdl.registry import component_names, get_component

    if getattr(args, "all", False) or args.component is None:
        return component_names()
    get_component(args.component)   # raises a clear error for an unknown name
    return [args.component]


def _progress(command: str, what: str) -> None:
    print(f"{command}: {what} ...", file=sys.stderr, flush=True)


def _cmd_verilog(args) -> int:
    from vrex.synth.verilog import emit

    cfg = load_config_arg(args)
    names = _components(args)
    root = output_folder(args.output, "-o") if args.output else None
    folders = []
    for name in names:
        _progress("verilog", f"{name}: generating Verilog and its IP package")
        out = root / name if root is not None and len(names) > 1 else root
        e = emit(name, cfg, out, force=True)
        folders.append(e.directory)
        print(f"{name}: {e.verilog} with {e.filelist.name}, config.yaml and the IP package ({e.top}.core, {e.top}.sdc, "
              f"{e.top}.vlt, {e.top}.interface.md/.json, {e.file('testbench').name})")
    where = folders[0] if len(folders) == 1 else (root or folders[0].parent)
    print(f"verilog: {len(names)} component{'s' if len(names) > 1 else ''} for config {cfg.name} (hash {cfg.hash()}) "
          f"written to {where}")
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
    json_out = output_file(args.json, "--json") if args.json else None
    if args.liberty is not None:   # a bad --liberty fails before the long generic synthesis, not after it
        from .liberty import resolve_library

        tech = cfg.technology
        resolve_library(args.liberty, pdk_folder=tech.pdk_dir, source_node_nm=tech.source_node_nm,
                        drive_cell=tech.input_drive_cell)
    records = {}
    names = _components(args)
    for name in names:
        r = component_figures(name, cfg, liberty=args.liberty, clock_mhz=args.clock_mhz,
                              require_library=args.liberty is not None, activity=not args.no_activity,
                              transactions=args.transactions, use_cache=not args.no_cache,
                              progress=lambda what, name=name: _progress("synth", f"{name}: {what}"))
        records[name] = r
        g = r["generic"]
        print(f"{name} (config {cfg.name}, hash {cfg.hash()}):")
        print(f"  generic cells      {g['cells']}")
        print(f"  flip-flop bits     {g['flops']}")
        print(f"  transistors (CMOS) {g['transistors']}")
        print(f"  logic depth        {g['logic_depth']} gates")
        _print_library_figures(r)
    if json_out:
        json_out.write_text(json.dumps(records, indent=2, default=str) + "\n")
    from vrex.paths import build_root

    cached = build_root() / "figures" / (f"{names[0]}-{cfg.hash()}" if len(names) == 1 else f"<component>-{cfg.hash()}")
    where = f"JSON {json_out}" if json_out else f"records cached in {cached}"
    print(f"synth: figures of {len(records)} component{'s' if len(records) > 1 else ''} for config {cfg.name} (hash "
          f"{cfg.hash()}); {where}")
    return 0


def _cmd_report(args) -> int:
    from vrex.synth.report import write_report

    cfg = load_config_arg(args)
    out = output_folder(args.output, "-o") if args.output else None
    path = write_report(cfg, out, workers=args.jobs, liberty=args.liberty,
                        clock_mhz=args.clock_mhz, transactions=args.transactions, activity=not args.no_activity,
                        use_cache=not args.no_cache)
    print(f"report: {path} (also index.html, figures.json and plots in {path.parent})")
    return 0


def _cmd_sweep(args) -> int:
    from vrex.synth.sweep import run_sweep

    input_file(args.spec, "SPEC", "sweep specification (YAML)")
    out = output_folder(args.output, "-o") if args.output else None
    result = run_sweep(args.spec, out_dir=out, workers=args.jobs,
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
                       description="Write <top>.v, a file list (files.f), the config snapshot (config.yaml) and the "
                                   "IP package for a component built from the config: <top>.sdc (timing constraints), "
                                   "<top>.vlt (Verilator waivers: plain `verilator --lint-only -Wall` is clean), "
                                   "<top>.core (FuseSoC core with lint and sim targets), <top>.interface.json/.md and "
                                   "tb_<top>.v (docs/ip.md).")
    v.add_argument("--component", metavar="NAME",
                   help="component name (an unknown name lists the known ones); default: all")
    v.add_argument("--all", action="store_true", help="every registered component")
    add_config_option(v)
    v.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default: build/rtl/<component>-<hash>; with --all one subfolder per "
                        "component); "
                        "an existing folder must be empty or hold the same package")
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
