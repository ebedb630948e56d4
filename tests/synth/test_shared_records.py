"""Records shared between a composite and its parts: cycle figures measured once and read back, a composite's bench
taking its parts' figures, a composite looked up in the cache only when all its pieces are there."""

from vrex.config import load_config
from vrex.synth import measured
from vrex.synth.measured import NOT_CACHED, measured_cycles

TINY = load_config("tiny")


def test_cycles_are_measured_once_then_read_back(work_dir, monkeypatch):
    monkeypatch.setenv("VREX_BUILD_DIR", str(work_dir))
    calls = []

    def fake_measure(cfg):
        calls.append(cfg.hash())
        return {"latency_cycles": 3}

    monkeypatch.setattr("vrex.sim.benches.cycles_for", lambda name: fake_measure)
    assert measured_cycles("hcu", TINY, {}, cached_only=True) is NOT_CACHED
    assert measured_cycles("hcu", TINY, {}) == {"latency_cycles": 3}
    assert measured_cycles("hcu", TINY, {}) == {"latency_cycles": 3} and len(calls) == 1
    assert measured_cycles("hcu", TINY, {}, cached_only=True) == {"latency_cycles": 3}


def test_a_composite_bench_takes_its_parts_cycles(work_dir, monkeypatch):
    monkeypatch.setenv("VREX_BUILD_DIR", str(work_dir))
    from vrex.sim.dre import top

    parts = {"hcu": {"per_token": {"overhead": 3}, "formula": "h"}, "wtu": {"per_row": {"overhead": 9}, "formula": "w"}}
    got = top.measure_cycles(TINY, cycles_of=parts.__getitem__)       # nothing simulated
    assert got["hcu"] is parts["hcu"] and got["per_row"] == {"overhead": 9} and got["formula"] == "HCU: h | WTU: w"
    # through the flow: the parts' figures come from the kept ones, a failing part names itself
    monkeypatch.setattr(measured, "_part_cycles", lambda part, cfg: parts[part])
    assert measured_cycles("dre", TINY, {})["per_token"] == {"overhead": 3}

    def failing(part, cfg):
        raise RuntimeError(f"{part}: broken")

    monkeypatch.setattr(measured, "_part_cycles", failing)
    missing = {}
    assert measured_cycles("lxe", TINY, missing) is None and "dpe: broken" in missing["cycles"]


def test_a_composite_is_not_cached_until_its_cycles_are(work_dir, monkeypatch):
    from vrex.hdl.registry import get_component
    from vrex.synth.hierarchy import hierarchical_figures

    monkeypatch.setenv("VREX_BUILD_DIR", str(work_dir))
    spec = get_component("dpe")
    part = {"component": "x", "top": "vrex_x", "generic": {"cells": 1, "flops": 1, "transistors": 4, "logic_depth": 1},
            "area_um2": None, "timing": None, "power_mw": None, "scaled": None, "missing": {}}
    assert hierarchical_figures("dpe", TINY, spec, lambda p: None, cached_only=True) is None        # a part missing
    assert hierarchical_figures("dpe", TINY, spec, lambda p: part, cached_only=True) is None        # the cycles
    monkeypatch.setattr("vrex.sim.benches.cycles_for", lambda name: lambda cfg: {"dpe_efficiency": 0.5})
    assert hierarchical_figures("dpe", TINY, spec, lambda p: part)["cycles"] == {"dpe_efficiency": 0.5}
    assert hierarchical_figures("dpe", TINY, spec, lambda p: part, cached_only=True)["cycles"] == {"dpe_efficiency": 0.5}
