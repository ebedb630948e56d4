"""The per-layer DRE view of `vrex perf --layer-timeline`: computed from the figures given, exposed time by
construction from the timeline, options and their area from the records, the CLI's outputs."""

import json
import random

import pytest

from vrex.cli import main
from vrex.config import load_config
from vrex.perf.dre_timing import dre_timing
from vrex.perf.figures_input import cycle_records, figures_from_dict, read_figures_files
from vrex.perf.layer_timeline import (dre_options, intersection_measure, interval_measure, layer_timeline, layer_view,
                                      _rows)
from vrex.perf.model import simulate_step, vrex_system
from vrex.perf.policies import policies
from vrex.perf.workload import frame_step

EDGE = load_config("edge")
KV = (2048, 40960)


def _figures(per_unit=1, overhead=28, passes=2.5, arrival=8.0):
    return figures_from_dict({"meta": {"config_hash": EDGE.hash()}, "components": {
        "hcu": {"cycles": {"per_token": {"overhead": 3, "per_unit": 1}}},
        "wtu": {"cycles": {"per_row": {"overhead": overhead, "per_unit": per_unit, "per_pass_overhead": 17},
                           "mean_passes": passes}},
        "kvmu": {"cycles": {"bytes_per_cycle": 15.8, "bus_utilisation": 0.99, "arrival_cycles_per_token": arrival,
                            "prefetch_bytes_per_cycle": 15.8, "evict_bytes_per_cycle": 8.8}}}}, "figures.json")


def _by(view):
    return {(r["batch"], r["kv"], r["step"]): r for r in view["rows"]}


def test_the_view_is_computed_from_the_figures_given():
    base = layer_timeline(EDGE, _figures(), kv_sizes=KV, batches=(1,), options=False)
    slower = layer_timeline(EDGE, _figures(per_unit=3), kv_sizes=KV, batches=(1,), options=False)
    formula = layer_timeline(EDGE, None, kv_sizes=KV, batches=(1,), options=False)
    assert base["provenance"]["wtu"].startswith("measured (figures.json)")
    assert base["provenance"]["kvmu"].startswith("measured (figures.json: arrival 8 cycles per token")
    assert formula["provenance"]["wtu"].startswith("formula") and formula["provenance"]["hcu"].startswith("formula")
    b, s = _by(base), _by(slower)
    for key, r in b.items():
        assert s[key]["lxe_us"] == pytest.approx(r["lxe_us"])            # a WTU figure moves the WTU only
        assert s[key]["hcu_us"] == pytest.approx(r["hcu_us"])
        if r["wtu_us"]:
            assert s[key]["wtu_us"] > r["wtu_us"]
    # the WTU busy time is the measured cycles of its rows over the cores: 40K frame, 320 rows of 1280 clusters
    r = b[(1, 40960, "frame")]
    rows, words = 10 * 32, 1280 // 16
    cycles = rows * (28 + 2.5 * words + 17 * 0.5) + 8 * words
    assert r["cycles"]["wtu"] == pytest.approx(cycles)
    assert r["wtu_us"] == pytest.approx(cycles / (8 * 800e6) * 1e6)
    # the KVMU's arrival: 10 tokens × 8 KV heads × 8 cycles, over 8 cores
    assert r["cycles"]["kvmu"] == pytest.approx(10 * 8 * 8.0)
    assert layer_timeline(EDGE, _figures(arrival=80.0), kv_sizes=KV, batches=(1,),
                          options=False)["rows"][0]["kvmu_us"] == pytest.approx(10 * b[(1, 2048, "frame")]["kvmu_us"])


