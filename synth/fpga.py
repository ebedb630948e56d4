"""FPGA implementation figures of one component: Yosys ``synth_ecp5`` and nextpnr-ecp5 place and route
(``vrex synth --fpga ecp5``, ``vrex report --fpga ecp5``; docs/figures.md, "FPGA figures").

A DRE block is an IP core, not a whole FPGA design: its ports (hundreds of bits) are wires into the user's logic,
not package pins. It is placed and routed *out of context* inside a small harness (:func:`harness_verilog`) that
feeds every input bit from a serial shift chain, captures every output bit in a register and shifts the captured
outputs out (a load/shift register), so the design needs four pins (``clk``, ``din``, ``load``, ``dout``), no input
is constant and every output is observable (nothing of the block can be optimised away). Paths into the block start
at a flop and paths out of it end at one, as they would inside a user's design.

The block keeps its own hierarchy level during synthesis (``keep_hierarchy``), so the Yosys cell counts of the block
(LUT4, carry cells, flip-flops, DP16KD block RAMs, MULT18X18D multipliers, distributed RAM) are the block's alone; the
harness is then flattened in and nextpnr packs, places and routes the whole design on ``fpga.device`` /
``fpga.package`` / ``fpga.speed_grade`` at ``fpga.clock_mhz``. From nextpnr's report come the device utilisation
(harness included, its size stated) and the post-route fmax of the clock (register-to-register paths). A block
that does not fit is reported with its utilisation, not as an error.

With ``fpga.io: pins`` the block is the whole FPGA design instead: every port bit goes to a package pin (nextpnr
places the pins), which tells whether the block fits a device on its own; wide blocks need more pins than any
package has.

Records are cached in ``build/figures/<component>-<config hash>/fpga-<key>.json``; the key covers the Verilog, the
family, device, package, speed grade, clock, seed and I/O mode, the tool versions and this module's source.
Synthesis runs once per component and I/O mode in ``fpga/`` beside it (stamped like the ASIC mapping), each place
and route in its own ``fpga/pnr-<mode>-<device>-<package>-<speed>-<clock>-<seed>/`` folder (log and report).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from vrex.errors import ToolFailedError, UsageError
from vrex.paths import build_dir, build_root, git_revision
from vrex.tools import failure_message, find, recording_retries, require, run_tool

from .figures import _cache_key, read_json_cache, write_json_atomic
from .verilog import emit
from .yosys import run_yosys_once

__all__ = ["FPGA_VERSION", "FAMILIES", "fpga_figures", "fpga_tools", "harness_verilog", "device_flag",
           "block_resources", "verilog_ports"]

FPGA_VERSION = 1
FAMILIES = ("ecp5",)
HARNESS_TOP = "vrex_fpga_harness"
# Bels whose use decides whether a design fits; the others (PLLs, SERDES, DLLs ...) are unused by the harness.
FIT_BELS = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D", "ALU54B", "TRELLIS_IO", "DCCA")
PNR_TIMEOUT_S = 3600


def fpga_tools() -> dict:
    """Versions of the tools the FPGA figures depend on (part of every record and of the cache key)."""
    return {"yosys": require("yosys").version, "nextpnr-ecp5": require("nextpnr-ecp5").version}


def device_flag(device: str) -> str:
    """nextpnr-ecp5's device option for a part name: ``LFE5U-85F`` -> ``--85k``, ``LFE5UM5G-25F`` -> ``--um5g-25k``."""
    m = re.fullmatch(r"LFE5(U|UM|UM5G)-(\d+)F", device)
    if not m:
        raise UsageError(f"FPGA device {device!r} is not an ECP5 part name such as LFE5U-85F.")
    variant = {"U": "", "UM": "um-", "UM5G": "um5g-"}[m.group(1)]
    return f"--{variant}{m.group(2)}k"


_PORT_DECL = re.compile(r"^\s*(input|output|inout)\s+(?:wire\s+|reg\s+|signed\s+)*(?:\[(\d+):(\d+)\]\s*)?"
                        r"([A-Za-z_][\w$]*)\s*;", re.M)


def verilog_ports(text: str, top: str) -> list[tuple[str, str, int]]:
    """``(name, direction, width)`` of module ``top``'s ports, from the Verilog that Amaranth's backend writes
    (a port list in the header, one ``input``/``output`` declaration per port in the body)."""
    m = re.search(r"^module\s+" + re.escape(top) + r"\s*\(([^)]*)\)\s*;(.*?)^endmodule", text, re.M | re.S)
    if not m:
        raise ToolFailedError(f"module {top} was not found in the emitted Verilog.")
    header = [p.strip() for p in m.group(1).split(",") if p.strip()]
    decls = {d.group(4): (d.group(1), abs(int(d.group(2)) - int(d.group(3))) + 1 if d.group(2) else 1)
             for d in _PORT_DECL.finditer(m.group(2))}
    if set(header) - set(decls):
        raise ToolFailedError(f"module {top}: no width/direction found for port(s) "
                              f"{', '.join(sorted(set(header) - set(decls)))}.")
    return [(p, *decls[p]) for p in header]


