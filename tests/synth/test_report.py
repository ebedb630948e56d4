"""`vrex report`: full figures beside Table III, and partial reports when a tool or the library is missing."""

import json

import pytest

from vrex.config import load_config
from vrex.synth.report import write_report
from vrex.tools import find

TINY = load_config("tiny")
DRE_BLOCKS = ("hamming_lanes", "hcu", "wtu", "kvmu", "dre")       # the LXE and core are tested in tests/lxe/test_lxe_figures.py


def _read(out):
    return (out / "report.md").read_text(), json.loads((out / "figures.json").read_text())


def _table_iii_rows(md):
    rows = [ln for ln in md.splitlines() if ln.startswith("| HCU") or ln.startswith("| WTU")
            or ln.startswith("| KVMU") or ln.startswith("| DRE")]
    assert len(rows) == 4
    return rows


@pytest.mark.skipif(not find("sta").found, reason="OpenSTA is not installed")
def test_full_report_on_tiny(work_dir):
    path = write_report(TINY, work_dir, workers=1, transactions=300, progress=False, components=DRE_BLOCKS)
    md, data = _read(work_dir)
    assert path == work_dir / "report.md" and (work_dir / "index.html").is_file()
    rec = data["components"]["hamming_lanes"]
    assert rec["area_um2"] > 0 and rec["timing"]["fmax_mhz"] > 0 and rec["power_mw"]["activity_source"] == "saif"
    assert rec["lint_clean"] is True
    meta = data["meta"]
    assert meta["config_hash"] == TINY.hash() and meta["tools"]["sta"] and meta["liberty"]["name"] == "sky130"
    assert meta["paper"]["table_iii"]["WTU"] == {"area_mm2": 0.02, "area_pct": 1.23, "power_mw": 39.04,
                                                 "power_pct": 1.49}
    hcu, wtu, kvmu, dre = _table_iii_rows(md)
    assert "| 0.01 |" in hcu and "2.99" in hcu and "39.04" in wtu and "15.01" in kvmu and "57.04" in dre
    assert "measured" in kvmu
    assert "Stillmaker" in md and "Methodology" in md and "Design Compiler" in md
    assert f"| hamming_lanes | {rec['generic']['cells']} |" in md
    assert (work_dir / "area_breakdown.png").stat().st_size > 1000
    html = (work_dir / "index.html").read_text()
    assert "<table>" in html and 'src="area_breakdown.png"' in html


def test_report_without_opensta_says_what_is_missing(work_dir):
    write_report(TINY, work_dir, workers=1, activity=False, skip_tools=("sta",), progress=False,
                 components=DRE_BLOCKS)
    md, data = _read(work_dir)
    rec = data["components"]["hamming_lanes"]
    assert rec["area_um2"] > 0 and "apt-get install opensta" in rec["missing"]["timing"]
    assert rec["timing"] is None and rec["power_mw"] is None and rec["power_default_activity_mw"] is None
    assert "timing" in rec["missing"] and "power_mw" in rec["missing"]
    assert "## Missing tools" in md and "apt-get install opensta" in md
    assert data["meta"]["missing_tools"]["sta"] == "apt-get install opensta"


def test_report_cli_without_a_library_is_partial(work_dir, monkeypatch, capsys):
    from vrex.cli import main

    monkeypatch.setenv("VREX_PDK_DIR", str(work_dir / "no-such-folder"))
    assert main(["report", "-c", "tiny", "-o", str(work_dir), "-j", "1"]) == 0
    assert "report:" in capsys.readouterr().out
    md, data = _read(work_dir)
    rec = data["components"]["hamming_lanes"]
    assert rec["generic"]["cells"] > 0 and rec["area_um2"] is None and rec["liberty"] is None
    for key in ("liberty", "area_um2", "timing", "power_mw", "scaled"):
        assert "VREX_PDK_DIR does not exist" in rec["missing"][key]
    assert "## Partial report" in md and "unset it to use the libraries embedded in vrex" in md
    assert len(_table_iii_rows(md)) == 4


