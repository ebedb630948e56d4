"""Measured inputs end to end: ratio fits over session lengths, a golden-JSON round trip, KVMU traffic."""

import json
import math

import pytest

from vrex.config import load_config
from vrex.perf.golden_input import read_golden_jsons
from vrex.perf.model import simulate_step, vrex_system
from vrex.perf.dre_timing import dre_timing
from vrex.perf.policies import policies
from vrex.perf.ratios import fit_ratio
from vrex.perf.workload import frame_step


def _report(n_offloaded, steps, frame_ratio, text_ratio=0.02, **extra):
    stage = {"offloaded_tokens": n_offloaded, "layer_head_steps": steps}
    return {"config": "smollm2", "config_hash": "feedbeef0000", "trace": {"tokens": 4000, "head_dim": 64},
            "methods": {"resv": {"frame": {"retrieval_ratio": frame_ratio, **stage},
                                 "text": {"retrieval_ratio": text_ratio, **stage},
                                 "e2e": {"top1_agreement": 0.97, "logit_kl": 0.01, "answer_nll": 1.2, "ratio": 0.05}}},
            **extra}


def test_power_and_log_fits_recover_their_laws_and_report_residuals():
    pts = [(n, 3.0 * n ** -0.35) for n in (1000, 2000, 8000)]
    fit = fit_ratio(pts, "power")
    assert (fit.form, fit.a, fit.b) == ("power", pytest.approx(3.0), pytest.approx(-0.35))
    assert max(abs(r) for r in fit.residuals) < 1e-12
    assert fit(40000) == pytest.approx(3.0 * 40000 ** -0.35)
    assert "extrapolated to n=40000 (5.0× the longest measured)" in fit.describe(40000)
    log = fit_ratio([(n, 0.9 - 0.05 * math.log(n)) for n in (500, 5000)], "log_linear")
    assert (log.a, log.b) == (pytest.approx(0.9), pytest.approx(-0.05))
    # noisy points: residuals are what the line misses, and they are printed
    noisy = fit_ratio([(1000, 0.5), (2000, 0.3), (4000, 0.35)], "power")
    assert noisy.residuals == pytest.approx([r - noisy(n) for n, r in noisy.points])
    assert any(abs(r) > 0.01 for r in noisy.residuals) and "residual" in noisy.describe()
    # one length, or the constant form: the mean; values are clipped to [0, 1]
    assert fit_ratio([(3000, 0.4), (3000, 0.2)], "power").form == "constant"
    assert fit_ratio([(3000, 0.4), (3000, 0.2)], "power")(10) == pytest.approx(0.3)
    assert fit_ratio([(10, 0.9), (100, 0.99)], "power")(1e9) <= 1.0
    assert fit_ratio([(10, 0.5), (100, 0.05)], "log_linear")(1e9) == 0.0


def test_several_golden_jsons_make_a_fit_that_the_model_uses(tmp_path):
    files = []
    for n, r in ((1500, 0.84), (3000, 0.70), (7000, 0.55)):
        p = tmp_path / f"g{n}.json"
        p.write_text(json.dumps(_report(n * 20, 20, r)))
        files.append(p)
    measured = read_golden_jsons(files)
    assert measured.points("resv", "frame") == [(1500.0, 0.84), (3000.0, 0.70), (7000.0, 0.55)]
    cfg = load_config("edge").with_overrides({"perf.ratio_fit": "power"})
    pol = policies(cfg, measured)["resv"]
    fit = fit_ratio(measured.points("resv", "frame"), "power")
    assert pol.frame_fit == dataclass_fit(fit, files)
    # the model's ratio at each KV size is the fit at that size's candidates; it falls with the cache
    ratios = [pol.ratio("frame", cfg.kv_candidates(kv)) for kv in cfg.perf.kv_sizes if cfg.kv_candidates(kv)]
    assert ratios == sorted(ratios, reverse=True) and ratios[-1] == pytest.approx(fit(cfg.kv_candidates(40960)))
    assert "measured" in pol.source and "power" in pol.source
    # constant and log-linear forms are the config's choice
    assert policies(cfg.with_overrides({"perf.ratio_fit": "constant"}), measured)["resv"].ratio("frame", 39936) == \
        pytest.approx((0.84 + 0.70 + 0.55) / 3)


def dataclass_fit(fit, files):
    import dataclasses

    return dataclasses.replace(fit, sources=tuple(str(f) for f in files))