def harness_verilog(top: str, ports: list[tuple[str, str, int]]) -> str:
    """Verilog of the out-of-context harness around module ``top`` (see the module docstring).

    Every input but ``clk`` takes a slice of the input shift chain ``chain`` (shifted in from ``din``); every output
    lands in ``captured`` and the load/shift register ``shift_out`` (loaded while ``load`` is high, shifted out to
    ``dout`` otherwise). Widths: input chain = input bits, two flops per output bit.
    """
    inputs = [(n, w) for n, d, w in ports if d == "input" and n != "clk"]
    outputs = [(n, w) for n, d, w in ports if d == "output"]
    if any(d == "inout" for _, d, _ in ports):
        raise UsageError(f"module {top} has inout ports; the FPGA harness supports inputs and outputs only.")
    n_in = max(1, sum(w for _, w in inputs))
    n_out = max(1, sum(w for _, w in outputs))
    conns, lo = [".clk(clk)"], 0
    for name, w in inputs:
        conns.append(f".{name}(chain[{lo + w - 1}:{lo}])")
        lo += w
    lo = 0
    for name, w in outputs:
        conns.append(f".{name}(block_out[{lo + w - 1}:{lo}])")
        lo += w
    shift_in = "{chain[%d:0], din}" % (n_in - 2) if n_in > 1 else "din"
    shift_out = "{shift_out[%d:0], 1'b0}" % (n_out - 2) if n_out > 1 else "1'b0"
    body = ",\n    ".join(conns)
    return f"""\
// Out-of-context FPGA harness of {top} (generated by vrex.synth.fpga): {n_in} input bits from a shift chain,
// {n_out} output bits captured and shifted out; four pins.
module {HARNESS_TOP} (input clk, input din, input load, output dout);
  reg [{n_in - 1}:0] chain;
  wire [{n_out - 1}:0] block_out;
  reg [{n_out - 1}:0] captured;
  reg [{n_out - 1}:0] shift_out;
  always @(posedge clk) begin
    chain <= {shift_in};
    captured <= block_out;
    shift_out <= load ? captured : {shift_out};
  end
  assign dout = shift_out[{n_out - 1}];
  {top} block (
    {body}
  );
endmodule
"""


def block_resources(cell_types: dict) -> dict:
    """The FPGA resources of a ``stat`` cell-type table (ECP5 cells after ``synth_ecp5``).

    ``lut4`` counts logic LUT4s including the two of each CCU2C carry cell (``lut4_cells`` and ``carry_cells``
    are the raw counts); ``ff`` flip-flops; ``ebr`` DP16KD block RAMs (18 Kbit); ``mult18`` MULT18X18D multipliers;
    ``dist_ram`` TRELLIS_DPR16X4 distributed RAMs (16 x 4 bits each); ``wide_mux`` PFUMX + L6MUX21.
    """
    t = {k.lstrip("\\"): v for k, v in cell_types.items()}
    return {"lut4": t.get("LUT4", 0) + 2 * t.get("CCU2C", 0), "lut4_cells": t.get("LUT4", 0),
            "carry_cells": t.get("CCU2C", 0), "ff": t.get("TRELLIS_FF", 0), "ebr": t.get("DP16KD", 0),
            "mult18": t.get("MULT18X18D", 0), "alu54": t.get("ALU54B", 0), "dist_ram": t.get("TRELLIS_DPR16X4", 0),
            "wide_mux": t.get("PFUMX", 0) + t.get("L6MUX21", 0),
            "cell_types": {k: v for k, v in sorted(t.items()) if k != "$scopeinfo"}}


def fpga_settings(cfg, *, family=None, device=None, package=None) -> dict:
    """Family, device, package, speed grade, clock, seed and I/O mode of a run: the config's ``fpga`` section, with
    the CLI's overrides checked like the config's values."""
    from vrex.config import ECP5_DEVICES, ECP5_PACKAGES

    f = cfg.fpga
    s = {"family": family or f.family, "device": device or f.device, "package": package or f.package,
         "speed_grade": f.speed_grade, "clock_mhz": float(f.clock_mhz), "seed": f.seed, "io": f.io}
    if s["family"] not in FAMILIES:
        raise UsageError(f"FPGA family {s['family']!r} is not supported; use one of {', '.join(FAMILIES)}.")
    if s["device"] not in ECP5_DEVICES:
        raise UsageError(f"FPGA device {s['device']!r} is not an ECP5 part nextpnr knows; use one of "
                         f"{', '.join(ECP5_DEVICES)}.")
    if s["package"] not in ECP5_PACKAGES:
        raise UsageError(f"FPGA package {s['package']!r} is not an ECP5 package; use one of {', '.join(ECP5_PACKAGES)}.")
    return s


