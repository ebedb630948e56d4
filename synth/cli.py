"""Sub-commands ``vrex verilog``, ``vrex synth``, ``vrex report`` and ``vrex sweep``."""

from __future__ import annotations

import json
import sys

from vrex.cli import add_config_option, load_config_arg
from vrex.errors import input_file, output_file, output_folder, positive_int

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
        e = emit(name, cfg, out, force=True, flat=args.flat)
        folders.append(e.directory)
        how = " (hierarchical: one module per distinct part)" if e.hierarchical else ""
        print(f"{name}: {e.verilog}{how} with {e.filelist.name}, config.yaml and the IP package ({e.top}.core, "
              f"{e.top}.sdc, {e.top}.vlt, {e.top}.interface.md/.json, {e.file('testbench').name})")
    where = folders[0] if len(folders) == 1 else (root or folders[0].parent)
    print(f"verilog: {len(names)} component{'s' if len(names) > 1 else ''} for config {cfg.name} (hash {cfg.hash()}) "
          f"written to {where}")
    return 0


def _print_library_figures(r) -> None:
    from .text import fmt_value

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


def _fpga_request(args) -> dict | None:
    """``{"family", "device", "package"}`` of ``--fpga`` / ``--fpga-device`` / ``--fpga-package`` (None without
    ``--fpga``)."""
    if not args.fpga:
        if args.fpga_device or args.fpga_package or args.strict:
            from vrex.errors import UsageError

            raise UsageError("--fpga-device, --fpga-package and --strict need --fpga ecp5.")
        return None
    return {"family": args.fpga, "device": args.fpga_device, "package": args.fpga_package}


def _print_fpga(name: str, f: dict) -> None:
    b, t = f["block"], f.get("timing") or {}
    print(f"{name} on {f['device']} {f['package']} (speed {f['speed_grade']}, config {f['config']}, hash "
          f"{f['config_hash']}):")
    print(f"  LUT4               {b['lut4']} ({b['lut4_cells']} LUT4 cells + 2 x {b['carry_cells']} CCU2C carry)")
    print(f"  flip-flops         {b['ff']}")
    print(f"  EBR (DP16KD)       {b['ebr']}")
    print(f"  MULT18X18D         {b['mult18']}")
    print(f"  distributed RAM    {b['dist_ram']} x TRELLIS_DPR16X4")
    p = f["ports"]
    print(f"  ports              {p['input_bits']} input / {p['output_bits']} output bits on {p['pins']} pins ("
          + (f"harness: {p['harness_ff']} FF, {p['harness_lut4']} LUT4)" if p["mode"] == "harness" else
             "every port bit on a pin)"))
    print("  device used        " + ", ".join(f"{bel} {u['used']}/{u['available']} ({u['percent']:.1f}%)"
                                              for bel, u in f["utilisation"].items() if u["used"]))
    if not f["fits"]:
        print(f"  DOES NOT FIT       {f['reason']}")
    elif t.get("fmax_mhz"):
        print(f"  fmax (post-route)  {t['fmax_mhz']:.1f} MHz at a {t['constraint_mhz']:g} MHz constraint "
              f"({'met' if t['met'] else 'not met'}); critical path {t['critical_path_ns']:.3f} ns "
              f"({t['startpoint']} -> {t['endpoint']})")


def _cmd_synth_fpga(args, cfg, fpga, json_out) -> int:
    from vrex.synth.fpga import fpga_figures

    records, misfits = {}, []
    for name in _components(args):
        f = fpga_figures(name, cfg, use_cache=not args.no_cache, **fpga)
        records[name] = f
        _print_fpga(name, f)
        if not f["fits"]:
            misfits.append(name)
    if json_out:
        json_out.write_text(json.dumps(records, indent=2, default=str) + "\n")
        print(f"synth: FPGA figures of {len(records)} component(s) in {json_out}")
    return _misfit_exit(misfits, args.strict)


def _misfit_exit(misfits: list, strict: bool) -> int:
    """1 under ``--strict`` when a component does not fit the device (said on stderr), else 0."""
    import sys

    if misfits:
        print(f"vrex: {', '.join(misfits)} do(es) not fit the FPGA device" + ("" if strict else
              " (utilisation above; --strict makes this an error)"), file=sys.stderr)
    return 1 if misfits and strict else 0


