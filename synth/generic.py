"""Library-free figures: Yosys generic cell counts, a CMOS transistor estimate and logic depth."""

from __future__ import annotations

import hashlib
import json
import re

from .coarse import coarse_pass, coarse_script
from .memories import find_memories, swap_srams
from .yosys import STRUCTURAL_CHECK, read_stat, run_yosys, synthesis_source

__all__ = ["generic_figures", "structural_check", "LIGHT_ABC"]

# ABC script of the generic flow: structural hashing, one rewriting pass and mapping. Yosys's default script adds
# SAT sweeping and choice computation (&fraig, scorr, &dch) that took 98% of 14 minutes on the edge WTU for 2%
# fewer cells; generic figures are estimates, so the light script is used for both mappings.
LIGHT_ABC = "+strash;dc2;map"


def structural_check(emitted) -> None:
    """Yosys ``check -assert`` plus no latches; raises ToolFailedError naming the problem."""
    source = synthesis_source(emitted.verilog, emitted.directory, *_memory_policy(emitted))
    script = f"read_verilog -sv {source}\nhierarchy -check -top {emitted.top}\n{STRUCTURAL_CHECK}"
    run_yosys(script, emitted.directory, "check")


def _memory_policy(emitted) -> tuple[str, int]:
    """``technology.memories`` and ``sram_min_bits`` of the config snapshot next to the Verilog."""
    from vrex.config import load_config

    snapshot = emitted.directory / "config.yaml"
    if not snapshot.is_file():
        return "flops", 0
    tech = load_config(str(snapshot)).technology
    return tech.memories, tech.sram_min_bits


def generic_figures(emitted) -> dict:
    """Run generic synthesis of an emitted component and return its figures.

    ``cells``/``cell_types``: Yosys internal gate library after ``synth -flatten``; ``flops``: flip-flop bits;
    ``transistors``: ``stat -tech cmos`` after mapping every flop to a plain DFF and the logic to CMOS gates
    (``abc -g cmos2``), flops included (``$scopeinfo`` cells that ``flatten`` leaves are removed first);
    ``logic_depth``: longest topological path in gates (``ltp -noff``). Both ABC runs use :data:`LIGHT_ABC`.

    Memories follow the config's ``technology.memories`` rule, as in the library flow (synth/memories.py): with
    ``sram`` every memory an SRAM macro would serve (synchronous reads, at least ``sram_min_bits`` bits) is kept
    out of the logic figures as a blackbox and listed under ``sram_memories`` with its words × bits; smaller or
    asynchronous memories, and every memory with ``flops``, are synthesised as registers and counted.
    The coarse pass is shared with the library mapping (:mod:`vrex.synth.coarse`). Results are cached in the
    emitted folder keyed by the Verilog's content and the scripts.
    """
    d = emitted.directory
    cache = d / "generic.json"
    top = emitted.top
    mode, min_bits = _memory_policy(emitted)
    coarse = coarse_script(synthesis_source(emitted.verilog, d, mode, min_bits), top)
    fine = f"""\
hierarchy -check -top {top}
flatten
synth -top {top} -run fine:check -noabc
abc -script {LIGHT_ABC}
opt -fast
select -clear
delete t:$scopeinfo
tee -q -o generic_stat.json stat -json
tee -q -o generic_ltp.txt ltp -noff
dfflegalize -cell $_DFF_P_ 01
abc -g cmos2 -script {LIGHT_ABC}
opt_clean
tee -q -o generic_cmos.json stat -json -tech cmos
"""
    stamp = hashlib.sha256(emitted.verilog.read_bytes() + (coarse + fine + mode + str(min_bits)).encode()).hexdigest()
    if cache.is_file():
        try:
            data = json.loads(cache.read_text())
            if data.get("verilog_sha256") == stamp:
                return data["figures"]
        except (json.JSONDecodeError, KeyError):
            pass
    design = json.loads(coarse_pass(emitted, mode, min_bits).generic.read_text())
    srams = [m for m in find_memories(design, mode, min_bits) if m.kind == "sram"]
    source, read_macros = swap_srams(design, srams, d, prefix="generic_")
    run_yosys(f"{read_macros}read_json {source}\n{fine}", d, "generic")
    stat, cmos = read_stat(d / "generic_stat.json"), read_stat(d / "generic_cmos.json")
    macros = {m.macro for m in srams}
    types = {t: n for t, n in stat.get("num_cells_by_type", {}).items() if t.lstrip("\\") not in macros}
    flops = sum(n for t, n in types.items() if "DFF" in t or "FF_" in t)
    m = re.search(r"length=(\d+)", (d / "generic_ltp.txt").read_text())
    figures = {
        "cells": sum(types.values()),
        "cell_types": types,
        "flops": flops,
        "transistors": int(str(cmos.get("estimated_num_transistors", 0)).rstrip("+")),
        "logic_depth": int(m.group(1)) if m else None,
        "sram_memories": [{"name": s.name, "words": s.words, "bits": s.bits, "total_bits": s.total_bits}
                          for s in srams],
    }
    cache.write_text(json.dumps({"verilog_sha256": stamp, "figures": figures}, indent=2))
    return figures
