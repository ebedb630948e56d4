"""Library figures on the tiny config with sky130 from $VREX_PDK_DIR: area, hierarchy, memories, timing, power."""

import re

import pytest

import figures_parts
from vrex.config import load_config
from vrex.hdl import registry
from vrex.sim import benches
from vrex.sim.amaranth_run import run_amaranth
from vrex.synth.figures import component_figures
from vrex.synth.liberty import resolve_library
from vrex.synth.mapped import map_design
from vrex.synth.sta import run_power, run_timing, run_timing_and_power
from vrex.synth.verilog import emit
from vrex.paths import build_dir
from vrex.tools import find

needs_sta = pytest.mark.skipif(not find("sta").found, reason="OpenSTA (apt-get install opensta) is not installed")
pytestmark = [needs_sta]

TINY = load_config("tiny")
TXN = 300   # SAIF stimulus length: small, the figures only need a representative activity


@pytest.fixture
def memstage(monkeypatch):
    """Register the test-only hierarchical memory component for the duration of one test."""
    registry.component_names()
    monkeypatch.setitem(registry.COMPONENTS, "test_memstage", registry.ComponentSpec(
        "test_memstage", "vrex_test_memstage", "test: memory lookup + plus-one stages", figures_parts.MemStage.from_config))
    monkeypatch.setitem(benches.BENCH_MODULES, "test_memstage", "figures_parts")
    return "test_memstage"


def _self_consistent(r):
    assert r["area_um2"] > 0 and r["cells"] > 0
    assert sum(r["area_breakdown"].values()) == pytest.approx(r["area_um2"], rel=1e-9)
    t = r["timing"]
    assert t["critical_path_ns"] > 0 and t["critical_path_ns"] + t["slack_ns"] == pytest.approx(t["period_ns"])
    assert t["fmax_mhz"] == pytest.approx(1000 / t["critical_path_ns"])
    for key in ("power_mw", "power_default_activity_mw"):
        p = r[key]
        assert p["internal"] > 0 and p["switching"] > 0 and p["leakage"] >= 0
        assert p["total"] == pytest.approx(p["internal"] + p["switching"] + p["leakage"], rel=1e-6)


def test_hamming_lanes_figures_are_positive_and_consistent():
    r = component_figures("hamming_lanes", TINY, transactions=TXN)
    _self_consistent(r)
    assert r["liberty"]["name"] == "sky130" and r["memories"] == []
    p = r["power_mw"]
    assert p["activity_source"] == "saif" and p["stimulus"]["transactions"] == TXN
    c = p["coverage"]   # every input bit and every flop output annotated from the SAIF
    assert c["input_bits_annotated"] == c["input_bits"] > 0 and c["flop_outputs_annotated"] == c["flop_outputs"] == 25
    # scaling: the record's numbers are the raw ones times the stated factors
    s = r["scaled"]
    f = s["factors"]
    assert s["area_mm2"] == pytest.approx(r["area_um2"] * f["area"] * 1e-6)
    assert s["power_mw"] == pytest.approx((p["internal"] + p["switching"]) * f["dynamic_power"] + p["leakage"] * f["leakage"])
    assert s["fmax_mhz"] == pytest.approx(1000 / (r["timing"]["critical_path_ns"] * f["delay"]))
    assert (s["node_nm"], s["voltage"], s["clock_mhz"]) == (14.0, 0.8, 800.0)
    assert "Stillmaker" in s["method"] and "x0.02703" in s["method"]
    assert r["missing"] == {}
    assert r["cycles"]["latency_cycles"] == 1 and r["cycles"]["cycles_per_transaction"] == 1


def test_larger_config_costs_more_area():
    small = component_figures("hamming_lanes", TINY, activity=False)
    big = component_figures("hamming_lanes", TINY.with_overrides({"dre.hcu.lanes": 8}), activity=False)
    assert big["area_um2"] > 1.6 * small["area_um2"]
    assert big["power_default_activity_mw"]["total"] > small["power_default_activity_mw"]["total"]


def test_higher_activity_costs_more_power():
    busy = component_figures("hamming_lanes", TINY, transactions=TXN)
    idle = component_figures("hamming_lanes", TINY, transactions=TXN, p_valid=0.15, p_ready=0.15)
    assert busy["area_um2"] == idle["area_um2"]
    assert idle["power_mw"]["sim_cycles"] > 2 * busy["power_mw"]["sim_cycles"]
    assert busy["power_mw"]["switching"] > 2 * idle["power_mw"]["switching"]
    assert busy["power_mw"]["total"] > idle["power_mw"]["total"]


