"""`vrex sim --waves`: FST from Verilator, VCD from Icarus, and every signal under its Amaranth name."""

import json
from pathlib import Path

import pytest
import pywellen
from amaranth.back import rtlil
from amaranth.hdl import Const, Fragment, Value, ValueCastable
from amaranth.hdl import _ir
from amaranth.lib import wiring

from vrex.cli import main
from vrex.config import load_config
from vrex.hdl.registry import get_component
from vrex.sim.benches import bench_for
from vrex.sim.runner import run_cocotb
from vrex.synth.verilog import emit

TINY = load_config("tiny")


def amaranth_names(component: str) -> set[str]:
    """Hierarchical names (``top.sub.signal``) Amaranth gives the design's signals (the backend's name map)."""
    spec = get_component(component)
    dut = spec.build(TINY)
    ports = {}
    for path, member, value in dut.signature.flatten(dut):
        value = value.as_value() if isinstance(value, ValueCastable) else value
        if isinstance(value, Value) and not isinstance(value, Const):   # always-valid/ready streams have no port
            flow = _ir.PortDirection.Input if member.flow == wiring.In else _ir.PortDirection.Output
            ports["__".join(path)] = (value, flow)
    _, name_map = rtlil.convert_fragment(Fragment.get(dut, None), ports, spec.top, emit_src=False)
    return {".".join(name) for name in name_map.values()}


def wave_names(path: Path) -> set[str]:
    return {v.full_name.replace("\\", "") for v in pywellen.Waveform(str(path)).all_vars()}


def _run_with_waves(emitted, component, simulator, work_dir):
    bench = bench_for(component)(TINY, n=30, seed=3)
    result = run_cocotb(emitted, bench, simulator, work_dir, waves=True)
    assert not result.report(bench)
    return Path(result.extra["waves"])


@pytest.mark.parametrize("component, simulator, suffix, flat", [
    ("dre", "icarus", ".vcd", True),
    ("dre", "icarus", ".vcd", False),
    ("hamming_lanes", "verilator", ".fst", False),
    pytest.param("dre", "verilator", ".fst", True, marks=pytest.mark.slow),
], ids=["dre-icarus-flat", "dre-icarus-hierarchical", "hamming_lanes-verilator", "dre-verilator-flat"])
def test_waveform_format_and_amaranth_names(component, simulator, suffix, flat, work_dir):
    """Every signal of the flat Verilog under its Amaranth name; in a hierarchical composite each part is a module
    converted alone, where Amaranth numbers the anonymous signals (``$signal$N``) per module, so there every *named*
    signal keeps its flat name (docs/decisions.md E1)."""
    e = emit(component, TINY, flat=flat)
    waves = _run_with_waves(e, component, simulator, work_dir)
    assert waves.parent == work_dir and waves.suffix == suffix
    assert pywellen.Waveform(str(waves)).file_format == {".vcd": "VCD", ".fst": "FST"}[suffix]
    interface = json.loads(e.file("interface_json").read_text())
    ports = {f"{e.top}.{p['name']}" for p in interface["ports"]}
    fields = {f"{e.top}.{s['ports']['payload']}.{f['name']}" for s in interface["streams"] for f in s["fields"]
              if "[" not in f["name"]}
    names = amaranth_names(component)
    assert f"{e.top}.clk" in ports and len(fields) >= 4 and names
    if e.hierarchical:
        names = {n for n in names if "$" not in n}
        assert names
    missing = (names | ports | fields) - wave_names(waves)
    assert not missing, sorted(missing)[:10]


def test_cli_waves_prints_the_path(capsys):
    code = main(["sim", "--component", "hamming_lanes", "-c", "tiny", "--sim", "icarus", "--waves", "-n", "20"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("waveforms: "))
    path = Path(line.split()[1])
    assert path.name == "dump.vcd" and path.is_file() and "build" in path.parts
    assert "vrex_hamming_lanes.i__payload.query" in wave_names(path)