def fpga_cache_file(name: str, cfg, settings: dict) -> tuple[Path, object]:
    """``(cache file, emitted Verilog)`` of the FPGA record of ``name`` at ``settings``."""
    emitted = emit(name, cfg)
    key = {"v": FPGA_VERSION, "verilog": hashlib.sha256(emitted.verilog.read_bytes()).hexdigest(),
           "harness": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(), "settings": settings,
           "tools": fpga_tools()}
    return build_dir("figures", f"{name}-{cfg.hash()}") / f"fpga-{_cache_key(key)}.json", emitted


def fpga_figures(name: str, cfg, *, family: str | None = None, device: str | None = None,
                 package: str | None = None, use_cache: bool = True, cached_only: bool = False) -> dict | None:
    """The FPGA record of component ``name`` built from ``cfg`` (layout in docs/figures.md).

    ``family``, ``device`` and ``package`` override ``cfg.fpga``. ``cached_only`` returns the cached record or
    None without running any tool. A design that does not fit gives ``fits: false`` with the utilisation; a tool
    that fails for another reason raises :class:`~vrex.errors.ToolFailedError`.
    """
    from vrex.hdl.registry import get_component

    settings = fpga_settings(cfg, family=family, device=device, package=package)
    spec = get_component(name)
    cache, emitted = fpga_cache_file(name, cfg, settings)
    cached = read_json_cache(cache) if use_cache else None
    if cached is not None or cached_only:
        return cached
    t0 = time.time()
    work = cache.parent / "fpga"   # synthesis is device-independent; each place and route has its own folder
    work.mkdir(parents=True, exist_ok=True)
    with recording_retries() as retries:
        block, io = _synthesise(emitted, work, settings["io"])
        record = {"component": name, "top": emitted.top, "description": spec.description, "config": cfg.name,
                  "config_hash": cfg.hash(), **settings, "block": block, "ports": io}
        record.update(_place_and_route(work, settings))
    record["meta"] = {"git": git_revision(), "tools": fpga_tools(), "seconds": round(time.time() - t0, 2),
                      "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "fpga_version": FPGA_VERSION,
                      "cache": str(cache.relative_to(build_root())), "tool_retries": retries}
    write_json_atomic(cache, record)
    return record


def _synthesise(emitted, work: Path, io: str) -> tuple[dict, dict]:
    """synth_ecp5 of the block, inside the harness (``io = "harness"``) or as the top (``"pins"``); writes
    ``fpga_<io>_netlist.json`` and returns ``(block resources, I/O description)``."""
    src = work / emitted.verilog.name
    if not src.is_file() or src.read_bytes() != emitted.verilog.read_bytes():
        src.write_bytes(emitted.verilog.read_bytes())
    top = emitted.top
    ports = verilog_ports(src.read_text(), top)
    n_in = sum(w for n, d, w in ports if d == "input" and n != "clk")
    n_out = sum(w for _, d, w in ports if d == "output")
    io_info = {"mode": io, "input_bits": n_in, "output_bits": n_out}
    stat, netlist = f"fpga_{io}_stat.json", f"fpga_{io}_netlist.json"
    if io == "pins":
        run_yosys_once(f"read_verilog -sv {src.name}\nhierarchy -top {top}\nsynth_ecp5 -top {top}\n"
                       f"tee -q -o {stat} stat -json\nwrite_json {netlist}\n", work, f"fpga_{io}", [src.name],
                       [stat, netlist])
        return block_resources(_cells(work / stat)[top]), {**io_info, "harness_ff": 0, "harness_lut4": 0,
                                                           "pins": n_in + n_out + 1}
    (work / "harness.v").write_text(harness_verilog(top, ports))
    run_yosys_once(f"""\
read_verilog -sv {src.name} harness.v
hierarchy -top {HARNESS_TOP}
setattr -mod -set keep_hierarchy 1 {top}
synth_ecp5 -top {HARNESS_TOP}
tee -q -o {stat} stat -json
setattr -mod -unset keep_hierarchy {top}
flatten
write_json {netlist}
""", work, f"fpga_{io}", [src.name, "harness.v"], [stat, netlist])
    cells = _cells(work / stat)
    harness = block_resources({k: v for k, v in cells[HARNESS_TOP].items() if k != top})
    return block_resources(cells[top]), {**io_info, "harness_ff": harness["ff"], "harness_lut4": harness["lut4"],
                                         "pins": 4}


