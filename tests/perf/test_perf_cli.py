"""``vrex perf``: the comparison table with the paper's numbers, the JSON record and the plot files."""

import json

import pytest

from vrex.cli import build_parser, main
from vrex.perf.energy import VREX_PARTS


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["perf", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--config", "--json", "--plot", "--golden-json", "--figures", "--batches"):
        assert opt in out


def test_edge_table_has_the_papers_numbers_beside_ours(tmp_path, capsys):
    code, out, err = run(capsys, "perf", "--no-figures", "--no-plot", "--plot", str(tmp_path), "--json",
                         str(tmp_path / "sub" / "edge.json"))
    assert code == 0, err
    assert "V-Rex8 + ReSV vs Jetson AGX Orin + {FlexGen, InfiniGen, InfiniGenP, ReKV}" in out
    assert "HCU cycles from the documented formula" in out and "ReSV 32.7% / 2.5% [config (paper Table II)]" in out
    assert "Physical limit — weight-streaming floor" in out and "15.87 GB at 204.8 GB/s" in out
    # paper Fig. 13 latencies, TPOT range, speedup and energy-gain columns
    rows = {}
    for line in out.splitlines():       # the first table is the frame table
        if line.strip().startswith(("1K  1", "40K  1")):
            rows.setdefault(line.split("|")[0].strip(), line)
    assert " 121 " in rows["1K  1"] and " 254 " in rows["40K  1"]
    assert "2.2–7.3" in rows["40K  1"] and "10.2" in rows["40K  1"] and "89–97" in out
    for heading in ("Frame processing", "Text generation", "Ranges over the KV sizes", "Session (26 frames",
                    "Hardware ablation (paper Fig. 16)", "Roofline (paper Fig. 18)"):
        assert heading in out
    record = json.loads((tmp_path / "sub" / "edge.json").read_text())
    assert record == json.loads((tmp_path / "perf.json").read_text())
    assert record["meta"]["config"] == "edge" and len(record["meta"]["config_hash"]) == 12
    assert record["paper"]["frame_latency_ms"]["1"]["40960"] == 254
    assert len(record["points"]) == 10 and set(record["points"][0]["systems"]) == {
        "vrex", "gpu:flexgen", "gpu:infinigen", "gpu:infinigenp", "gpu:rekv"}
    frame = record["points"][0]["systems"]["vrex"]["frame"]
    assert frame["energy_j"] > 0 and set(frame["energy_parts_j"]) == set(VREX_PARTS)
    assert not list(tmp_path.glob("*.png"))


def test_plots_are_written(tmp_path, capsys):
    code, out, _ = run(capsys, "perf", "--config", "tiny", "--no-figures", "--plot", str(tmp_path))
    assert code == 0
    assert "paper columns: none (the paper reports V-Rex8 and V-Rex48 running llama-3-8b" in out
    for name in ("latency_fps.png", "breakdown.png", "roofline.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    assert f"plots: {tmp_path / 'latency_fps.png'}" in out


def test_default_figures_are_picked_up_and_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VREX_BUILD_DIR", str(tmp_path))
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "figures.json").write_text(json.dumps(
        {"components": {"hcu": {"cycles": {"per_token": {"overhead": 5, "per_unit": 1}}}}}))
    code, out, _ = run(capsys, "perf", "--config", "tiny", "--no-plot")
    assert code == 0
    assert f"HCU cycles from {tmp_path / 'report' / 'figures.json'}" in out
    assert "note: " in out and "components.wtu.cycles.per_row.overhead missing; WTU cycles use the formula" in out
    assert (tmp_path / "perf").is_dir()


def test_golden_json_ratios_are_used_and_named(tmp_path, capsys):
    g = tmp_path / "golden.json"
    g.write_text(json.dumps({"methods": {"resv": {"frame": {"retrieval_ratio": 0.2},
                                                   "text": {"retrieval_ratio": 0.01}}}}))
    code, out, _ = run(capsys, "perf", "--config", "tiny", "--no-plot", "--no-figures", "--plot", str(tmp_path),
                       "--golden-json", str(g))
    assert code == 0
    assert f"ReSV 20.0% / 1.0% [measured ({g}; constant)]" in out
    assert "method 'rekv' missing; its ratios fall back to paper Table II" in out


def test_shipped_ratios_give_figures_per_model(tmp_path, capsys):
    code, out, err = run(capsys, "perf", "--shipped-ratios", "--no-plot", "--no-figures", "--plot", str(tmp_path),
                         "--kv-sizes", "20480,40960", "--batches", "4")
    assert code == 0, err
    record = json.loads((tmp_path / "perf.json").read_text())
    per = record["per_model"]
    assert set(per) == {"smollm2", "qwen05", "gemma3"} and record["headline_model"]["config"] == "smollm2"
    assert "Per model: each model's golden reports fitted alone" in out
    for entry in per.values():
        assert entry["model"] in out and all(r["frame_factor"] > 0 for r in entry["frame"])
    # the tables above the per-model block are the headline model's
    assert record["systems"]["vrex"]["ratio_fits"]["frame"]["sources"] == per["smollm2"]["golden"]
    at_40k = {k: e["frame"][-1] for k, e in per.items()}
    assert at_40k["qwen05"]["frame_ratio"] > at_40k["smollm2"]["frame_ratio"]
    assert at_40k["qwen05"]["fps"] < at_40k["smollm2"]["fps"]


def test_golden_jsons_of_two_models_are_fitted_apart(tmp_path, capsys):
    files = []
    for i, (config, n, r) in enumerate((("smollm2", 500, 0.02), ("smollm2", 3500, 0.06), ("qwen05", 700, 0.45),
                                         ("qwen05", 3900, 0.55))):
        stage = {"retrieval_ratio": r, "offloaded_tokens": n * 10, "layer_head_steps": 10}
        g = tmp_path / f"g{i}.json"
        g.write_text(json.dumps({"config": config, "methods": {"resv": {"frame": stage, "text": stage}}}))
        files.append(str(g))
    code, out, err = run(capsys, "perf", "--config", "qwen05", "--no-plot", "--no-figures", "--plot", str(tmp_path),
                         "--kv-sizes", "40960", "--batches", "4", "--golden-json", *files)
    assert code == 0, err
    record = json.loads((tmp_path / "perf.json").read_text())
    assert record["headline_model"]["config"] == "qwen05"         # the config's own model leads
    assert record["systems"]["vrex"]["ratio_fits"]["frame"]["points"] == [[700.0, 0.45], [3900.0, 0.55]]
    assert record["per_model"]["smollm2"]["ratios"]["resv"]["stages"]["frame"]["measured_n"] == [500.0, 3500.0]


@pytest.mark.parametrize("argv,message", [
    (["--batches", "one"], "vrex: error: --batches 'one': give comma-separated integers, e.g. --batches 1,4,8,16."),
    (["--batches", "1,64"], "vrex: error: command line: system.dram.capacity_gb = 32.0: is too small for batch 64"),
    (["--golden-json", "nope.json"], "vrex: error: golden JSON nope.json does not exist"),
    (["--shipped-ratios", "--golden-json", "g.json"],
     "vrex: error: --shipped-ratios and --golden-json both give the retrieval ratios; give one of them."),
])
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    code, out, err = run(capsys, "perf", "--no-plot", "--no-figures", "--plot", str(tmp_path), *argv)
    assert code == 2
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_set_overrides_any_key(tmp_path, capsys):
    base = ["perf", "--no-plot", "--no-figures", "--plot", str(tmp_path), "--kv-sizes", "40960", "--batches", "1",
            "--set", "dre.kvmu.device_capacity_bytes=1000000000"]
    code, out, _ = run(capsys, *base)
    assert code == 0
    rec = json.loads((tmp_path / "perf.json").read_text())
    code, out2, _ = run(capsys, *base, "--set", "perf.reuse_fraction=0.5", "--set", "system.link.bandwidth_gbs=8")
    assert code == 0
    rec2 = json.loads((tmp_path / "perf.json").read_text())
    assert rec2["meta"]["config_hash"] != rec["meta"]["config_hash"]
    lat = [r["points"][0]["systems"]["vrex"]["frame"]["latency_s"] for r in (rec, rec2)]
    assert lat[1] < lat[0] / 2
    code, _, err = run(capsys, *base, "--set", "perf.nope=1")
    assert code == 2 and "perf.nope = 1: is not a configuration key" in err
    code, _, err = run(capsys, *base, "--set", "novalue")
    assert code == 2 and "give KEY=VALUE" in err
