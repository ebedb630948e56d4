"""Verilator models with only the top's ports public (sim/runner.py, decisions X10)."""

import re
from pathlib import Path

from vrex.config import load_config
from vrex.sim.runner import _public_ports_control, top_ports
from vrex.synth.verilog import emit

TINY = load_config("tiny")


def _declared_ports(verilog: str, top: str) -> set[str]:
    body = verilog[verilog.index(f"module {top}("):]
    body = body[:body.index("endmodule")]
    return set(re.findall(r"^\s*(?:input|output|inout)\s+(?:wire\s+|reg\s+)?(?:signed\s+)?(?:\[[^\]]+\]\s*)?(\w+)\s*;",
                          body, re.M))


def test_the_control_file_names_every_port_of_the_top_and_nothing_else(tmp_path):
    emitted = emit("hcu", TINY, tmp_path / "rtl")
    ports = top_ports(emitted.verilog, emitted.top)
    assert ports and set(ports) == _declared_ports(emitted.verilog.read_text(), emitted.top)
    [control] = _public_ports_control(emitted, tmp_path)
    text = Path(control).read_text()
    assert f'public -module "{emitted.top}"' in text
    assert set(re.findall(r'-var "([^"]+)"', text)) == set(ports)


def test_an_escaped_port_name_keeps_every_signal_public(tmp_path):
    (tmp_path / "t.v").write_text("module t(clk, \\a.b );\n  input clk;\n  output \\a.b ;\nendmodule\n")
    assert top_ports(tmp_path / "t.v", "t") is None
    (tmp_path / "u.v").write_text("module u(clk, q);\n  input clk;\n  output q;\nendmodule\n")
    assert top_ports(tmp_path / "u.v", "u") == ["clk", "q"]
    assert top_ports(tmp_path / "u.v", "other") is None