def _records_in_parallel(names: list[str], cfg, workers: int, options: dict) -> dict:
    """The records of ``names`` computed in ``workers`` processes, their parts and glues first, wave by wave as
    ``vrex report`` does (:func:`vrex.synth.hierarchy.dependency_waves`): a composite's parts are synthesised side
    by side instead of one after the other. Empty when there is one job or one worker (the caller computes in this
    process, printing each step). ``--no-cache`` recomputes the first wave (every leaf); the composites after it
    add up the records just made. A job that fails is an error naming the component, raised when its wave ends."""
    from vrex.errors import VrexError
    from vrex.synth.hierarchy import dependency_waves
    from vrex.synth.parallel import run_jobs, worker_pool

    waves = dependency_waves(names, cfg)
    if workers <= 1 or sum(map(len, waves)) <= 1:
        return {}
    records, pool = {}, worker_pool(workers)
    try:
        for k, wave in enumerate(waves):
            opts = options if k == 0 else {**options, "use_cache": True}
            failed = {}
            for name, record, error, _ in run_jobs([(n, n, cfg, opts) for n in wave], workers, "synth", pool=pool):
                if error:
                    failed[name] = error
                elif name in names:
                    records[name] = record
            if failed:
                raise VrexError("synth: " + "; ".join(f"{n} failed: {e}" for n, e in sorted(failed.items())))
    finally:
        pool.shutdown(cancel_futures=True)
    return records


def _cmd_synth(args) -> int:
    from vrex.synth.figures import component_figures

    cfg = load_config_arg(args)
    json_out = output_file(args.json, "--json") if args.json else None
    fpga = _fpga_request(args)
    if fpga:
        return _cmd_synth_fpga(args, cfg, fpga, json_out)
    if args.liberty is not None:   # a bad --liberty fails before the long generic synthesis, not after it
        from .liberty import resolve_library

        tech = cfg.technology
        resolve_library(args.liberty, pdk_folder=tech.pdk_dir, source_node_nm=tech.source_node_nm,
                        drive_cell=tech.input_drive_cell)
    names = _components(args)
    options = {"liberty": args.liberty, "clock_mhz": args.clock_mhz, "require_library": args.liberty is not None,
               "activity": not args.no_activity, "transactions": args.transactions, "use_cache": not args.no_cache}
    records = _records_in_parallel(names, cfg, args.jobs, options)
    for name in names:
        if name not in records:
            records[name] = component_figures(name, cfg, **options,
                                              progress=lambda what, name=name: _progress("synth", f"{name}: {what}"))
        r = records[name]
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
    fpga = _fpga_request(args)
    path = write_report(cfg, out, workers=args.jobs, liberty=args.liberty,
                        clock_mhz=args.clock_mhz, transactions=args.transactions, activity=not args.no_activity,
                        use_cache=not args.no_cache, fpga=fpga)
    from vrex.synth.stopwatch import timing_table

    data = json.loads((path.parent / "figures.json").read_text())
    print(timing_table(data["meta"]["timing"]))
    print(f"report: {path} (also index.html, figures.json and plots in {path.parent})")
    if not fpga:
        return 0
    comps = data["components"]
    return _misfit_exit([n for n, r in comps.items() if (r.get("fpga") or {}).get("fits") is False], args.strict)


def _cmd_sweep(args) -> int:
    from vrex.synth.sweep import run_sweep

    input_file(args.spec, "SPEC", "sweep specification (YAML)")
    out = output_folder(args.output, "-o") if args.output else None
    result = run_sweep(args.spec, out_dir=out, workers=args.jobs, use_cache=not args.no_cache,
                       scheduler=args.scheduler)
    print(f"sweep {result.name}: {len(result.rows)} configs measured ({result.cached} from the cache), "
          f"{len(result.invalid)} invalid grid points skipped, {len(result.failed)} failed; rows in {result.csv} and "
          f"{result.json}; plots: "
          + (", ".join(p.name for p in result.plots) or "none"))
    return 1 if result.failed else 0


def _add_figure_options(p) -> None:
    p.add_argument("--liberty", metavar="LIB",
                   help="sky130, asap7 (embedded in vrex; VREX_PDK_DIR or technology.pdk_dir name another folder) or "
                        "a .lib/.lib.gz path (default: technology.liberty)")
    p.add_argument("--clock-mhz", type=float, metavar="F", help="clock constraint (default: technology.clock_mhz)")
    p.add_argument("--transactions", type=positive_int, metavar="N",
                   help="input transactions of the SAIF power run (default: technology.activity_transactions)")
    p.add_argument("--no-activity", action="store_true", help="skip the SAIF run (default-activity power only)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached record exists")
    p.add_argument("--fpga", choices=["ecp5"], help="FPGA implementation figures on this family (synth_ecp5 + "
                   "nextpnr-ecp5): LUT4, FF, EBR, MULT18, post-route fmax; device, package and clock from fpga.*")
    p.add_argument("--fpga-device", metavar="PART", help="ECP5 part (default: fpga.device, LFE5U-85F)")
    p.add_argument("--fpga-package", metavar="PKG", help="package (default: fpga.package, CABGA381)")
    p.add_argument("--strict", action="store_true", help="with --fpga: exit 1 when a component does not fit")


