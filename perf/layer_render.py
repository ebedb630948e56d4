"""The per-layer DRE view (:mod:`.layer_timeline`) as text / markdown tables and a plot."""

from __future__ import annotations

from pathlib import Path

from .report import kv_label

__all__ = ["layer_lines", "layer_markdown", "write_layer_plot"]


def _us(x) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    return f"{x:.3g}" if x < 10 else f"{x:,.0f}" if x >= 1000 else f"{x:.1f}"


def _rows_table(view: dict, batch: int) -> list[list[str]]:
    out = []
    for r in view["rows"]:
        if r["batch"] != batch:
            continue
        share = r["critical_dre_us"] * 1e-3 / r["step_latency_ms"] if r["step_latency_ms"] else 0.0
        out.append([kv_label(r["kv"]), r["step"], _us(r["lxe_us"]), _us(r["hcu_us"]), _us(r["wtu_us"]),
                    _us(r["kvmu_us"]), _us(r["dre_us"]),
                    f"{r['dre_over_lxe']:.2%}" if r["dre_over_lxe"] is not None else "–",
                    _us(r["dre_exposed_us"]),
                    f"{_us(r['worst_exposed_us'])} (L{r['worst_layer']}; {_us(r['worst_exposed_past_fetch_us'])})",
                    f"{_us(r['critical_dre_us'])} ({share:.4%})" if r["critical_dre_us"] else "0",
                    _us(r["fetch_us"])])
    return out


HEADER = ["KV", "step", "LXE µs", "HCU µs", "WTU µs", "KVMU µs", "DRE µs", "DRE / LXE", "exposed µs (layer {L})",
          "worst layer: exposed µs (layer; past transfers)", "DRE on the critical path µs (of the step)",
          "transfers µs"]


def _header(view) -> list[str]:
    layer = view["rows"][0]["layer"] if view["rows"] else "?"
    return [h.replace("{L}", str(layer)) for h in HEADER]


def _option_rows(view) -> list[list[str]]:
    out = []
    for o in view.get("options", []):
        a = o["area"]
        if "mm2_per_core" in a and o["kind"] != "base":
            area = (f"{a['mm2_per_core'] * 1e3:+.1f} (chip {a['mm2_chip'] * 1e3:+.1f}; "
                    f"{a['per_lane_mm2'] * 1e3:.2f}/lane)")
            if a.get("fmax_mhz"):
                area += (f"; fmax {a['fmax_mhz']:.0f} MHz (was {a['base_fmax_mhz']:.0f})"
                         + ("" if a.get("meets_target_clock", True) else
                            f": misses {a.get('clock_mhz') or 0:.0f} MHz"))
        elif "mm2_per_core_at_least" in a:
            area = f"≥ {a['mm2_per_core_at_least'] * 1e3:+.1f} (not measured)"
        elif o["kind"] == "base":
            area = (f"WTU {a['base_wtu_mm2'] * 1e3:.1f}" if "base_wtu_mm2" in a else "—")
        else:
            area = "not measured"
        cells = []
        for batch in view["batches"]:
            pts = [p for k, p in o["points"].items() if k.startswith(f"{batch}/") and k.endswith("/frame")]
            crit = max((p["critical_dre_us"] for p in pts), default=0.0)
            worst = max((p["wtu_us"] for p in pts), default=0.0)
            cells.append(f"{_us(crit)} / {_us(worst)}")
        out.append([o["name"], o["kind"], area] + cells + [o["cycles"]])
    return out


def _option_header(view) -> list[str]:
    return (["option", "kind", "Δ area per core, 10⁻³ mm² (8 cores)"]
            + [f"batch {b}: DRE on the critical path / WTU per layer, µs (max over KV, frame)"
               for b in view["batches"]]
            + ["WTU cycles"])


def _verdict(view) -> list[str]:
    rows = view["rows"]
    steady = [r for r in rows if r["dre_exposed_us"] > 0]
    steady_past = [r for r in rows if r["dre_exposed_past_fetch_us"] > 0]
    crit = [r for r in rows if r["critical_dre_us"] > 0]
    L = []
    hw = view["min_margin_hcu_wtu"]
    L.append(f"HCU + WTU per layer stay ≥ {hw:.0f}× below the LXE's busy time at every point"
             if hw else "The HCU and the WTU have no work at these points.")
    if not steady:
        L.append(f"On the steady-state layer the DRE hides entirely behind the LXE's work on the same layer at every "
                 f"KV size and batch (exposed 0; DRE ≤ {max(r['dre_over_lxe'] or 0 for r in rows):.1%} of the LXE).")
    else:
        pts = ", ".join(f"{kv_label(r['kv'])} {r['step']} batch {r['batch']} ({_us(r['dre_exposed_us'])} µs"
                        f"{'' if r['dre_exposed_past_fetch_us'] else ', under the transfers'})" for r in steady)
        L.append(f"On the steady-state layer the DRE is exposed against the LXE at {pts}"
                 + ("; all of it runs while the LXE waits for a transfer (link / storage), so none of it is beyond "
                    "the transfers" if not steady_past else "") + ".")
    if crit:
        worst = max(crit, key=lambda r: r["critical_dre_us"] * 1e-3 / r["step_latency_ms"])
        tasks = sorted({t for r in crit for t in r["critical_dre_tasks"]})
        share = worst["critical_dre_us"] * 1e-3 / worst["step_latency_ms"]
        L.append(f"DRE time on a step's critical path: {len(crit)} of {len(rows)} points, at most "
                 f"{_us(worst['critical_dre_us'])} µs ({share:.4%}"
                 f" of the step, {kv_label(worst['kv'])} {worst['step']} batch {worst['batch']}); the tasks: "
                 f"{', '.join(tasks)}"
                 + (" (layer 0's WTU: under prefetch layer 0 predicts for itself, so its fetch and attention wait "
                    "for it)" if tasks == ["wtu0"] else "") + ".")
    else:
        L.append("No DRE time is on any step's critical path.")
    idle = sorted({r["kv"] for r in rows if not r["wtu_us"]})
    if idle:
        L.append(f"At {', '.join(kv_label(k) for k in idle)} the sinks and the recent window hold the whole cache: "
                 "nothing to select, so the WTU and the transfers have no work.")
    for b in view["batches"]:
        fetched = sorted({r["kv"] for r in rows if r["batch"] == b and r["fetch_us"]})
        L.append(f"Batch {b}: " + (f"the host tier is read from {kv_label(fetched[0])} (KVMU prefetch and eviction "
                                   "at the measured rates)" if fetched else
                                   "the cache fits the device tier at every size, nothing is fetched: the KVMU's "
                                   "work is the new tokens' arrival") + ".")
    return L


