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

    from .evaluate import evaluate
    from .resv import run_session
    from .traces import TraceOptions, make_trace

    from .threads import torch_threads

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
