"""The FuseSoC CAPI2 core shipped beside generated Verilog (``<top>.core``, docs/ip.md).

VLNV ``<ip.vendor>:<ip.library>:<component>_<config hash>:<vrex version>``: one core per component and config,
so the packages of several configs can sit in one FuseSoC library. Filesets: ``rtl`` (the Verilog),
``constraints`` (the SDC), ``waivers`` (the Verilator waiver file), ``tb`` (the smoke testbench). Targets:

- ``default``: the RTL, plus the waivers for Verilator flows and the SDC for flows other than Icarus (what a core
  that depends on this one gets);
- ``lint``: ``verilator --lint-only -Wall`` with the waivers (fails on any warning);
- ``sim``: the smoke testbench on Icarus in Verilog-2005 mode (docs/lint.md, "Simulator builds").
"""

from __future__ import annotations

import re

import yaml

from vrex.config import read_yaml

__all__ = ["core_vlnv", "core_text", "declared_name"]


def core_vlnv(component: str, cfg) -> str:
    from vrex import __version__

    return f"{cfg.ip.vendor}:{cfg.ip.library}:{component}_{cfg.hash()}:{__version__}"


def declared_name(text: str, source: str = "core file") -> str | None:
    """The ``name:`` a CAPI2 core file declares (None if it has none or is not YAML)."""
    try:
        doc = read_yaml(text, source)
    except yaml.YAMLError:
        return None
    return str(doc["name"]) if isinstance(doc, dict) and "name" in doc else None


def core_text(interface: dict, files: dict) -> str:
    """The CAPI2 text; ``files`` maps the roles ``verilog``, ``sdc``, ``waivers``, ``testbench`` to file names."""
    top = interface["top"]
    tb = re.sub(r"\.v$", "", files["testbench"])
    core = {
        "name": interface["vlnv"],
        "description": f"{interface['description']} (vrex component {interface['component']}, config "
                       f"{interface['config']}, hash {interface['config_hash']})",
        "filesets": {
            "rtl": {"files": [files["verilog"]], "file_type": "verilogSource"},
            "constraints": {"files": [files["sdc"]], "file_type": "SDC"},
            "waivers": {"files": [files["waivers"]], "file_type": "vlt"},
            "tb": {"files": [files["testbench"]], "file_type": "verilogSource"},
        },
        "targets": {
            "default": {"filesets": ["rtl", "tool_verilator ? (waivers)", "!tool_icarus ? (constraints)"],
                        "toplevel": top},
            "lint": {"default_tool": "verilator", "filesets": ["rtl", "waivers"], "toplevel": top,
                     "tools": {"verilator": {"mode": "lint-only", "verilator_options": ["-Wall"]}}},
            "sim": {"default_tool": "icarus", "filesets": ["rtl", "tb"], "toplevel": tb,
                    "tools": {"icarus": {"iverilog_options": ["-g2005"]}}},
        },
    }
    head = (f"CAPI=2:\n# FuseSoC core of {top}, written by vrex {interface['vrex']} with the Verilog it describes "
            "(regenerate with `vrex verilog`, do not edit).\n")
    return head + yaml.safe_dump(core, sort_keys=False, width=1000)