def register(sub) -> None:
    v = sub.add_parser("verilog", help="generate Verilog for a component",
                       description="Write <top>.v, a file list (files.f), the config snapshot (config.yaml) and the "
                                   "IP package for a component built from the config: <top>.sdc (timing constraints), "
                                   "<top>.vlt (Verilator waivers: plain `verilator --lint-only -Wall` is clean), "
                                   "<top>.core (FuseSoC core with lint and sim targets), <top>.interface.json/.md and "
                                   "tb_<top>.v (docs/ip.md). A composite's <top>.v is hierarchical: one module "
                                   "per distinct part (the edge core's 64 MAC trees are one module), instantiated by "
                                   "name; --flat gives Amaranth's flat output.")
    v.add_argument("--component", metavar="NAME",
                   help="component name (an unknown name lists the known ones); default: all")
    v.add_argument("--all", action="store_true", help="every registered component")
    add_config_option(v)
    v.add_argument("--flat", action="store_true",
                   help="a composite (core, lxe, dpe, vpe, dre) as Amaranth's flat Verilog, every part instance "
                        "elaborated and emitted again (default build/rtl/<component>-<hash>-flat), instead of one "
                        "module per distinct part instantiated by name: the same logic, emitted much more slowly "
                        "(the edge core: half an hour instead of a minute)")
    v.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default: build/rtl/<component>-<hash>; with --all one subfolder per "
                        "component); "
                        "an existing folder must be empty or hold the same package")
    v.set_defaults(func=_cmd_verilog)

    s = sub.add_parser("synth", help="synthesis figures of a component",
                       description="Generic Yosys figures (cells, flip-flops, CMOS transistor estimate, logic "
                                   "depth) of a component built from the config and, with a Liberty library, "
                                   "mapped area per hierarchy level, memories, OpenSTA timing and power (SAIF "
                                   "activity and default activity) and figures scaled to technology.target_*. "
                                   "With --fpga ecp5: the FPGA figures instead (docs/figures.md, FPGA figures).")
    s.add_argument("--component", metavar="NAME", help="component name; default: all")
    add_config_option(s)
    _add_figure_options(s)
    s.add_argument("--json", metavar="OUT", help="also write the figures records as JSON")
    s.add_argument("-j", "--jobs", type=positive_int, default=2, metavar="N",
                   help="worker processes: a composite's parts, or several components, side by side (default 2)")
    s.set_defaults(func=_cmd_synth)

    r = sub.add_parser("report", help="the main job: Verilog and figures of every block for a config",
                       description="Generate Verilog for every component, run its figures (area, timing, power, "
                                   "cycles) and write build/report/ (report.md, index.html, figures.json, plots) "
                                   "beside the paper's Table III. Missing tools or libraries give a partial report "
                                   "that says what is missing.")
    add_config_option(r)
    _add_figure_options(r)
    r.add_argument("-j", "--jobs", type=positive_int, default=2, metavar="N", help="worker processes (default 2)")
    r.add_argument("-o", "--output", metavar="DIR", help="report folder (default: build/report)")
    r.set_defaults(func=_cmd_report)

    w = sub.add_parser("sweep", help="figures over a grid of parameters (docs/figures.md, sweep spec)",
                       description="Expand SPEC.yaml (a base config and dotted-key grids) into named configs, run "
                                   "the figures in parallel worker processes, and write one CSV/JSON row per config "
                                   "and Pareto plots into build/sweeps/<name>/. Invalid grid points are reported and "
                                   "skipped; an interrupted sweep resumes from its cache.")
    w.add_argument("spec", metavar="SPEC.yaml", help="sweep specification")
    w.add_argument("-j", "--jobs", type=positive_int, default=2, metavar="N", help="worker processes (default 2)")
    w.add_argument("-o", "--output", metavar="DIR", help="output folder (default: build/sweeps/<name>)")
    w.add_argument("--no-cache", action="store_true", help="recompute every point")
    w.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the points on a Dask distributed cluster: a scheduler address (tcp://host:8786) or "
                        "`local` (a LocalCluster of -j worker processes); default: local worker processes")
    w.set_defaults(func=_cmd_sweep)
