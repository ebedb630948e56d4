"""Memories of a design: find them in Yosys JSON, decide SRAM macro or flip-flops, and describe the macros.

Amaranth's ``lib.memory.Memory`` becomes a Verilog array, which Yosys keeps as a ``$mem_v2`` cell until
``memory_map``. For each one vrex records words × bits, read and write ports, whether every read port is
synchronous, and the nets of the port enables (their SAIF duty is the access rate for memory power).

A memory becomes an SRAM macro when ``technology.memories`` is ``sram``, it has at least
``technology.sram_min_bits`` bits and all its read ports are synchronous (an SRAM cannot read combinationally);
otherwise it is synthesised as flip-flops and the record says why. Macro figures come from
:mod:`vrex.synth.sram` (ASAP7, 7 nm, 0.7 V) moved to the logic library's node and voltage with the
Stillmaker & Baas factors (:mod:`vrex.synth.scaling`), so one design is measured in one technology. A memory
with several read ports is one bank per read port.

The generated macro cell has the ``$mem_v2`` ports, an area, and timing arcs: clock-to-read-data (the access
time) and setup of address / data / enables, so paths into and out of the memory are timed by OpenSTA. Its write
enable is one pin per write port and enable lane, as on an SRAM macro (the ASAP7 banks have one ``write`` pin):
Yosys's ``$mem_v2`` has one enable bit per data bit, which are copies of one net per lane (the port's granularity;
the whole word for Amaranth's default write port), and the macro keeps one of each (:func:`write_lanes`). Its pin
capacitances are the kit's (:mod:`vrex.synth.sram`) moved to the library's node with the linear feature size
(√ of the Stillmaker & Baas area factor), so a cell driving a macro pin sees one pin's load.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .scaling import area_factor, delay_factor, energy_factor

__all__ = ["MemoryInfo", "find_memories", "replace_memories", "macro_verilog", "macro_liberty", "swap_srams",
           "write_lanes"]


@dataclass
class MemoryInfo:
    module: str                 # Yosys module (JSON key) holding the memory
    cell: str                   # $mem_v2 cell name in that module
    name: str                   # memory name (MEMID)
    path: str                   # instance path of its module, filled by the caller ('' = unknown)
    words: int
    bits: int
    read_ports: int
    write_ports: int
    sync_read: bool
    kind: str                   # "sram" or "flops"
    reason: str
    read_enables: list = field(default_factory=list)    # per read port: net name or "1"/"0"
    write_enables: list = field(default_factory=list)   # per write port: net name or "1"/"0"
    write_lanes: int = 1                                # write-enable pins per write port (bits / granularity)
    macro: str = ""
    banks: int = 1
    model_source: str = ""
    native: dict = field(default_factory=dict)          # ASAP7 figures of one bank at 7 nm, 0.7 V
    area_lib_um2: float = 0.0                           # all banks, at the logic library's node
    read_pj: float = 0.0                                # per access, at the library's node and voltage
    write_pj: float = 0.0
    access_ns: float = 0.0
    setup_ns: float = 0.0
    input_pf: float = 0.0                               # per input pin other than the clock, at the library node
    clock_pf: float = 0.0

    @property
    def total_bits(self) -> int:
        return self.words * self.bits

    def attach_model(self, model, lib) -> None:
        """Fill the macro figures from ``model`` (at its node) moved to ``lib``'s node and voltage."""
        est = model.estimate(self.words, self.bits)
        self.native = est
        self.banks = max(1, self.read_ports)
        self.model_source = model.source
        if lib.node_nm:
            fa = area_factor(model.node_nm, lib.node_nm)
            fe = energy_factor(model.node_nm, model.voltage, lib.node_nm, lib.voltage)
            fd = delay_factor(model.node_nm, model.voltage, lib.node_nm, lib.voltage)
            fc = math.sqrt(fa)          # gate capacitance follows the linear feature size
        else:
            fa = fe = fd = fc = 1.0
            self.model_source += " (not moved to the library's node: its node is unknown)"
        self.area_lib_um2 = est["area_um2"] * fa * self.banks
        self.read_pj, self.write_pj = est["read_pj"] * fe, est["write_pj"] * fe
        self.access_ns, self.setup_ns = est["access_ns"] * fd, est["setup_ns"] * fd
        self.input_pf, self.clock_pf = est.get("input_pf", 0.0) * fc, est.get("clock_pf", 0.0) * fc

    def record(self) -> dict:
        d = asdict(self)
        d["total_bits"] = self.total_bits
        return d


