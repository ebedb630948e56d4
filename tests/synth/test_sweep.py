"""`vrex sweep`: spec expansion, invalid points, rows, Pareto plots and resuming from the cache."""

import csv
import io
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml

from vrex.errors import UsageError
from vrex.synth.sweep import expand, load_spec, run_sweep

SHIPPED_SPECS = sorted((Path(__file__).parents[2] / "configs" / "sweeps").glob("*.yaml"))


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


def _cluster_spec(tmp_path, lanes):
    return _spec(tmp_path, name="dask", grid={"dre.hcu.lanes": lanes}, options={"activity": False})


def _kill_a_busy_worker(address, rows_file, found):
    """Once one point is done and another is running, SIGKILL the worker that holds it (Dask reruns it)."""
    from distributed import Client

    with Client(address, timeout=10) as c:
        pids = c.run(os.getpid)
        deadline = time.time() + 240
        while time.time() < deadline and "pid" not in found:
            busy = {w: keys for w, keys in c.processing().items() if keys}
            done = rows_file.is_file() and rows_file.read_text().count("\n") >= 1
            if busy and done:
                worker, keys = next(iter(busy.items()))
                found.update(worker=worker, pid=pids[worker], keys=list(keys))
                os.kill(pids[worker], signal.SIGKILL)
            time.sleep(0.2)


def test_sweep_on_a_dask_cluster_survives_a_killed_worker(tmp_path, work_dir, monkeypatch):
    """Points run on a 2-worker LocalCluster; one worker is killed while it holds a point: only that point is
    rerun, every row is measured, and a rerun takes every point from the client's cache."""
    from distributed import Client

    from vrex.golden.dask_local import local_cluster

    monkeypatch.setenv("VREX_BUILD_DIR", str(work_dir / "build"))   # fresh cache: every point is computed
    spec, out = _cluster_spec(tmp_path, [2, 4, 8]), work_dir / "out"
    found = {}
    with local_cluster(2) as cluster:
        killer = threading.Thread(target=_kill_a_busy_worker, args=(cluster.scheduler_address,
                                                                     out / "rows.jsonl", found))
        killer.start()
        res = run_sweep(spec, out_dir=out, scheduler=cluster.scheduler_address, progress=False)
        killer.join()
        assert "pid" in found, "no worker was killed while it held a point"
        with Client(cluster.scheduler_address, timeout=10) as c:
            assert found["worker"] not in c.scheduler_info()["workers"]
            story = c.story(*found["keys"])   # scheduler transitions: (actor, key, start, finish, ...)
    runs = [s for s in story if s[1] in found["keys"] and s[3] == "processing"]
    assert len(runs) >= 2, f"the killed worker's point was not rerun: {story}"
    assert [r["point"] for r in res.rows] == ["dask-lanes_2", "dask-lanes_4", "dask-lanes_8"]
    assert not res.failed and res.cached == 0 and all(r["status"] == "ok" for r in res.rows)
    areas = [r["area_um2"] for r in res.rows]
    assert areas == sorted(areas) and areas[0] > 0
    again = run_sweep(spec, out_dir=out, scheduler="local", workers=1, progress=False)
    assert again.cached == 3 and again.rows == res.rows


def test_an_unreachable_scheduler_fails_fast_and_keeps_the_cache(tmp_path, work_dir, monkeypatch, capsys):
    from vrex.cli import main

    with socket.socket() as s:    # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("VREX_BUILD_DIR", str(work_dir / "build"))
    record = work_dir / "build" / "figures" / "hamming_lanes-0123456789ab" / "0123456789abcdef.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text('{"component": "hamming_lanes"}')
    out = work_dir / "out"
    out.mkdir(exist_ok=True)
    (out / "rows.json").write_text("earlier results\n")
    before = sorted(work_dir.rglob("*"))
    t0 = time.time()
    code = main(["sweep", str(_cluster_spec(tmp_path, [4])), "-o", str(out), "--scheduler", f"tcp://127.0.0.1:{port}"])
    elapsed = time.time() - t0
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 15, (code, elapsed)
    assert f"no Dask scheduler answers at 'tcp://127.0.0.1:{port}' within 10 s" in err and "Traceback" not in err
    assert sorted(work_dir.rglob("*")) == before, "files were written or removed"
    assert (out / "rows.json").read_text() == "earlier results\n"
    assert record.read_text() == '{"component": "hamming_lanes"}'


def test_a_key_twice_in_a_sweep_spec_names_the_key_and_both_lines(tmp_path):
    from vrex.config import ConfigError

    spec = tmp_path / "spec.yaml"
    spec.write_text("name: two\nbase: tiny\ngrid:\n  dre.hcu.lanes: [4, 8]\n  dre.hcu.lanes: [16]\n")
    with pytest.raises(ConfigError) as e:
        load_spec(spec)
    assert str(e.value) == f"{spec}: key 'dre.hcu.lanes' appears twice in one mapping (lines 4 and 5); keep one."
    spec.write_text("grid:\n  dre.hcu.lanes: [4]\noptions:\n  activity: false\n  transactions: 10\n"
                    "  activity: true\n")
    with pytest.raises(ConfigError, match=r"key 'activity' appears twice in one mapping \(lines 4 and 6\)"):
        load_spec(spec)


def test_progress_counts_and_eta():
    from vrex.synth.parallel import Progress

    stream = io.StringIO()
    bar = Progress(4, "sweep x", stream=stream)
    bar.step("a", "cached")
    assert bar.eta() is None
    bar.t0 -= 10
    bar.step("b")
    bar.step("c", "failed")
    assert bar.counts == {"done": 1, "failed": 1, "cached": 1}
    assert bar.eta() == pytest.approx(5, abs=0.5)     # 10 s for 2 computed jobs, 1 left
    lines = [ln.strip() for ln in stream.getvalue().splitlines() if ln.strip()]
    assert lines[-1].startswith("sweep x ") and "3/4, 1 done, 1 failed, 1 cached; 10 s, ETA 5 s  c" in lines[-1]
    bar.step("d")
    assert "4/4, 2 done, 1 failed, 1 cached" in stream.getvalue().splitlines()[-1] and "ETA" not in \
        stream.getvalue().splitlines()[-1]