def test_interval_arithmetic_matches_a_brute_force_count():
    rng = random.Random(1)
    for _ in range(50):
        xs = [(a, a + rng.randint(0, 6)) for a in (rng.randint(0, 40) for _ in range(rng.randint(0, 6)))]
        ys = [(a, a + rng.randint(0, 6)) for a in (rng.randint(0, 40) for _ in range(rng.randint(0, 6)))]
        cover = lambda ivs, t: any(a <= t < b for a, b in ivs)          # noqa: E731
        assert interval_measure(xs) == sum(cover(xs, t) for t in range(50))
        assert intersection_measure(xs, ys) == sum(cover(xs, t) and cover(ys, t) for t in range(50))


@pytest.mark.parametrize("overhead", [28, 2_000_000])
def test_exposed_is_dre_minus_its_overlap_with_the_layers_lxe(overhead):
    """By construction from the step's timeline: per layer, exposed = |DRE| − |DRE ∩ LXE of the layer| ≥ 0, the
    DRE intervals are the layer's HCU and WTU tasks (and the KVMU's work), the LXE's its compute tasks."""
    figs = _figures(overhead=overhead)
    dre = dre_timing(EDGE, figs)
    system = vrex_system(EDGE, policies(EDGE), figures=figs)
    r = simulate_step(EDGE, system, frame_step(EDGE, 8192, 1), dre)
    for layer in (0, 1, 16):
        v = layer_view(EDGE, r, figs, system.platform, layer)
        names = {t.name for t in r.timeline.tasks}
        assert f"hcu{layer}" in names and f"wtu{layer + 1}" in names
        lxe = v.lxe_intervals
        assert v.lxe_s == pytest.approx(interval_measure(lxe))
        for name, u in v.units.items():
            assert u.exposed_s == pytest.approx(max(0.0, u.busy_s - intersection_measure(u.intervals, lxe)))
            assert 0 <= u.overlap_s <= min(u.busy_s, v.lxe_s) + 1e-15
        task = next(t for t in r.timeline.tasks if t.name == f"wtu{layer + 1}")
        assert (task.start, task.end) in v.units["wtu"].intervals
    assert (v.exposed_s > 0) == (overhead > 1000)           # a WTU 10^5 × slower no longer hides
    if overhead > 1000:
        assert v.critical_dre_s > 0 and v.exposed_s <= v.dre_s


def test_records_merge_and_the_newest_cycle_record_is_used(tmp_path):
    folder = tmp_path / "cycles"
    folder.mkdir()
    h = EDGE.hash()
    old = folder / f"wtu-{h}-aaaa.json"
    old.write_text(json.dumps({"component": "wtu", "config_hash": h, "cycles": {
        "per_row": {"overhead": 99, "per_unit": 1}, "mean_passes": 2.0}}))
    new = folder / f"wtu-{h}-bbbb.json"
    new.write_text(json.dumps({"component": "wtu", "config_hash": h, "cycles": {
        "per_row": {"overhead": 28, "per_unit": 1, "per_pass_overhead": 17}, "mean_passes": 2.25}}))
    import os
    os.utime(old, (1, 1))
    (folder / f"kvmu-{h}-cccc.json").write_text(json.dumps({"component": "kvmu", "config_hash": h, "cycles": {
        "bytes_per_cycle": 16, "bus_utilisation": 1.0, "arrival_cycles_per_token": 5}}))
    found = cycle_records(EDGE, folder=folder)
    assert found == [new, folder / f"kvmu-{h}-cccc.json"]
    f = read_figures_files(found)
    assert (f.wtu_overhead, f.wtu_per_pass_overhead, f.wtu_mean_passes) == (28, 17, 2.25)
    assert f.kvmu_arrival_cycles_per_token == 5 and f.config_hash == h and f.file_of("kvmu").endswith("cccc.json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"component": "hcu", "config_hash": "zzz", "cycles": {
        "per_token": {"overhead": 3, "per_unit": 1}}}))
    mixed = read_figures_files(found + [other])
    assert mixed.has_hcu_cycles and any("different configs" in n for n in mixed.notes)


