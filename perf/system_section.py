"""The system results of one ``vrex report`` run: ``vrex perf`` evaluated on the run's own figures.

:func:`system_results` takes the figures.json content the report has just collected (in memory, not a file),
reads it as ``vrex perf --figures`` would (:func:`vrex.perf.figures_input.figures_from_dict`), adds the real-LLM
retrieval ratios the project ships (``SHIPPED_GOLDEN``: extracts of golden reports of several trained LLMs, grouped by
model and fitted over each model's session lengths by ``perf.ratio_fit``, :mod:`.per_model`) and evaluates the run's
config with :func:`vrex.perf.sweep.evaluate` once per model. The result is a JSON-safe dict (figures.json's
top-level ``"system"``). Its top-level keys are the **headline** model's (:func:`vrex.perf.per_model.headline`,
named in ``"headline_model"``): per-frame latency, FPS, energy, speedup and energy gain per KV size and batch, TPOT
and energy per token, the paper's numbers beside them, the ratios used at every KV size with their extrapolation
factors, which inputs the figures replaced and which stay modelled, and one sentence for every figure more than
20 % from the paper's saying which input causes it (:mod:`.system_causes`). ``"per_model"`` holds every model's
ratios, FPS, speedup and energy gain (:func:`vrex.perf.per_model.model_entry`). :mod:`.system_render` turns it into
markdown and a plot.
"""

from __future__ import annotations

from .figures_input import figures_from_dict
from .paper import PAPER_MODEL
from .per_model import SHIPPED_GOLDEN, evaluate_per_model, headline, model_entry, ratio_table, read_shipped
from .report import comparison_rows, kv_label
from .sweep import evaluate
from .system_causes import differences

__all__ = ["system_results", "system_entry", "SHIPPED_GOLDEN", "FIGURES_LABEL", "THRESHOLD"]

FIGURES_LABEL = "figures.json (this run)"
THRESHOLD = 0.2         # a figure further than this from the paper's (relative) gets a sentence on its cause


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
    ``SHIPPED_GOLDEN``), once per model; the top-level figures are the headline model's."""
    figures = figures_from_dict(data, FIGURES_LABEL)
    groups = read_shipped(SHIPPED_GOLDEN if golden is None else golden)
    key, why = headline(cfg, groups)
    evs = evaluate_per_model(cfg, groups, figures)
    ev = evs[key] if key is not None else evaluate(cfg, None, figures)
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
        "ratios": ratio_table(ev),
        "golden": list(groups[key].names) if key is not None else [],
        "headline_model": ({"config": key, "model": groups[key].model, "why": why} if key is not None else None),
        "per_model": {k: model_entry(e, groups[k]) for k, e in evs.items()},
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
