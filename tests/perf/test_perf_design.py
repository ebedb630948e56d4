"""Past and against the paper: design sweeps, closing values, and the GPU baselines against published runs."""

import json

import pytest

from vrex.cli import main
from vrex.config import load_config
from vrex.errors import UsageError
from vrex.perf.closure import Gap, metric, plausibility, solve
from vrex.perf.design_sweep import design_choices, load_sweep_spec, pareto, run_design_sweep
from vrex.perf.validation import CALIBRATIONS, MEASUREMENTS, calibrate, validate


def _spec(tmp_path, grid, **extra):
    spec = {"name": "t", "base": "edge", "at": {"kv": 40960, "batch": [1]}, "grid": grid,
            "targets": {"fps": 8, "power_w": 35}, **extra}
    p = tmp_path / "spec.yaml"
    p.write_text(json.dumps(spec))      # JSON is YAML
    return p


def test_design_sweep_rows_obey_their_floors_and_the_pareto_front_is_undominated(tmp_path):
    spec = load_sweep_spec(_spec(tmp_path, {"dre.kvmu.device_capacity_bytes": [0, 2_000_000_000],
                                            "link": ["pcie3x4", "cxl2x16"]}))
    base = load_config("edge")
    res = run_design_sweep(spec, base)
    rows = res["rows"]
    assert len(rows) == 4 and not res["invalid"]
    for r in rows:
        assert r["fps"] == pytest.approx(r["batch"] * 1e3 / r["frame_latency_ms"])
        assert r["fps"] <= r["floor_fps"] and r["power_w"] > 0
    by = {(r["dre.kvmu.device_capacity_bytes"], r["link"]): r for r in rows}
    # the whole cache in device DRAM needs no link; a 2 GB tier does, and a faster link helps it
    assert by[0, "pcie3x4"]["link_payload_gb"] == 0 and by[0, "pcie3x4"]["fps"] == pytest.approx(by[0, "cxl2x16"]["fps"])
    assert by[2_000_000_000, "cxl2x16"]["fps"] > by[2_000_000_000, "pcie3x4"]["fps"]
    front = [rows[i] for i in pareto(rows)]
    for f in front:
        assert not any(o["fps"] >= f["fps"] and o["energy_per_frame_j"] <= f["energy_per_frame_j"]
                       and (o["fps"] > f["fps"] or o["energy_per_frame_j"] < f["energy_per_frame_j"]) for o in rows)
    ch = design_choices(rows, base, spec)
    assert ch["cheapest_at_fps"]["fps"] >= 8 and ch["cheapest_at_fps"]["link"] == "pcie3x4"
    assert ch["fastest_within_power"]["power_w"] <= 35


@pytest.mark.parametrize("grid,message", [
    ({"perf.nope": [1]}, "sweep axis 'perf.nope' is neither a configuration key nor a named axis (link); see "
                         "`vrex config show --doc` for the keys."),
    ({"perf.frame_ratio": [0.3, 1.5]}, "sweep axis perf.frame_ratio value 1.5 is invalid for every point: must be "
                                       "≤ 1."),
    ({"dre.kvmu.device_capacity_bytes": [40_000_000_000]},
     "sweep axis dre.kvmu.device_capacity_bytes value 40000000000 is invalid for every point: is larger than the "
     "device DRAM"),
    ({"link": ["pcie9x1"]}, "sweep axis link: 'pcie9x1' is not a link generation; choose from pcie3x4"),
])
def test_bad_sweep_axes_are_one_sentence(tmp_path, grid, message):
    spec = load_sweep_spec(_spec(tmp_path, grid))
    with pytest.raises(UsageError) as e:
        run_design_sweep(spec, load_config("edge"))
    assert str(e.value).startswith(message)