def test_activity_run_is_cut_at_the_cycle_cap():
    cfg = TINY.with_overrides({"technology.activity_max_cycles": 150})
    r = component_figures("hamming_lanes", cfg, transactions=TXN)
    p = r["power_mw"]
    assert p["stimulus"]["truncated"] is True and p["sim_cycles"] == 150
    assert 100 < p["stimulus"]["transactions_run"] < TXN and p["total"] > 0


@pytest.fixture(scope="module")
def sky130_lanes():
    """hamming_lanes on TINY mapped once onto sky130 at 100 MHz: ``(library, MappedDesign)``; the tests that use
    it keep their OpenSTA outputs apart with run_power tags."""
    lib = resolve_library("sky130")
    return lib, map_design(emit("hamming_lanes", TINY), lib, TINY, build_dir("tests", "mapped-hamming_lanes-sky130"),
                           clock_mhz=100)


def test_mapping_again_reuses_the_yosys_runs(sky130_lanes, monkeypatch):
    lib, m = sky130_lanes
    monkeypatch.setattr("vrex.synth.yosys.run_yosys", lambda *a, **k: pytest.fail("Yosys ran for the same mapping"))
    again = map_design(emit("hamming_lanes", TINY), lib, TINY, m.directory, clock_mhz=100)
    assert (again.area_um2, again.area_breakdown, again.cell_types) == (m.area_um2, m.area_breakdown, m.cell_types)


def test_default_activity_power_grows_with_activity(sky130_lanes):
    lib, m = sky130_lanes
    low, high = (run_power(m, lib, 100, TINY.technology, default_activity=a, tag=str(a)) for a in (0.05, 0.2))
    assert high["switching"] > 3 * low["switching"] and high["total"] > low["total"]
    assert high["leakage"] == pytest.approx(low["leakage"])


class _UniformActivity:
    """Stands in for a SAIF in which every net has activity 0.1 and duty 0.5."""

    cycles = 1

    def activity(self, name):
        return 0.1, 0.5


def test_saif_annotation_units_match_the_default_activity(sky130_lanes):
    """Annotating every input and flop at activity A / duty 0.5 gives about the global-A power of the flops.

    (The logic differs: annotated activity propagates through the XOR/popcount trees, which raises it, while the
    global figure puts A on every net.) A unit mistake (per ns vs per cycle) would be off by 10x or more.
    """
    from vrex.synth.mapped import flop_state_nets
    from vrex.synth.saif import activity_tcl

    lib, m = sky130_lanes
    text = m.netlist.read_text()
    tcl, c = activity_tcl(_UniformActivity(), text, flop_state_nets(text, lib))
    assert c["input_bits_annotated"] == c["input_bits"] > 0 and c["flop_outputs_annotated"] == c["flop_outputs"]
    assert c["input_bits"] + c["flop_outputs"] > 25
    annotated = run_power(m, lib, 100, TINY.technology, activity_tcl=tcl, tag="units")
    default = run_power(m, lib, 100, TINY.technology, default_activity=0.1, tag="units_default")
    assert annotated["sequential"] == pytest.approx(default["sequential"], rel=0.25)
    assert annotated["combinational"] > default["combinational"]


def test_test_component_matches_its_golden_model():
    bench = figures_parts.make_bench(TINY, n=120, seed=4)
    result = run_amaranth(figures_parts.MemStage.from_config(TINY), bench)
    assert not result.report(bench), result.report(bench)


def test_sram_memories_are_macros_and_hierarchy_sums(memstage):
    r = component_figures(memstage, TINY, transactions=TXN)
    _self_consistent(r)
    (mem,) = r["memories"]
    assert (mem["words"], mem["bits"], mem["kind"], mem["path"]) == (32, 16, "sram", "vrex_test_memstage/lookup")
    bd = r["area_breakdown"]
    assert set(bd) == {"vrex_test_memstage", "vrex_test_memstage/lookup", "vrex_test_memstage/post",
                       "vrex_test_memstage/lookup/mem [sram]"}
    assert bd["vrex_test_memstage/lookup/mem [sram]"] == pytest.approx(mem["area_lib_um2"])
    assert r["logic_area_um2"] == pytest.approx(r["area_um2"] - mem["area_lib_um2"])
    assert not any("dfxtp" in t and n >= 32 * 16 for t, n in r["cell_types"].items())   # not built from flops
    # access rates come from the SAIF duty of the port enables: every transaction reads, about half write
    (detail,) = r["power_mw"]["memory_detail"]
    assert detail["rate_source"] == ["SAIF duty of the enable"]
    assert 0.8 < detail["read_rate"][0] <= 1.0 and 0.3 < detail["write_rate"][0] < 0.7
    assert r["power_mw"]["memory"] > 0 and r["power_mw"]["total"] > r["power_mw"]["memory"]
    # the memory's read data is timed through the macro's access arc
    assert r["timing"]["critical_path_ns"] > mem["access_ns"] > 0