def test_golden_json_round_trip(tmp_path):
    """A report written by the golden model (tiny config, two session lengths) reads back as the same ratios, with
    lengths = offloaded candidates per (layer, head, step), and the fit goes through both points."""
    from vrex.golden.evaluation.offline import evaluate as golden_evaluate
    from vrex.golden.traces.sources import TraceOptions, make_trace

    cfg = load_config("tiny")
    files, reports = [], []
    for frames in (14, 30):
        trace = make_trace(cfg, "synthetic", layers=[0], options=TraceOptions(frames=frames, seed=1))
        rep = golden_evaluate(cfg, trace, methods=("resv", "rekv"), layers=[0])
        path = tmp_path / f"golden-{frames}.json"
        path.write_text(json.dumps(rep))
        files.append(path)
        reports.append(rep)
    measured = read_golden_jsons(files)
    for method, policy in (("resv", "resv"), ("rekv", "rekv")):
        for stage in ("frame", "text"):
            expect = [(r["methods"][method][stage]["offloaded_tokens"] / r["methods"][method][stage]["layer_head_steps"],
                       r["methods"][method][stage]["retrieval_ratio"]) for r in reports]
            got = measured.points(policy, stage)
            assert [x for p in got for x in p] == pytest.approx([x for p in expect for x in p])
    assert measured.tokens_per_cluster()[0] == pytest.approx(
        sum(r["resv"]["resv"]["mean_cluster_size"] for r in reports) / 2)
    fit = policies(cfg, measured)["resv"].frame_fit
    assert fit.form == "power" and max(abs(x) for x in fit.residuals) < 1e-9
    assert [fit(n) for n, _ in fit.points] == pytest.approx([r for _, r in fit.points])


def test_kvmu_counters_replace_the_analytic_cluster_runs(tmp_path):
    """Measured KVMU runs (payload per command, moved per payload byte) set the cluster-layout transfer; longer
    measured runs move fewer bytes and commands, a larger measured overhead moves more."""
    cfg = load_config("edge").with_overrides({"dre.kvmu.device_capacity_bytes": 2_000_000_000,
                                              "perf.kv_sizes": [40960], "perf.batches": [1]})

    def frame(kvmu):
        p = tmp_path / f"k{len(list(tmp_path.iterdir()))}.json"
        p.write_text(json.dumps(_report(4000, 20, 0.3, kvmu=kvmu)))
        m = read_golden_jsons([p])
        sys = vrex_system(cfg, policies(cfg, m), kvmu=m.kvmu())
        return simulate_step(cfg, sys, frame_step(cfg, 40960, 1), dre_timing(cfg)), m

    def counters(payload, moved, commands):
        return {"frame": {"payload_bytes": payload, "bytes_moved": moved, "bursts": commands * 2,
                          "commands": commands, "stalls": 0}, "config_hash": "feedbeef0000",
                "device_capacity_bytes": 1e9}

    # golden slices are 64 x 2 = 128 B: 128 kB per command = 1000 token slices; 4 kB per command = 32
    long_run, m = frame(counters(128e6, 128e6, 1000))
    short_run, _ = frame(counters(4.096e6, 4.096e6, 1000))
    wasteful, _ = frame(counters(128e6, 192e6, 1000))
    assert m.kvmu().run("frame") == pytest.approx((1000.0, 1.0))
    assert long_run.counters.read.payload == pytest.approx(short_run.counters.read.payload)
    assert long_run.counters.read.moved < short_run.counters.read.moved
    assert long_run.counters.read.commands < short_run.counters.read.commands
    assert wasteful.counters.read.moved == pytest.approx(1.5 * wasteful.counters.read.payload)
    # with the KVMU's split, the retrieval runs are the prefetch part: eviction's one-token commands do not count
    split = counters(128e6 + 4.096e6, 128e6 + 4.096e6, 1000 + 32000)
    split["frame"]["prefetch"] = {"payload_bytes": 128e6, "bytes_moved": 128e6, "bursts": 2000, "commands": 1000}
    split["frame"]["evict"] = {"payload_bytes": 4.096e6, "bytes_moved": 4.096e6, "bursts": 32000, "commands": 32000}
    _, ms = frame(split)
    assert ms.kvmu().run("frame") == pytest.approx((1000.0, 1.0))
    # counters that cannot be used fall back to the analytic runs, with a note
    broken, mb = frame({"frame": {"payload_bytes": 1e6}})
    assert mb.kvmu() is None and any("kvmu.frame.bytes_moved missing" in n for n in mb.notes)
