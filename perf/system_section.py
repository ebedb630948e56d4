"""The system results of one ``vrex report`` run: ``vrex perf`` evaluated on the run's own figures.

:func:`system_results` takes the figures.json content the report has just collected (in memory, not a file),
reads it as ``vrex perf --figures`` would (:func:`vrex.perf.figures_input.figures_from_dict`), adds the real-LLM
retrieval ratios the project ships (``SHIPPED_GOLDEN``: extracts of three SmolLM2 golden reports, fitted over their
session lengths by ``perf.ratio_fit``) and evaluates the run's config with :func:`vrex.perf.sweep.evaluate`. The
result is a JSON-safe dict (figures.json's top-level ``"system"``): per-frame latency, FPS, energy, speedup and
energy gain per KV size and batch, TPOT and energy per token, the paper's numbers beside them, the ratios used at
every KV size with whether they are extrapolated, which inputs the figures replaced and which stay modelled, and one
sentence for every figure more than 20 % from the paper's saying which input causes it (:mod:`.system_causes`).
:mod:`.system_render` turns it into markdown and a plot.
"""

from __future__ import annotations

from pathlib import Path

from .figures_input import figures_from_dict
from .golden_input import MeasuredRatios, golden_from_dict
from .inputs import load_json
from .paper import PAPER_MODEL
from .report import comparison_rows, kv_label
from .sweep import evaluate
from .system_causes import differences

__all__ = ["system_results", "system_entry", "SHIPPED_GOLDEN", "FIGURES_LABEL", "THRESHOLD"]

_DATA = Path(__file__).parent / "data" / "real_llm"
# name printed and stored (package-relative, the same on every machine) -> file
SHIPPED_GOLDEN = {f"vrex/perf/data/real_llm/{p.name}": p for p in sorted(_DATA.glob("golden-*.json"))}
FIGURES_LABEL = "figures.json (this run)"
THRESHOLD = 0.2         # a figure further than this from the paper's (relative) gets a sentence on its cause


def _shipped_ratios(golden: dict) -> MeasuredRatios | None:
    runs = tuple(golden_from_dict(load_json(path, "golden JSON"), name) for name, path in golden.items())
    return MeasuredRatios(runs) if runs else None


def _ratio_table(ev) -> dict:
    """Per policy with a measured fit (ReSV, ReKV): the ratio used at every KV size and whether it is extrapolated
    beyond the longest measured session."""
    cfg = ev.cfg
    out = {}
    for key in ("vrex", "gpu:rekv"):
        pol = ev.systems[key].policy
        entry = {"label": pol.label, "source": pol.source, "stages": {}}
        for stage in ("frame", "text"):
            fit = pol.frame_fit if stage == "frame" else pol.text_fit
            per_kv = []
            for kv in cfg.perf.kv_sizes:
                n = cfg.kv_candidates(kv)
                per_kv.append({"kv": kv, "candidates": n, "ratio": pol.ratio(stage, n),
                               "extrapolated": bool(fit is not None and n > fit.n_max),
                               "factor": (n / fit.n_max) if fit is not None and fit.n_max else None})
            entry["stages"][stage] = {
                "fit": fit.describe(cfg.kv_candidates(max(cfg.perf.kv_sizes))) if fit is not None else None,
                "form": fit.form if fit is not None else None,
                "measured_n": [n for n, _ in fit.points] if fit is not None else [],
                "sources": list(fit.sources) if fit is not None else [], "per_kv": per_kv}
        out[pol.name] = entry
    return out


def _frame_row(r: dict) -> dict:
    return {"kv": r["kv"], "batch": r["batch"], "latency_ms": r["latency_ms"],
            "paper_latency_ms": r["paper_latency_ms"], "latency_rel": r["latency_rel"], "fps": r["fps"],
            "paper_fps": r["paper_fps"], "energy_per_frame_j": r["energy_per_frame_j"],
            "speedup_flexgen": r["speedup"]["flexgen"], "energy_gain_flexgen": r["energy_gain"]["flexgen"],
            "paper_energy_gain_flexgen": r["paper_energy_gain_flexgen"], "energy_gain_rel": r["energy_gain_rel"]}


def _text_row(r: dict) -> dict:
    return {"kv": r["kv"], "batch": r["batch"], "tpot_ms": r["tpot_ms"], "tokens_per_s": r["tokens_per_s"],
            "energy_per_token_j": r["energy_per_token_j"], "speedup_flexgen": r["speedup"]["flexgen"],
            "energy_gain_flexgen": r["energy_gain"]["flexgen"],
            "paper_energy_gain_flexgen": r["paper_energy_gain_flexgen"], "energy_gain_rel": r["energy_gain_rel"]}


def system_results(data: dict, cfg, *, golden: dict | None = None) -> dict:
    """figures.json's ``"system"`` entry: ``cfg`` evaluated by ``vrex perf`` with the figures of ``data`` (this
    run's figures.json content) and the shipped real-LLM ratios (``golden``: name -> path; default
    ``SHIPPED_GOLDEN``)."""
    figures = figures_from_dict(data, FIGURES_LABEL)
    ev = evaluate(cfg, _shipped_ratios(SHIPPED_GOLDEN if golden is None else golden), figures)
    rows = comparison_rows(ev)
    paper = rows["paper"]
    vrex, gpu = ev.systems["vrex"], ev.systems["gpu:flexgen"]
    replaced = figures.replaced_values()
    return {
        "config": cfg.name, "config_hash": cfg.hash(), "system": cfg.system.name, "model": cfg.model.name,
        "label": vrex.label, "gpu": gpu.platform.name,
        "kv_sizes": list(cfg.perf.kv_sizes), "kv_labels": [kv_label(k) for k in cfg.perf.kv_sizes],
        "batches": list(cfg.perf.batches),
        "paper": ({"system": cfg.system.name, "gpu": paper.get("gpu")} if paper else None),
        "paper_absent": (None if paper else
                         f"the paper reports V-Rex8 and V-Rex48 running {PAPER_MODEL}; this config is "
                         f"{cfg.system.name} running {cfg.model.name}"),
        "frame": [_frame_row(r) for r in rows["frame"]],
        "text": [_text_row(r) for r in rows["text"]],
        "ranges": [{"batch": g["batch"], "metric": g["metric"], "ours": list(g["ours"]),
                    "paper": list(g["paper"]) if g["paper"] else None} for g in rows["ranges"]],
        "paper_tpot_ms_range": {str(b): list(v) for b, v in paper.get("tpot_ms_range", {}).items()},
        "ratios": _ratio_table(ev),
        "golden": list(SHIPPED_GOLDEN if golden is None else golden),
        "inputs": {"measured": replaced, "modelled": list(ev.assumed), "sources": dict(ev.sources)},
        "notes": list(ev.notes),
        "threshold": THRESHOLD,
        "differences": differences(ev, rows, THRESHOLD),
    }


def system_entry(data: dict, cfg) -> dict:
    """:func:`system_results`, or ``{"error": message}`` when the config cannot be evaluated (the block figures of
    the report stay usable)."""
    from vrex.errors import VrexError

    try:
        return system_results(data, cfg)
    except VrexError as e:
        return {"error": str(e)}
