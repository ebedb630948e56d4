"""Plots of an evaluation: the paper's Fig. 13 (latency, FPS, TPOT vs KV size), Fig. 14/16 (latency breakdown)
and Fig. 18 (roofline) analogues, as PNG files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .memory import window_tier
from .model import simulate_step
from .report import comparison_rows, kv_label
from .sweep import Evaluation, session_weights
from .workload import frame_step

__all__ = ["write_plots", "PLOT_FILES"]

PLOT_FILES = ("latency_fps.png", "breakdown.png", "roofline.png")
CATEGORIES = ("vision", "llm", "prediction", "retrieval", "eviction")
COLORS = {"vision": "#8c8c8c", "llm": "#4c72b0", "prediction": "#dd8452", "retrieval": "#c44e52",
          "eviction": "#937860"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _latency_fps(ev: Evaluation, rows: dict, path: Path, plt) -> None:
    cfg = ev.cfg
    batches = list(cfg.perf.batches)
    fig, axes = plt.subplots(len(batches), 3, figsize=(15, 4 * len(batches)), squeeze=False)
    kvs = [k / 1024 for k in cfg.perf.kv_sizes]
    keys = ["vrex"] + ev.baseline_keys
    for i, b in enumerate(batches):
        pts = [p for p in ev.points if p.batch == b]
        ax_l, ax_f, ax_t = axes[i]
        for key in keys:
            label = ev.systems[key].label
            style = dict(marker="o", linewidth=2.5) if key == "vrex" else dict(marker=".", linestyle="--")
            ax_l.plot(kvs, [p.frame[key].latency * 1e3 for p in pts], label=label, **style)
            ax_f.plot(kvs, [p.frame[key].throughput for p in pts], label=label, **style)
            ax_t.plot(kvs, [p.decode[key].latency * 1e3 for p in pts], label=label, **style)
        window = dataclasses.replace(ev.systems["vrex"], tier=window_tier())
        ax_l.plot(kvs, [simulate_step(cfg, window, frame_step(cfg, p.kv, b), ev.dre).latency * 1e3 for p in pts],
                  color="C0", linestyle=":", linewidth=1.5, label=f"{ev.systems['vrex'].label}, window only in DRAM")
        paper = rows["paper"].get("frame_latency_ms", {}).get(b)
        if paper:
            xs = [k / 1024 for k in paper]
            ax_l.plot(xs, list(paper.values()), "k*", markersize=11, label=f"paper {cfg.system.name}")
            ax_f.plot(xs, [1e3 * b / v for v in paper.values()], "k*", markersize=11, label=f"paper {cfg.system.name}")
        tp = rows["paper"].get("tpot_ms_range", {}).get(b)
        if tp:
            ax_t.axhspan(tp[0], tp[1], color="k", alpha=0.15, label=f"paper {cfg.system.name} TPOT range")
        ax_l.axhline(500, color="g", linestyle=":", label="real time (2 FPS per stream)")
        ax_f.axhline(2 * b, color="g", linestyle=":", label="real time (2 FPS per stream)")
        ax_l.set(yscale="log", xlabel="KV cache size (K tokens)", ylabel="per-frame latency (ms)",
                 title=f"frame processing, batch {b}")
        ax_f.set(xlabel="KV cache size (K tokens)", ylabel="frames per second (all streams)", title=f"FPS, batch {b}")
        ax_t.set(yscale="log", xlabel="KV cache size (K tokens)", ylabel="TPOT (ms)",
                 title=f"text generation, batch {b}")
        for ax in (ax_l, ax_f, ax_t):
            ax.grid(True, which="both", alpha=0.3)
        ax_f.legend(fontsize=7, loc="upper right")
        own = [(h, lab) for h, lab in zip(*ax_l.get_legend_handles_labels()) if "window only" in lab or "paper" in lab]
        ax_l.legend(*zip(*own), fontsize=7, loc="upper left")
        handles = [(h, lab) for h, lab in zip(*ax_t.get_legend_handles_labels()) if lab.startswith("paper")]
        if handles:
            ax_t.legend(*zip(*handles), fontsize=7, loc="center right")
    fig.suptitle(f"{cfg.name} ({cfg.hash()}): latency and FPS vs KV size (paper Fig. 13 analogue)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _stack(ax, labels, parts, title, ylabel):
    bottom = [0.0] * len(labels)
    for cat in CATEGORIES:
        vals = [p.get(cat, 0.0) for p in parts]
        if any(vals):
            ax.bar(range(len(labels)), vals, bottom=bottom, color=COLORS[cat], label=cat)
            bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set(title=title, ylabel=ylabel)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)


def _breakdown(ev: Evaluation, rows: dict, path: Path, plt) -> None:
    cfg = ev.cfg
    b = min(cfg.perf.batches)
    frames, questions, answers = session_weights(cfg)
    labels, parts = [], []
    for p in (p for p in ev.points if p.batch == b):
        for key, short in (("gpu:flexgen", ev.systems["gpu:flexgen"].platform.name), ("vrex", cfg.system.name)):
            f, q, d = p.frame[key].exposed, p.question[key].exposed, p.decode[key].exposed
            total = {c: frames * f.get(c, 0) + questions * q.get(c, 0) + answers * d.get(c, 0) for c in CATEGORIES}
            labels.append(f"{short}\n{kv_label(p.kv)}")
            parts.append(total)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 5))
    _stack(ax1, labels, parts, f"session latency breakdown, batch {b} (paper Fig. 14 analogue)",
           "exposed time on the critical path (s)")
    ab = rows["ablation"]
    _stack(ax2, [r["label"] for r in ab], [{k: v / 1e3 for k, v in r["exposed_ms"].items()} for r in ab],
           f"frame at {kv_label(ab[0]['kv'])}, batch 1: hardware ablation (paper Fig. 16 analogue)",
           "exposed time on the critical path (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _roofline(ev: Evaluation, rows: dict, path: Path, plt) -> None:
    ro = rows["roofline"]
    fig, ax = plt.subplots(figsize=(8, 6))
    xs = [10 ** (i / 20) for i in range(-20, 81)]
    seen = set()
    for r in ro:
        plat = (r["peak_flops"], r["dram_bw"])
        name = ev.systems[r["system"]].platform.name
        if plat not in seen:
            seen.add(plat)
            ax.plot(xs, [min(r["peak_flops"], x * r["dram_bw"]) / 1e12 for x in xs], label=f"{name} roof")
        x = r["intensity_op_per_byte"]
        (pt,) = ax.plot(x, r["attained_flops"] / 1e12, "o", markersize=9,
                        label=f"{r['label']}: {r['share_of_roof']:.1%} of roof" + (
                            f" (paper {r['paper_share']:.1%})" if r["paper_share"] else ""))
        # the link bounds what this workload can attain: Op per link byte x link bandwidth
        ceiling = r["link_intensity_op_per_byte"] * r["link_bw"] / 1e12
        if ceiling < r["roof_flops"] / 1e12:
            ax.hlines(ceiling, x / 3, x * 3, colors=pt.get_color(), linestyles="dotted",
                      label=f"{r['label']}: link ceiling")
    ax.set(xscale="log", yscale="log", xlabel="operational intensity (Op / DRAM byte)", ylabel="TFLOPS",
           title=f"roofline, frame at {kv_label(ro[0]['kv'])}, batch {ro[0]['batch']} (paper Fig. 18 analogue)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(ev: Evaluation, out_dir, rows: dict | None = None) -> list[Path]:
    """Write the three plots into ``out_dir`` and return their paths."""
    plt = _pyplot()
    rows = rows or comparison_rows(ev)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in PLOT_FILES]
    _latency_fps(ev, rows, paths[0], plt)
    _breakdown(ev, rows, paths[1], plt)
    _roofline(ev, rows, paths[2], plt)
    return paths
