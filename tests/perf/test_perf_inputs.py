"""Readers of the optional inputs of vrex.perf: golden-model ratios and DRE figures (small fixture files)."""

import json

import pytest

from vrex.config import load_config
from vrex.errors import TraceError, UsageError
from vrex.perf import evaluate
from vrex.perf.dre_timing import dre_timing
from vrex.perf.figures_input import read_figures_json
from vrex.perf.golden_input import read_golden_json, read_golden_jsons
from vrex.perf.platforms import vrex_platform
from vrex.perf.policies import policies


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def _golden(methods):
    return {"config": {"name": "edge"}, "config_hash": "abc", "trace": "synthetic",
            "methods": {m: {"frame": {"retrieval_ratio": f, "recall": 0.9, "output_error": 0.01},
                            "text": {"retrieval_ratio": t}} for m, (f, t) in methods.items()}}


FIGURES = {"meta": {"config_hash": "x"}, "components": {
    "hcu": {"scaled": {"node_nm": 14, "voltage": 0.8, "clock_mhz": 800, "area_mm2": 0.01, "power_mw": 3.2,
                       "method": "sky130 -> 14 nm (Stillmaker)"},
            "cycles": {"per_token": {"overhead": 3, "per_unit": 1, "unit": "lane pass"}}},
    "wtu": {"scaled": {"clock_mhz": 800, "power_mw": 40.0},
            "cycles": {"per_row": {"overhead": 6, "per_unit": 1, "unit": "one pass over the row"},
                       "mean_passes": 2.5}},
    "dre": {"scaled": {"power_mw": 60.0, "area_mm2": 0.04}},
    # the KVMU and LXE contracts: KVMU bytes per cycle and bus utilisation, DPE/VPE efficiencies, engine powers
    "kvmu": {"scaled": {"clock_mhz": 800, "power_mw": 16.0}, "cycles": {"bytes_per_cycle": 16, "bus_utilisation": 0.5}},
    "lxe": {"cycles": {"dpe_efficiency": 0.62, "vpe_efficiency": 0.41}},
    "dpe": {"scaled": {"clock_mhz": 800, "power_mw": 2000.0}},
    "vpe": {"scaled": {"clock_mhz": 800, "power_mw": 100.0}},
    "core": {"scaled": {"power_mw": 2500.0, "area_mm2": 1.9}}}}


def test_measured_ratios_replace_table_ii(tmp_path):
    p = _write(tmp_path, "golden.json", _golden({"full": (1, 1), "flexgen": (1, 1), "infinigen": (0.4, 0.05),
                                                  "rekv": (0.5, 0.2), "quest": (0.3, 0.1), "oracle_topp": (0.1, 0.01),
                                                  "resv": (0.21, 0.019)}))
    run = read_golden_json(p)
    ratios = {pol: {st: r for st, (n, r) in stages.items()} for pol, stages in run.points.items()}
    assert ratios["resv"] == {"frame": 0.21, "text": 0.019}
    assert ratios["infinigenp"] == {"frame": 0.4, "text": 0.05}
    assert ratios["infinigen"] == {"text": 0.05}          # InfiniGen does no frame-stage retrieval
    assert run.config_name == "edge" and run.config_hash == "abc"
    assert any("full, oracle_topp, quest" in n for n in run.notes)
    m = read_golden_jsons([p])
    pols = policies(load_config("edge"), m)
    assert (pols["resv"].frame_ratio, pols["resv"].text_ratio) == (0.21, 0.019)
    assert pols["infinigen"].frame_ratio == 1.0 and pols["infinigen"].text_ratio == 0.05
    assert "measured" in pols["resv"].source and str(p) in pols["resv"].source
    assert "frame config" in pols["infinigen"].source


