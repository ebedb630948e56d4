"""Retrieval ratio per layer and KV head (the paper's Fig. 20 analogue), drawn with matplotlib's Agg backend."""

from __future__ import annotations

from pathlib import Path

from vrex.golden.resv.stream import STAGES

__all__ = ["plot_ratios"]

_COMPARE = ("infinigen", "rekv", "quest", "oracle_topp", "resv")


def _mean(row):
    vals = [v for v in row if v is not None]
    return sum(vals) / len(vals) if vals else float("nan")


def plot_ratios(report: dict, path, *, method: str = "resv") -> Path:
    """Heatmaps of ``method``'s retrieval ratio (layers × KV heads) per stage, and per-layer bars per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    plh = report["per_layer_head"]
    layers, heads, ratios = plh["layers"], plh["heads"], plh["retrieval_ratio"]
    if method not in ratios:
        raise ValueError(f"the report has no method {method!r}")
    fig = plt.figure(figsize=(12, 7.5), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[1.2, 1])
    for col, stage in enumerate(STAGES):
        ax = fig.add_subplot(grid[0, col])
        m = np.array([[np.nan if v is None else 100 * v for v in row] for row in ratios[method][stage]], dtype=float)
        im = ax.imshow(m.T, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=100, interpolation="nearest")
        ax.set_xticks(range(len(layers)), [str(l) for l in layers], fontsize=7 if len(layers) > 16 else 9)
        ax.set_yticks(range(len(heads)), [str(h) for h in heads])
        ax.set_xlabel("layer")
        ax.set_ylabel("KV head")
        s = report["methods"][method][stage]["retrieval_ratio"]
        ax.set_title(f"{method}: {stage} stage retrieval ratio (mean {'—' if s is None else f'{100 * s:.1f}%'})")
        fig.colorbar(im, ax=ax, label="% of offloaded tokens fetched")
    ax = fig.add_subplot(grid[1, :])
    shown = [m for m in _COMPARE if m in ratios]
    width = 0.8 / max(1, len(shown))
    x = np.arange(len(layers))
    for i, m in enumerate(shown):
        vals = [100 * _mean(r) for r in ratios[m]["frame"]]
        ax.bar(x + (i - (len(shown) - 1) / 2) * width, vals, width, label=m)
    ax.set_xticks(x, [str(l) for l in layers], fontsize=7 if len(layers) > 16 else 9)
    ax.set_xlabel("layer")
    ax.set_ylabel("frame-stage retrieval ratio (%)")
    ax.set_ylim(0, 105)
    ax.legend(ncol=len(shown), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    tr = report["trace"]
    fig.suptitle(f"Retrieval ratio per layer and KV head — config {report['config']} ({report['config_hash']}), "
                 f"{tr.get('kind', 'trace')} trace, {tr['tokens']} tokens, {tr['frames']} frames", fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
