"""Library-free figures: Yosys generic cell counts, a CMOS transistor estimate and logic depth."""

from __future__ import annotations

import hashlib
import json
import re

from .yosys import STRUCTURAL_CHECK, read_stat, run_yosys

__all__ = ["generic_figures", "structural_check"]


def structural_check(emitted) -> None:
    """Yosys ``check -assert`` plus no latches; raises ToolFailedError naming the problem."""
    script = f"read_verilog -sv {emitted.verilog.name}\nhierarchy -check -top {emitted.top}\n{STRUCTURAL_CHECK}"
    run_yosys(script, emitted.directory, "check")


def generic_figures(emitted) -> dict:
    """Run generic synthesis of an emitted component and return its figures.

    ``cells``/``cell_types``: Yosys internal gate library after ``synth -flatten``; ``flops``: flip-flop bits;
    ``transistors``: ``stat -tech cmos`` after mapping every flop to a plain DFF and the logic to CMOS gates
    (``abc -g cmos2``), flops included (``$scopeinfo`` cells that ``flatten`` leaves are removed first); ``logic_depth``: longest topological path in gates (``ltp -noff``).
    Results are cached in the emitted folder keyed by the Verilog's content.
    """
    d = emitted.directory
    cache = d / "generic.json"
    top = emitted.top
    script = f"""\
read_verilog -sv {emitted.verilog.name}
hierarchy -check -top {top}
{STRUCTURAL_CHECK}synth -top {top} -flatten
select -clear
delete t:$scopeinfo
tee -q -o generic_stat.json stat -json
tee -q -o generic_ltp.txt ltp -noff
dfflegalize -cell $_DFF_P_ 01
abc -g cmos2
opt_clean
tee -q -o generic_cmos.json stat -json -tech cmos
"""
    stamp = hashlib.sha256(emitted.verilog.read_bytes() + script.encode()).hexdigest()
    if cache.is_file():
        try:
            data = json.loads(cache.read_text())
            if data.get("verilog_sha256") == stamp:
                return data["figures"]
        except (json.JSONDecodeError, KeyError):
            pass
    run_yosys(script, d, "generic")
    stat, cmos = read_stat(d / "generic_stat.json"), read_stat(d / "generic_cmos.json")
    types = stat.get("num_cells_by_type", {})
    flops = sum(n for t, n in types.items() if "DFF" in t or "FF_" in t)
    m = re.search(r"length=(\d+)", (d / "generic_ltp.txt").read_text())
    figures = {
        "cells": stat["num_cells"],
        "cell_types": types,
        "flops": flops,
        "transistors": int(str(cmos.get("estimated_num_transistors", 0)).rstrip("+")),
        "logic_depth": int(m.group(1)) if m else None,
    }
    cache.write_text(json.dumps({"verilog_sha256": stamp, "figures": figures}, indent=2))
    return figures
