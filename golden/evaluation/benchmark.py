"""Throughput benchmark of the golden ReSV session (``vrex golden-bench``; a benchmark, not a timed test).

A synthetic session of about ``tokens`` tokens (frames of ``model.tokens_per_frame`` plus one question and answer
turn) is generated with the config's shapes; the ReSV session (hashing, HCU clustering through ``hcu_assign``,
scoring, quantisation, WTU selection) then runs over ``layers`` layers × ``heads`` KV heads. Throughput is
``tokens × layers × heads / seconds``: tokens per second per layer-head. With ``evaluate_all`` the complete
evaluation (seven methods, true and light attention, metrics) is timed as well.
"""

from __future__ import annotations

import math
import os
import platform
import time

import torch

__all__ = ["run_benchmark", "format_benchmark"]


def run_benchmark(config="edge", *, tokens: int = 10000, layers: int = 1, heads: int = 0,
                  engines=("tensor",), evaluate_all: bool = False, seed: int = 0) -> dict:
    from vrex.config import load_config

    from vrex.golden.evaluation.offline import evaluate
    from vrex.golden.resv.session import run_session
    from vrex.golden.traces.sources import TraceOptions, make_trace

    from vrex.golden.threads import torch_threads

    cfg = load_config(config)
    with torch_threads():
        threads = torch.get_num_threads()
    m = cfg.model
    text = m.question_tokens + m.answer_tokens
    frames = max(1, math.ceil((tokens - text) / m.tokens_per_frame))
    layer_ids = list(range(min(layers, m.layers)))
    head_ids = list(range(heads or m.kv_heads))
    t0 = time.perf_counter()
    trace = make_trace(cfg, "synthetic", layers=layer_ids, options=TraceOptions(frames=frames, seed=seed))
    t_trace = time.perf_counter() - t0
    work = trace.tokens * len(layer_ids) * len(head_ids)
    out = {"config": cfg.name, "config_hash": cfg.hash(), "tokens": trace.tokens, "frames": frames,
           "layers": len(layer_ids), "kv_heads": len(head_ids), "trace_seconds": round(t_trace, 3),
           "machine": {"cpus": os.cpu_count(), "torch_threads": threads,
                       "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
                       "torch": torch.__version__},
           "session": {}}
    for engine in engines:
        t0 = time.perf_counter()
        pol = run_session(cfg, trace, layers=layer_ids, heads=head_ids, engine=engine)
        dt = time.perf_counter() - t0
        st = pol.stats()
        n_cl = sum(c["clusters"] for c in st["clusters"])
        out["session"][engine] = {"seconds": round(dt, 3), "tokens_per_s_per_layer_head": round(work / dt, 1),
                                  "clusters_per_context": n_cl / max(1, len(st["clusters"])),
                                  "wtu_rows": sum(v["rows"] for v in st["wtu"].values())}
    if evaluate_all:
        t0 = time.perf_counter()
        rep = evaluate(cfg, trace, layers=layer_ids, heads=head_ids)
        dt = time.perf_counter() - t0
        out["evaluate"] = {"seconds": round(dt, 3), "tokens_per_s_per_layer_head": round(work / dt, 1),
                           "methods": list(rep["methods"])}
    return out


def format_benchmark(r: dict) -> str:
    lines = [f"golden ReSV session: config {r['config']} ({r['config_hash']}), {r['tokens']} tokens "
             f"({r['frames']} frames + text), {r['layers']} layer(s) × {r['kv_heads']} KV heads; machine "
             f"{r['machine']['cpus']} CPUs, {r['machine']['torch_threads']} torch threads, torch "
             f"{r['machine']['torch']}; trace generation {r['trace_seconds']:.1f} s"]
    for engine, s in r["session"].items():
        lines.append(f"  session, {engine} engine: {s['seconds']:.2f} s = {s['tokens_per_s_per_layer_head']:,.0f} "
                     f"tokens/s per layer-head ({s['clusters_per_context']:.0f} clusters per context, "
                     f"{s['wtu_rows']} WTU rows)")
    if "evaluate" in r:
        e = r["evaluate"]
        lines.append(f"  full evaluation ({len(e['methods'])} methods + metrics): {e['seconds']:.2f} s = "
                     f"{e['tokens_per_s_per_layer_head']:,.0f} tokens/s per layer-head")
    return "\n".join(lines)