def _area_record(folder, cfg, area, score_mem=1000.0, fmax=900.0):
    d = folder / f"wtu-{cfg.hash()}"
    d.mkdir(parents=True)
    (d / "x.json").write_text(json.dumps({"component": "wtu", "config_hash": cfg.hash(),
                                          "area_breakdown": {"vrex_wtu/score_mem [sram]": score_mem},
                                          "scaled": {"area_mm2": area, "method": "m", "factors": {"area": 2.0},
                                                     "fmax_mhz": fmax, "meets_target_clock": fmax >= 800,
                                                     "clock_mhz": 800.0}}))


def test_options_shorten_the_wtu_and_carry_their_area(tmp_path):
    figs = _figures()
    wide = EDGE.with_overrides({"dre.wtu.lanes": 32}, source="test")
    _area_record(tmp_path, EDGE, 0.06)
    _area_record(tmp_path, wide, 0.09, fmax=700.0)
    opts = {o["name"]: o for o in dre_options(EDGE, figs, kv_sizes=(8192,), batches=(1,), records=tmp_path)}
    base, lanes, overlap = opts["as built"], opts["dre.wtu.lanes 16 → 32"], opts["WTU row overlap"]
    key = "1/8192/frame"
    assert lanes["points"][key]["wtu_us"] < base["points"][key]["wtu_us"]
    assert overlap["points"][key]["wtu_us"] < base["points"][key]["wtu_us"]
    assert lanes["area"]["measured"] and lanes["area"]["mm2_per_core"] == pytest.approx(0.03)
    assert lanes["area"]["mm2_chip"] == pytest.approx(0.24)
    assert lanes["area"]["per_lane_mm2"] == pytest.approx(0.03 / 16)
    assert lanes["area"]["fmax_mhz"] == 700 and lanes["area"]["meets_target_clock"] is False   # the wider WTU
    assert lanes["cycles"].startswith("the base's measured per-row constants")     # no cycle record for 32 lanes
    assert overlap["kind"].startswith("what-if") and not overlap["area"]["measured"]
    assert overlap["area"]["mm2_per_core_at_least"] == pytest.approx(1000.0 * 2.0 * 1e-6)
    # no records: the area says what is missing
    none = {o["name"]: o for o in dre_options(EDGE, figs, kv_sizes=(8192,), batches=(1,), records=tmp_path / "x")}
    assert not none["dre.wtu.lanes 16 → 32"]["area"]["measured"]
    assert "no WTU figures record" in none["dre.wtu.lanes 16 → 32"]["area"]["source"]


def test_cli_prints_and_writes_the_view(tmp_path, capsys, monkeypatch):
    rec = tmp_path / "wtu.json"
    rec.write_text(json.dumps({"component": "wtu", "config_hash": EDGE.hash(), "cycles": {
        "per_row": {"overhead": 28, "per_unit": 1, "per_pass_overhead": 17}, "mean_passes": 2.5}}))
    code = main(["perf", "-c", "edge", "--figures", str(rec), "--no-plot", "--plot", str(tmp_path),
                 "--batches", "1", "--kv-sizes", "1024,40960", "--layer-timeline", "2048,40960"])
    out = capsys.readouterr().out
    assert code == 0
    assert "DRE vs LXE on one layer" in out and f"WTU cycles: measured ({rec}" in out
    assert "HCU cycles: formula" in out
    view = json.loads((tmp_path / "perf.json").read_text())["layer_timeline"]
    assert [r["kv"] for r in view["rows"]] == [2048, 2048, 40960, 40960]
    md = (tmp_path / "layer_timeline.md").read_text()
    assert md.startswith("## The DRE off the critical path") and "| 40K | frame |" in md
    assert str(tmp_path) not in md.split("\n")[2]          # the command line names no machine path


def test_rows_helper_uses_the_config_batches():
    rows = _rows(EDGE, None, None, (2048,), None, None)[0]
    assert sorted({v.batch for v in rows}) == sorted(EDGE.perf.batches)
