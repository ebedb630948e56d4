"""OpenSTA: critical path, slack and fmax at the requested clock, and power (internal / switching / leakage).

Constraints (so that timing is meaningful): one clock on ``clk`` with the requested period, input and output
delays of 0 against it (a register-to-register budget for every port), the config's input driving cell on every
data input and ``technology.output_load_pf`` on every output, except a glue's outputs that feed its parts: one input
pin of the driving cell each (:func:`_part_loads`). The period, delays and loads are given in the
library's own units (ASAP7 uses ps and fF).

Power is ``report_power`` with either the global default activity (``set_power_activity -global``, toggles per
clock cycle, duty 0.5) or a SAIF-derived annotation (:mod:`vrex.synth.saif`). The "Total" row is split into
internal, switching and leakage power; OpenSTA reports watts.
"""

from __future__ import annotations

import re
from pathlib import Path

from vrex.errors import ToolFailedError
from vrex.tools import exit_reason, failure_message, find, run_tool

from .stopwatch import lap

__all__ = ["run_sta", "run_timing", "run_power", "run_timing_and_power"]


def _part_loads(mapped, lib) -> str:
    """``set_load`` of a glue's outputs that feed its parts: one input pin of the input driving cell each.

    A glue's part-facing outputs are not outputs of the chip: each goes to a part's input, and the part's own
    figures time that input as driven by the driving cell (``set_driving_cell``), so the glue's side of the net is
    that cell's input pin. ``technology.output_load_pf`` on them (as before) hung the whole fan-out of a broadcast on
    one unbuffered driver: the edge VPE glue's operand bit fans out to 64 lanes, 64 × 10 fF on ASAP7, 1.27 ns before
    the first gate (docs/decisions.md T1)."""
    ports = getattr(mapped, "part_outputs", ())
    if not ports:
        return ""
    from .liberty import input_pin_cap

    return f"set_load {input_pin_cap(lib):.6g} [get_ports {{{' '.join(ports)}}}]\n"


def _header(mapped, lib, clock_mhz: float, tech, netlist: str | None = None) -> str:
    libs = [f.name for f in lib.files] + ([mapped.macro_lib.name] if mapped.macro_lib else [])
    period = (1000.0 / clock_mhz) / lib.time_unit_ns
    load = tech.output_load_pf / lib.cap_unit_pf
    reads = "\n".join(f"read_liberty {f}" for f in libs)
    return f"""\
{reads}
read_verilog {netlist or mapped.netlist.name}
link_design {mapped.top}
create_clock -name clk -period {period:.6g} [get_ports clk]
set vrex_inputs [delete_from_list [all_inputs] [get_ports clk]]
set_input_delay 0 -clock clk $vrex_inputs
set_output_delay 0 -clock clk [all_outputs]
set_driving_cell -lib_cell {lib.drive_cell} $vrex_inputs
set_load {load:.6g} [all_outputs]
{_part_loads(mapped, lib)}"""


def run_sta(tcl: str, work: Path, name: str) -> str:
    """Run the Tcl script ``tcl`` as ``<name>.tcl`` in ``work`` with OpenSTA; its output (also in ``<name>.log``)."""
    sta = find("sta")
    if not sta.found:
        raise ToolFailedError(f"OpenSTA is not installed; install it with: {sta.install}")
    script = Path(work) / f"{name}.tcl"
    script.write_text(tcl)
    log = Path(work) / f"{name}.log"
    with lap("sta"):
        proc = run_tool("sta", [sta.path, "-no_splash", "-exit", script.name], cwd=work, what=f"OpenSTA on {script}",
                        timeout=1800, log=log)
    out = proc.stdout + proc.stderr
    log.write_text(out)
    if proc.returncode < 0:
        again = " twice (retried once)" if proc.attempts > 1 else ""
        detail = failure_message(f"OpenSTA on {script}", proc, log_text=out).partition("\n")[2]
        raise ToolFailedError(f"OpenSTA crashed with {exit_reason(proc.returncode).removeprefix('killed by ')}{again} "
                              f"on {script}; Debian's OpenSTA 2.0.17 "
                              "(2019) is known to crash in report_power on some netlists when the activity is "
                              "propagated from SAIF annotations (a constant driving a gate with several loads is "
                              f"tied to a port for that reason, vrex.synth.saif.tie_constants). Log: {log}"
                              + (f"\n{detail}" if detail else ""))
    if proc.returncode or re.search(r"^Error", out, re.M):
        raise ToolFailedError(failure_message(f"OpenSTA on {script}", proc, log, log_text=out))
    return out


