"""``vrex perf --results OUT.md``: the whole results document (docs/results-perf.md) from one command.

It evaluates the built-in ``edge`` (V-Rex8 vs AGX Orin) and ``server`` (V-Rex48 vs A100) configs with the measured
inputs given (golden JSONs, figures JSON), the device tier against the window-only assumption, the closure of every
gap to the paper (``vrex.perf.closure``), the GPU baselines against published runs (``vrex.perf.validation``) and
the design sweep ``configs/sweeps/perf/edge-40k.yaml`` (``vrex.perf.design_sweep``), and writes the tables with
their provenance (config hashes, git revision, tool versions, inputs). The sentences around the tables are built
from the same numbers, so re-running it after new measurements updates the text too. The file is written
atomically (temporary file, then rename).

Why one file of over 500 lines: it is one document whose sections are written in order, each from the same
evaluated configs.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from vrex.config import load_config
from vrex.paths import git_revision

from .closure import Gap, metric, plausibility, solve
from .design_sweep import describe_point, design_choices, load_sweep_spec, run_design_sweep, without_measured_axes
from .layer_render import layer_markdown
from .layer_timeline import layer_timeline
from .memory import window_tier
from .model import simulate_step
from .paper import PAPER
from .report import comparison_rows, floors, kv_label, versions
from .sweep import evaluate
from .validation import calibrate, validate
from .workload import frame_step

__all__ = ["write_results", "build_results"]

KVS = (1024, 5120, 10240, 20480, 40960)


def _pct(x) -> str:
    return "—" if x is None else f"{x * 100:+.0f}%"


def _rel(ours, paper):
    return None if ours is None or not paper else (ours - paper) / paper


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _f(x, fmt="{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


# ---- the device tier against the window-only assumption ----------------------------------------------------------


def _tier_rows(ev) -> list[dict]:
    cfg = ev.cfg
    system = ev.systems["vrex"]
    window = dataclasses.replace(system, tier=window_tier())
    out = []
    for pt in ev.points:
        r = pt.frame["vrex"]
        w = simulate_step(cfg, window, frame_step(cfg, pt.kv, pt.batch), ev.dre)
        g = r.geometry
        out.append({"kv": pt.kv, "batch": pt.batch, "device": g.window + g.device_old, "host": g.host,
                    "link_gb": r.counters.read.payload / 1e9, "ms": r.latency * 1e3, "window_ms": w.latency * 1e3,
                    "window_link_gb": w.counters.read.payload / 1e9})
    return out


# ---- closure -------------------------------------------------------------------------------------------------------


def _min_capacity(cfg, kv: int) -> int:
    """The smallest valid explicit capacity at batch 1 and ``kv``: sinks + window + staging of the system model, and
    at least what the KVMU's memory map accepts (:meth:`vrex.config.Config.min_device_capacity_bytes`: its ring
    holds the recent window plus one step)."""
    window = cfg.resv.recent_window_tokens + cfg.resv.sink_tokens
    return max(int(window * cfg.model.kv_bytes_per_token + cfg.kv_staging_bytes(1, kv)) + 1,
               cfg.min_device_capacity_bytes())


def _closure(base, paper_frames: dict, tpot: tuple, measured, figures) -> dict:
    """Solve, in order: the DRAM efficiency that meets the paper's TPOT at 1K; with it, the DPE efficiency that
    meets the frame latency at 1K (the frame step adds the vision tower and a 10-token prefill to the weight
    streaming); with both, per KV size, the device capacity that meets the frame latency, and the ReSV ratio that
    meets it with only the window resident. Also the DRAM efficiency alone for the 1K frame."""
    out = {"steps": []}

    def step(label, gap, key, lo, hi, cfg, integer=False):
        value = solve(cfg, gap, key, lo, hi, measured=measured, figures=figures, integer=integer)
        ok, why = plausibility(key, value)
        ours = metric(cfg.with_overrides({"perf.kv_sizes": [gap.kv], "perf.batches": [gap.batch]}), gap, measured,
                      figures)
        row = {"label": label, "gap": gap, "key": key, "value": value, "range": (lo, hi), "ours_ms": ours,
               "plausible": ok, "why": why}
        out["steps"].append(row)
        return value

    tpot_gap = Gap("TPOT at 1K", "decode", 1024, 1, tpot[0])
    e_t = step("TPOT at 1K", tpot_gap, "perf.vrex.dram_efficiency", 0.2, 1.0, base)
    step("frame at 1K (DRAM efficiency alone)", Gap("frame at 1K", "frame", 1024, 1, paper_frames[1024]),
         "perf.vrex.dram_efficiency", 0.2, 1.0, base)
    cfg = base.with_overrides({"perf.vrex.dram_efficiency": e_t}) if e_t else base
    d = step("frame at 1K (with the TPOT's DRAM efficiency)", Gap("frame at 1K", "frame", 1024, 1,
                                                                  paper_frames[1024]),
             "perf.vrex.dpe_efficiency", 0.02, 1.0, cfg)
    cfg = cfg.with_overrides({"perf.vrex.dpe_efficiency": d}) if d else cfg
    out["closed_base"] = cfg
    out["capacity"], out["ratio"] = {}, {}
    for kv, paper_ms in paper_frames.items():
        if kv == 1024:
            continue
        at = cfg.with_overrides({"perf.kv_sizes": [kv], "perf.batches": [1]})
        gap = Gap(f"frame at {kv_label(kv)}", "frame", kv, 1, paper_ms)
        out["capacity"][kv] = step(f"frame at {kv_label(kv)}", gap, "dre.kvmu.device_capacity_bytes",
                                   _min_capacity(at, kv), at.device_kv_capacity_bytes(1), cfg, integer=True)
        window_cfg = cfg.with_overrides({"dre.kvmu.device_capacity_bytes": _min_capacity(at, kv),
                                         "perf.kv_sizes": [kv], "perf.batches": [1]})
        out["ratio"][kv] = step(f"frame at {kv_label(kv)}, window only", gap, "perf.frame_ratio", 0.0, 1.0,
                                window_cfg)
    return out


def _closed_points(closure: dict, measured, figures) -> list[dict]:
    """The paper-closed system per KV size (closing capacity, or auto where none closes it): speedup and energy
    gain vs FlexGen, TPOT — the numbers not used to close anything."""
    base = closure["closed_base"]
    out = []
    for kv in KVS:
        cap = closure["capacity"].get(kv)
        over = {"perf.kv_sizes": [kv], "perf.batches": [1]}
        if cap:
            over["dre.kvmu.device_capacity_bytes"] = cap
        ev = evaluate(base.with_overrides(over), measured, figures)
        rows = comparison_rows(ev)
        f, t = rows["frame"][0], rows["text"][0]
        out.append({"kv": kv, "capacity": cap, "ms": f["latency_ms"], "speedup": f["speedup"]["flexgen"],
                    "energy_gain": f["energy_gain"]["flexgen"], "tpot": t["tpot_ms"],
                    "text_speedup": t["speedup"]["flexgen"], "text_energy_gain": t["energy_gain"]["flexgen"],
                    "ablation": rows["ablation"] if kv == max(KVS) else None})
    return out


# ---- rendering -----------------------------------------------------------------------------------------------------


def _inputs_section(ev, measured, figures) -> list[str]:
    L = ["Inputs of this run (each line as `vrex perf` prints it):", ""]
    s = ev.sources
    L.append("- retrieval ratios: " + "; ".join(f"{k}: {v}" for k, v in s["ratios"].items()))
    for key in ("device_tier", "kvmu_traffic", "tokens_per_cluster", "lxe", "dre_cycles", "dre_power",
                "e2e_accuracy", "core_figures"):
        if key in s:
            L.append(f"- {key.replace('_', ' ')}: {s[key]}")
    L.append(f"- golden JSONs: {', '.join(measured.paths) if measured is not None else 'none (paper Table II ratios)'}")
    L.append(f"- figures JSON: {figures.path if figures is not None else 'none (formulas, Table III)'}")
    for n in ev.notes:
        L.append(f"- {n}")
    L += ["", "Assumed (nothing measures them in this run; each is a config key):", ""]
    L += [f"- {a}" for a in ev.assumed]
    return L


def _verdict(ev_e, closure_e) -> list[str]:
    rows = {(r["kv"], r["batch"]): r for r in comparison_rows(ev_e)["frame"]}
    lo, hi = rows[(1024, 1)], rows[(40960, 1)]
    ok = all(abs(r["latency_rel"]) <= 0.2 for r in (lo, hi))
    L = [f"V-Rex8 per-frame latency (batch 1) from this run's inputs: **{lo['latency_ms']:.0f} ms at 1K** (paper 121, "
         f"{_pct(lo['latency_rel'])}) and **{hi['latency_ms']:.0f} ms at 40K** (paper 254, {_pct(hi['latency_rel'])}): "
         + ("both within ±20 %." if ok else "not within ±20 % of the paper.")]
    if not ok:
        st = {r["label"]: r for r in closure_e["steps"]}
        tp = st["TPOT at 1K"]["value"]
        dp = st["frame at 1K (with the TPOT's DRAM efficiency)"]["value"]
        cap = closure_e["capacity"].get(40960)
        auto = ev_e.cfg.device_kv_capacity_bytes(1)
        L.append("")
        L.append("What stands between them (solved, one value at a time, below):")
        L.append("")
        alone = st["frame at 1K (DRAM efficiency alone)"]
        dp_ok = st["frame at 1K (with the TPOT's DRAM efficiency)"]["plausible"]
        L.append(f"1. **At 1K** nothing is offloaded, so only the engine rates matter: the paper's TPOT of 89 ms needs "
                 f"`perf.vrex.dram_efficiency` = {_f(tp, '{:.2f}')} (we assume {ev_e.cfg.perf.vrex.dram_efficiency:g}), "
                 f"and its 121 ms frame then needs `perf.vrex.dpe_efficiency` = {_f(dp, '{:.2f}')} for the vision "
                 "tower and the 10-token prefill (we assume "
                 f"{ev_e.cfg.perf.vrex.dpe_efficiency:g}; the LXE's measured efficiency replaces it once figures "
                 "carry it)" + (", which is implausibly low for large GEMMs: more likely the paper's frame step holds "
                                "work we do not count (the vision tower's attention, a larger vision input) or the "
                                "two numbers come from different DRAM settings — the 121 ms alone is met by "
                                f"`perf.vrex.dram_efficiency` = {_f(alone['value'], '{:.2f}')}."
                                if dp_ok is False else "."))
        if cap:
            per = (cap - ev_e.cfg.kv_staging_bytes(1, 40960)) / ev_e.cfg.model.kv_bytes_per_token
            L.append(f"2. **At 40K** the default device tier holds the whole cache ({auto / 1e9:.1f} GB free beside "
                     f"the weights), so nothing crosses PCIe; the paper's 254 ms needs "
                     f"`dre.kvmu.device_capacity_bytes` = {cap / 1e9:.2f} GB ({per:.0f} tokens per stream), with the "
                     "rest of each stream's KV on the SSD. That fits (it is physically possible) but leaves "
                     f"{(auto - cap) / 1e9:.1f} GB of the 32 GB unused: the paper's \"predefined maximum capacity\" "
                     f"would have to be set that low (the auto tier split among {auto / cap:.1f} streams).")
        else:
            L.append("2. **At 40K** no device capacity between the window and the auto value meets 254 ms.")
        if closure_e["capacity"].get(10240) is None:
            r10, r20 = closure_e["ratio"].get(10240), closure_e["ratio"].get(20480)
            w10 = st.get("frame at 10K, window only", {}).get("ours_ms")
            if r10 is not None and r20 is not None:
                ratios = (" With only the window resident the ReSV ratio that meets each point falls with the cache "
                          f"({r10:.2f} at 10K, {r20:.2f} at 20K): the paper calibrates its ratios per size, and the "
                          "real-LLM fit (`--golden-json` at several lengths) is the measurement that decides it.")
            else:
                missing = ("either point" if r10 is None and r20 is None else
                           f"the {'10K' if r10 is None else '20K'} point ({r20 if r10 is None else r10:.2f} "
                           "reproduces the other)")
                ratios = (" With only the window resident no ReSV ratio in the searched range reproduces the "
                          f"paper's time at {missing}.")
            L.append("3. **10K–20K**: the paper stays at 198–200 ms while the cache doubles. No capacity meets 198 ms at "
                     f"10K (even with only the window resident the frame takes {_f(w10, '{:.0f}')} ms: the transfer "
                     "hides behind compute), and a fixed capacity cannot give a plateau." + ratios +
                     " A fixed per-layer storage latency once KV is offloaded would also "
                     "make a plateau; the model has none.")
    return L


def _per_model_section(edge, groups: dict, figures, strict: bool) -> list[str]:
    """The edge config evaluated once per model's golden reports (:mod:`.per_model`): ratios with their
    extrapolation factors, FPS, speedup and energy gain."""
    from .per_model import evaluate_per_model, headline, model_entry
    from .system_render import per_model_lines

    key, why = headline(edge, groups)
    evs = evaluate_per_model(edge, groups, figures, strict=strict)
    entries = {k: model_entry(evs[k], g) for k, g in groups.items()}
    L = ["## Per model: each model's real-LLM ratios (config `edge`)", "",
         f"The golden reports given are of {len(groups)} models, fitted one by one; every other table of this document "
         f"uses {groups[key].model}'s ({why}).", ""]
    return L + per_model_lines(entries, {kv: kv_label(kv) for kv in edge.perf.kv_sizes},
                               "ReSV ratio at each KV size with its extrapolation factor, and what it gives:")


def build_results(measured=None, figures=None, *, strict: bool = False, groups: dict | None = None) -> str:
    """The results document; ``groups`` (key -> :class:`vrex.perf.per_model.ModelRatios`, when the golden reports
    are of several models) adds the per-model section, ``measured`` being the headline model's reports."""
    t0 = time.perf_counter()
    edge, server = load_config("edge"), load_config("server")
    ev_e = evaluate(edge, measured, figures, strict=strict)
    ev_s = evaluate(server, measured, figures, strict=strict)
    rows_e, rows_s = comparison_rows(ev_e), comparison_rows(ev_s)
    paper_e = PAPER["V-Rex8"]["frame_latency_ms"][1]
    clo_e = _closure(edge, paper_e, PAPER["V-Rex8"]["tpot_ms_range"][1], measured, figures)
    clo_s = _closure(server, {1024: 20.0, 40960: 48.0}, PAPER["V-Rex48"]["tpot_ms_range"][1], measured, figures)
    closed_e = _closed_points(clo_e, measured, figures)
    bases = {"edge": edge, "server": server}
    calib = calibrate(bases)
    val = validate(bases)
    spec = without_measured_axes(load_sweep_spec("edge-40k"), measured)
    sweep = run_design_sweep(spec, edge, measured, figures)
    choices = design_choices(sweep["rows"], edge, spec)
    tiers = _tier_rows(ev_e)
    layer_view = layer_timeline(edge, figures, measured)
    per_model = _per_model_section(edge, groups, figures, strict) if groups else []
    seconds = time.perf_counter() - t0

    L = ["# Performance and energy results: V-Rex8 / V-Rex48 vs AGX Orin / A100", ""]
    L.append("Generated by `vrex perf --results docs/results-perf.md` (add `--golden-json F1 F2 …` and `--figures F` "
             "to use measured inputs; the text between the tables is generated from the same numbers, in "
             "`perf/results.py`). The model is the analytic timeline model of [perf.md](perf.md); it was not fitted "
             "to the paper. Where it differs, the closing section solves for the one parameter value that would "
             "meet the paper and says whether that value is plausible.")
    L.append("")
    L.append("## Provenance")
    L.append("")
    v = versions()
    L.append(f"Configs `edge` (hash `{edge.hash()}`) and `server` (hash `{server.hash()}`), git `{git_revision()}`, "
             + ", ".join(f"{k} {val_}" for k, val_ in v.items()) + f"; the whole document took {seconds:.0f} s to "
             "compute (analytic model; no EDA tool involved).")
    L.append("")
    L += _inputs_section(ev_e, measured, figures)
    L.append("")
    L.append("## Verdict")
    L.append("")
    L += _verdict(ev_e, clo_e)
    L.append("")

    # ---- physical limits
    L.append("## Physical limits")
    L.append("")
    fl = {f["platform"]: f for f in floors(ev_e) + floors(ev_s)}
    L += _table(["platform", "DRAM", "weights per frame", "weight floor frame / decode", "best case per stream"],
                [[p, f"{f['dram_gbs']:g} GB/s", f"{f['frame_weight_bytes'] / 1e9:.2f} GB",
                  f"{f['frame_weight_floor_s'] * 1e3:.1f} / {f['decode_weight_floor_s'] * 1e3:.1f} ms",
                  f"{1 / f['frame_weight_floor_s']:.1f} FPS, {1 / f['decode_weight_floor_s']:.1f} tokens/s"]
                 for p, f in fl.items()])
    L.append("")
    L.append("Every step streams every weight once, so no system with this memory beats these floors at any batch "
             "(tests check every step against them, and against its compute, DRAM and link floors).")
    L.append("")

    # ---- device tier
    cfg = ev_e.cfg
    L.append("## The device-memory tier")
    L.append("")
    L.append(f"`dre.kvmu.device_capacity_bytes = 0` (auto) gives the KV tier what the 32 GB hold beside the weights "
             f"and activations: {cfg.device_kv_capacity_bytes(1) / 1e9:.2f} GB at batch 1, "
             f"{cfg.device_kv_capacity_bytes(4) / 1e9:.2f} GB at batch 4 (the staging area of two layers of "
             "candidates is carved from it). A 40K cache of Llama-3-8B is "
             f"{40960 * cfg.model.kv_bytes_per_token / 1e9:.2f} GB per stream, so at batch 1 every KV size fits and "
             "nothing crosses PCIe; at batch 4 the streams share the tier and the oldest KV overflows to the SSD. "
             "The previous model (only the 1K window resident) is the `window only` column.")
    L.append("")
    L += _table(["KV", "B", "device tokens / stream", "host tokens / stream", "PCIe GB per frame",
                 "latency (ms)", "window only (ms)", "window only PCIe GB", "paper (ms)"],
                [[kv_label(t["kv"]), t["batch"], t["device"], t["host"], f"{t['link_gb']:.2f}", f"{t['ms']:.1f}",
                  f"{t['window_ms']:.1f}", f"{t['window_link_gb']:.2f}",
                  _f(paper_e.get(t["kv"]) if t["batch"] == 1 else None, "{:.0f}")] for t in tiers])
    L.append("")
    cap_rows = []
    for kv, cap in clo_e["capacity"].items():
        at = cfg.with_overrides({"perf.kv_sizes": [kv], "perf.batches": [1]})
        per = (cap - at.kv_staging_bytes(1, kv)) / cfg.model.kv_bytes_per_token if cap else None
        cap_rows.append([kv_label(kv), paper_e[kv], _f(cap / 1e9 if cap else None, "{:.2f}"),
                         _f(per, "{:.0f}"), "yes (fits beside the weights)" if cap else
                         "no capacity in [window, auto] meets it"])
    L.append("Capacity at which the paper's per-frame latencies are met (batch 1, with the DRAM and DPE efficiencies "
             "that meet its 1K numbers, see *Closing the gaps*):")
    L.append("")
    L += _table(["KV", "paper (ms)", "capacity (GB)", "tokens per stream in device DRAM", "physically possible"],
                cap_rows)
    L.append("")
    caps = [c for c in clo_e["capacity"].values() if c]
    if len(caps) > 1:
        L.append(f"No single capacity meets every point: the closing values range from {min(caps) / 1e9:.2f} to "
                 f"{max(caps) / 1e9:.2f} GB. A fixed capacity gives a latency that is flat while the cache fits and "
                 "then grows with the overflow; the paper's 198 → 200 ms plateau from 10K to 20K is neither.")
        L.append("")

    # ---- edge tables
    L.append("## Edge: V-Rex8 vs Jetson AGX Orin (config `edge`)")
    L.append("")
    L.append("### Frame processing (Fig. 13)")
    L.append("")
    L += _table(["KV", "B", "latency (ms)", "paper", "Δ", "FPS", "speedup vs FlexGen", "vs InfiniGenP", "vs ReKV",
                 "energy gain vs FlexGen", "paper [Fig]", "Δ"],
                [[kv_label(r["kv"]), r["batch"], f"{r['latency_ms']:.1f}", _f(r["paper_latency_ms"], "{:.0f}"),
                  _pct(r["latency_rel"]), f"{r['fps']:.2f}", f"{r['speedup']['flexgen']:.2f}",
                  f"{r['speedup']['infinigenp']:.2f}", f"{r['speedup']['rekv']:.2f}",
                  f"{r['energy_gain']['flexgen']:.2f}", _f(r["paper_energy_gain_flexgen"]), _pct(r["energy_gain_rel"])]
                 for r in rows_e["frame"]])
    L.append("")
    L.append("### Text generation")
    L.append("")
    L += _table(["KV", "B", "TPOT (ms)", "tokens/s", "speedup vs FlexGen", "energy gain vs FlexGen", "paper [Fig]"],
                [[kv_label(r["kv"]), r["batch"], f"{r['tpot_ms']:.1f}", f"{r['tokens_per_s']:.1f}",
                  f"{r['speedup']['flexgen']:.2f}", f"{r['energy_gain']['flexgen']:.2f}",
                  _f(r["paper_energy_gain_flexgen"])] for r in rows_e["text"]])
    L.append("")
    L.append("### Ranges, ours vs the paper")
    L.append("")
    L += _table(["B", "metric", "ours", "paper"],
                [[g["batch"], g["metric"], f"{g['ours'][0]:.2f}–{g['ours'][1]:.2f}",
                  "—" if not g["paper"] else f"{g['paper'][0]:g}–{g['paper'][1]:g}"] for g in rows_e["ranges"]])
    L.append("")
    L.append("### Session (Fig. 14) and hardware ablation (Fig. 16)")
    L.append("")
    L += _table(["KV", "B", "V-Rex8 (s)", "AGX + FlexGen (s)", "reduction", "paper [Fig]"],
                [[kv_label(r["kv"]), r["batch"], f"{r['vrex_s']:.2f}", f"{r['flexgen_s']:.2f}", f"{r['speedup']:.2f}",
                  _f(r["paper_speedup"])] for r in rows_e["session"] if r["batch"] == 1])
    L.append("")
    L += _ablation_table(rows_e["ablation"])
    L.append("")
    L += per_model

    # ---- server
    L.append("## Server: V-Rex48 vs A100 (config `server`)")
    L.append("")
    L += _table(["KV", "B", "latency (ms)", "FPS", "speedup vs FlexGen", "energy gain", "paper [Fig]", "TPOT (ms)",
                 "text speedup", "text energy gain", "paper [Fig]"],
                [[kv_label(f["kv"]), f["batch"], f"{f['latency_ms']:.1f}", f"{f['fps']:.1f}",
                  f"{f['speedup']['flexgen']:.2f}", f"{f['energy_gain']['flexgen']:.2f}",
                  _f(f["paper_energy_gain_flexgen"]), f"{t['tpot_ms']:.1f}", f"{t['speedup']['flexgen']:.2f}",
                  f"{t['energy_gain']['flexgen']:.2f}", _f(t["paper_energy_gain_flexgen"])]
                 for f, t in zip(rows_s["frame"], rows_s["text"])])
    L.append("")
    L += _table(["B", "metric", "ours", "paper"],
                [[g["batch"], g["metric"], f"{g['ours'][0]:.2f}–{g['ours'][1]:.2f}",
                  "—" if not g["paper"] else f"{g['paper'][0]:g}–{g['paper'][1]:g}"] for g in rows_s["ranges"]])
    L.append("")
    L += _ablation_table(rows_s["ablation"])
    L.append("")

    # ---- closing the gaps
    L.append("## Closing the gaps")
    L.append("")
    L.append("Each row solves one parameter by bisection (the latency is monotone in it) for the value at which the "
             "model meets one paper number, the others as stated; `none` = no value in the range meets it. The "
             "server's 20–48 ms range is read as 20 ms at 1K and 48 ms at 40K, its TPOT range as 14 ms at 1K.")
    L.append("")
    for name, clo in (("V-Rex8", clo_e), ("V-Rex48", clo_s)):
        L += _table(["system", "paper number", "ours as configured", "parameter", "closing value", "searched",
                     "plausible"],
                    [[name, f"{st['label']}: {st['gap'].paper_ms:g} ms", f"{st['ours_ms']:.1f} ms", f"`{st['key']}`",
                      _value(st["key"], st["value"]), _range(st["key"], st["range"]), _plaus(st)]
                     for st in clo["steps"]])
        L.append("")
    L.append("Ranges of plausibility: " + "; ".join(
        f"`{st['key']}` {st['why']}" for st in {s["key"]: s for s in clo_e["steps"] if s["why"]}.values()) + ".")
    L.append("")
    L.append("With the closing DRAM and DPE efficiencies and, per KV size, the closing capacity (auto where none "
             "closes it), the numbers that were *not* used to close anything:")
    L.append("")
    paper8 = PAPER["V-Rex8"]
    L += _table(["KV", "capacity (GB)", "latency (ms)", "paper", "speedup vs FlexGen", "paper range",
                 "energy gain", "paper [Fig]", "TPOT (ms)", "paper"],
                [[kv_label(c["kv"]), _f(c["capacity"] / 1e9 if c["capacity"] else None, "{:.2f}"), f"{c['ms']:.0f}",
                  paper_e[c["kv"]], f"{c['speedup']:.2f}", "2.2–7.3", f"{c['energy_gain']:.2f}",
                  _f(paper8["frame_energy_gain"][1].get(c["kv"])), f"{c['tpot']:.1f}", "89–97"] for c in closed_e])
    L.append("")
    ab = closed_e[-1]["ablation"]
    if ab:
        L.append("Fig. 16 ablation at 40K on that closed system:")
        L.append("")
        L += _ablation_table(ab)
        L.append("")
    L += _closed_summary(closed_e, paper_e, paper8)
    L.append("")

    # ---- validation
    L.append("## Baselines against published measurements")
    L.append("")
    L.append("The GPU baseline models (eager PyTorch, FlexGen-class) on 7–8B models in FP16/BF16 at batch 1, "
             "everything resident in GPU memory (sources and settings in `perf/validation.py`). Each measurement is "
             "modelled with its stack's host overhead (eager: one launch per kernel; compiled, fused or TensorRT: "
             "none). Five points set five GPU factors of the configs (`calibrates`); the others are held out.")
    L.append("")
    L += _table(["platform", "model", "phase", "tokens", "stack", "measured tok/s", "model tok/s", "Δ",
                 "weight-floor tok/s", "role", "source"],
                [[r["platform"], r["model"], r["phase"], r["tokens"], r["stack"], f"{r['measured_tok_s']:.1f}",
                  f"{r['model_tok_s']:.1f}", _pct(r["rel"]), f"{r['floor_tok_s']:.1f}", r["role"], r["source"]]
                 for r in val])
    L.append("")
    L.append("Fitted values (the configs carry them rounded): " + "; ".join(
        f"{b} `{k}` = {v:.3g}" for (b, k), v in calib.items()) + ". The paper's baselines behave like the eager "
        "stacks: its AGX + FlexGen TPOT at 1K is 1.9 × 89 ≈ 169 ms (eager HF Transformers: 161 ms) and its A100 + "
        "FlexGen TPOT 2.8 × 14 ≈ 39 ms (plain eager PyTorch: 39 ms).")
    L.append("")

    # ---- design sweep
    L.append("## Past the paper: the design sweep")
    L.append("")
    L.append(f"`vrex perf --sweep edge-40k` ({spec.source.split('configs/')[-1]}): "
             f"{len(sweep['rows'])} points ({len(sweep['invalid'])} combinations skipped because a capacity cannot "
             f"hold a batch's window and staging) at KV {kv_label(spec.kv)} in {sweep['seconds']:.1f} s, axes "
             + ", ".join(f"`{a}` {v}" for a, v in spec.grid.items()) + f", batches {list(spec.batches)}. "
             "The Pareto plot (FPS vs energy per frame, weight-streaming floors drawn) is "
             "`build/perf/sweep-edge-40k/pareto.png`.")
    L.append("")
    best = choices.get("cheapest_at_fps")
    fast = choices.get("fastest_within_power")
    ratio_source = "measured ratios" if measured is not None else "Table II ratio"
    L.append(f"- **≥ {choices.get('target_fps')} FPS at 40K, V-Rex8-class (204.8 GB/s, 8 cores, {ratio_source}, "
             f"no reuse)**: {choices.get('meets_fps')} of the {choices.get('design_points')} hardware variants at "
             "batch 1; the cheapest: " + (describe_point(best) if best else "none") + ".")
    L.append(f"- **Best FPS within the paper's {choices.get('power_budget_w')} W** (any batch, same class): "
             + (describe_point(fast) if fast else "none") + ".")
    L.append("")
    L.append("Cost here is what changes against V-Rex8: the link generation (lanes × 3 W at full load), the device "
             "capacity given to KV (auto = all free DRAM: no added part), the cores (1.89 mm² each, Table III). "
             "Power is the V-Rex system's average over a frame (engines, DRAM, link, SSD, static).")
    L.append("")
    L += layer_markdown(layer_view, command="vrex perf -c edge --layer-timeline" + (" --figures …" if figures else ""))
    L.append("")
    L.append("## Reproduce")
    L.append("")
    L.append("```bash")
    L.append("vrex perf --results docs/results-perf.md            # this document (add --golden-json / --figures)")
    L.append("vrex perf -c edge                                  # the edge tables, plots in build/perf/")
    L.append("vrex perf -c server")
    L.append("vrex perf --sweep edge-40k                         # the design sweep and its Pareto plot")
    L.append("vrex perf -c edge --set dre.kvmu.device_capacity_bytes=3800000000   # a closing capacity")
    L.append("```")
    return "\n".join(L) + "\n"