def test_missing_and_invalid_ratios_fall_back_with_a_note(tmp_path):
    data = _golden({"resv": (1.5, 0.02), "rekv": ("x", 0.3)})
    del data["methods"]["rekv"]["text"]
    m = read_golden_jsons([_write(tmp_path, "g.json", data)])
    assert m.points("resv", "text") == [(None, 0.02)] and m.points("resv", "frame") == []
    assert m.points("rekv", "frame") == [] and m.points("rekv", "text") == []
    notes = "\n".join(m.notes)
    assert "methods.resv.frame.retrieval_ratio invalid (1.5" in notes
    assert "methods.rekv.frame.retrieval_ratio invalid ('x'" in notes
    assert "methods.rekv.text.retrieval_ratio missing" in notes
    assert "method 'infinigen' missing" in notes
    pols = policies(load_config("edge"), m)
    assert pols["resv"].frame_ratio == 0.327 and pols["resv"].text_ratio == 0.02
    m2 = read_golden_json(_write(tmp_path, "empty.json", {"config": 3}))
    assert m2.points == {} and "no 'methods' object" in m2.notes[0]


@pytest.mark.parametrize("text,match", [
    ("{not json", r"is not valid JSON \(Expecting property name"),
    ("[1, 2]", r"must hold a JSON object at the top level, not list"),
])
def test_unreadable_files_are_clear_errors(tmp_path, text, match):
    p = _write(tmp_path, "bad.json", text)
    for reader in (read_golden_json, read_figures_json):
        with pytest.raises(TraceError, match=match):
            reader(p)
    with pytest.raises(TraceError, match=r"does not exist"):
        read_golden_json(tmp_path / "missing.json")


def test_figures_replace_formulas_and_table_iii(tmp_path):
    f = read_figures_json(_write(tmp_path, "figures.json", FIGURES))
    assert f.notes == ()
    cfg = load_config("edge")
    d = dre_timing(cfg, f)
    assert (d.hcu_overhead, d.hcu_per_unit, d.wtu_overhead, d.wtu_passes) == (3, 1, 6, 2.5)
    assert d.hcu_cycles(cfg, 10, 32) == 10 * (3 + 2)
    assert d.wtu_cycles(cfg, 1, 1280) == 6 + 80 * 2.5
    assert d.hcu_pj_per_compare == pytest.approx(3.2e-3 / (16 * 800e6) * 1e12)
    assert d.wtu_pj_per_score == pytest.approx(40e-3 / (16 * 800e6) * 1e12)
    assert "figures.json" in d.cycles_source and "measured" in d.cycles_source
    assert "3.2 mW" in d.power_source and "Stillmaker" in d.power_source and "KVMU power 16 mW" in d.power_source
    # KVMU: 16 B/cycle at 50% utilisation on each of 8 cores; 16 mW over 16 B/cycle at 800 MHz
    assert d.kvmu_bytes_per_s == pytest.approx(8 * 8 * 800e6)
    assert d.kvmu_pj_per_byte == pytest.approx(16e-3 / (16 * 800e6) * 1e12)
    plat = vrex_platform(cfg, f)
    assert (plat.matmul_eff, plat.vector_eff) == (0.62, 0.41)
    assert plat.dpe_pj_per_mac == pytest.approx(2.0 / (4096 * 800e6) * 1e12)
    assert plat.vpe_pj_per_op == pytest.approx(0.1 / (64 * 800e6) * 1e12)
    src = dict(plat.sources)
    assert all(src[w].startswith("measured") for w in ("DPE efficiency", "VPE efficiency", "DPE energy", "VPE energy"))
    assert src["SRAM energy"].startswith("core power 2500 mW")
    assert plat.sram_pj_per_byte == pytest.approx(cfg.perf.energy.sram_pj_per_byte * 2500 / 2609.43)
    # a core power without per-engine figures scales all of Table III's LXE energies
    core_only = json.loads(json.dumps(FIGURES))
    del core_only["components"]["dpe"], core_only["components"]["vpe"]
    p2 = vrex_platform(cfg, read_figures_json(_write(tmp_path, "core.json", core_only)))
    assert p2.dpe_pj_per_mac == pytest.approx(cfg.perf.energy.dpe_pj_per_mac * 2500 / 2609.43)
    assert set(f.replaced_values()) >= {"KVMU rate", "DPE efficiency", "VPE power"}


