"""Map an emitted component onto a Liberty library with Yosys: area per hierarchy level and a flat netlist.

Two Yosys runs; the second in one folder per (component, config, library, clock) so that every path is relative:

1. **coarse** — ``synth -run :fine`` keeps the hierarchy and leaves every memory as a ``$mem_v2`` cell
   (``memory -nomap``); the design is written as JSON. vrex reads each memory's shape (words × bits, read and
   write ports, synchronous read or not) and the nets of its enables from that JSON. This pass needs no library:
   it runs once per emitted Verilog, shared with the generic figures (:mod:`vrex.synth.coarse`), and its
   ``coarse.json`` is copied into the folder.
2. **map** — with ``technology.memories: sram`` each memory of at least ``technology.sram_min_bits`` bits with
   only synchronous read ports becomes an instance of a generated macro cell ``vrex_sram_<n>`` (a blackbox in
   Yosys, a Liberty cell with area and timing arcs for OpenSTA, see :mod:`vrex.synth.memories`); the others are
   mapped to flip-flops, as are all memories with ``memories: flops``. Then the rest of ``synth`` runs, flops
   go to plain library flip-flops (``dfflegalize``, then ``dfflibmap``: an enable becomes a multiplexer in the
   logic, because a library enable flop hides its enable net's load from ABC, which then never buffers the enable
   of a memory word or a wide register; sky130 has such flops, ASAP7 has none) and logic through ``abc -liberty
   -constr -D`` with the input driving cell and output load of the config (toolchain.md §5.2, pitfalls 7-8) and
   the library's dont-use cells.

``stat -liberty`` per module gives the area of each hierarchy level; the breakdown lists every instance path
with its own cells (macros listed separately), and the sum equals the total. The netlist for OpenSTA is the
flattened mapped design.

Each Yosys run leaves a stamp (hash of the Yosys version, its script and its input files); a call whose script and
inputs match the stamp reuses the run's outputs, so mapping the same design, library and clock again (e.g. for
another SAIF run) only re-reads the files.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from vrex.errors import ToolFailedError

from .coarse import coarse_pass
from .memories import MemoryInfo, find_memories, macro_liberty, swap_srams
from .yosys import read_stat, run_yosys_once

__all__ = ["MappedDesign", "abc_delay_target_ps", "liberty_args", "map_design"]


@dataclass
class MappedDesign:
    directory: Path
    top: str
    netlist: Path                 # flat mapped netlist (relative to directory for tools)
    area_um2: float               # total: std cells + macros, in the library's area unit (µm²)
    logic_area_um2: float
    area_breakdown: dict          # instance path (or path/memory [sram]) -> µm²
    cells: int
    cell_types: dict
    sequential_area_um2: float
    memories: list[MemoryInfo] = field(default_factory=list)
    macro_lib: Path | None = None
    part_outputs: tuple[str, ...] = ()   # a glue's output ports that feed its parts (synth/sta.py loads them)


def _abc_script(effort: str, target_ps: float) -> str:
    """``-script`` for ``technology.synth_effort: fast``: Yosys's default mapping script for ``-liberty -constr``
    without its SAT sweeping (&fraig, scorr); ``dch`` computes structural choices for ``map``, and buffering and
    gate sizing for the delay target are kept, so timing stays meaningful (docs/figures.md). ``fast`` also skips
    the generic ``abc`` pass before ``dfflibmap`` (the Liberty mapping re-optimises the logic anyway). ``dch``
    replaced ``dc2``, which rebuilt the carry-lookahead adders as ripple chains (a 46-bit add: 1.04 ns on ASAP7,
    0.38 ns now, with the Kogge-Stone lookahead the map script's ``techmap`` uses).

    ``topo`` after ``map`` is required: on some netlists (the edge DRE with ``dre.hcu.pipeline_stages`` ≥ 2) the
    mapped network is not in topological order, and ABC's ``buffer`` / ``stime`` then die without writing their
    output (Yosys reports "Can't open ABC output file"). Where the order is already topological it changes
    nothing (same area on the edge DRE)."""
    if effort == "full":
        return ""
    d = f"-D,{target_ps:.0f}"
    return f" -script +strash;dch;map,{d};topo;buffer;upsize,{d};dnsize,{d};stime,-p"


def _module_name(name: str) -> str:
    return name[1:] if name.startswith("\\") else name


def liberty_args(lib) -> tuple[str, str, str]:
    """The ``dfflibmap`` libraries, the ``abc`` libraries and the ``-dont_use`` options of ``lib`` (how the flow
    maps flops and logic; :mod:`vrex.synth.register_overhead` maps its flop chain the same way)."""
    seq = " ".join(f"-liberty {f.name}" for f in lib.seq_files)
    libs = " ".join(f"-liberty {f.name}" for f in lib.files)
    dont = "".join(f" -dont_use {p}" for p in lib.dont_use)
    return seq, libs, dont


def abc_delay_target_ps(clock_mhz: float, register_overhead_ps: float) -> float:
    """ABC's ``-D``: the clock period less the register overhead (clock-to-output + setup, which ABC does not
    see; :mod:`vrex.synth.register_overhead`), and never below a tenth of the period (a clock that the flops
    alone cannot meet still maps, and OpenSTA reports the miss)."""
    period_ps = 1e6 / clock_mhz
    return max(period_ps - register_overhead_ps, period_ps / 10)


def map_design(emitted, lib, cfg, work: Path, *, clock_mhz: float, sram_model=None,
               register_overhead_ps: float = 0.0) -> MappedDesign:
    """Run the two Yosys passes in ``work`` and return the area figures and the flat netlist; ABC's delay target
    is :func:`abc_delay_target_ps` (``register_overhead_ps`` 0: the period)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    lib.copy_into(work)
    tech = cfg.technology
    top = emitted.top
    shutil.copyfile(coarse_pass(emitted, tech.memories, tech.sram_min_bits).library, work / "coarse.json")
    design = json.loads((work / "coarse.json").read_text())
    memories = find_memories(design, tech.memories, tech.sram_min_bits)
    srams = [m for m in memories if m.kind == "sram"]
    if srams and sram_model is None:
        raise ToolFailedError("internal: SRAM memories found but no SRAM model was given")
    for m in srams:
        m.attach_model(sram_model, lib)
    source, read_macros = swap_srams(design, srams, work)
    macro_lib = None
    if srams:
        macro_lib = work / "macros.lib"
        macro_lib.write_text(macro_liberty(srams, lib))
    target_ps = abc_delay_target_ps(clock_mhz, register_overhead_ps)
    cap = tech.output_load_pf / lib.cap_unit_pf
    (work / "abc.constr").write_text(f"set_driving_cell {lib.drive_cell}\nset_load {cap:g}\n")
    seq, libs, dont = liberty_args(lib)
    stat_libs = libs + (" -liberty macros.lib" if srams else "")
    run_yosys_once(f"""\
{read_macros}read_json {source}
hierarchy -check -top {top}
opt -fast -full
memory_map
opt -full
techmap -map +/techmap.v -map +/choices/kogge-stone.v
opt -fast
{"" if tech.synth_effort == "fast" else "abc" + chr(10) + "opt -fast" + chr(10)}dfflegalize -cell $_DFF_P_ 01
dfflibmap {seq}{dont}
abc {libs}{dont} -constr abc.constr -D {target_ps:.0f}{_abc_script(tech.synth_effort, target_ps)}
opt_clean
tee -q -o mapped_stat.json stat -json -top {top} {stat_libs}
select * %C
write_json -selected hierarchy.json
select -clear
flatten
opt_clean
write_verilog -noattr -noexpr -nohex -nodec -simple-lhs netlist.v
""", work, "map", [source, "abc.constr", *(f.name for f in lib.files), *(["macros.v", "macros.lib"] if srams else [])],
              ["mapped_stat.json", "hierarchy.json", "netlist.v"])
    stats = json.loads((work / "mapped_stat.json").read_text())
    modules = {_module_name(k): v for k, v in stats["modules"].items()}
    macro_area = {m.macro: m.area_lib_um2 for m in srams}
    # The instances of the design's own modules, per module (``select * %C``: the mapped design's cells are
    # written only where their type is a module of the design, not a library cell; 161 MB of JSON for the edge
    # DPE glue became a few kB). A module with no such instance is absent.
    mapped = json.loads((work / "hierarchy.json").read_text())["modules"]
    known = set(modules) | set(macro_area)
    mem_by_module: dict[str, list[MemoryInfo]] = {}
    for m in srams:
        mem_by_module.setdefault(m.module, []).append(m)
    breakdown: dict[str, float] = {}

    def children(module: str) -> list[tuple[str, str]]:
        return [(_module_name(cname), cell["type"]) for cname, cell in mapped.get(module, {}).get("cells", {}).items()
                if _module_name(cell["type"]) in known and cell["type"] not in macro_area]

    def own(module: str, key: str) -> float:
        """`stat -top` reports hierarchical figures per module: subtract the child modules'."""
        value = float(modules.get(_module_name(module), {}).get(key, 0.0) or 0.0)
        return value - sum(float(modules.get(_module_name(t), {}).get(key, 0.0) or 0.0) for _, t in children(module))

    seq_area = 0.0
    cell_types: dict[str, int] = {}

    def walk(module: str, path: str):
        nonlocal seq_area
        area = own(module, "area")
        for mem in mem_by_module.get(module, []):
            mem.path = path
            area -= mem.area_lib_um2
            breakdown[f"{path}/{mem.name} [sram]"] = mem.area_lib_um2
        breakdown[path] = area
        seq_area += own(module, "sequential_area")
        for t, n in (modules.get(_module_name(module), {}).get("num_cells_by_type") or {}).items():
            if _module_name(t) in known:
                continue
            cell_types[t] = cell_types.get(t, 0) + n
        for cname, ctype in children(module):
            walk(ctype, f"{path}/{cname}")

    walk(top, top)
    total = sum(breakdown.values())
    design_stat = read_stat(work / "mapped_stat.json")
    reported = float(design_stat.get("area", total) or total)
    if abs(reported - total) > 1e-6 * max(1.0, total):
        raise ToolFailedError(f"area bookkeeping mismatch for {top}: Yosys reports {reported:.3f} µm², the "
                              f"hierarchy sums to {total:.3f} µm² (see {work / 'mapped_stat.json'})")
    logic = total - sum(m.area_lib_um2 for m in srams)
    return MappedDesign(work, top, work / "netlist.v", total, logic, breakdown, sum(cell_types.values()),
                        cell_types, seq_area, memories, macro_lib)


def flop_state_nets(netlist_text: str, lib) -> list[tuple[str, str, str, bool]]:
    """``(instance, pin, net, inverted)`` of every flop output pin that carries the stored bit."""
    out = []
    flops = {n: c for n, c in lib.flop_cells().items() if c.state_pins}
    for m in re.finditer(r"^\s*(\S+)\s+(\S+)\s*\((.*?)\);", netlist_text, re.M | re.S):
        cell = flops.get(m.group(1))
        if cell is None:
            continue
        pins = dict(re.findall(r"\.(\w+)\(([^()]*)\)", m.group(3)))
        for pin, inv in cell.state_pins:
            net = pins.get(pin, "").strip()
            if net:
                out.append((m.group(2), pin, net, inv))
    return out
