"""Hierarchical figures of the LXE composites and the report's V-Rex core section."""

import json

import pytest

from vrex.config import load_config
from vrex.hdl.registry import get_component
from vrex.synth.hierarchy import dependency_waves, hierarchical_figures, leaf_members
from vrex.tools import find

TINY = load_config("tiny")


def fake(name, area, power, crit, scaled_area, scaled_power, fmax):
    return {"component": name, "top": f"vrex_{name}", "generic": {"cells": 10, "flops": 2, "transistors": 100,
                                                                  "logic_depth": 5, "sram_memories": []},
            "area_um2": area, "logic_area_um2": area, "sequential_area_um2": 1.0, "cells": 10, "memories": [],
            "timing": {"critical_path_ns": crit, "met": True, "clock_mhz": 100.0},
            "power_mw": {"internal": power, "switching": 0.0, "leakage": 0.0, "total": power, "memory": 0.0,
                         "activity_source": "saif"},
            "power_default_activity_mw": None, "liberty": {"name": "x"}, "clock_mhz": 100.0,
            "scaled": {"area_mm2": scaled_area, "logic_area_mm2": scaled_area, "power_mw": scaled_power,
                       "fmax_mhz": fmax, "critical_path_ns": 1000.0 / fmax, "method": "m", "source": "s"},
            "missing": {}}


def test_a_composite_is_its_parts_times_their_counts_plus_the_glue():
    spec = get_component("dpe")
    records = {"mac_tree": fake("mac_tree", 100.0, 2.0, 5.0, 0.001, 1.5, 900.0),
               "dpe_glue": fake("dpe_glue", 3.0, 0.5, 7.0, 0.0001, 0.1, 700.0)}
    rec = hierarchical_figures("dpe", TINY, spec, records.__getitem__)
    T = TINY.lxe.dpe_trees
    assert rec["area_um2"] == pytest.approx(T * 100.0 + 3.0)
    assert rec["power_mw"]["total"] == pytest.approx(T * 2.0 + 0.5)
    assert rec["scaled"]["area_mm2"] == pytest.approx(T * 0.001 + 0.0001)
    assert rec["scaled"]["power_mw"] == pytest.approx(T * 1.5 + 0.1)
    assert rec["scaled"]["fmax_mhz"] == pytest.approx(700.0) and rec["timing"]["worst_module"] == "dpe_glue"
    assert rec["generic"]["transistors"] == (T + 1) * 100
    assert rec["hierarchy"]["parts"]["mac_tree"]["count"] == T
    assert rec["cycles"]["dpe_efficiency"] > 0        # measured in amaranth.sim


def test_parts_come_before_the_composites_that_need_them():
    waves = dependency_waves(["core", "dpe", "hcu"], TINY)
    flat = {n: k for k, wave in enumerate(waves) for n in wave}
    assert flat["mac_tree"] < flat["dpe"] < flat["lxe"] < flat["core"] and flat["vpe_lane"] < flat["vpe"]
    assert flat["dre"] < flat["core"] and flat["lxe_glue"] == 0
    assert leaf_members("lxe", TINY) == ["dpe_glue", "lxe_glue", "mac_tree", "vpe_glue", "vpe_lane"]


def test_core_section_renders_shares_and_systems(tmp_path):
    from vrex.synth.core_section import core_section, core_summary

    comps = {"core": fake("core", 1e6, 1000.0, 5.0, 2.0, 2500.0, 850.0),
             "dpe": fake("dpe", 7e5, 800.0, 5.0, 1.4, 2200.0, 850.0),
             "vpe": fake("vpe", 1e5, 100.0, 5.0, 0.15, 120.0, 900.0),
             "dre": fake("dre", 2e4, 20.0, 5.0, 0.04, 50.0, 900.0),
             "lxe": {"hierarchy": {"parts": {"lxe_glue": {"scaled": {"area_mm2": 0.3, "power_mw": 100.0}}}}}}
    comps["core"]["timing"]["worst_module"] = "lxe"
    s = core_summary(comps, load_config("edge"))
    assert s["dre_area_share"] == pytest.approx(0.02) and s["dre_power_share"] == pytest.approx(0.02)
    assert s["vrex8"]["area_mm2"] == pytest.approx(16.0) and s["vrex48"]["cores"] == 48
    assert s["um2_per_mac"] == pytest.approx(1.4e6 / 4096) and s["pj_per_mac"] == pytest.approx(2200 / (4096 * 800) * 1e3)
    lines, plots = core_section(s, comps, {"node_nm": 14, "voltage": 0.8, "clock_mhz": 800}, tmp_path)
    md = "\n".join(lines)
    assert "| **core** | 1.89 | 2 | 2609.43 | 2500 |" in md and "DRE share: area 2.00 %" in md
    assert "| On-chip memory | 0.34 | 0.3 |" in md and len(plots) == 2


@pytest.mark.slow
@pytest.mark.skipif(not find("sta").found, reason="OpenSTA is not installed")
def test_tiny_report_has_the_core_section(work_dir):
    from vrex.synth.report import write_report

    write_report(TINY, work_dir, workers=2, transactions=300, progress=False)
    md = (work_dir / "report.md").read_text()
    data = json.loads((work_dir / "figures.json").read_text())
    core = data["core"]
    assert core["area_mm2"] > 0 and core["power_mw"] > 0 and 0 < core["dre_area_share"] < 1
    assert data["components"]["lxe"]["cycles"]["dpe_efficiency"] > 0
    assert data["components"]["lxe"]["cycles"]["vpe_efficiency"] > 0
    assert "## V-Rex core beside Table III" in md and (work_dir / "core_area_vs_paper.png").is_file()
    tree = data["components"]["mac_tree"]
    assert tree["power_mw"]["stimulus"]["kind"] == "trace:synthetic"