def test_flops_mode_builds_memories_from_registers(memstage):
    sram = component_figures(memstage, TINY, activity=False)
    flops = component_figures(memstage, TINY.with_overrides({"technology.memories": "flops"}), activity=False)
    (mem,) = flops["memories"]
    assert mem["kind"] == "flops" and mem["reason"] == "technology.memories is flops"
    assert not any(k.endswith("[sram]") for k in flops["area_breakdown"])
    assert flops["generic"]["flops"] >= 32 * 16
    assert flops["logic_area_um2"] > 5 * sram["logic_area_um2"]
    assert sum(flops["area_breakdown"].values()) == pytest.approx(flops["area_um2"])


def _design_with_memory(size, width, rd_clk_enable="1"):
    cell = {"type": "$mem_v2", "parameters": {"SIZE": size, "WIDTH": width, "RD_PORTS": 1, "WR_PORTS": 1,
                                               "RD_CLK_ENABLE": rd_clk_enable, "MEMID": "\\table"},
            "connections": {"RD_EN": [2], "WR_EN": [3] * width}}
    return {"modules": {"top": {"cells": {"m": cell}, "netnames": {"rd__en": {"bits": [2], "hide_name": 0},
                                                                 "wr__en": {"bits": [3], "hide_name": 0},
                                                                 "$9": {"bits": [3], "hide_name": 0}}}}}


def test_memory_classification_rules():
    from vrex.synth.memories import find_memories

    (m,) = find_memories(_design_with_memory(32, 16), "sram", 256)
    assert (m.kind, m.name, m.words, m.bits, m.read_enables, m.write_enables) == \
        ("sram", "table", 32, 16, ["rd__en"], ["wr__en"])
    assert m.macro == "vrex_sram_0_32x16"
    (small,) = find_memories(_design_with_memory(8, 16), "sram", 256)
    assert small.kind == "flops" and small.reason == "128 bits < technology.sram_min_bits (256)"
    (comb,) = find_memories(_design_with_memory(32, 16, "0"), "sram", 256)
    assert comb.kind == "flops" and "asynchronous" in comb.reason and not comb.sync_read
    (flop,) = find_memories(_design_with_memory(32, 16), "flops", 256)
    assert flop.kind == "flops" and flop.reason == "technology.memories is flops"


def test_macro_write_enable_is_one_pin_per_lane():
    """A macro has one write-enable pin per port and lane, not Yosys's one per data bit, and the kit's pin load."""
    from vrex.synth.memories import find_memories, macro_liberty, macro_verilog, replace_memories, write_lanes
    from vrex.synth.sram import sram_model

    assert write_lanes([3] * 16, 16, 1) == 1 and write_lanes([3] * 8 + [4] * 8, 16, 1) == 2
    assert write_lanes([5] * 16 + [6] * 16, 16, 2) == 1 and write_lanes([1, 2] * 8, 16, 1) == 16
    design = _design_with_memory(32, 16)
    (m,) = find_memories(design, "sram", 256)
    lib = resolve_library("sky130")
    m.attach_model(sram_model(None), lib)
    replace_memories(design, [m])
    assert m.write_lanes == 1 and design["modules"]["top"]["cells"]["m"]["connections"]["WR_EN"] == [3]
    assert "input [0:0] WR_EN;" in macro_verilog([m])
    kit_pf = 0.000318915                                    # every input pin of the ASAP7 banks
    assert m.input_pf == pytest.approx(kit_pf * (1 / 0.0092) ** 0.5)   # moved 7 -> 130 nm by the feature size
    assert f"capacitance : {m.input_pf:.6g};" in macro_liberty([m], lib)


