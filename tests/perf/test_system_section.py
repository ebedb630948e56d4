"""The system section of `vrex report`: `vrex perf` on the run's own figures, in markdown, HTML and figures.json."""

import copy
import json

import pytest

from vrex.config import load_config
from vrex.errors import TraceError
from vrex.perf.per_model import EXTRAPOLATION_LIMIT, check_extract, read_shipped
from vrex.perf.system_render import system_markdown
from vrex.perf.system_section import SHIPPED_GOLDEN, system_entry, system_results

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
    assert s["golden"] == [n for n in SHIPPED_GOLDEN if "golden-smollm2-" in n] and len(s["golden"]) == 3
    assert s["headline_model"]["config"] == "smollm2" and "resident window (1024 tokens)" in s["headline_model"]["why"]
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
    assert "DPE efficiency" in md.split(headings[-1])[1] and "golden-smollm2-row-3k1.json" in md
    html = (work_dir / "index.html").read_text()
    assert "System results" in html and 'src="system.png"' in html
    assert (work_dir / "system.png").stat().st_size > 1000
    # the markdown follows the JSON: a changed figure in figures.json changes the rendered section
    data = _figures(TINY, dpe_efficiency=0.3)
    md2 = report.write_report(TINY, work_dir, progress=False).read_text()
    assert md2.split(headings[-1])[1] != md.split(headings[-1])[1]


def _extract(config, tokens, candidates, frame, text, drop=()):
    stage = {"offloaded_tokens": candidates * 100, "layer_head_steps": 100}
    data = {"extract_of": "t", "source": "test", "config": config, "config_hash": "feedbeef0000",
            "trace": {"tokens": tokens},
            "methods": {"resv": {"frame": {"retrieval_ratio": frame, **stage}, "text": {"retrieval_ratio": text,
                                                                                          **stage}}}}
    for key in drop:            # a top-level field, else one of the text stage's
        (data if key in data else data["methods"]["resv"]["text"]).pop(key)
    return data


def _write(tmp_path, extracts) -> dict:
    out = {}
    for i, data in enumerate(extracts):
        p = tmp_path / f"golden-{data.get('config')}-{i}.json"
        p.write_text(json.dumps(data))
        out[f"vrex/perf/data/real_llm/{p.name}"] = p
    return out


def test_each_models_extracts_are_fitted_and_evaluated_alone(tmp_path):
    edge = load_config("edge")
    golden = _write(tmp_path, [_extract("smollm2", 2000, 500, 0.02, 0.01), _extract("smollm2", 8000, 3500, 0.06, 0.05),
                               _extract("qwen05", 2000, 700, 0.45, 0.26), _extract("qwen05", 8000, 3900, 0.55, 0.40)])
    s = system_results({"meta": {"config_hash": edge.hash()}, "components": {}}, edge, golden=golden)
    per = s["per_model"]
    assert list(per) == ["qwen05", "smollm2"] and per["qwen05"]["model"] == "qwen2.5-coder-0.5b-instruct"
    q, m = (per[k]["ratios"]["resv"]["stages"]["frame"] for k in ("qwen05", "smollm2"))
    assert (q["measured_n"], q["measured_r"]) == ([700, 3900], [0.45, 0.55])      # no point of the other model
    assert (m["measured_n"], m["measured_r"]) == ([500, 3500], [0.02, 0.06])
    # every ratio point carries its extrapolation factor: candidates at that KV size / the longest session's
    last = q["per_kv"][-1]
    assert last["factor"] == pytest.approx(edge.kv_candidates(40960) / 3900) and last["extrapolated"]
    assert per["qwen05"]["over_limit"] and all(o["factor"] > EXTRAPOLATION_LIMIT for o in per["qwen05"]["over_limit"])
    # the headline (edge: no shipped model is llama-3-8b, SmolLM2 shares its 1024-token window) keeps the old keys
    assert s["headline_model"]["config"] == "smollm2" and s["golden"] == [n for n in golden if "smollm2" in n]
    assert [r["fps"] for r in s["frame"]] == [r["fps"] for r in per["smollm2"]["frame"]]
    # where the KV crosses the link (40K, batch 4) Qwen's larger ratios cost frames per second
    fps = {k: {(r["kv"], r["batch"]): r for r in per[k]["frame"]}[(40960, 4)] for k in per}
    assert fps["qwen05"]["frame_ratio"] > 2 * fps["smollm2"]["frame_ratio"]
    assert fps["qwen05"]["fps"] < 0.9 * fps["smollm2"]["fps"]
    assert fps["qwen05"]["speedup_flexgen"] < fps["smollm2"]["speedup_flexgen"]
    md = "\n".join(system_markdown(s, tmp_path)[0])
    assert "headline rows use **smollm2-135m-instruct**" in md and "| qwen2.5-coder-0.5b-instruct | 40K | 4 |" in md
    assert f"{last['ratio']:.3f} ({last['factor']:.1f}×)" in md
    json.dumps(s)
    # a config of one of the shipped models leads with that model's ratios
    qwen = load_config("qwen05")
    sq = system_results({"meta": {"config_hash": qwen.hash()}, "components": {}}, qwen, golden=golden)
    assert sq["headline_model"]["config"] == "qwen05" and "own model" in sq["headline_model"]["why"]


@pytest.mark.parametrize("extract,message", [
    (_extract("mystery", 2000, 500, 0.1, 0.1),
     "ratio extract {name} names config 'mystery', which is no built-in config, so its model is unknown; use one of "),
    (_extract("qwen05", 2000, 500, 0.1, 0.1, drop=("config",)),
     "ratio extract {name} has no \"config\" naming the model"),
    (_extract("qwen05", 2000, 500, 0.1, 0.1, drop=("offloaded_tokens",)),
     "ratio extract {name} (config qwen05) lacks valid methods.resv.text.offloaded_tokens; regenerate it"),
    (_extract("qwen05", 2000, 500, 1.5, 0.1), "ratio extract {name} (config qwen05) lacks valid "
                                              "methods.resv.frame.retrieval_ratio;"),
])
def test_a_bad_extract_is_one_sentence(tmp_path, extract, message):
    golden = _write(tmp_path, [extract])
    name = next(iter(golden))
    with pytest.raises(TraceError) as e:
        read_shipped(golden)
    assert str(e.value).startswith(message.format(name=name)) and str(e.value).count(". ") == 0


def test_a_bad_extract_leaves_the_report_a_sentence(tmp_path, monkeypatch):
    import vrex.perf.system_section as section

    monkeypatch.setattr(section, "SHIPPED_GOLDEN", _write(tmp_path, [_extract("mystery", 2000, 500, 0.1, 0.1)]))
    entry = system_entry(_figures(TINY), TINY)
    assert set(entry) == {"error"} and "names config 'mystery'" in entry["error"]
    md = "\n".join(system_markdown(entry, tmp_path)[0])
    assert "Not computed: ratio extract" in md


def test_the_shipped_extracts_are_three_models_of_several_lengths():
    for name, path in SHIPPED_GOLDEN.items():
        check_extract(json.loads(path.read_text()), name)
    groups = read_shipped(SHIPPED_GOLDEN)
    assert set(groups) == {"smollm2", "qwen05", "gemma3"}
    for g in groups.values():
        lengths = [n for n, _ in g.measured.points("resv", "frame")]
        assert len(set(lengths)) >= 2 and all(g.key in name for name in g.names)
