"""The needle benchmark's report: the accuracy table, one heat map per method (length × depth, LongVA's layout)
and the accuracy-vs-traffic chart (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["format_table", "heat_maps", "accuracy_vs_traffic"]


def _pct(x, width=6):
    return f"{'—':>{width}}" if x is None else f"{100 * x:{width}.1f}%"


def format_table(agg: dict) -> str:
    """Per method: accuracy (questions), exact match, Δ vs full in points, needle hit rate, frame/text ratio."""
    head = (f"{'niah method':<12} | {'accuracy':>9} {'(n)':>5} {'exact':>7} {'Δ pts':>7} | {'needle hit':>10} | "
            f"{'frame ratio':>11} {'text ratio':>10}")
    lines = [head, "-" * len(head)]
    for m, r in agg["methods"].items():
        n = r["niah"]
        d = n.get("delta_points")
        lines.append(f"{m:<12} | {_pct(n['accuracy'], 8)} {n['questions']:>5} {_pct(n['exact_match'])} "
                     f"{'—' if d is None else f'{d:+.1f}':>7} | {_pct(n['needle_hit_rate'], 9)} | "
                     f"{_pct(n['ratio']['frame'], 10)} {_pct(n['ratio']['text'], 9)}")
    if agg["dropped_needles"]:
        lines.append(f"dropped (full attention at chance or below): {', '.join(agg['dropped_needles'])}")
    per = ", ".join(f"{k} {_pct(v, 0).strip()}" for k, v in agg["full_attention_per_needle"].items())
    lines.append(f"full attention per needle: {per}")
    return "\n".join(lines)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heat_maps(agg: dict, spec, out: Path) -> Path:
    """One heat map per method: x = haystack length, y = needle depth, colour = accuracy (count in each cell)."""
    plt = _plt()
    methods = list(agg["methods"])
    fig, axes = plt.subplots(1, len(methods), figsize=(2.6 * len(methods) + 1, 3.2), squeeze=False)
    for k, (ax, m) in enumerate(zip(axes[0], methods)):
        cells = agg["methods"][m]["niah"]["cells"]
        grid = [[cells.get(f"{L}/{d:g}", {}).get("accuracy", float("nan")) for L in spec.lengths]
                for d in spec.depths]
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto", origin="upper")
        ax.set_xticks(range(len(spec.lengths)), [f"{L // 1024}K" if L % 1024 == 0 else str(L) for L in spec.lengths])
        ax.set_yticks(range(len(spec.depths)), [f"{100 * d:.0f}%" for d in spec.depths])
        ax.tick_params(labelleft=k == 0)                 # the depths once, on the first map
        for i, d in enumerate(spec.depths):
            for j, L in enumerate(spec.lengths):
                c = cells.get(f"{L}/{d:g}")
                if c:
                    ax.text(j, i, f"{c['correct']}/{c['questions']}", ha="center", va="center", fontsize=7)
        a = agg["methods"][m]["niah"]["accuracy"]
        ax.set_title(f"{m}: {'—' if a is None else f'{100 * a:.0f}%'}", fontsize=9)
        ax.set_xlabel("haystack tokens")
    axes[0][0].set_ylabel("needle depth")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="accuracy")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def accuracy_vs_traffic(agg: dict, out: Path) -> Path:
    """Accuracy against the traffic, one colour per method: the frame-stage retrieval ratio (circle) and the
    text-stage one (triangle) at the method's accuracy."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for i, (m, r) in enumerate(agg["methods"].items()):
        n = r["niah"]
        if n["accuracy"] is None:
            continue
        y = 100 * n["accuracy"]
        for stage, marker in (("frame", "o"), ("text", "^")):
            x = n["ratio"][stage]
            if x is not None:
                ax.scatter([100 * x], [y], marker=marker, color=f"C{i}", label=m if stage == "frame" else None)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, title="o frame, ^ text", title_fontsize=7, loc="lower right")
    ax.set_xlabel("KV fetched (% of offloaded)")
    ax.set_ylabel("needle accuracy (%)")
    ax.set_xlim(-2, 105)
    ax.set_ylim(-2, 105)
    ax.grid(alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
