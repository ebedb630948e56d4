"""The system section of `vrex report`: `vrex perf` on the run's own figures, in markdown, HTML and figures.json."""

import copy
import json

import pytest

from vrex.config import load_config
from vrex.perf.system_section import SHIPPED_GOLDEN, system_results

TINY = load_config("tiny")


def _record(name, **extra):
    return {"component": name, "description": name, "generic": {"cells": 10, "transistors": 100, "logic_depth": 3},
            "area_um2": 1000.0, "area_breakdown": {}, "memories": [], "timing": None, "power_mw": None,
            "power_default_activity_mw": None, "lint_clean": True, "missing": {},
            "scaled": {"area_mm2": 0.01, "power_mw": 5.0, "fmax_mhz": 900.0, "clock_mhz": 800.0, "method": "m",
                       "source": "s"}, **extra}


def _figures(cfg, dpe_efficiency=0.9, wtu_power_mw=5.0):
    comps = {"hcu": _record("hcu", cycles={"per_token": {"overhead": 1, "per_unit": 1}}),
             "wtu": _record("wtu", cycles={"per_row": {"overhead": 6, "per_unit": 1}, "mean_passes": 3.0}),
             "lxe": _record("lxe", cycles={"dpe_efficiency": dpe_efficiency, "vpe_efficiency": 0.8})}
    comps["wtu"]["scaled"]["power_mw"] = wtu_power_mw
    return {"meta": {"config": cfg.name, "config_hash": cfg.hash(), "git": "g", "tools": {},
                     "liberty": {"description": "L"}, "clock_mhz": 100.0,
                     "target": {"node_nm": 14.0, "voltage": 0.8, "clock_mhz": 800.0}, "missing_tools": {},
                     "errors": {}, "created": "now"},
            "components": comps}


def test_the_section_is_computed_from_the_runs_figures():
    base = system_results(_figures(TINY), TINY)
    assert {"HCU cycles", "WTU cycles", "WTU passes", "DPE efficiency", "VPE efficiency",
            "WTU power"} <= set(base["inputs"]["measured"])
    assert "figures.json (this run)" in base["inputs"]["sources"]["dre_cycles"]
    assert not any("perf.vrex.dpe_efficiency" in a for a in base["inputs"]["modelled"])
    slower = system_results(_figures(TINY, dpe_efficiency=0.3), TINY)
    for a, b in zip(base["frame"], slower["frame"]):
        assert b["latency_ms"] > a["latency_ms"] * 1.2                # a lower DPE efficiency in the JSON
    hotter = system_results(_figures(TINY, wtu_power_mw=5000.0), TINY)
    assert hotter["frame"][-1]["energy_per_frame_j"] > base["frame"][-1]["energy_per_frame_j"]
    assert hotter["frame"][-1]["latency_ms"] == base["frame"][-1]["latency_ms"]    # power moves energy only
    assert base["paper"] is None and "running tiny" in base["paper_absent"]
    json.dumps(base)


def test_edge_section_has_the_papers_numbers_ratio_sources_and_causes():
    edge = load_config("edge")
    s = system_results({"meta": {"config_hash": edge.hash()}, "components": {}}, edge)
    assert s["paper"] == {"system": "V-Rex8", "gpu": "Jetson AGX Orin"} and s["kv_labels"][-1] == "40K"
    row = next(r for r in s["frame"] if (r["kv"], r["batch"]) == (40960, 1))
    assert row["paper_latency_ms"] == 254
    assert s["golden"] == list(SHIPPED_GOLDEN) and len(s["golden"]) == 3
    resv = s["ratios"]["resv"]["stages"]["frame"]
    # the longest shipped session (8K) holds 3 504 candidates per stream; 40K has 39 936: 11.4× beyond it
    assert resv["form"] == "power" and resv["per_kv"][-1]["extrapolated"] and resv["per_kv"][-1]["factor"] > 10
    assert all(p.endswith(".json") and p.startswith("vrex/perf/data/real_llm/") for p in resv["sources"])
    # every figure more than 20 % off has its sentence, and only those
    for d in s["differences"]:
        assert abs(d["rel"]) > 0.2 and ("set by" in d["sentence"] or "of V-Rex's" in d["sentence"])
    assert any(d["metric"] == "per-frame latency (ms)" and d["kv"] == 40960 for d in s["differences"])
    assert not any(d["metric"] == "per-frame latency (ms)" and abs(r["latency_rel"]) <= 0.2
                   for d in s["differences"] for r in s["frame"] if (r["kv"], r["batch"]) == (d["kv"], d["batch"]))


def test_server_config_compares_v_rex48_with_a100():
    server = load_config("server")
    s = system_results({"meta": {"config_hash": server.hash()}, "components": {}}, server)
    assert s["paper"] == {"system": "V-Rex48", "gpu": "A100"} and s["gpu"] == "A100"
    assert any(d["metric"].startswith("per-frame latency (ms), ") for d in s["differences"])   # a range end


def test_report_ends_with_the_section_in_markdown_html_and_figures_json(work_dir, monkeypatch):
    import vrex.synth.report as report

    data = _figures(TINY)
    monkeypatch.setattr(report, "collect_figures", lambda cfg, **kw: copy.deepcopy(data))
    md = report.write_report(TINY, work_dir, progress=False).read_text()
    stored = json.loads((work_dir / "figures.json").read_text())
    assert stored["system"]["config_hash"] == TINY.hash()
    assert stored["system"]["frame"][0]["latency_ms"] == pytest.approx(system_results(data, TINY)["frame"][0]
                                                                       ["latency_ms"])
    headings = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert headings[-1] == "## System results (vrex perf on this run's figures)"
    assert "DPE efficiency" in md.split(headings[-1])[1] and "golden-row-3k1.json" in md
    html = (work_dir / "index.html").read_text()
    assert "System results" in html and 'src="system.png"' in html
    assert (work_dir / "system.png").stat().st_size > 1000
    # the markdown follows the JSON: a changed figure in figures.json changes the rendered section
    data = _figures(TINY, dpe_efficiency=0.3)
    md2 = report.write_report(TINY, work_dir, progress=False).read_text()
    assert md2.split(headings[-1])[1] != md.split(headings[-1])[1]