def _netname_of_bits(module: dict) -> dict:
    """bit id -> readable net name (``name`` or ``name[i]``), preferring public names."""
    names = {}
    for name, nn in sorted(module.get("netnames", {}).items(), key=lambda kv: (kv[1].get("hide_name", 0), "$" in kv[0], kv[0])):
        bits = nn["bits"]
        for i, b in enumerate(bits):
            if isinstance(b, int) and b not in names:
                names[b] = name if len(bits) == 1 else f"{name}[{i}]"
    return names


def _bit_name(bit, names) -> str:
    return str(bit) if isinstance(bit, str) else names.get(bit, f"<bit {bit}>")


def _int_param(v) -> int:
    if isinstance(v, int):
        return v
    s = str(v)
    return int(s, 2) if set(s) <= {"0", "1"} and len(s) > 1 else int(s)


def write_lanes(wr_en: list, bits: int, ports: int) -> int:
    """Enable lanes per write port: ``bits / g`` for the largest granularity ``g`` (a divisor of ``bits``) at which
    every ``g``-bit lane of every port's per-bit enables ``wr_en`` (Yosys bits: net ids or constants) is one net."""
    if not wr_en or not bits:
        return 1
    for g in (d for d in range(bits, 0, -1) if bits % d == 0):
        if all(len(set(map(str, wr_en[k * bits + j:k * bits + j + g]))) == 1
               for k in range(ports) for j in range(0, bits, g)):
            return bits // g
    return bits


def find_memories(design: dict, mode: str, min_bits: int) -> list[MemoryInfo]:
    out = []
    for mname, module in design.get("modules", {}).items():
        names = None
        for cname, cell in module.get("cells", {}).items():
            if cell.get("type") != "$mem_v2":
                continue
            names = names or _netname_of_bits(module)
            p = cell["parameters"]
            words, bits = _int_param(p["SIZE"]), _int_param(p["WIDTH"])
            rd, wr = _int_param(p["RD_PORTS"]), _int_param(p["WR_PORTS"])
            clk_en = str(p.get("RD_CLK_ENABLE", "1" * rd)).zfill(max(rd, 1))
            sync = rd == 0 or all(c == "1" for c in clk_en[-rd:])
            memid = str(p.get("MEMID", cname)).lstrip("\\")
            conn = cell["connections"]
            rd_en = [_bit_name(b, names) for b in conn.get("RD_EN", [])]
            wr_bits = conn.get("WR_EN", [])
            wr_en = [_bit_name(wr_bits[k * bits], names) for k in range(wr)] if wr_bits else []
            if mode != "sram":
                kind, reason = "flops", "technology.memories is flops"
            elif words * bits < min_bits:
                kind, reason = "flops", f"{words * bits} bits < technology.sram_min_bits ({min_bits})"
            elif not sync:
                kind, reason = "flops", "a read port is asynchronous (combinational); an SRAM macro cannot serve it"
            else:
                kind, reason = "sram", "synchronous read ports and at least technology.sram_min_bits bits"
            out.append(MemoryInfo(mname, cname, memid, "", words, bits, rd, wr, sync, kind, reason, rd_en, wr_en,
                                  write_lanes(wr_bits, bits, wr)))
    for k, m in enumerate(m for m in out if m.kind == "sram"):
        m.macro = f"vrex_sram_{k}_{m.words}x{m.bits}"
    return out


_PORTS = ("RD_CLK", "RD_EN", "RD_ARST", "RD_SRST", "RD_ADDR", "RD_DATA", "WR_CLK", "WR_EN", "WR_ADDR", "WR_DATA")


def _port_widths(design_cell: dict) -> dict:
    return {p: len(design_cell["connections"].get(p, [])) for p in _PORTS}


def replace_memories(design: dict, srams: list[MemoryInfo]) -> None:
    """Turn each SRAM ``$mem_v2`` cell of the Yosys JSON into an instance of its macro (in place)."""
    for m in srams:
        cell = design["modules"][m.module]["cells"][m.cell]
        wr_en = cell["connections"].get("WR_EN", [])
        if wr_en:        # one enable pin per write port and lane, as on a macro (module docstring)
            lane = m.bits // m.write_lanes
            cell["connections"]["WR_EN"] = [wr_en[k * m.bits + j] for k in range(m.write_ports)
                                            for j in range(0, m.bits, lane)]
        m._widths = _port_widths(cell)
        cell["type"] = m.macro
        cell["parameters"] = {}
        cell["port_directions"] = {p: ("output" if p == "RD_DATA" else "input") for p in cell["connections"]}


