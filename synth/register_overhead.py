"""The library's register overhead: clock-to-output plus setup of the flop the flow maps registers to.

ABC maps the logic between registers (flop outputs are its inputs, flop inputs its outputs) and does not see the
flops themselves, so a delay target equal to the clock period lets it build logic that OpenSTA, which adds the
launching flop's clock-to-output and the capturing flop's setup, times above the period. The flow therefore gives
ABC ``-D`` = period − this overhead (docs/figures.md, decisions.md "ABC delay target").

Measured, not assumed: a two-flop chain is mapped exactly as the flow maps registers (``dfflegalize`` to
``$_DFF_P_``, ``dfflibmap`` with the library's sequential files and dont-use list, ``abc`` for any inverter
``dfflibmap`` adds), and OpenSTA times the register-to-register path with an ideal clock. The overhead is the
arrival at the launching flop's output pin (clock-to-output with one gate as load) plus the library setup time of
the capturing flop. It is a lower bound: real flops drive more load. Cached per library and tool versions in the
library's build folder (``register_overhead.json``); the tool runs use a folder per process, removed after.
"""

from __future__ import annotations

import json
import os
import re
import shutil

from vrex.errors import ToolFailedError
from vrex.tools import require

from .mapped import liberty_args
from .sta import run_sta
from .yosys import run_yosys

__all__ = ["register_overhead_ps"]

_FLOP_PAIR = """\
module vrex_flop_pair(input clk, input d, output q);
  reg first, second;
  always @(posedge clk) begin
    first <= d;
    second <= first;
  end
  assign q = second;
endmodule
"""

_PATH_LINE = re.compile(r"^\s*(-?[0-9.]+)\s+(-?[0-9.]+)\s+[\^v]\s+(\S+)\s+\((\S+)\)", re.M)


def register_overhead_ps(lib) -> float:
    """Clock-to-output + setup (ps) of ``lib``'s mapped register (see the module docstring).

    Raises ToolFailedError when Yosys or OpenSTA fail or the path report cannot be read."""
    cache = lib.directory / "register_overhead.json"
    tools = {"yosys": require("yosys").version, "sta": require("sta").version or "", "dont_use": list(lib.dont_use),
             "seq": [f.name for f in lib.seq_files], "v": 1}
    try:
        cached = json.loads(cache.read_text())
        if cached.get("tools") == tools:
            return float(cached["overhead_ps"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        pass
    work = lib.directory / f"register_overhead.{os.getpid()}"     # a folder per process: report workers race
    work.mkdir(parents=True, exist_ok=True)
    lib.copy_into(work)
    (work / "flop_pair.v").write_text(_FLOP_PAIR)
    seq, libs, dont = liberty_args(lib)
    run_yosys(f"""\
read_verilog flop_pair.v
synth -top vrex_flop_pair
dfflegalize -cell $_DFF_P_ 01
dfflibmap {seq}{dont}
abc {libs}{dont}
opt_clean
write_verilog -noattr -noexpr -nohex -nodec netlist.v
""", work, "map")
    period = 100.0 / lib.time_unit_ns          # 100 ns in library units: the path always has positive slack
    reads = "\n".join(f"read_liberty {f.name}" for f in lib.files)
    out = run_sta(f"""\
{reads}
read_verilog netlist.v
link_design vrex_flop_pair
create_clock -name clk -period {period:.6g} [get_ports clk]
report_checks -path_delay max -digits 4 -format full
""", work, "sta")
    launch = _PATH_LINE.findall(out)
    setup = re.search(r"^\s*(-?[0-9.]+)\s+(-?[0-9.]+)\s+library setup time", out, re.M)
    flops = {n for n, c in lib.cells.items() if c.sequential}
    # the first pin after the clock pin is the launching flop's output; its arrival is clock-to-output
    after_clock = [row for row in launch if row[3] in flops]
    if len(after_clock) < 2 or setup is None:
        raise ToolFailedError(f"the register-overhead path report cannot be read (log: {work / 'sta.log'}); the "
                              "library's flop may not be a positive-edge D flop that dfflibmap can map.")
    clk_to_q = float(after_clock[1][1])
    setup_time = -float(setup.group(1))
    overhead = (clk_to_q + setup_time) * lib.time_unit_ns * 1000.0
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"tools": tools, "overhead_ps": overhead, "clock_to_output_ps":
                               clk_to_q * lib.time_unit_ns * 1000.0, "setup_ps": setup_time * lib.time_unit_ns
                               * 1000.0}))
    tmp.replace(cache)
    shutil.rmtree(work, ignore_errors=True)
    return overhead