_TIMING_TCL = """\
report_checks -path_delay max -digits 4 -format full
puts "VREX_WNS [worst_slack -max]"
"""


def _default_activity_tcl(default_activity: float) -> str:
    return f"set_power_activity -global -activity {default_activity:g} -duty 0.5\n"


def run_timing(mapped, lib, clock_mhz: float, tech) -> dict:
    """Worst setup slack at ``clock_mhz``; ``critical_path_ns = period - slack``; ``fmax = 1 / critical path``."""
    out = run_sta(_header(mapped, lib, clock_mhz, tech) + _TIMING_TCL, mapped.directory, "sta_timing")
    return _timing(out, lib, clock_mhz)


def run_timing_and_power(mapped, lib, clock_mhz: float, tech, *, default_activity: float = 0.1) -> tuple[dict, dict]:
    """:func:`run_timing` and :func:`run_power` at the global default activity in one OpenSTA session
    (``sta_figures.tcl``): the netlist is read and linked once, which is most of a session's time on a large part
    (the edge DPE glue: 18 of 20 s). ``report_power`` after ``report_checks`` gives the same figures as alone (the
    power report uses the same slews: equal to the last digit on the edge MAC tree, and every edge record of the
    main job unchanged, docs/results-figures.md)."""
    out = run_sta(_header(mapped, lib, clock_mhz, tech) + _TIMING_TCL + _default_activity_tcl(default_activity)
                  + "report_power -digits 8\n", mapped.directory, "sta_figures")
    return _timing(out, lib, clock_mhz), _power(out, clock_mhz, mapped.directory / "sta_figures.log")


def _timing(out: str, lib, clock_mhz: float) -> dict:
    m = re.search(r"VREX_WNS (\S+)", out)
    period_ns = 1000.0 / clock_mhz
    try:
        slack = float(m.group(1)) * lib.time_unit_ns if m else None
    except ValueError:
        slack = None
    if slack is None or abs(slack) > 1e20:
        return {"critical_path_ns": None, "slack_ns": None, "fmax_mhz": None, "clock_mhz": clock_mhz,
                "period_ns": period_ns, "reason": "OpenSTA found no constrained path"}
    crit = period_ns - slack
    sp = re.search(r"^Startpoint: (\S+)", out, re.M)
    ep = re.search(r"^Endpoint: (\S+)", out, re.M)
    return {"critical_path_ns": crit, "slack_ns": slack, "fmax_mhz": 1000.0 / crit if crit > 0 else None,
            "clock_mhz": clock_mhz, "period_ns": period_ns, "startpoint": sp.group(1) if sp else None,
            "endpoint": ep.group(1) if ep else None, "met": slack >= 0}


def run_power(mapped, lib, clock_mhz: float, tech, *, activity_tcl: str | None = None,
              default_activity: float = 0.1, tag: str = "default", netlist: str | None = None) -> dict:
    """``report_power`` in mW: internal, switching, leakage, total (+ the macro group). ``netlist``: a file in the
    mapped folder to read instead of the mapped netlist (the SAIF run's, with its constants tied)."""
    if activity_tcl is None:
        annot = _default_activity_tcl(default_activity)
    else:
        (mapped.directory / f"activity_{tag}.tcl").write_text(activity_tcl)
        annot = f"source activity_{tag}.tcl\n"
    out = run_sta(_header(mapped, lib, clock_mhz, tech, netlist) + annot + "report_power -digits 8\n", mapped.directory,
                  f"sta_power_{tag}")
    return _power(out, clock_mhz, mapped.directory / f"sta_power_{tag}.log")


def _power(out: str, clock_mhz: float, log: Path) -> dict:
    rows = {}
    for name in ("Sequential", "Combinational", "Macro", "Pad", "Total"):
        m = re.search(rf"^{name}\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)
        if m:
            rows[name] = [float(x) * 1e3 for x in m.groups()]
    if "Total" not in rows:
        raise ToolFailedError(f"OpenSTA printed no power report (log: {log})")
    internal, switching, leakage, total = rows["Total"]
    return {"internal": internal, "switching": switching, "leakage": leakage, "total": total,
            "sequential": rows.get("Sequential", [0, 0, 0, 0])[3],
            "combinational": rows.get("Combinational", [0, 0, 0, 0])[3], "clock_mhz": clock_mhz}
