"""A glue's outputs that feed its parts are timed with one driving-cell input pin each (synth/sta.py, decisions T1)."""

from types import SimpleNamespace

import pytest

from vrex.config import load_config
from vrex.synth.hierarchy import part_outputs
from vrex.synth.liberty import input_pin_cap, resolve_library
from vrex.synth.sta import _header

TINY = load_config("tiny")

NETLIST = """\
module vrex_vpe_glue(clk, rst, i__payload, o__payload, lane0__i__payload, lane0__i__valid, lane0__o__payload, lane1__i__valid);
  input clk;
  input rst;
  input [51:0] i__payload;
  output [31:0] o__payload;
  output [51:0] lane0__i__payload;
  output lane0__i__valid;
  input [31:0] lane0__o__payload;
  output lane1__i__valid;
endmodule
"""


def test_part_outputs_are_the_glue_outputs_named_after_its_parts(tmp_path):
    netlist = tmp_path / "netlist.v"
    netlist.write_text(NETLIST)
    # the composite's own output (o__payload) and the parts' outputs coming in (inputs) are not part loads
    assert part_outputs("vpe_glue", TINY, netlist) == ("lane0__i__payload", "lane0__i__valid", "lane1__i__valid")
    assert part_outputs("vpe_lane", TINY, netlist) == () and part_outputs("vpe", TINY, netlist) == ()


@pytest.mark.parametrize("name, cap", [("sky130", 0.001727), ("asap7", 0.534279)])
def test_the_part_load_is_one_input_pin_of_the_driving_cell(name, cap):
    lib = resolve_library(name)
    assert input_pin_cap(lib) == pytest.approx(cap)          # pF on sky130, fF on ASAP7 (the libraries' units)
    assert input_pin_cap(lib) < TINY.technology.output_load_pf / lib.cap_unit_pf / 5


def test_sta_header_loads_part_outputs_after_the_outputs():
    lib = resolve_library("asap7")
    mapped = SimpleNamespace(top="vrex_vpe_glue", netlist=SimpleNamespace(name="netlist.v"), macro_lib=None,
                             part_outputs=("lane0__i__payload", "lane1__i__valid"))
    text = _header(mapped, lib, 1000.0, TINY.technology)
    lines = text.splitlines()
    part = "set_load 0.534279 [get_ports {lane0__i__payload lane1__i__valid}]"
    assert part in lines and lines.index(part) > lines.index("set_load 10 [all_outputs]")   # the later one wins
    mapped.part_outputs = ()
    assert "get_ports {" not in _header(mapped, lib, 1000.0, TINY.technology)