def test_partial_figures_fall_back_per_value(tmp_path):
    data = json.loads(json.dumps(FIGURES))
    del data["components"]["wtu"]["cycles"]["per_row"]["per_unit"]
    data["components"]["hcu"]["scaled"]["power_mw"] = "n/a"
    del data["components"]["hcu"]["scaled"]["clock_mhz"]
    f = read_figures_json(_write(tmp_path, "figures.json", data))
    cfg = load_config("edge")
    d = dre_timing(cfg, f)
    assert (d.hcu_overhead, d.wtu_overhead, d.wtu_per_unit) == (3, cfg.perf.wtu_row_overhead_cycles, 1.0)
    assert d.wtu_passes == 2.5 and d.hcu_pj_per_compare == cfg.perf.energy.hcu_pj_per_compare
    notes = "\n".join(f.notes)
    assert "components.wtu.cycles.per_row.per_unit missing; WTU cycles use the formula" in notes
    assert "components.hcu.scaled.power_mw invalid ('n/a')" in notes
    assert "HCU cycles from" in d.cycles_source and "WTU cycles from the documented formula" in d.cycles_source
    f2 = read_figures_json(_write(tmp_path, "nothing.json", {"meta": {}}))
    assert dre_timing(cfg, f2) == dre_timing(cfg) and "no 'components' object" in f2.notes[0]
    # what today's figures lack (KVMU, LXE, DPE/VPE) is named once each and keeps the config's values
    assert sum("no 'kvmu' component" in n for n in f2.notes) == 1
    assert sum("no 'lxe' or 'core' cycles" in n for n in f2.notes) == 1
    assert vrex_platform(cfg, f2) == vrex_platform(cfg)
    data["components"]["kvmu"]["cycles"]["bus_utilisation"] = 1.5      # a fraction above 1: not used, named
    f3 = read_figures_json(_write(tmp_path, "bad.json", data))
    assert f3.kvmu_bus_utilisation is None and any("bus_utilisation invalid (1.5)" in n for n in f3.notes)


def test_evaluation_reports_inputs_and_hash_mismatch(tmp_path):
    cfg = load_config("edge").with_overrides({"perf.kv_sizes": [40960], "perf.batches": [1]})
    cfg = cfg.with_overrides({"dre.kvmu.device_capacity_bytes": 2_000_000_000})     # 40K overflows to the SSD
    data = _golden({"resv": (0.1, 0.01)})
    data["config"] = {"name": "edge", "resv": {"predict_from": "same_layer"}}
    g = _write(tmp_path, "g.json", data)
    m = read_golden_jsons([g])
    assert m.runs[0].predict_from == "same_layer"
    f = read_figures_json(_write(tmp_path, "f.json", FIGURES))
    ev = evaluate(cfg, m, f)
    base = evaluate(cfg)
    assert ev.points[0].frame["vrex"].latency < base.points[0].frame["vrex"].latency   # 10% < 32.7%
    warnings = [n for n in ev.notes if n.startswith("warning:")]
    assert any(f"golden JSON {g} was made with config edge (hash abc)" in n and "resv frame ratio" in n
               and "--strict refuses" in n for n in warnings)
    assert any("figures JSON" in n and "config hash x" in n and "HCU cycles" in n for n in warnings)
    assert any("same-layer prediction" in n for n in ev.notes)
    assert "measured" in ev.sources["ratios"]["resv"] and "f.json" in ev.sources["dre_cycles"]
    assert not any("ReSV frame ratio" in a for a in ev.assumed) and any("ReKV frame ratio" in a for a in ev.assumed)
    with pytest.raises(UsageError, match=r"--strict refuses it: regenerate it with -c edge, or drop --strict\.$"):
        evaluate(cfg, m, f, strict=True)
    same = dict(data, config_hash=cfg.hash())
    evaluate(cfg, read_golden_jsons([_write(tmp_path, "same.json", same)]), None, strict=True)   # matches: fine