def _provenance(view) -> list[str]:
    p = view["provenance"]
    return [f"HCU cycles: {p['hcu']}", f"WTU cycles: {p['wtu']}; {p['wtu_passes']}", f"KVMU: {p['kvmu']}",
            f"LXE: {p['lxe']}", f"Retrieval path: {p.get('retrieval_path', '—')}",
            f"config {view['config']} (hash {p['config_hash']}); figures made with config hash "
            f"{p['figures_config_hash'] or '— (no figures: formulas)'}"]


def layer_lines(view: dict) -> list[str]:
    """Plain-text tables for ``vrex perf --layer-timeline``."""
    L = [f"\nDRE vs LXE on one layer ({view['system']}, overlap {view['overlap']}; µs per layer, all cores)"]
    L += [f"  {x}" for x in _provenance(view)]
    for b in view["batches"]:
        L.append(f"\nbatch {b}")
        L += _fmt_table(_header(view), _rows_table(view, b))
    L.append("")
    L += [f"  {x}" for x in _verdict(view)]
    if view.get("options"):
        L.append("\noptions that shorten the WTU")
        L += _fmt_table(_option_header(view), _option_rows(view))
        L += [f"  {o['name']}: area {o['area']['source']}" for o in view["options"] if o["kind"] != "base"]
    return L


def _fmt_table(header, rows) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  " + "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))   # noqa: E731
    return [line(header)] + [line(r) for r in rows]


def _md(header, rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def layer_markdown(view: dict, *, plot: str | None = None, command: str | None = None) -> list[str]:
    """A markdown section of the view (results-perf.md)."""
    L = ["## The DRE off the critical path (issue 23)", ""]
    if command:
        L += [f"`{command}`: one decoder layer of V-Rex's frame and decode steps, read back from the step's task "
              "timeline (docs/perf.md, per-layer DRE view). Busy time per unit on that layer (all cores); *exposed* = "
              "DRE busy time not covered by the LXE's busy time on the same layer (the union of HCU, WTU and KVMU "
              "intervals minus its overlap with the LXE's); *past transfers* also counts a transfer in flight as "
              "cover; *critical path* = HCU and WTU time on the step's critical path.", ""]
    L += [f"- {x}" for x in _provenance(view)]
    L.append("")
    for b in view["batches"]:
        L += [f"Batch {b}:", ""] + _md(_header(view), _rows_table(view, b)) + [""]
    L += [f"- {x}" for x in _verdict(view)]
    if view.get("options"):
        L += ["", "Options that shorten the WTU (area per core from the synthesis records, scaled as the figures "
                  "flow scales them):", ""]
        L += _md(_option_header(view), _option_rows(view)) + [""]
        L += [f"- {o['name']} ({o['kind']}): area {o['area']['source']}" for o in view["options"]
              if o["kind"] != "base"]
    if plot:
        L += ["", f"![DRE vs LXE per layer]({plot})"]
    return L


def write_layer_plot(view: dict, out_dir) -> Path:
    """``layer_timeline.png``: LXE and DRE busy time per layer across KV sizes, frame and decode steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir) / "layer_timeline.png"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    series = [("lxe_us", "LXE", "black"), ("hcu_us", "HCU", "tab:green"), ("wtu_us", "WTU", "tab:blue"),
              ("kvmu_us", "KVMU", "tab:orange"), ("worst_exposed_past_fetch_us", "DRE exposed (worst layer, past "
                                                 "transfers)", "tab:red")]
    styles = ["-", "--", ":", "-."]
    for ax, step in zip(axes, ("frame", "decode")):
        for bi, b in enumerate(view["batches"]):
            rows = [r for r in view["rows"] if r["batch"] == b and r["step"] == step]
            xs = [r["kv"] for r in rows]
            for key, label, color in series:
                ys = [max(r[key], 1e-3) for r in rows]
                ax.plot(xs, ys, styles[bi % len(styles)], color=color, marker="o", ms=3,
                        label=f"{label}, batch {b}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(view["kv_sizes"])
        ax.set_xticklabels([kv_label(k) for k in view["kv_sizes"]], rotation=45)
        ax.set_title(f"{step} step")
        ax.set_xlabel("KV cache per stream (tokens)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("busy time per layer (µs, all cores)")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"{view['system']} ({view['config']}): DRE vs LXE per layer; values below 1 ns drawn at 1 ns",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
