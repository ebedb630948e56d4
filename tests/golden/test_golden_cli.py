"""``vrex golden``, ``vrex golden-jobs`` and ``vrex golden-bench``: table, JSON contract, plot, jobs, errors."""

import json

import pytest

from vrex.cli import build_parser, main

CONTRACT_METHODS = ("full", "flexgen", "infinigen", "rekv", "quest", "oracle_topp", "resv")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("cmd", ["golden", "golden-jobs", "golden-bench"])
def test_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([cmd, "--help"])
    assert e.value.code == 0 and "--config" in capsys.readouterr().out


def test_golden_prints_table_writes_json_and_plot(capsys, tmp_path):
    js, png = tmp_path / "r.json", tmp_path / "r.png"
    code, out, err = run(capsys, "golden", "--config", "tiny", "--trace", "synthetic", "--frames", "20",
                         "--json", str(js), "--plot", str(png))
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("method"))
    rows = [line.split("|")[0].strip() for line in lines[header + 2: header + 10]]
    assert set(CONTRACT_METHODS) | {"resv_exact"} == set(rows)
    assert "hash Hamming vs cosine" in out and "layer 1 done (2/2)" in err
    report = json.loads(js.read_text())
    assert report["config"] == "tiny" and len(report["config_hash"]) == 12 and report["trace"]["kind"] == "synthetic"
    for m in CONTRACT_METHODS:
        for stage in ("frame", "text"):
            s = report["methods"][m][stage]
            assert {"retrieval_ratio", "recall", "output_error", "bytes_fetched"} <= set(s)
            assert all(isinstance(s[k], float) for k in ("retrieval_ratio", "recall", "output_error"))
    r = report["methods"]
    assert r["full"]["frame"]["output_error"] == 0.0 and r["flexgen"]["frame"]["retrieval_ratio"] == 1.0
    assert 0 < r["resv"]["frame"]["retrieval_ratio"] <= 1 and 0 < r["infinigen"]["frame"]["retrieval_ratio"] < 1
    assert report["per_layer_head"]["retrieval_ratio"]["resv"]["frame"][1][0] is not None
    assert "mean_buckets_walked" in report["resv"]["resv"]["wtu"]["frame"]
    kv = report["kvmu"]       # the KVMU's traffic for the system model; tiny's auto capacity never evicts
    assert kv["measured"] and kv["config_hash"] == report["config_hash"] and kv["capacity_source"] == "auto"
    for stage in ("frame", "text"):
        assert {"payload_bytes", "bytes_moved", "bursts", "commands", "stalls"} <= set(kv[stage])
        assert kv[stage]["bytes_moved"] == 0 and kv[stage]["stalls"] > 0
    assert "kvmu (capacity" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000


def test_golden_subsets_and_matched_budget(capsys, tmp_path):
    js = tmp_path / "m.json"
    code, out, _ = run(capsys, "golden", "-c", "tiny", "--frames", "20", "--layers", "1", "--heads", "0",
                       "--methods", "resv,infinigen,quest", "--budget", "matched", "--json", str(js), "-q")
    assert code == 0
    rep = json.loads(js.read_text())
    assert rep["layers"] == [1] and rep["heads"] == [0]
    resv, inf = rep["methods"]["resv"]["frame"], rep["methods"]["infinigen"]["frame"]
    assert abs(inf["fetched_tokens"] - resv["fetched_tokens"]) <= resv["layer_head_steps"]   # rounding up per step


@pytest.mark.parametrize("argv, message", [
    (["--trace", "missing.npz"], "missing.npz: no such trace file"),
    (["--layers", "7"], "--layers '7': layers are 0..1."),
    (["--methods", "resv,magic"], "--methods: unknown method 'magic'"),
    (["--budget", "lots"], "--budget 'lots': use paper, matched, or a fraction in (0, 1]."),
    (["--budget", "matched", "--methods", "rekv"], "--budget matched needs the resv method in the run."),
    (["--pareto", "p.png"], "--pareto plots the end-to-end results against traffic; add --e2e."),
])
def test_golden_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, "golden", "-c", "tiny", "--frames", "9", "-q", *argv)
    assert code == 2 and err.startswith("vrex: error: ") and message in err and "Traceback" not in err


def test_golden_jobs_writes_loadable_jobs(capsys, tmp_path):
    from vrex.golden.dre.jobs import load_jobs

    out_file = tmp_path / "jobs.json"
    code, out, _ = run(capsys, "golden-jobs", "-c", "tiny", "--frames", "12", "--max-jobs", "7", "-o", str(out_file))
    assert code == 0 and "wrote 7 HCU jobs and 7 WTU jobs" in out
    hcu, wtu, meta = load_jobs(out_file)
    assert len(hcu) == len(wtu) == 7 and meta["config"] == "tiny"


def test_golden_bench_reports_throughput(capsys, tmp_path):
    js = tmp_path / "b.json"
    code, out, _ = run(capsys, "golden-bench", "-c", "tiny", "--tokens", "300", "--json", str(js))
    assert code == 0 and "tokens/s per layer-head" in out
    r = json.loads(js.read_text())
    assert r["tokens"] >= 300 and r["session"]["tensor"]["tokens_per_s_per_layer_head"] > 0


def test_golden_runs_a_user_trace_file_with_a_layer_subset(capsys, tmp_path):
    from vrex.config import load_config
    from vrex.golden.traces.trace import save_trace
    from vrex.golden.traces.sources import TraceOptions, make_trace

    tiny = load_config("tiny")
    path = save_trace(make_trace(tiny, "synthetic", layers=[1], options=TraceOptions(frames=12)), tmp_path / "t.npz")
    code, out, err = run(capsys, "golden", "-c", "tiny", "--trace", str(path), "--methods", "resv,rekv", "-q")
    assert code == 0, err
    assert "file trace" in out and "1 layers × 2 KV heads" in out


def test_pareto_plot_of_e2e_results(tmp_path):
    from vrex.golden.evaluation.plot import plot_e2e_pareto

    def method(frame, text, kl, top1):
        return {"frame": {"retrieval_ratio": frame}, "text": {"retrieval_ratio": text},
                "e2e": {"logit_kl": kl, "top1_agreement": top1}}

    report = {"config": "tiny", "config_hash": "0" * 12, "trace": {"kind": "llm-video", "tokens": 100},
              "methods": {"resv": method(0.2, 0.05, 0.1, 0.7), "resv_row@0.9": method(0.02, None, 0.2, 0.7),
                          "rekv": method(0.6, 0.3, 0.15, 0.8), "oracle_topp": method(0.01, 0.01, 0.07, 0.8)}}
    out = plot_e2e_pareto(report, tmp_path / "p.png")
    assert out.stat().st_size > 5000
    for r in report["methods"].values():
        del r["e2e"]
    with pytest.raises(ValueError, match="no end-to-end results"):
        plot_e2e_pareto(report, tmp_path / "q.png")