def test_write_enable_of_a_wide_memory_is_not_a_slow_net(memstage, work_dir):
    """On ASAP7 the 64 per-bit enable pins of the old macro model loaded one cell for 0.77 ns (the enable arrived
    at 1.1 ns); one pin with the kit's load is a gate delay."""
    from vrex.synth.sram import sram_model
    from vrex.synth.sta import _header, run_sta

    cfg = TINY.with_overrides({"resv.hash_bits": 64})
    lib = resolve_library("asap7")
    m = map_design(emit(memstage, cfg), lib, cfg, work_dir, clock_mhz=100, sram_model=sram_model(None))
    (mem,) = [x for x in m.memories if x.kind == "sram"]
    assert mem.bits == 64 and mem.write_lanes == 1
    out = run_sta(_header(m, lib, 100, cfg.technology) + "report_checks -path_delay max -digits 4 -to "
               "[get_pins -hierarchical *WR_EN*]\n", m.directory, "sta_write_enable")
    arrival = float(re.search(r"^\s*(\S+)\s+data arrival time", out, re.M).group(1)) * lib.time_unit_ns
    assert 0 < arrival < 0.6, out


def test_register_enables_are_buffered_logic(monkeypatch, work_dir):
    """sky130's enable flops hide their enable net's load from ABC (a flop pin is outside the logic it maps), so a
    256-bit bank's enable was one unbuffered gate (critical path 12.4 ns at 100 MHz); as a multiplexer in front of
    plain flops the net is ABC's to buffer."""
    registry.component_names()
    monkeypatch.setitem(registry.COMPONENTS, "test_wide_enable", registry.ComponentSpec(
        "test_wide_enable", "vrex_test_wide_enable", "test: enabled register bank", figures_parts.WideEnable.from_config))
    lib = resolve_library("sky130")
    m = map_design(emit("test_wide_enable", TINY), lib, TINY, work_dir, clock_mhz=100)
    assert not any("edfxtp" in t for t in m.cell_types) and m.cell_types["sky130_fd_sc_hd__dfxtp_1"] >= 256
    assert run_timing(m, lib, 100, TINY.technology)["critical_path_ns"] < 2.0


def test_asap7_library_maps_and_times(work_dir):
    lib = resolve_library("asap7")
    assert len(lib.files) == 5 and lib.node_nm == 7.0 and lib.time_unit_ns == pytest.approx(0.001)
    m = map_design(emit("hamming_lanes", TINY), lib, TINY, work_dir, clock_mhz=1000)
    assert 20 < m.area_um2 < 1000
    t = run_timing(m, lib, 1000, TINY.technology)
    assert 0.05 < t["critical_path_ns"] < 2.0
    # both libraries, scaled to 14 nm, land within a factor of 4 of each other (the scaling is approximate)
    from vrex.synth.scaling import area_factor

    sky = component_figures("hamming_lanes", TINY, activity=False)
    ratio = (sky["area_um2"] * area_factor(130, 14)) / (m.area_um2 * area_factor(7, 14))
    assert 0.25 < ratio < 4


def test_one_sta_session_gives_the_timing_and_power_of_two(work_dir):
    """Timing and default-activity power read the netlist once (``sta_figures``); the figures are those of the two
    separate sessions, on a design with hierarchy and SRAM macros (the area breakdown reads ``hierarchy.json``)."""
    from vrex.synth.sram import sram_model

    lib = resolve_library("sky130")
    m = map_design(emit("kvmu", TINY), lib, TINY, work_dir, clock_mhz=100, sram_model=sram_model(None))
    assert any(path.endswith("[sram]") for path in m.area_breakdown) and len(m.area_breakdown) > 2
    assert sum(m.area_breakdown.values()) == pytest.approx(m.area_um2)
    timing, power = run_timing_and_power(m, lib, 100, TINY.technology, default_activity=0.2)
    assert timing == run_timing(m, lib, 100, TINY.technology)
    assert power == run_power(m, lib, 100, TINY.technology, default_activity=0.2)
    assert power != run_power(m, lib, 100, TINY.technology, default_activity=0.1)   # the activity is applied
    assert (work_dir / "sta_figures.log").is_file()


def test_abc_target_is_the_period_less_the_measured_register_overhead():
    """The register overhead comes from the library's own flop (OpenSTA on a two-flop chain) and ABC's target is
    the period less it; a clock the flops alone cannot meet keeps a tenth of the period."""
    from vrex.synth.mapped import abc_delay_target_ps
    from vrex.synth.register_overhead import register_overhead_ps

    sky, asap7 = register_overhead_ps(resolve_library("sky130")), register_overhead_ps(resolve_library("asap7"))
    assert 150 < sky < 800 and 30 < asap7 < 200 and asap7 < sky / 2     # dfxtp ≈ 0.38 ns, DFFHQ ≈ 78 ps
    assert abc_delay_target_ps(100, sky) == pytest.approx(10_000 - sky)
    assert abc_delay_target_ps(100, 0) == pytest.approx(10_000)
    assert abc_delay_target_ps(5000, sky) == pytest.approx(20)
    r = component_figures("hamming_lanes", TINY, activity=False)
    assert r["register_overhead_ps"] == pytest.approx(sky)
    assert r["abc_delay_target_ps"] == pytest.approx(1e6 / r["clock_mhz"] - sky)