def macro_verilog(srams: list[MemoryInfo]) -> str:
    """Blackbox modules for Yosys (``read_verilog -lib``)."""
    out = []
    for m in srams:
        ports = [p for p in _PORTS if m._widths.get(p)]
        decl = [f"  {'output' if p == 'RD_DATA' else 'input'} [{m._widths[p] - 1}:0] {p};" for p in ports]
        out.append(f"(* blackbox *)\nmodule {m.macro}({', '.join(ports)});\n" + "\n".join(decl) + "\nendmodule\n")
    return "\n".join(out)


def swap_srams(design: dict, srams: list[MemoryInfo], folder: Path, prefix: str = "") -> tuple[str, str]:
    """Put the SRAM macros into the coarse design ``{prefix}coarse.json`` of ``folder``.

    With SRAMs, their ``$mem_v2`` cells become macro instances in ``{prefix}coarse_sram.json`` and the macros'
    blackboxes go to ``{prefix}macros.v``. Returns the JSON file for Yosys to read and the Yosys line that reads
    the blackboxes (empty without SRAMs).
    """
    if not srams:
        return f"{prefix}coarse.json", ""
    replace_memories(design, srams)
    (folder / f"{prefix}coarse_sram.json").write_text(json.dumps(design))
    (folder / f"{prefix}macros.v").write_text(macro_verilog(srams))
    return f"{prefix}coarse_sram.json", f"read_verilog -lib {prefix}macros.v\n"


def macro_liberty(srams: list[MemoryInfo], lib) -> str:
    """A Liberty library with one macro cell per SRAM: area (µm²), pins, and timing arcs (ns, pF)."""
    lines = ["library (vrex_sram_macros) {", "  delay_model : table_lookup;", '  time_unit : "1ns";',
             '  voltage_unit : "1V";', '  current_unit : "1mA";', '  leakage_power_unit : "1nW";',
             '  pulling_resistance_unit : "1kohm";', "  capacitive_load_unit (1,pf);",
             f"  nom_voltage : {lib.voltage or 1.0:g};", "  nom_process : 1;", "  nom_temperature : 25;",
             "  input_threshold_pct_rise : 50;", "  input_threshold_pct_fall : 50;",
             "  output_threshold_pct_rise : 50;", "  output_threshold_pct_fall : 50;",
             "  slew_lower_threshold_pct_rise : 20;", "  slew_lower_threshold_pct_fall : 20;",
             "  slew_upper_threshold_pct_rise : 80;", "  slew_upper_threshold_pct_fall : 80;", "  default_output_pin_cap : 0;", "  default_max_transition : 1;"]
    types = set()
    for m in srams:
        for p, w in m._widths.items():
            if w > 1 and w not in types:
                types.add(w)
                lines += [f"  type (vrex_bus_{w}) {{", "    base_type : array;", "    data_type : bit;",
                          f"    bit_width : {w};", f"    bit_from : {w - 1};", "    bit_to : 0;", "    downto : true;",
                          "  }"]
    for m in srams:
        clk = "RD_CLK" if m._widths.get("RD_CLK") else "WR_CLK"
        lines += [f"  cell ({m.macro}) {{", f"    area : {m.area_lib_um2:.4f};", "    dont_use : true;",
                  "    is_macro_cell : true;", "    cell_leakage_power : 0;"]
        for p in _PORTS:
            w = m._widths.get(p, 0)
            if not w:
                continue
            body = []
            if p in ("RD_CLK", "WR_CLK"):
                body = ["      direction : input;", "      clock : true;", f"      capacitance : {m.clock_pf:.6g};"]
            elif p == "RD_DATA":
                body = ["      direction : output;", "      timing () {", f'        related_pin : "{clk}";',
                        "        timing_type : rising_edge;",
                        f'        cell_rise (scalar) {{ values ("{m.access_ns:.5f}"); }}',
                        f'        cell_fall (scalar) {{ values ("{m.access_ns:.5f}"); }}',
                        '        rise_transition (scalar) { values ("0.02"); }',
                        '        fall_transition (scalar) { values ("0.02"); }', "      }"]
            else:
                rel = "WR_CLK" if p.startswith("WR") and m._widths.get("WR_CLK") else clk
                body = ["      direction : input;", f"      capacitance : {m.input_pf:.6g};", "      timing () {",
                        f'        related_pin : "{rel}";', "        timing_type : setup_rising;",
                        f'        rise_constraint (scalar) {{ values ("{m.setup_ns:.5f}"); }}',
                        f'        fall_constraint (scalar) {{ values ("{m.setup_ns:.5f}"); }}', "      }"]
            if w == 1:
                lines += [f"    pin ({p}) {{"] + body + ["    }"]
            else:
                lines += [f"    bus ({p}) {{", f"      bus_type : vrex_bus_{w};"] + body + ["    }"]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
