"""The needle benchmark's report: the accuracy table (n, Wilson interval, Δ against full with its paired cluster-
bootstrap interval, McNemar's p against full and ReKV), one heat map per method (length × slot, LongVA's layout)
and the accuracy-vs-traffic chart with the intervals (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path

from vrex.golden.evaluation.niah.grid import slot_key

__all__ = ["format_table", "heat_maps", "accuracy_vs_traffic"]


def _pct(x, width=6):
    return f"{'—':>{width}}" if x is None else f"{100 * x:{width}.1f}%"


def _ci(ci) -> str:
    return "[   —   ]" if not ci else f"[{100 * ci[0]:3.0f},{100 * ci[1]:4.0f}]"


def _p(p) -> str:
    return f"{'—':>6}" if p is None else (f"{p:6.3f}" if p >= 0.001 else f"{'<.001':>6}")


def _delta(n) -> str:
    d, ci = n.get("delta_points"), n.get("delta_ci")
    if d is None:
        return f"{'—':>17}"
    return f"{d:+6.1f} " + (f"[{ci[0]:+4.0f},{ci[1]:+4.0f}]" if ci else f"{'':11}")


def _traffic(t) -> str:
    return "—" if t is None else f"{100 * t:.1f} %"


def format_table(agg: dict) -> str:
    """Per method: questions n, accuracy with its 95 % Wilson interval, the mean margin, Δ against full in points
    with its 95 % cluster-bootstrap interval, McNemar's exact p against full and against ReKV, the needle hit rate
    and the frame / text traffic; then the methods the benchmark cannot tell from full attention at this n, the
    iso-accuracy traffic of each budget sweep, and what was dropped."""
    head = (f"{'niah method':<18} | {'n':>4} {'accuracy':>7} {'95% CI':>9} {'margin':>7} | {'Δ pts vs full':>17} "
            f"{'p full':>6} {'p rekv':>6} | {'hit':>6} | {'frame':>6} {'text':>6}")
    lines = [head, "-" * len(head)]
    same = []
    for m, r in agg["methods"].items():
        n = r["niah"]
        mg = n.get("margin")
        lines.append(f"{m:<18} | {n['n_questions']:>4} {_pct(n['accuracy'])} {_ci(n['accuracy_ci'])} "
                     f"{'—' if mg is None else f'{mg:+.2f}':>7} | {_delta(n)} {_p(n.get('mcnemar_p_vs_full'))} "
                     f"{_p(n.get('mcnemar_p_vs_rekv'))} | {_pct(n['needle_hit_rate'], 5)} | "
                     f"{_pct(n['ratio']['frame'], 5)} {_pct(n['ratio']['text'], 5)}")
        if n.get("distinguishable") is False:
            same.append(m)
    if same:
        lines.append(f"not distinguishable from full attention at this n (Δ interval covers 0): {', '.join(same)}")
    for fam, stages in agg.get("iso_accuracy", {}).items():
        for stage, r in stages.items():
            lo, hi = r["ci"]
            where = ("missed: no point of the sweep is not worse than full" if r["missed"] else
                     f"{'≤ ' if r['bounded_below'] else ''}{_traffic(r['traffic'])} "
                     f"[{_traffic(lo)}, {'beyond the sweep' if hi is None else _traffic(hi)}]"
                     + ("" if r["monotone"] else
                        f", not monotone (isotonic fit; the raw sweep first passes at {_traffic(r.get('raw_traffic'))})"))
            lines.append(f"iso-accuracy {stage} traffic of {fam} ({len(r['points'])} points): {where}")
    hits = [f"{m} {_pct(ms['hit_rate_right'], 0).strip()} / {_pct(ms['hit_rate_wrong'], 0).strip()} "
            f"(worst layers {', '.join(list(ms['missed_share_per_layer'])[:3]) or '—'})"
            for m, r in agg["methods"].items() if (ms := r["niah"].get("misses")) and ms["wrong"]
            and ms["hit_rate_wrong"] is not None]
    if hits:
        lines.append("needle hit rate of right / wrong answers: " + "; ".join(hits))
    for fam, m in (agg.get("single_point_sweeps") or {}).items():
        lines.append(f"no iso-accuracy traffic for {fam}: {m} is a sweep of one point; give {fam}@F at a second F "
                     f"(or {fam} itself) to read one off")
    groups = agg.get("full_attention_per_group") or {}
    if agg.get("dropped_groups"):
        lines.append(f"dropped {len(agg['dropped_groups'])} of {len(groups)} question groups (full attention at chance "
                     "or below over the haystacks): " + ", ".join(f"{g} {_pct(groups[g], 0).strip()}"
                                                                for g in agg["dropped_groups"]))
    for label, key in (("needles", "dropped_needles"), ("kinds", "dropped_kinds")):
        if agg.get(key):
            lines.append(f"dropped {label} (every question of them): {', '.join(agg[key])}")
    per = ", ".join(f"{k} {_pct(v, 0).strip()}" for k, v in agg["full_attention_per_needle"].items())
    lines.append(f"full attention per needle (what): {per}")
    kinds = agg.get("full_attention_per_kind") or {}
    if kinds:
        lines.append("full attention per kind: " + ", ".join(
            f"{k} {_pct(v, 0).strip()} (chance {100 * agg['chance'][k]:.0f}%)" for k, v in kinds.items()))
    return "\n".join(lines)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slot_label(d) -> str:
    return d if isinstance(d, str) else f"{100 * d:.0f}%"


def heat_maps(agg: dict, spec, out: Path) -> Path:
    """One heat map per method: x = haystack length, y = the needle's slot (depth over the offloaded span, and the
    controls), colour = accuracy of the "what" questions, the count in each cell."""
    plt = _plt()
    methods = list(agg["methods"])
    fig, axes = plt.subplots(1, len(methods), figsize=(2.6 * len(methods) + 1, 3.4), squeeze=False)
    im = None
    for k, (ax, m) in enumerate(zip(axes[0], methods)):
        cells = agg["methods"][m]["niah"]["cells"]
        grid = [[cells.get(f"{L}/{slot_key(d)}", {}).get("accuracy", float("nan")) for L in spec.lengths]
                for d in spec.depths]
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto", origin="upper")
        ax.set_xticks(range(len(spec.lengths)), [f"{L // 1024}K" if L % 1024 == 0 else str(L) for L in spec.lengths])
        ax.set_yticks(range(len(spec.depths)), [_slot_label(d) for d in spec.depths])
        ax.tick_params(labelleft=k == 0)                 # the slots once, on the first map
        for i, d in enumerate(spec.depths):
            for j, L in enumerate(spec.lengths):
                c = cells.get(f"{L}/{slot_key(d)}")
                if c:
                    ax.text(j, i, f"{c['correct']}/{c['questions']}", ha="center", va="center", fontsize=7)
        a = agg["methods"][m]["niah"]["accuracy"]
        ax.set_title(f"{m}: {'—' if a is None else f'{100 * a:.0f}%'}", fontsize=9)
        ax.set_xlabel("haystack tokens")
    axes[0][0].set_ylabel("needle slot")
    if im is not None:
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="accuracy (what)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def accuracy_vs_traffic(agg: dict, out: Path) -> Path:
    """Accuracy (with its Wilson interval) against the traffic, one colour per sweep family: the frame-stage
    retrieval ratio (circle) and the text-stage one (triangle); a family's points are joined per stage, full
    attention's accuracy and interval are the grey band."""
    from vrex.golden.evaluation.niah.grid import family

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    full = agg["methods"].get("full", {}).get("niah")
    if full and full["accuracy"] is not None:
        lo, hi = full["accuracy_ci"]
        ax.axhspan(100 * lo, 100 * hi, color="0.85", zorder=0, label="full (95% CI)")
        ax.axhline(100 * full["accuracy"], color="0.5", lw=0.8, zorder=0)
    fams: dict[str, list] = {}
    for m, r in agg["methods"].items():
        if m != "full" and r["niah"]["accuracy"] is not None:
            fams.setdefault(family(m), []).append(r["niah"])
    for i, (fam, members) in enumerate(fams.items()):
        for stage, marker, ls in (("frame", "o", "-"), ("text", "^", ":")):
            pts = sorted((100 * n["ratio"][stage], 100 * n["accuracy"], n["accuracy_ci"]) for n in members
                         if n["ratio"][stage] is not None)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            err = [[y - 100 * p[2][0] for y, p in zip(ys, pts)], [100 * p[2][1] - y for y, p in zip(ys, pts)]]
            ax.errorbar(xs, ys, yerr=err, fmt=marker, ls=ls if len(pts) > 1 else "none", color=f"C{i}", ms=4,
                        capsize=2, lw=0.8, label=fam if stage == "frame" else None)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, title="o frame, ^ text", title_fontsize=7, loc="lower right")
    ax.set_xlabel("KV fetched (% of offloaded)")
    ax.set_ylabel("needle accuracy (%, 95% CI)")
    ax.set_xlim(-2, 105)
    ax.set_ylim(-2, 105)
    ax.grid(alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