def test_cached_record_is_reused():
    a = component_figures("hamming_lanes", TINY, activity=False)
    b = component_figures("hamming_lanes", TINY, activity=False)
    assert a["meta"]["created"] == b["meta"]["created"] and a == b
    c = component_figures("hamming_lanes", TINY, activity=False, use_cache=False)
    assert c["area_um2"] == a["area_um2"]


def test_missing_opensta_gives_partial_figures():
    r = component_figures("hamming_lanes", TINY, activity=False, skip_tools=("sta",))
    assert r["area_um2"] > 0 and r["timing"] is None and r["power_mw"] is None
    assert "apt-get install opensta" in r["missing"]["timing"]
    assert r["scaled"]["area_mm2"] > 0 and r["scaled"]["power_mw"] is None


@pytest.mark.slow
def test_pipelined_hcu_shortens_the_edge_hcu_critical_path():
    """The edge HCU's register stages (`dre.hcu.pipeline_stages: 3`: the code-memory read captured, the lane array's
    output registered) against one stage: the HCU loses its code memory → compare → next-read path (in the DRE,
    sky130: 14.7 ns → 6.8 ns when measured, the DRE then WTU-limited; docs/results-figures.md). Also the regression
    test for the ABC script: a pipelined netlist came out of `map` out of topological order and `buffer` died
    without output before `topo` was added. The HCU alone is synthesised, not the DRE around it (the two DRE
    netlists cost 20 minutes of CI). Registers are compared, not total area: the one-stage netlist's long path
    makes ABC size up its gates, so the total area of the two moves by less than the added flops."""
    edge = load_config("edge")
    assert edge.dre.hcu.pipeline_stages == 3
    one = component_figures("hcu", edge.with_overrides({"dre.hcu.pipeline_stages": 1}), activity=False)
    three = component_figures("hcu", edge, activity=False)
    assert three["sequential_area_um2"] > one["sequential_area_um2"]          # the added registers
    assert three["timing"]["critical_path_ns"] < 0.8 * one["timing"]["critical_path_ns"]


def test_auto_clock_constraint_is_the_target_at_the_library_node():
    from vrex.synth.figures import AUTO_CLOCK_MARGIN, constraint_clock
    from vrex.synth.liberty import resolve_library
    from vrex.synth.scaling import delay_factor

    tech = TINY.technology
    assert tech.clock_mhz == 0.0
    asap7 = resolve_library("asap7")
    want = 800.0 * delay_factor(7.0, 0.7, 14.0, 0.8) * AUTO_CLOCK_MARGIN
    assert constraint_clock(tech, asap7) == pytest.approx(want, abs=0.05) and 1150 < want < 1300
    assert constraint_clock(tech, asap7, override=250.0) == 250.0
    assert constraint_clock(TINY.with_overrides({"technology.clock_mhz": 100.0}).technology, asap7) == 100.0
    assert constraint_clock(tech, None) == 100.0


def test_two_callers_computing_one_record_compute_it_once(monkeypatch):
    """Figures of one part computed at once by two callers (test workers, report jobs) share work directories: the
    second waits on the folder's lock and takes the record the first cached, instead of overwriting its files."""
    import threading
    import time

    import vrex.synth.figures as figures

    calls = []

    def slow_compute(name, cfg, spec, emitted, lib, clock, folder, cache, missing, **kw):
        calls.append(name)
        time.sleep(0.5)                         # long enough for the second caller to reach the lock
        record = {"component": name, "computed_by": threading.get_ident()}
        figures.write_json_atomic(cache, record)
        return record

    monkeypatch.setattr(figures, "_compute_record", slow_compute)
    txn = 1 + int(time.time() * 1000) % 100000  # a key no earlier run cached
    out = [None, None]

    def one(i):
        out[i] = component_figures("hamming_lanes", TINY, transactions=txn)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["hamming_lanes"] and out[0] == out[1] and out[0]["component"] == "hamming_lanes"
