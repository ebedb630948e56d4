"""The core's retrieval-path cycle model in `vrex perf`: a core record's parameters time the layer's hash, score,
HCU and WTU tasks with the model's phases, and a changed record changes the figures."""

import json

import pytest

from vrex.config import load_config
from vrex.perf.dre_timing import dre_timing
from vrex.perf.figures_input import figures_from_dict, read_figures_files
from vrex.perf.model import simulate_step, vrex_system
from vrex.perf.policies import policies
from vrex.perf.workload import frame_step
from vrex.sim.core.cycle_model import params_record, step_phases
from vrex.sim.core.cycles import retrieval_path_record

EDGE = load_config("edge")


def _figures(core=None):
    comps = {"hcu": {"cycles": {"per_token": {"overhead": 3, "per_unit": 1}}},
             "wtu": {"cycles": {"per_row": {"overhead": 28, "per_unit": 1, "per_pass_overhead": 17},
                                "mean_passes": 2.5}}}
    if core is not None:
        comps["core"] = {"cycles": {"retrieval_path": {"parameters": core}}}
    return figures_from_dict({"meta": {"config_hash": EDGE.hash()}, "components": comps}, "figures.json")


def _tasks(figures, kv=40960):
    r = simulate_step(EDGE, vrex_system(EDGE, policies(EDGE)), frame_step(EDGE, kv, 1), dre_timing(EDGE, figures))
    return r, {t.name: t for t in r.timeline.tasks}


def test_the_core_record_carries_the_models_parameters():
    rec = retrieval_path_record(EDGE)
    assert rec["parameters"] == params_record(EDGE)
    assert set(rec["exact_phases"]) | set(rec["bounded_phases"]) == {"exits", "hash", "cluster", "score", "select",
                                                                     "kvmu", "records"}
    assert "core-medium" in rec["checked_on"]


def test_perf_times_the_retrieval_path_with_the_core_model():
    p = params_record(EDGE)
    dre = dre_timing(EDGE, _figures(p))
    assert dre.core_path is not None and "core's cycle model" in dre.cycles_source
    r, tasks = _tasks(_figures(p))
    m = EDGE.model
    ph = step_phases(p, tokens=10, exits=10, n_open=32, tokens_per_cluster=32.0, clusters=1280, rows=10 * m.group_size,
                     wtu_row_cycles=28 + 1 * 80 * 2.5 + 17 * 0.5, hcu_token_cycles=3 + 2)
    plat = vrex_system(EDGE, policies(EDGE)).platform
    clock, cores = plat.clock_hz, plat.cores
    per_core = m.kv_heads / min(cores, m.kv_heads) / clock       # 8 contexts over 8 cores
    for task, phases in (("hash16", ("hash",)), ("score17", ("score",)), ("wtu17", ("select",)),
                         ("hcu16", ("exits", "cluster", "kvmu", "records"))):
        t = tasks[task]
        assert t.end - t.start == pytest.approx(sum(ph[x] for x in phases) * per_core), task


def test_a_changed_core_record_changes_the_figures():
    p = params_record(EDGE)
    base, tb = _tasks(_figures(p))
    slow, ts = _tasks(_figures({**p, "dpe_latency": p["dpe_latency"] + 50, "Bm": 2 * p["Bm"]}))
    none, tn = _tasks(_figures())
    d = lambda ts, k: ts[k].end - ts[k].start      # noqa: E731
    assert d(ts, "hash16") > d(tb, "hash16") and d(ts, "score17") > d(tb, "score17") and slow.latency > base.latency
    assert d(tn, "hcu16") != d(tb, "hcu16") and d(tn, "score17") != d(tb, "score17")   # formula vs model


def test_a_core_cycle_record_file_is_read_with_the_other_records(tmp_path):
    rec = tmp_path / f"core-{EDGE.hash()}-x.json"
    rec.write_text(json.dumps({"component": "core", "config_hash": EDGE.hash(),
                               "cycles": {"retrieval_path": retrieval_path_record(EDGE)}}))
    f = read_figures_files([rec])
    assert dict(f.core_path) == params_record(EDGE) and "retrieval-path cycles" in f.replaced_values()