def test_sweep_cli_writes_rows_and_a_pareto_plot_and_refuses_bad_input(tmp_path, capsys):
    spec = _spec(tmp_path, {"system.dram.bandwidth_gbs": [204.8, 409.6]})
    out = tmp_path / "out"
    assert main(["perf", "--sweep", str(spec), "--plot", str(out), "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert "sweep t: 2 points (0 skipped) at KV 40960 on edge" in text and "≥ 8 FPS at batch 1" in text
    record = json.loads((out / "rows.json").read_text())
    assert len(record["rows"]) == 2 and record["sweep"]["base_hash"] == load_config("edge").hash()
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "rows.csv").read_text().startswith("system.dram.bandwidth_gbs,batch,")
    assert main(["perf", "--sweep", "no-such-sweep", "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vrex: error: --sweep 'no-such-sweep' is neither a YAML file nor a built-in sweep; "
                          "built-in: edge-40k.") and err.count("\n") == 1


def test_a_key_twice_in_a_design_sweep_spec_is_refused(tmp_path):
    from vrex.config import ConfigError

    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\nat:\n  kv: 40960\n  kv: 8192\ngrid:\n  dre.hcu.lanes: [8]\n")
    with pytest.raises(ConfigError) as e:
        load_sweep_spec(str(spec))
    assert str(e.value) == f"{spec}: key 'kv' appears twice in one mapping (lines 3 and 4); keep one."


def test_shipped_sweep_is_a_500_point_grid():
    spec = load_sweep_spec("edge-40k")
    n = 1
    for values in spec.grid.values():
        n *= len(values)
    assert n == 500 and spec.kv == 40960 and spec.targets == {"fps": 8, "power_w": 35}


def test_closure_finds_the_value_that_meets_a_number_or_says_none():
    cfg = load_config("edge")
    gap = Gap("TPOT at 1K", "decode", 1024, 1, 95.0)
    e = solve(cfg, gap, "perf.vrex.dram_efficiency", 0.2, 1.0)
    at = cfg.with_overrides({"perf.vrex.dram_efficiency": e, "perf.kv_sizes": [1024], "perf.batches": [1]})
    assert metric(at, gap) == pytest.approx(95.0, rel=1e-4) and 0.2 < e < 0.9
    assert plausibility("perf.vrex.dram_efficiency", e)[0] is True
    assert plausibility("perf.vrex.dram_efficiency", 0.3)[0] is False
    # with the whole 40K cache in device DRAM no ratio makes a frame take 254 ms: the finding is "none"
    assert solve(cfg, Gap("frame at 40K", "frame", 40960, 1, 254.0), "perf.frame_ratio", 0.0, 1.0) is None
    # a capacity closes it, and the closing capacity leaves KV on the SSD
    cap = solve(cfg, Gap("frame at 40K", "frame", 40960, 1, 254.0), "dre.kvmu.device_capacity_bytes",
                0.5e9, cfg.device_kv_capacity_bytes(1), integer=True)
    assert cap is not None and cap < 40960 * cfg.model.kv_bytes_per_token


def test_gpu_baselines_reproduce_their_calibration_runs():
    """The configs' GPU factors are the ones the published runs imply (rounded); a change of the GPU model that
    moves them fails here. Held-out runs are reported, not bounded."""
    bases = {"edge": load_config("edge"), "server": load_config("server")}
    fitted = calibrate(bases)
    for (base, key), value in fitted.items():
        section, name = key.split(".")[1:]
        configured = getattr(getattr(bases[base].perf, section), name)
        assert configured == pytest.approx(value, rel=0.03), (base, key)
    rows = validate(bases)
    assert len(rows) == len(MEASUREMENTS) >= 4 + len(CALIBRATIONS)
    for r in rows:
        assert r["model_tok_s"] <= r["floor_tok_s"] * (1 + 1e-9)
        if r["role"].startswith("calibrates"):
            assert abs(r["rel"]) < 0.03, r
    assert {r["platform"] for r in rows if r["role"] == "held out"} == {"Jetson AGX Orin", "A100"}


def test_strict_refuses_a_golden_json_of_another_config(tmp_path, capsys):
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"config": "smollm2", "config_hash": "0123456789ab",
                             "methods": {"resv": {"frame": {"retrieval_ratio": 0.5}}}}))
    base = ["perf", "--config", "tiny", "--no-plot", "--no-figures", "--plot", str(tmp_path), "--golden-json",
            str(g), str(g)]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert f"warning: golden JSON {g} was made with config smollm2 (hash 0123456789ab)" in out
    assert main(base + ["--strict"]) == 2
    assert "--strict refuses it: regenerate it with -c tiny, or drop --strict." in capsys.readouterr().err


@pytest.mark.slow
def test_results_document_regenerates_from_one_command(tmp_path):
    out = tmp_path / "results-perf.md"
    assert main(["perf", "--results", str(out), "--no-figures"]) == 0
    text = out.read_text()
    for heading in ("## Provenance", "## Verdict", "## The device-memory tier", "## Closing the gaps",
                    "## Baselines against published measurements", "## Past the paper: the design sweep"):
        assert heading in text
    assert f"`edge` (hash `{load_config('edge').hash()}`)" in text and "none (paper Table II ratios)" in text


def test_closing_search_starts_at_a_capacity_the_kvmu_accepts():
    """The capacity search of the results document starts at the least capacity both the system model and the
    KVMU's memory map accept (its ring holds the recent window plus one step): that config loads, one byte less of
    the KVMU's own minimum does not."""
    from vrex.config import ConfigError
    from vrex.perf.results import KVS, _min_capacity

    base = load_config("edge")
    for kv in KVS:
        at = base.with_overrides({"perf.kv_sizes": [kv], "perf.batches": [1]})
        cap = _min_capacity(at, kv)
        assert at.with_overrides({"dre.kvmu.device_capacity_bytes": cap}).kvmu_map.ring_tokens >= \
            at.resv.recent_window_tokens
    with pytest.raises(ConfigError, match="recent window plus one step"):
        at.with_overrides({"dre.kvmu.device_capacity_bytes": at.min_device_capacity_bytes() - 1})