def _cells(stat: Path) -> dict:
    """Cell-type table per module of a ``stat -json`` file."""
    modules = json.loads(stat.read_text())["modules"]
    return {m.lstrip("\\"): {k.lstrip("\\"): n for k, n in v.get("num_cells_by_type", {}).items()}
            for m, v in modules.items()}


_UTIL_LINE = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", re.M)


def _utilisation(used_available: dict) -> dict:
    return {bel: {"used": u, "available": a, "percent": round(100.0 * u / a, 2) if a else None}
            for bel, (u, a) in used_available.items() if bel in FIT_BELS}


def _place_and_route(work: Path, s: dict) -> dict:
    """nextpnr-ecp5 on the flattened harness netlist: utilisation, fit and post-route fmax."""
    pnr = require("nextpnr-ecp5")
    run = f"pnr-{s['io']}-{s['device']}-{s['package']}-{s['speed_grade']}-{s['clock_mhz']:g}MHz-seed{s['seed']}"
    (work / run).mkdir(exist_ok=True)
    log, report = work / run / "pnr.log", work / run / "report.json"
    report.unlink(missing_ok=True)
    # yowasp tools see relative paths below their working folder only (synth/yosys.py)
    cmd = [pnr.path, device_flag(s["device"]), "--package", s["package"], "--speed", str(s["speed_grade"]),
           "--json", f"fpga_{s['io']}_netlist.json", "--freq", f"{s['clock_mhz']:g}", "--seed", str(s["seed"]),
           "--report", f"{run}/report.json", "--lpf-allow-unconstrained", "--timing-allow-fail", "-q",
           "-l", f"{run}/pnr.log"]
    what = f"nextpnr-ecp5 in {work}"
    proc = run_tool("nextpnr-ecp5", cmd, cwd=work, what=what, timeout=PNR_TIMEOUT_S, log=log)
    text = log.read_text() if log.is_file() else proc.stdout + proc.stderr
    if proc.returncode or not report.is_file():
        used = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in _UTIL_LINE.finditer(text)}
        over = {b: ua for b, ua in used.items() if b in FIT_BELS and ua[0] > ua[1]}
        errors = [ln.strip() for ln in (text + proc.stderr).splitlines() if ln.startswith("ERROR")]
        if over or any("unable to place" in e.lower() or "no bels remaining" in e.lower() for e in errors):
            util = _utilisation(used)
            return {"fits": False, "utilisation": util, "timing": None,
                    "reason": _misfit_reason(util, errors, s)}
        if "package" in " ".join(errors).lower():
            raise UsageError(f"nextpnr-ecp5 rejects package {s['package']} for {s['device']}: "
                             f"{errors[0] if errors else 'see ' + str(log)}")
        if not proc.returncode:
            raise ToolFailedError(f"{what} exited 0 but wrote no {report.name} (log: {log})")
        raise ToolFailedError(failure_message(what, proc, log, log_text=text))
    data = json.loads(report.read_text())
    util = _utilisation({b: (v["used"], v["available"]) for b, v in data["utilization"].items()})
    clocks = data.get("fmax", {})
    if not clocks:
        timing = None
    else:
        net, f = next(iter(clocks.items()))
        timing = {"fmax_mhz": f["achieved"], "constraint_mhz": f["constraint"], "met": f["achieved"] >= f["constraint"],
                  "clock_net": net, **_critical_path(data.get("critical_paths", []))}
    return {"fits": True, "utilisation": util, "timing": timing, "reason": None}


def _misfit_reason(util: dict, errors: list[str], s: dict) -> str:
    over = [f"{b} {u['used']}/{u['available']}" for b, u in util.items() if u["used"] > u["available"]]
    what = ", ".join(over) if over else (errors[0] if errors else "placement failed")
    return f"does not fit {s['device']} {s['package']}: {what}"


def _critical_path(paths: list) -> dict:
    """Start, end and delay of the worst register-to-register path, and whether it lies inside the block."""
    worst = None
    for p in paths:
        if p.get("from", "").startswith("<async>") or p.get("to", "").startswith("<async>"):
            continue
        steps = p.get("path") or []
        if steps and (worst is None or sum(x["delay"] for x in steps) > worst[0]):
            worst = (sum(x["delay"] for x in steps), steps)
    if worst is None:
        return {"critical_path_ns": None, "startpoint": None, "endpoint": None, "path_in_block": None}
    delay, steps = worst
    start, end = steps[0]["from"]["cell"], steps[-1]["to"]["cell"]
    return {"critical_path_ns": round(delay, 3), "startpoint": start, "endpoint": end,
            "path_in_block": start.startswith("block.") or end.startswith("block.")}


def fpga_available() -> str | None:
    """None when the FPGA flow's tools are installed, else the install hint."""
    for tool in ("yosys", "nextpnr-ecp5"):
        t = find(tool)
        if not t.found:
            return f"{t.name} was not found ({t.purpose}); install it with: {t.install}"
    return None

