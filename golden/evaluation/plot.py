"""Retrieval ratio per layer and KV head (the paper's Fig. 20 analogue), drawn with matplotlib's Agg backend."""

from __future__ import annotations

from pathlib import Path

from vrex.golden.resv.stream import STAGES

__all__ = ["plot_ratios", "plot_e2e_pareto"]

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
    return _save(plt, fig, path)


def _save(plt, fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _family(method: str) -> str:
    """The rule a method name belongs to: the shipped ReSV rule, the row-mass rule, or the baseline itself."""
    if method.startswith("resv_row"):
        return "resv_row"
    return "resv" if method.startswith("resv") else method


def plot_e2e_pareto(report: dict, path) -> Path:
    """Agreement with full attention against traffic, one point per method run in the loop (``--e2e``): e2e KL(full‖m)
    (left) and top-1 agreement (right) against the KV fetched, the frame stage (circle) and the text stage (triangle);
    the shipped rule, the row-mass rule at each p, ReKV, the oracle and the other baselines in their own colours."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = {m: r for m, r in report["methods"].items() if r.get("e2e")}
    if not methods:
        raise ValueError("the report has no end-to-end results: run vrex golden with --e2e")
    families = sorted({_family(m) for m in methods})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for ax, (key, label, scale) in zip(axes, (("logit_kl", "e2e KL(full ‖ method), nats", 1.0),
                                              ("top1_agreement", "e2e top-1 agreement (%)", 100.0))):
        for m, r in methods.items():
            y = r["e2e"][key]
            if y is None:
                continue
            colour = f"C{families.index(_family(m))}"
            for stage, marker in (("frame", "o"), ("text", "^")):
                x = r[stage]["retrieval_ratio"]
                if x is not None:
                    ax.scatter([100 * x], [scale * y], marker=marker, color=colour)
                    if stage == "frame":
                        ax.annotate(m, (100 * x, scale * y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(0, 105)
        ax.set_xlabel("KV fetched (% of offloaded; o frame, ^ text)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for i, f in enumerate(families):
        axes[1].scatter([], [], color=f"C{i}", label=f)
    axes[1].legend(fontsize=7, loc="lower right")
    tr = report["trace"]
    fig.suptitle(f"Traffic against agreement with full attention — config {report['config']} "
                 f"({report['config_hash']}), {tr.get('kind', 'trace')} trace, {tr['tokens']} tokens", fontsize=10)
    return _save(plt, fig, path)