def _closed_summary(closed: list, paper_frames: dict, paper: dict) -> list[str]:
    """Sentences on the numbers the closure did not fit: speedups, energy gains, TPOT, the ablation."""
    met = [c for c in closed if abs(c["ms"] - paper_frames[c["kv"]]) <= 0.2 * paper_frames[c["kv"]]]
    lo, hi = paper["frame_speedup_flexgen"][1]
    in_range = [c for c in met if lo * 0.8 <= c["speedup"] <= hi * 1.2]
    gains = [c for c in met if paper["frame_energy_gain"][1].get(c["kv"])
             and abs(c["energy_gain"] / paper["frame_energy_gain"][1][c["kv"]] - 1) <= 0.2]
    tlo, thi = paper["tpot_ms_range"][1]
    tpots = [c for c in closed if tlo * 0.8 <= c["tpot"] <= thi * 1.2]
    L = [f"Read together: {len(met)} of {len(closed)} frame latencies are met within ±20 % by these values (by "
         "construction where a value was solved). The numbers not fitted: the speedup vs AGX + FlexGen lies within "
         f"±20 % of the paper's {lo:g}–{hi:g} range at {len(in_range)} of those {len(met)} sizes, the energy gain "
         f"within ±20 % of Fig. 13 at {len(gains)}, and TPOT within ±20 % of {tlo:g}–{thi:g} ms at {len(tpots)} of "
         f"{len(closed)}."]
    ab = {r["key"]: r for r in (closed[-1]["ablation"] or [])}
    pa = paper["ablation"]["rows"]
    if ab:
        L.append("")
        L.append(f"In the ablation the KVPU alone gives {ab['vrex_kvpu']['speedup']:.1f}× (paper "
                 f"{pa['vrex_kvpu'][0]:g}×) and the KVMU's layout {ab['vrex_all']['speedup']:.1f}× "
                 f"({pa['vrex_all'][0]:g}×): once KV crosses PCIe to an SSD that reads 4 KiB blocks, a 256 B-per-head "
                 "selection in token order touches nearly every block, so most of the gain is the layout's. AGX + "
                 f"ReSV gives {ab['gpu_resv']['speedup']:.2f}× (paper {pa['gpu_resv'][0]:g}×, \"most retrieval "
                 "hidden under compute\"): our GPU runs the same token-order selection from the SSD and moves the "
                 "whole offloaded cache; the paper's figure needs the GPU's fetched volume to be far smaller, e.g. "
                 "its KV mostly resident too (`perf.gpu.kv_tier = device`).")
    return L


