"""Plots of the report and the sweep (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["bar_vs_paper", "breakdown_plot", "cycles_plot", "pareto_plot", "utilisation_plot"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(plt, fig, ax, title: str, path: Path, legend: bool = False) -> Path:
    """Title (and legend), tight layout, write the PNG, free the figure."""
    ax.set_title(title, fontsize=10)
    if legend:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bar_vs_paper(rows: list[tuple[str, float | None, float | None]], ylabel: str, title: str, path: Path) -> Path:
    """Grouped bars: ours (scaled) beside the paper's value per block; missing values are left out."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    xs = range(len(rows))
    ours = [r[1] if r[1] is not None else 0 for r in rows]
    paper = [r[2] if r[2] is not None else 0 for r in rows]
    ax.bar([x - 0.2 for x in xs], ours, 0.4, label="vrex (scaled)")
    ax.bar([x + 0.2 for x in xs], paper, 0.4, label="paper Table III")
    for x, r in zip(xs, rows):
        if r[1] is None:
            ax.text(x - 0.2, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(list(xs), [r[0] for r in rows])
    ax.set_ylabel(ylabel)
    return _finish(plt, fig, ax, title, path, legend=True)


def breakdown_plot(components: dict[str, dict[str, float]], path: Path, top_n: int = 8) -> Path:
    """Horizontal stacked bars: each component's area by hierarchy path (largest ``top_n``, rest grouped)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.5 * max(1, len(components))))
    for y, (name, parts) in enumerate(components.items()):
        items = sorted(parts.items(), key=lambda kv: -kv[1])
        shown, rest = items[:top_n], sum(v for _, v in items[top_n:])
        left = 0.0
        for label, v in shown + ([("other", rest)] if rest > 0 else []):
            ax.barh(y, v, left=left)
            if v > 0.08 * sum(parts.values()):
                ax.text(left + v / 2, y, label.split("/")[-1][:18], ha="center", va="center", fontsize=6)
            left += v
    ax.set_yticks(range(len(components)), list(components))
    ax.set_xlabel("area (µm², library node)")
    return _finish(plt, fig, ax, "Area by hierarchy level", path)


def cycles_plot(series: dict[str, dict[str, float]], path: Path) -> Path:
    """Bars of named cycle figures per component."""
    plt = _plt()
    labels = [(c, k) for c, d in series.items() for k in d]
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.35 * max(1, len(labels))))
    ax.barh(range(len(labels)), [series[c][k] for c, k in labels])
    ax.set_yticks(range(len(labels)), [f"{c}: {k}" for c, k in labels], fontsize=7)
    ax.set_xlabel("cycles")
    return _finish(plt, fig, ax, "Cycle figures from simulation", path)


def utilisation_plot(series: dict[str, dict[str, float]], title: str, path: Path) -> Path:
    """Grouped bars: per component, the percentage of each device resource used."""
    plt = _plt()
    kinds = list(next(iter(series.values())))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    width = 0.8 / len(kinds)
    for k, kind in enumerate(kinds):
        ax.bar([x + (k - (len(kinds) - 1) / 2) * width for x in range(len(series))],
               [series[c][kind] for c in series], width, label=kind)
    ax.set_xticks(range(len(series)), list(series))
    ax.set_ylabel("device used (%)")
    return _finish(plt, fig, ax, title, path, legend=True)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated in (x, y), both minimised."""
    front = []
    for i, (x, y) in enumerate(points):
        if not any((x2 <= x and y2 <= y) and (x2 < x or y2 < y) for j, (x2, y2) in enumerate(points) if j != i):
            front.append(i)
    return front


def pareto_plot(points: list[tuple[str, float, float]], xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Scatter of named points with the Pareto front (both axes minimised) highlighted."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xy = [(p[1], p[2]) for p in points]
    front = set(pareto_front(xy))
    ax.scatter([p[1] for p in points], [p[2] for p in points], c=["C3" if i in front else "C0"
                                                                   for i in range(len(points))])
    for i, (name, x, y) in enumerate(points):
        ax.annotate(name, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    f = sorted((xy[i] for i in front))
    if len(f) > 1:
        ax.step([p[0] for p in f], [p[1] for p in f], where="post", color="C3", lw=1, label="Pareto front")
        ax.legend(fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _finish(plt, fig, ax, title, path)
