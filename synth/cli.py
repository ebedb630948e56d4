"""Sub-commands ``vrex verilog``, ``vrex synth`` and ``vrex report``."""

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


def _cmd_synth(args) -> int:
    from vrex.synth.generic import generic_figures
    from vrex.synth.verilog import emit

    cfg = load_config_arg(args)
    records = {}
    for name in _components(args):
        e = emit(name, cfg)
        g = generic_figures(e)
        records[name] = {"generic": g}
        print(f"{name} (config {cfg.name}, hash {cfg.hash()}):")
        print(f"  generic cells      {g['cells']}")
        print(f"  flip-flop bits     {g['flops']}")
        print(f"  transistors (CMOS) {g['transistors']}")
        print(f"  logic depth        {g['logic_depth']} gates")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    return 0


def _cmd_report(args) -> int:
    from vrex.synth.report import write_report

    cfg = load_config_arg(args)
    path = write_report(cfg, Path(args.output) if args.output else None)
    print(f"report: {path}")
    return 0


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
                                   "depth) of a component built from the config.")
    s.add_argument("--component", metavar="NAME", help="component name; default: all")
    add_config_option(s)
    s.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    s.set_defaults(func=_cmd_synth)

    r = sub.add_parser("report", help="the main job: Verilog and figures of every block for a config",
                       description="Generate Verilog for every component, run its figures, and write "
                                   "build/report/ (report.md, figures.json).")
    add_config_option(r)
    r.add_argument("-o", "--output", metavar="DIR", help="report folder (default: build/report)")
    r.set_defaults(func=_cmd_report)
