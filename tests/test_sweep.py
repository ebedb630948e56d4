"""`vrex sweep`: spec expansion, invalid points, rows, Pareto plots and resuming from the cache."""

import csv
import json
from pathlib import Path

import pytest
import yaml

from vrex.errors import UsageError
from vrex.synth.sweep import expand, load_spec, run_sweep

SHIPPED_SPECS = sorted((Path(__file__).parents[1] / "configs" / "sweeps").glob("*.yaml"))


def _spec(tmp_path, **kw):
    data = {"name": "two", "base": "tiny", "components": ["hamming_lanes"],
            "grid": {"dre.hcu.lanes": [4, 8, 5]}, "options": {"activity": False}}
    data.update(kw)
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_expand_names_points_and_reports_invalid_ones(tmp_path):
    spec = load_spec(_spec(tmp_path, grid={"dre.hcu.lanes": [4, 5], "resv.hash_bits": [16, 32]}))
    points, invalid = expand(spec)
    assert [n for n, _, _ in points] == ["two-lanes_4-hash_bits_16", "two-lanes_4-hash_bits_32"]
    assert points[1][2].dre.hcu.lanes == 4 and points[1][2].resv.hash_bits == 32 and points[1][2].name == points[1][0]
    assert [n for n, _, _ in invalid] == ["two-lanes_5-hash_bits_16", "two-lanes_5-hash_bits_32"]
    assert "dre.hcu.lanes = 5: must divide the open-cluster capacity" in invalid[0][2]


def test_bad_specs_give_clear_errors(tmp_path):
    with pytest.raises(UsageError, match="grid must map dotted config keys to non-empty lists"):
        load_spec(_spec(tmp_path, grid={"dre.hcu.lanes": 4}))
    with pytest.raises(UsageError, match="unknown key"):
        load_spec(_spec(tmp_path, grids={}))
    with pytest.raises(UsageError, match="no such file"):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(UsageError, match="unknown component"):
        run_sweep(_spec(tmp_path, components=["nope"]), out_dir=tmp_path / "o", progress=False)


def test_unknown_grid_key_is_an_invalid_point(tmp_path):
    _, invalid = expand(load_spec(_spec(tmp_path, grid={"dre.hcu.lane": [4]})))
    assert "is not a configuration key" in invalid[0][2]


def test_two_point_sweep_rows_plots_and_resume(tmp_path, work_dir, monkeypatch):
    spec = _spec(tmp_path)
    res = run_sweep(spec, out_dir=work_dir, workers=2, progress=False)
    assert [r["point"] for r in res.rows] == ["two-lanes_4", "two-lanes_8"] and not res.failed
    assert [n for n, _, _ in res.invalid] == ["two-lanes_5"]
    with open(res.csv) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["dre.hcu.lanes"]) for r in rows] == [4, 8]
    for r in rows:
        assert r["config_hash"] and float(r["area_um2"]) > 0 and float(r["fmax_mhz"]) > 0
        assert float(r["power_default_mw"]) > 0 and float(r["scaled_area_mm2"]) > 0 and r["status"] == "ok"
    assert float(rows[1]["area_um2"]) > float(rows[0]["area_um2"])
    data = json.loads(res.json.read_text())
    assert data["sweep"]["grid"] == {"dre.hcu.lanes": [4, 8, 5]} and data["invalid"][0]["name"] == "two-lanes_5"
    assert {p.name for p in res.plots} == {"pareto_area_hamming_lanes.png", "pareto_power_hamming_lanes.png"}
    assert all(p.stat().st_size > 1000 for p in res.plots)
    expanded = yaml.safe_load((work_dir / "expanded.yaml").read_text())
    assert [p["name"] for p in expanded["points"]] == ["two-lanes_4", "two-lanes_8"]
    # a second run (as after an interruption, in this process) takes every record from the cache
    monkeypatch.setattr("vrex.synth.figures._library_figures",
                        lambda *a, **k: pytest.fail("the resumed sweep recomputed library figures"))
    again = run_sweep(spec, out_dir=work_dir, workers=1, progress=False)
    assert again.rows == res.rows


@pytest.mark.parametrize("path", SHIPPED_SPECS, ids=lambda p: p.stem)
def test_shipped_sweep_specs_expand(path):
    """Every example spec under configs/sweeps loads, names registered components and has valid points."""
    from vrex.hdl import registry

    spec = load_spec(path)
    points, _ = expand(spec)
    assert points and set(spec.components) <= set(registry.component_names())
