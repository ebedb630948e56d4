"""The shared coarse Yosys pass (synth/coarse.py, decisions X7): one run per emitted Verilog writes both flows'
designs, a second caller reuses it, and the library mapping reads exactly that design."""

import json
from types import SimpleNamespace

import pytest

from vrex.config import load_config
from vrex.errors import ToolFailedError
from vrex.synth.coarse import coarse_pass
from vrex.synth.generic import generic_figures
from vrex.synth.liberty import resolve_library
from vrex.synth.mapped import map_design
from vrex.synth.verilog import emit

TINY = load_config("tiny")


def _design(path):
    d = json.loads(path.read_text())
    d.pop("creator", None)
    return d


def test_one_coarse_run_serves_the_generic_figures_and_every_mapping(tmp_path):
    emitted = emit("hamming_lanes", TINY, tmp_path / "rtl")
    tech = TINY.technology
    first = coarse_pass(emitted, tech.memories, tech.sram_min_bits)
    stamp = (first.directory / "coarse.stamp").read_text()
    log_mtime = (first.directory / "coarse.log").stat().st_mtime_ns
    assert generic_figures(emitted)["cells"] > 0
    lib = resolve_library("sky130", source_node_nm=tech.source_node_nm, drive_cell=tech.input_drive_cell)
    for clock in (100.0, 150.0):   # two clocks, one coarse run
        mapped = map_design(emitted, lib, TINY, tmp_path / f"map-{clock:g}", clock_mhz=clock)
        assert mapped.area_um2 > 0
        assert _design(mapped.directory / "coarse.json") == _design(first.library)
    assert (first.directory / "coarse.log").stat().st_mtime_ns == log_mtime   # not run again
    assert (first.directory / "coarse.stamp").read_text() == stamp
    # the two designs differ by the mapping's own passes only: same modules, the generic one before opt_expr
    generic, library = _design(first.generic), _design(first.library)
    assert generic.keys() == library.keys() and generic["modules"].keys() == library["modules"].keys()


def test_a_changed_source_runs_the_coarse_pass_again(tmp_path):
    emitted = emit("hamming_lanes", TINY, tmp_path / "rtl")
    tech = TINY.technology
    first = coarse_pass(emitted, tech.memories, tech.sram_min_bits)
    stamp = (first.directory / "coarse.stamp").read_text()
    emitted.verilog.write_text(emitted.verilog.read_text() + "\n// changed\n")
    coarse_pass(emitted, tech.memories, tech.sram_min_bits)
    assert (first.directory / "coarse.stamp").read_text() != stamp


LATCH = """module top(input en, input d, output reg q);
  always @* if (en) q = d;
endmodule
"""
TWO_DRIVERS = """module top(input a, input b, output y);
  assign y = a;
  assign y = b;
endmodule
"""


@pytest.mark.parametrize("source, problem", [(LATCH, "proc_dlatch"), (TWO_DRIVERS, "multiple conflicting drivers")])
def test_the_coarse_pass_refuses_a_latch_and_a_net_with_two_drivers(tmp_path, source, problem):
    """The structural check is inside the coarse pass (synth's own ``check``, asserting; decisions X9)."""
    (tmp_path / "top.v").write_text(source)
    emitted = SimpleNamespace(directory=tmp_path, verilog=tmp_path / "top.v", top="top")
    with pytest.raises(ToolFailedError) as failed:
        coarse_pass(emitted, "flops", 0)
    assert problem in (tmp_path / "coarse.log").read_text() + str(failed.value)
    assert not (tmp_path / "coarse.json").exists()
