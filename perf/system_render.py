"""The report's system section from figures.json's ``"system"`` entry (:mod:`.system_section`): markdown lines and
one plot (per-frame latency, FPS, TPOT and frame energy gain against KV size, the paper's numbers as stars)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["system_markdown", "per_model_lines", "PLOT_NAME"]

PLOT_NAME = "system.png"


def _n(x, fmt="{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _pct(x) -> str:
    return "—" if x is None else f"{x * 100:+.0f} %"


def _ratio_lines(s: dict) -> list[str]:
    head = s.get("headline_model")
    L = ["Retrieval ratios (real-LLM measurements the project ships, fitted over their session lengths"
         + (f"; the headline rows use **{head['model']}**'s (`{head['config']}`: {head['why']})" if head else "")
         + f"; golden JSONs: {', '.join(f'`{g}`' for g in s['golden']) or 'none'}):", ""]
    for entry in s["ratios"].values():
        for stage, st in entry["stages"].items():
            if st["fit"] is None:
                L.append(f"- {entry['label']} {stage}: {st['per_kv'][0]['ratio']:.3f} at every KV size "
                         f"({entry['source']}; no real-LLM measurement).")
                continue
            per = ", ".join(f"{p['ratio']:.3f} at {lab}" + (f" (extrapolated {p['factor']:.1f}×)"
                                                           if p["extrapolated"] else "")
                            for p, lab in zip(st["per_kv"], s["kv_labels"]))
            L.append(f"- {entry['label']} {stage}: {per}; {st['form']} fit through sessions of "
                     f"{', '.join(f'{n:.0f}' for n in st['measured_n'])} candidates per stream "
                     f"({', '.join(f'`{p}`' for p in st['sources'])}).")
    return L + [""]


def _factor(ratio, factor) -> str:
    """A ratio with its extrapolation factor (candidates / the longest measured session's)."""
    if factor is None:
        return f"{ratio:.3f} (not fitted)"
    return f"{ratio:.3f} ({factor:.1f}×)" if factor else "— (no candidates)"


def per_model_lines(per_model: dict, kv_labels: dict, title: str) -> list[str]:
    """Markdown: every model's fitted ReSV ratios with their extrapolation factors, and the FPS, speedup and
    energy gain over FlexGen they give per KV size and batch; then the points extrapolated beyond the limit."""
    if not per_model:
        return []
    L = [title, "",
         "| model | KV | batch | frame ratio (× extrap.) | text ratio (× extrap.) | FPS | × FlexGen | E× FlexGen "
         "| TPOT ms | text × FlexGen | text E× FlexGen |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for entry in per_model.values():
        for f, t in zip(entry["frame"], entry["text"]):
            L.append(f"| {entry['model']} | {kv_labels.get(f['kv'], f['kv'])} | {f['batch']} "
                     f"| {_factor(f['frame_ratio'], f['frame_factor'])} | {_factor(t['text_ratio'], t['text_factor'])} "
                     f"| {f['fps']:.2f} | {f['speedup_flexgen']:.2f} | {f['energy_gain_flexgen']:.2f} "
                     f"| {t['tpot_ms']:.3g} | {t['speedup_flexgen']:.2f} | {t['energy_gain_flexgen']:.2f} |")
    L.append("")
    for entry in per_model.values():
        resv = entry["ratios"]["resv"]["stages"]
        pts = "; ".join(f"{stage} " + ", ".join(f"{r:.3f} at n={n:.0f}" for n, r in zip(st["measured_n"],
                                                                                    st["measured_r"]))
                        for stage, st in resv.items() if st["measured_n"])
        over = {}
        for o in entry["over_limit"]:
            over.setdefault(entry["ratios"][o["policy"]]["label"], []).append(o["factor"])
        limit = f"{entry['extrapolation_limit']:g}×"
        L.append(f"- {entry['model']} (`{entry['config']}`, window {entry['window']}; sessions of "
                 f"{', '.join(str(t) for t in entry['session_tokens'])} tokens): measured ReSV {pts or 'nothing'}; "
                 + ("; ".join(f"{label}: {len(f)} ratio point(s) extrapolated more than {limit} (up to {max(f):.1f}×)"
                              for label, f in over.items())
                    if over else f"no ratio point extrapolated more than {limit}")
                 + ".")
    return L + [""]


def _plot(s: dict, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kvs = {k: k / 1024 for k in s["kv_sizes"]}
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    panels = (("frame", "latency_ms", "paper_latency_ms", "per-frame latency (ms)"),
              ("frame", "fps", "paper_fps", "FPS (all streams)"),
              ("text", "tpot_ms", None, "TPOT (ms)"),
              ("frame", "energy_gain_flexgen", "paper_energy_gain_flexgen", "frame energy gain vs FlexGen (×)"))
    for ax, (table, key, paper_key, ylabel) in zip(axes, panels):
        for i, b in enumerate(s["batches"]):
            rows = [r for r in s[table] if r["batch"] == b]
            ax.plot([kvs[r["kv"]] for r in rows], [r[key] for r in rows], marker="o", color=f"C{i}",
                    label=f"vrex, batch {b}")
            paper = [(kvs[r["kv"]], r[paper_key]) for r in rows if paper_key and r.get(paper_key)]
            if paper:
                ax.plot(*zip(*paper), "*", color=f"C{i}", markersize=12, markeredgecolor="k",
                        label=f"paper, batch {b}")
            tp = s.get("paper_tpot_ms_range", {}).get(str(b)) if table == "text" else None
            if tp:
                ax.axhspan(tp[0], tp[1], color=f"C{i}", alpha=0.15, label=f"paper range, batch {b}")
        ax.set(xlabel="KV cache size (K tokens)", ylabel=ylabel, xscale="log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{s['label']} vs {s['gpu']}: config {s['config']}, this run's figures")
    fig.tight_layout()
    path = out / PLOT_NAME
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def system_markdown(s: dict | None, out: Path) -> tuple[list[str], list[Path]]:
    """Markdown lines of the system section and the plot it writes into ``out`` ([] and [] when ``s`` is None)."""
    if not s:
        return [], []
    if s.get("error"):
        return ["## System results (vrex perf on this run's figures)", "", f"Not computed: {s['error']}", ""], []
    paper = s["paper"]
    L = ["## System results (vrex perf on this run's figures)", "",
         f"`vrex perf` (analytic timeline model, docs/perf.md) on config `{s['config']}` (hash `{s['config_hash']}`):"
         f" {s['label']} running {s['model']} against {s['gpu']} + FlexGen, with this run's figures.json in "
         "place of the model's formulas and Table III wherever it has a value, and the shipped real-LLM ratios. "
         + (f"Paper columns: {paper['system']} vs {paper['gpu']}." if paper else
            f"No paper columns: {s['paper_absent']}."), "",
         "Inputs this run's figures replace: " + (", ".join(s["inputs"]["measured"]) or "none") + ". "
         "Everything else is modelled (listed at the end of this section).", ""]
    L += _ratio_lines(s)
    head = s.get("headline_model")
    if head:
        L += [f"The tables below use {head['model']}'s ratios; every model's are in *Per model* after them.", ""]
    L += ["Frame processing (per-frame latency, FPS = batch / latency, energy per frame and stream, speedup and "
          "energy-efficiency gain over FlexGen):", "",
          "| KV | batch | latency ms | paper ms | Δ | FPS | paper FPS | J/frame | × FlexGen | E× FlexGen | paper E× | Δ |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    labels = dict(zip(s["kv_sizes"], s["kv_labels"]))
    for r in s["frame"]:
        L.append(f"| {labels[r['kv']]} | {r['batch']} | {r['latency_ms']:.4g} | {_n(r['paper_latency_ms'], '{:g}')} "
                 f"| {_pct(r['latency_rel'])} | {r['fps']:.2f} | {_n(r['paper_fps'], '{:.2f}')} "
                 f"| {r['energy_per_frame_j']:.3g} | {r['speedup_flexgen']:.2f} | {r['energy_gain_flexgen']:.2f} "
                 f"| {_n(r['paper_energy_gain_flexgen'], '{:g}')} | {_pct(r['energy_gain_rel'])} |")
    L += ["", "Text generation (time per output token, energy per token and stream):", "",
          "| KV | batch | TPOT ms | paper TPOT ms | tokens/s | J/token | × FlexGen | E× FlexGen | paper E× | Δ |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in s["text"]:
        tp = s.get("paper_tpot_ms_range", {}).get(str(r["batch"]))
        L.append(f"| {labels[r['kv']]} | {r['batch']} | {r['tpot_ms']:.3g} | {f'{tp[0]:g}–{tp[1]:g}' if tp else '—'} "
                 f"| {r['tokens_per_s']:.1f} | {r['energy_per_token_j']:.3g} | {r['speedup_flexgen']:.2f} "
                 f"| {r['energy_gain_flexgen']:.2f} | {_n(r['paper_energy_gain_flexgen'], '{:g}')} "
                 f"| {_pct(r['energy_gain_rel'])} |")
    if paper:
        L += ["", "Ranges over the KV sizes:", "", "| batch | metric | ours | paper |", "|---:|---|---:|---:|"]
        L += [f"| {g['batch']} | {g['metric']} | {g['ours'][0]:.2f}–{g['ours'][1]:.2f} | "
              + (f"{g['paper'][0]:g}–{g['paper'][1]:g} |" if g["paper"] else "— |") for g in s["ranges"]]
    L.append("")
    L += per_model_lines(s.get("per_model", {}), labels,
                         "Per model (each model's shipped ratios fitted alone, the rest of the evaluation as above; "
                         "ratios are ReSV's, with the factor by which the KV size's candidates exceed the longest "
                         "measured session's):")
    if paper:
        diffs = s["differences"]
        L += [f"Figures more than {s['threshold']:.0%} from the paper's, and the input that causes each "
              f"({len(diffs)}):" if diffs else f"Every compared figure is within {s['threshold']:.0%} of the paper's.",
              ""]
        L += [f"- {d['sentence']}" for d in diffs] + [""]
    plot = _plot(s, out)
    L += [f"![system]({plot.name})", "", "Modelled (nothing in this run measures them):", ""]
    L += [f"- {a}" for a in s["inputs"]["modelled"]]
    if s["notes"]:
        L += ["", "Notes on the inputs:", ""] + [f"- {n}" for n in s["notes"]]
    return L + [""], [plot]