def _value(key: str, value) -> str:
    if value is None:
        return "none"
    if key == "dre.kvmu.device_capacity_bytes":
        return f"{value / 1e9:.2f} GB"
    return f"{value:.3f}"


def _range(key: str, rng) -> str:
    lo, hi = rng
    if key == "dre.kvmu.device_capacity_bytes":
        return f"{lo / 1e9:.2f}–{hi / 1e9:.2f} GB"
    return f"{lo:g}–{hi:g}"


def _plaus(st) -> str:
    if st["value"] is None:
        return "—"
    if st["key"] == "dre.kvmu.device_capacity_bytes":
        return "possible (fits)"
    return {True: "yes", False: "no", None: "—"}[st["plausible"]]


def _ablation_table(ab) -> list[str]:
    return _table(["system (40K, batch 1)", "latency (ms)", "speedup", "paper", "energy gain", "paper [Fig]",
                   "prediction exposed / busy"],
                  [[r["label"], f"{r['latency_ms']:.1f}", f"{r['speedup']:.2f}", _f(r["paper_speedup"]),
                    f"{r['energy_gain']:.2f}", _f(r["paper_energy_gain"]),
                    f"{r['prediction_share']:.1%} / {r['prediction_busy_share']:.1%}"] for r in ab])


def _portable(text: str) -> str:
    """The document names files relative to the project (no machine-specific prefixes)."""
    from vrex.paths import build_root

    for prefix, short in ((str(build_root()) + "/", "build/"), (str(Path.cwd()) + "/", "")):
        text = text.replace(prefix, short)
    return text


def write_results(path, measured=None, figures=None, *, strict: bool = False, groups: dict | None = None) -> Path:
    text = _portable(build_results(measured, figures, strict=strict, groups=groups))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    return out