def run_e2e_benchmark(config="smollm2", *, model: str = "smollm2", methods=("resv", "rekv", "full"),
                      frames: int | None = None, fps: float = 10.0) -> dict:
    """Time the real-LLM e2e loop: the llm-video session (default: the 2K-token one), every layer, each method in
    the loop. Reports seconds per method, attention (selection + light attention) seconds per layer, and the rest
    of the model's step time."""
    from vrex.config import load_config

    from vrex.golden.evaluation.e2e import run_e2e
    from vrex.golden.traces.llm.session import LLMSpec, load_session
    from vrex.golden.threads import torch_threads
    from vrex.golden.traces.sources import TraceOptions
    from vrex.golden.traces.video import VideoSpec

    cfg = load_config(config)
    with torch_threads():
        threads = torch.get_num_threads()
    t0 = time.perf_counter()
    trace, session, lm = load_session(cfg, TraceOptions(frames=frames, video=VideoSpec(fps=fps),
                                                        llm=LLMSpec(model=model)), need_model=True)
    t_prep = time.perf_counter() - t0
    rep = run_e2e(cfg, session, lm, methods=tuple(methods))
    per = {}
    for m, t in rep["run"]["per_method"].items():
        layers = t["attention_seconds_per_layer"]
        att = sum(layers.values())
        per[m] = {"seconds": t["seconds"], "attention_seconds": round(att, 3),
                  "model_rest_seconds": round(t["seconds"] - att, 3),
                  "attention_seconds_per_layer": layers,
                  "mean_attention_seconds_per_layer": round(att / max(1, len(layers)), 4),
                  "top1_agreement": rep["methods"][m]["top1_agreement"]}
    return {"config": cfg.name, "config_hash": cfg.hash(), "model": trace.meta["model"]["file"],
            "model_sha256": trace.meta["model"]["sha256"], "tokens": trace.tokens, "steps": rep["steps"],
            "layers": len(rep["retrieval_layers"]), "prepare_seconds": round(t_prep, 3), "trace_cache": trace.meta["cache"],
            "e2e_seconds": rep["run"]["seconds"], "methods": per,
            "machine": {"cpus": os.cpu_count(), "torch_threads": threads, "load_average": list(os.getloadavg()),
                        "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
                        "torch": torch.__version__}}


def format_e2e_benchmark(r: dict) -> str:
    lines = [f"real-LLM e2e loop: config {r['config']} ({r['config_hash']}), {r['model']}, {r['tokens']} tokens, "
             f"{r['steps']} steps × {r['layers']} layers; machine {r['machine']['cpus']} CPUs, "
             f"{r['machine']['torch_threads']} torch thread(s), load {r['machine']['load_average'][0]:.1f}; "
             f"session ready in {r['prepare_seconds']:.1f} s (trace cache {r['trace_cache']})"]
    for m, s in r["methods"].items():
        lines.append(f"  {m:<6} {s['seconds']:7.1f} s = attention {s['attention_seconds']:6.1f} s "
                     f"({1000 * s['mean_attention_seconds_per_layer']:.0f} ms per layer) + rest of the model "
                     f"{s['model_rest_seconds']:6.1f} s; top-1 agreement {100 * s['top1_agreement']:.1f} %")
    lines.append(f"  total e2e {r['e2e_seconds']:.1f} s (target for resv + rekv + full at 2K tokens: ≤ 300 s)")
    return "\n".join(lines)


__all__ += ["run_e2e_benchmark", "format_e2e_benchmark"]