@pytest.mark.slow
@pytest.mark.skipif(not find("sta").found, reason="OpenSTA is not installed")
def test_default_edge_report(work_dir):
    """The main job on the default (edge) config, as `make report` runs it."""
    write_report(load_config(), work_dir, workers=2, progress=False)
    md, data = _read(work_dir)
    rec = data["components"]["hamming_lanes"]
    assert data["meta"]["config"] == "edge" and rec["power_mw"]["stimulus"]["transactions_run"] == 2000
    assert sum(rec["area_breakdown"].values()) == pytest.approx(rec["area_um2"])
    assert rec["scaled"]["area_mm2"] > 0 and rec["scaled"]["power_mw"] > 0 and rec["scaled"]["fmax_mhz"] > 0
    assert len(_table_iii_rows(md)) == 4 and (work_dir / "index.html").is_file()
    # every component has its figures, the V-Rex core (weight-stationary DPE, docs/decisions.md) among them
    assert not data["meta"]["errors"], data["meta"]["errors"]
    assert {"mac_tree", "dpe", "vpe", "lxe", "dre", "kvmu", "core"} <= set(data["components"])
    core = data["core"]
    assert core["area_mm2"] > 0 and core["power_mw"] > 0 and 0 < core["dre_area_share"] < 1
    assert "## V-Rex core beside Table III" in md
    assert 0 < data["components"]["lxe"]["cycles"]["dpe_efficiency"] <= 1


def test_table_iii_rows_fill_in_when_blocks_are_registered(work_dir):
    """Rendering only (no tools): records named hcu and wtu fill their rows, the DRE row sums them."""
    from vrex.synth.report import render_report

    def record(name, area_mm2, power_mw, mem_bits):
        return {"component": name, "description": name, "generic": {"cells": 10, "transistors": 100,
                                                                    "logic_depth": 3},
                "area_um2": 1000.0, "area_breakdown": {name: 1000.0}, "memories": [
                    {"path": name, "name": "mem", "words": mem_bits // 32, "bits": 32, "read_ports": 1,
                     "write_ports": 1, "kind": "sram", "reason": "r", "area_lib_um2": 1.0, "read_pj": 1.0,
                     "write_pj": 1.0, "access_ns": 1.0, "model_source": "m", "total_bits": mem_bits}],
                "timing": None, "power_mw": None, "power_default_activity_mw": None, "lint_clean": True,
                "scaled": {"area_mm2": area_mm2, "power_mw": power_mw, "fmax_mhz": 900.0, "method": "m",
                           "source": "s"},
                "cycles": {"per_token": {"overhead": 3, "per_unit": 2}}, "missing": {}}

    data = {"meta": {"config": "edge", "config_hash": "h", "git": "g", "tools": {}, "liberty": {"description": "L"},
                     "clock_mhz": 100.0, "target": {"node_nm": 14.0, "voltage": 0.8, "clock_mhz": 800.0},
                     "missing_tools": {}, "errors": {}, "created": "now"},
            "components": {"hcu": record("hcu", 0.005, 3.0, 33 * 1024), "wtu": record("wtu", 0.02, 30.0, 128 * 1024)}}
    md = render_report(data, work_dir).read_text()
    hcu, wtu, kvmu, dre = _table_iii_rows(md)
    assert "| 0.005 |" in hcu and "| 3 |" in hcu and "| 4.125 |" in hcu and "measured" in hcu
    assert "| 0.025 |" in dre and "| 33 |" in dre and "| 20.12" in dre and "the blocks shown summed" in dre
    assert "WTU/HCU area vrex 4.00× vs paper 2.00×" in md and "per_token.per_unit" in md
    for png in ("area_vs_paper.png", "power_vs_paper.png", "cycles.png", "area_breakdown.png"):
        assert (work_dir / png).stat().st_size > 1000
