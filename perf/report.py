"""The comparison tables (text) and the JSON record of an evaluation, with the paper's numbers beside ours.

Relative differences are (ours − paper) / paper for the paper's point values. Where the paper gives only a range
over the KV sizes, the range is printed and compared with the range of our values.
"""

from __future__ import annotations

import sys

from vrex.paths import git_revision
from vrex.tools import package_version

from .paper import paper_for
from .policies import BASELINES, LABELS
from .sweep import Evaluation, session_totals

__all__ = ["comparison_rows", "render_text", "render_per_model", "to_json", "floors", "kv_label", "versions"]


def kv_label(kv: int) -> str:
    """1024 -> "1K"; sizes that are not whole K are printed as they are."""
    return f"{kv // 1024}K" if kv % 1024 == 0 else str(kv)


def _rel(ours, paper):
    return None if paper in (None, 0) or ours is None else (ours - paper) / paper


def _pct(x) -> str:
    return "" if x is None else f"{x * 100:+.0f}%"


def _num(x, fmt="{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _range(rng, fmt="{:g}") -> str:
    return "—" if not rng else f"{fmt.format(rng[0])}–{fmt.format(rng[1])}"


def floors(ev: Evaluation) -> list[dict]:
    """Weight-streaming and compute floors of a batch-1 frame and decode step, per platform."""
    out = []
    pt = next(p for p in ev.points if p.batch == min(ev.cfg.perf.batches))
    for key in ("vrex", "gpu:flexgen"):
        s = ev.systems[key]
        f, d = pt.frame[key], pt.decode[key]
        out.append({"platform": s.platform.name, "dram_gbs": s.platform.dram_bw / 1e9,
                    "frame_weight_bytes": f.counters.work.weight_bytes, "frame_weight_floor_s": f.weight_floor,
                    "frame_compute_floor_s": f.compute_floor,
                    "decode_weight_bytes": d.counters.work.weight_bytes, "decode_weight_floor_s": d.weight_floor,
                    "batch": pt.batch})
    return out


def _against_baselines(row: dict, ours, results: dict, paper_energy_gain) -> dict:
    """``row`` plus speedup and energy gain of ``ours`` over every GPU baseline in ``results`` and the paper's
    energy gain over FlexGen with its relative difference."""
    row["speedup"] = {b: results[f"gpu:{b}"].latency / ours.latency for b in BASELINES}
    row["energy_gain"] = {b: results[f"gpu:{b}"].energy_total / ours.energy_total for b in BASELINES}
    row["paper_energy_gain_flexgen"] = paper_energy_gain
    row["energy_gain_rel"] = _rel(row["energy_gain"]["flexgen"], paper_energy_gain)
    return row


def comparison_rows(ev: Evaluation) -> dict:
    """Frame, text and session rows: ours, the paper's, relative differences."""
    cfg = ev.cfg
    paper = paper_for(cfg)
    frame, text, session = [], [], []
    for pt in ev.points:
        f = pt.frame["vrex"]
        d = pt.decode["vrex"]
        pl = paper.get("frame_latency_ms", {}).get(pt.batch, {}).get(pt.kv)
        frame.append(_against_baselines(
            {"kv": pt.kv, "batch": pt.batch, "latency_ms": f.latency * 1e3, "paper_latency_ms": pl,
             "latency_rel": _rel(f.latency * 1e3, pl), "fps": f.throughput,
             "paper_fps": (1e3 * pt.batch / pl) if pl else None, "energy_per_frame_j": f.energy_total / pt.batch},
            f, pt.frame, paper.get("frame_energy_gain", {}).get(pt.batch, {}).get(pt.kv)))
        text.append(_against_baselines(
            {"kv": pt.kv, "batch": pt.batch, "tpot_ms": d.latency * 1e3, "tokens_per_s": d.throughput,
             "energy_per_token_j": d.energy_total / pt.batch},
            d, pt.decode, paper.get("text_energy_gain", {}).get(pt.batch, {}).get(pt.kv)))
        vl, ve = session_totals(cfg, pt, "vrex")
        gl, ge = session_totals(cfg, pt, "gpu:flexgen")
        ps = paper.get("e2e_speedup", {}).get(pt.kv) if pt.batch == 1 else None
        session.append({"kv": pt.kv, "batch": pt.batch, "vrex_s": vl, "vrex_j": ve, "flexgen_s": gl,
                        "flexgen_j": ge, "speedup": gl / vl, "paper_speedup": ps, "speedup_rel": _rel(gl / vl, ps)})
    ranges = []
    for batch in cfg.perf.batches:
        fr = [r for r in frame if r["batch"] == batch]
        tr = [r for r in text if r["batch"] == batch]

        def span(vals):
            return (min(vals), max(vals))

        items = [
            ("per-frame latency (ms)", span([r["latency_ms"] for r in fr]),
             paper.get("frame_latency_range_ms", {}).get(batch)
             or (span(list(paper["frame_latency_ms"][batch].values())) if batch in paper.get("frame_latency_ms", {})
                 else None)),
            ("FPS (all streams)", span([r["fps"] for r in fr]),
             paper.get("fps_range", {}).get(batch)),
            ("frame speedup vs FlexGen", span([r["speedup"]["flexgen"] for r in fr]),
             paper.get("frame_speedup_flexgen", {}).get(batch)),
            ("frame energy gain vs FlexGen", span([r["energy_gain"]["flexgen"] for r in fr]),
             paper.get("frame_energy_gain_range", {}).get(batch)),
            ("TPOT (ms)", span([r["tpot_ms"] for r in tr]), paper.get("tpot_ms_range", {}).get(batch)),
            ("text speedup vs FlexGen", span([r["speedup"]["flexgen"] for r in tr]),
             paper.get("text_speedup_flexgen", {}).get(batch)),
            ("text energy gain vs FlexGen", span([r["energy_gain"]["flexgen"] for r in tr]),
             paper.get("text_energy_gain_range", {}).get(batch)),
        ]
        for name, ours, theirs in items:
            ranges.append({"batch": batch, "metric": name, "ours": ours, "paper": theirs})
    ab_paper = paper.get("ablation", {})
    base = ev.ablation[0][2]
    ablation = []
    for key, label, r in ev.ablation:
        pr = ab_paper.get("rows", {}).get(key)
        pred = r.exposed.get("prediction", 0.0) / r.latency
        pred_busy = r.busy_by_category.get("prediction", 0.0) / r.latency
        ablation.append({"key": key, "label": label, "latency_ms": r.latency * 1e3,
                         "speedup": base.latency / r.latency, "paper_speedup": pr[0] if pr else None,
                         "energy_gain": base.energy_total / r.energy_total, "paper_energy_gain": pr[1] if pr else None,
                         "prediction_share": pred, "prediction_busy_share": pred_busy,
                         "exposed_ms": {k: v * 1e3 for k, v in r.exposed.items()},
                         "kv": r.step.kv_tokens, "batch": r.step.batch})
    roof_paper = paper.get("roofline", {}).get("shares", {})
    roofline = []
    for e in ev.roofline:
        pk = {"vrex": "vrex", "gpu:flexgen": "flexgen", "gpu:rekv": "rekv"}[e["system"]]
        roofline.append({**e, "paper_share": roof_paper.get(pk)})
    return {"frame": frame, "text": text, "session": session, "ranges": ranges, "ablation": ablation,
            "roofline": roofline, "paper": paper}


def _ratio_text(p, stage: str) -> str:
    fit = p.frame_fit if stage == "frame" else p.text_fit
    return f"{p.ratio(stage):.1%}" if fit is None or fit.form == "constant" else f"fit ({fit.form})"


def render_text(ev: Evaluation, rows: dict | None = None) -> str:
    cfg = ev.cfg
    rows = rows or comparison_rows(ev)
    paper = rows["paper"]
    vrex = ev.systems["vrex"]
    gpu = ev.systems["gpu:flexgen"].platform.name
    L = []
    L.append(f"vrex perf — config {cfg.name} (hash {cfg.hash()}): {vrex.label} vs {gpu} + "
             f"{{{', '.join(LABELS[b] for b in BASELINES)}}}, overlap {cfg.perf.overlap}, "
             f"offload tier {cfg.system.storage.kind} over {cfg.system.link.kind}")
    pols = {k: s.policy for k, s in ev.systems.items()}
    resv = pols["vrex"]
    shown = [resv] + [pols["gpu:" + b] for b in BASELINES if b != "flexgen"]
    L.append("retrieval ratios (frame / text): " + "; ".join(
        f"{p.label} {_ratio_text(p, 'frame')} / {_ratio_text(p, 'text')} [{p.source}]" for p in shown)
        + "; FlexGen full fetch")
    pols = {p.name: p for p in shown}
    for name, p in pols.items():
        for stage, fit in (("frame", p.frame_fit), ("text", p.text_fit)):
            if fit is not None:
                L.append(f"  {p.label} {stage} ratio fit ({cfg.perf.ratio_fit}): "
                         f"{fit.describe(cfg.kv_candidates(max(cfg.perf.kv_sizes)))}")
    L.append(f"device tier: {ev.sources['device_tier']}")
    L.append(f"KVMU traffic: {ev.sources['kvmu_traffic']}; tokens per cluster: {ev.sources['tokens_per_cluster']}")
    L.append(f"LXE: {ev.sources['lxe']}")
    L.append(f"DRE timing: {ev.sources['dre_cycles']}")
    L.append(f"DRE power: {ev.sources['dre_power']}")
    for key in ("e2e_accuracy", "core_figures"):
        if key in ev.sources:
            L.append(f"{key.replace('_', ' ')}: {ev.sources[key]}")
    for n in ev.notes:
        L.append(n if n.startswith("warning:") else f"note: {n}")
    L.append("assumed (nothing measures them in this run):")
    L.extend(f"  - {a}" for a in ev.assumed)
    if not paper:
        L.append(f"paper columns: none (the paper reports V-Rex8 and V-Rex48 running llama-3-8b; this config is "
                 f"{cfg.system.name} running {cfg.model.name})")
    L.append("")
    L.append("Physical limit — weight-streaming floor (weights streamed per step / peak DRAM bandwidth):")
    for fl in floors(ev):
        L.append(f"  {fl['platform']:<18} frame {fl['frame_weight_floor_s'] * 1e3:6.1f} ms "
                 f"({fl['frame_weight_bytes'] / 1e9:.2f} GB at {fl['dram_gbs']:g} GB/s; ≤ "
                 f"{1 / fl['frame_weight_floor_s']:.1f} FPS per stream)   "
                 f"decode {fl['decode_weight_floor_s'] * 1e3:6.1f} ms"
                 f"   compute floor of a frame {fl['frame_compute_floor_s'] * 1e3:.1f} ms")
    L.append("")
    bl = "".join(f" {'×' + LABELS[b]:>11}" for b in BASELINES)
    L.append(f"Frame processing: per-frame latency, FPS (batch / latency), energy per frame and stream; speedup (×) "
             f"and energy-efficiency gain (E×) of {vrex.label} over {gpu} + each policy")
    L.append(f"{'KV':>4} {'B':>2} | {'ms':>7} {'paper':>6} {'Δ':>5} | {'FPS':>6} {'paper':>5} | {'J/frame':>7} |"
             f"{bl} {'paper×FG':>9} | {'E×FG':>6} {'paper':>5} {'Δ':>5}")
    for r in rows["frame"]:
        prange = paper.get("frame_speedup_flexgen", {}).get(r["batch"])
        sp = "".join(f" {r['speedup'][b]:>11.2f}" for b in BASELINES)
        L.append(f"{kv_label(r['kv']):>4} {r['batch']:>2} | {r['latency_ms']:>7.1f} "
                 f"{_num(r['paper_latency_ms'], '{:.0f}'):>6} {_pct(r['latency_rel']):>5} | {r['fps']:>6.2f} "
                 f"{_num(r['paper_fps'], '{:.2f}'):>5} | {r['energy_per_frame_j']:>7.2f} |{sp} "
                 f"{_range(prange):>9} | {r['energy_gain']['flexgen']:>6.2f} "
                 f"{_num(r['paper_energy_gain_flexgen']):>5} {_pct(r['energy_gain_rel']):>5}")
    L.append("")
    L.append("Text generation: time per output token (TPOT), tokens/s, energy per token and stream; speedup and "
             "energy-efficiency gain over each baseline")
    L.append(f"{'KV':>4} {'B':>2} | {'TPOT ms':>7} {'paper':>6} | {'tok/s':>6} | {'J/token':>7} |"
             f"{bl} {'paper×FG':>9} | {'E×FG':>6} {'paper':>5} {'Δ':>5}")
    for r in rows["text"]:
        tp = paper.get("tpot_ms_range", {}).get(r["batch"])
        prange = paper.get("text_speedup_flexgen", {}).get(r["batch"])
        sp = "".join(f" {r['speedup'][b]:>11.2f}" for b in BASELINES)
        L.append(f"{kv_label(r['kv']):>4} {r['batch']:>2} | {r['tpot_ms']:>7.1f} {_range(tp):>6} | "
                 f"{r['tokens_per_s']:>6.1f} | {r['energy_per_token_j']:>7.3f} |{sp} {_range(prange):>9} | "
                 f"{r['energy_gain']['flexgen']:>6.2f} {_num(r['paper_energy_gain_flexgen']):>5} "
                 f"{_pct(r['energy_gain_rel']):>5}")
    L.append("")
    L.append("Ranges over the KV sizes, ours vs the paper's:")
    for g in rows["ranges"]:
        ours = g["ours"]
        L.append(f"  B={g['batch']:<2} {g['metric']:<30} ours {ours[0]:8.2f} – {ours[1]:8.2f}   paper "
                 f"{_range(g['paper']):>11}")
    L.append("")
    L.append(f"Session ({cfg.perf.frames_per_session} frames + {cfg.model.question_tokens} question + "
             f"{cfg.model.answer_tokens} answer tokens; paper Fig. 14): end-to-end latency")
    L.append(f"{'KV':>4} {'B':>2} | {'V-Rex s':>8} {'FlexGen s':>9} | {'×':>6} {'paper':>5} {'Δ':>5}")
    for r in rows["session"]:
        L.append(f"{kv_label(r['kv']):>4} {r['batch']:>2} | {r['vrex_s']:>8.2f} {r['flexgen_s']:>9.2f} | "
                 f"{r['speedup']:>6.2f} {_num(r['paper_speedup']):>5} {_pct(r['speedup_rel']):>5}")
    L.append("")
    ab = rows["ablation"]
    L.append(f"Hardware ablation (paper Fig. 16): frame at {kv_label(ab[0]['kv'])}, batch 1, vs {ab[0]['label']}")
    L.append(f"  {'system':<48} {'ms':>8} {'×':>6} {'paper':>5} {'E×':>6} {'paper':>5} {'pred. exposed':>13} "
             f"{'pred. busy':>10}")
    for r in ab:
        L.append(f"  {r['label']:<48} {r['latency_ms']:>8.1f} {r['speedup']:>6.2f} {_num(r['paper_speedup']):>5} "
                 f"{r['energy_gain']:>6.2f} {_num(r['paper_energy_gain']):>5} {r['prediction_share']:>13.1%} "
                 f"{r['prediction_busy_share']:>10.1%}")
    L.append("  (prediction time as a share of the latency: exposed on the critical path, and busy on any engine; "
             "paper: 48% for AGX + ReSV, 0.5% with the KVPU)")
    L.append("")
    ro = rows["roofline"]
    L.append(f"Roofline (paper Fig. 18): LLM part of a frame at {kv_label(ro[0]['kv'])}, batch {ro[0]['batch']}; "
             "share = attained / min(peak, intensity × DRAM bandwidth)")
    L.append(f"  {'system':<40} {'Op/B':>6} {'TFLOPS':>7} {'roof':>7} {'share':>6} {'paper':>6}")
    for r in ro:
        L.append(f"  {r['label']:<40} {r['intensity_op_per_byte']:>6.1f} {r['attained_flops'] / 1e12:>7.2f} "
                 f"{r['roof_flops'] / 1e12:>7.2f} {r['share_of_roof']:>6.1%} "
                 f"{_num(r['paper_share'], '{:.1%}'):>6}")
    return "\n".join(L) + "\n"


def _with_factor(ratio, factor) -> str:
    """A ratio with its extrapolation factor; "—" where the KV size leaves nothing to select."""
    if factor is None:
        return f"{ratio:.3f} (not fitted)"
    return f"{ratio:.3f} ({factor:.1f}×)" if factor else "—"


def render_per_model(per_model: dict, headline: dict | None) -> str:
    """Text: every model's fitted ReSV ratios with their extrapolation factors and the frame FPS, speedup and energy
    gain over FlexGen they give (``per_model``: key -> :func:`vrex.perf.per_model.model_entry`)."""
    L = ["", "Per model: each model's golden reports fitted alone (ReSV ratio at the KV size's candidates, × = "
         "candidates / the longest measured session's); the tables above use "
         + (f"{headline['model']}'s ({headline['why']})" if headline else "no measured ratios")]
    L.append(f"  {'model':<28} {'KV':>4} {'B':>2} | {'frame ratio':>14} {'text ratio':>14} | {'FPS':>6} "
             f"{'×FG':>6} {'E×FG':>6} | {'TPOT ms':>7} {'text ×FG':>8} {'text E×FG':>9}")
    for entry in per_model.values():
        for f, t in zip(entry["frame"], entry["text"]):
            L.append(f"  {entry['model']:<28} {kv_label(f['kv']):>4} {f['batch']:>2} | "
                     f"{_with_factor(f['frame_ratio'], f['frame_factor']):>14} "
                     f"{_with_factor(t['text_ratio'], t['text_factor']):>14} | {f['fps']:>6.2f} "
                     f"{f['speedup_flexgen']:>6.2f} {f['energy_gain_flexgen']:>6.2f} | {t['tpot_ms']:>7.1f} "
                     f"{t['speedup_flexgen']:>8.2f} {t['energy_gain_flexgen']:>9.2f}")
    for entry in per_model.values():
        over = [o for o in entry["over_limit"] if o["policy"] == "resv"]
        L.append(f"  {entry['model']}: sessions of {', '.join(str(t) for t in entry['session_tokens'])} tokens "
                 f"({', '.join(entry['golden'])}); "
                 + (f"{len(over)} ReSV ratio point(s) extrapolated more than {entry['extrapolation_limit']:g}× (up "
                    f"to {max(o['factor'] for o in over):.1f}×)" if over else
                    f"no ReSV ratio point extrapolated more than {entry['extrapolation_limit']:g}×"))
    return "\n".join(L) + "\n"


def versions() -> dict:
    packages = ("vrex", "numpy", "matplotlib", "pyyaml")
    return {"python": sys.version.split()[0], **{n: package_version(n) for n in packages}}


def to_json(ev: Evaluation, rows: dict | None = None) -> dict:
    cfg = ev.cfg
    rows = rows or comparison_rows(ev)
    points = []
    for pt in ev.points:
        entry = {"kv": pt.kv, "batch": pt.batch, "systems": {}}
        for key in ev.systems:
            lat, en = session_totals(cfg, pt, key)
            entry["systems"][key] = {"frame": pt.frame[key].as_dict(), "question": pt.question[key].as_dict(),
                                     "decode": pt.decode[key].as_dict(),
                                     "session": {"latency_s": lat, "energy_j": en}}
        points.append(entry)
    systems = {k: {"label": s.label, "platform": s.platform.name, "policy": s.policy.name, "layout": s.layout,
                   "overlap": s.overlap, "ratios": {"frame": s.policy.frame_ratio, "text": s.policy.text_ratio},
                   "ratio_fits": {st: _fit_dict(f) for st, f in (("frame", s.policy.frame_fit),
                                                                 ("text", s.policy.text_fit)) if f is not None},
                   "device_tier": s.tier.describe(cfg, max(cfg.perf.batches)),
                   "peak_flops": s.platform.peak_flops, "dram_bw": s.platform.dram_bw, "link_bw": s.platform.link_bw}
               for k, s in ev.systems.items()}
    return {"meta": {"config": cfg.name, "config_hash": cfg.hash(), "git": git_revision(), "versions": versions(),
                     "model": "vrex.perf analytic timeline model (docs/perf.md)"},
            "sources": ev.sources, "notes": ev.notes, "assumed": ev.assumed, "systems": systems, "floors": floors(ev),
            "points": points, "comparison": {k: v for k, v in rows.items() if k != "paper"},
            "paper": _plain(rows["paper"])}


def _fit_dict(fit) -> dict:
    return {"form": fit.form, "a": fit.a, "b": fit.b, "points": [list(p) for p in fit.points],
            "residuals": list(fit.residuals), "sources": list(fit.sources)}


def _plain(obj):
    """JSON-safe copy (integer dict keys become strings)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
