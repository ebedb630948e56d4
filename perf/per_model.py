"""Real-LLM retrieval ratios per model: the shipped extracts grouped by the model they measured, one fit each.

The project ships extracts of golden reports (``vrex golden --trace llm-video … --json``) of several trained LLMs in
``perf/data/real_llm/golden-<config>-row-<length>.json`` (:data:`SHIPPED_GOLDEN`). A ratio curve belongs to one
model: SmolLM2's row rule with its 1 024-token window fetches a few per cent of the offloaded KV, Qwen's with a
256-token window about half. So the extracts are grouped by their ``"config"`` field (a built-in model config:
``smollm2``, ``qwen05``, ``gemma3``), each group is fitted over its own session lengths (``perf.ratio_fit``) and
the config under study is evaluated once per group (:func:`evaluate_per_model`).

The **headline** group (the numbers a report leads with, and what ``vrex perf`` evaluates when it is given several
models' reports) is chosen by :func:`headline` (docs/decisions.md, M1): the group measured with the config's own
model, else the group measured with the config's resident window (the window decides how much of a row's
attention mass is resident and so what the row rule fetches), else SmolLM2's.

An extract is strict where a user's golden report is forgiving (:mod:`.golden_input` notes what falls back): a
shipped extract that names no built-in config, or lacks a field the model reads, raises a one-sentence
:class:`~vrex.errors.TraceError` (:func:`check_extract`). :func:`extract_report` trims a golden report to those
fields, the way the shipped files were made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vrex.config import builtin_config_names, load_config
from vrex.errors import TraceError

from .golden_input import MeasuredRatios, golden_from_dict
from .inputs import dig, load_json, number
from .report import comparison_rows
from .sweep import evaluate

__all__ = ["SHIPPED_GOLDEN", "ModelRatios", "check_extract", "extract_report", "read_shipped", "group_by_model",
           "headline", "evaluate_per_model", "ratio_table", "model_entry", "EXTRAPOLATION_LIMIT", "DEFAULT_HEADLINE"]

_DATA = Path(__file__).parent / "data" / "real_llm"
# name printed and stored (package-relative, the same on every machine) -> file
SHIPPED_GOLDEN = {f"vrex/perf/data/real_llm/{p.name}": p for p in sorted(_DATA.glob("golden-*.json"))}
DEFAULT_HEADLINE = "smollm2"     # the headline when neither the model nor the window matches (as before issue 32)
EXTRAPOLATION_LIMIT = 3.0        # a ratio point further than this beyond the longest session is flagged
STAGES = ("frame", "text")
# the fields of an extract the performance model reads (golden_input), per method present; resv is required
_STAGE_FIELDS = ("retrieval_ratio", "offloaded_tokens", "layer_head_steps")
_OPTIONAL_METHODS = ("rekv", "infinigen", "flexgen")


@dataclass(frozen=True)
class ModelRatios:
    """The extracts (or golden reports) of one model, read and ready to fit."""

    key: str                    # the reports' config name (smollm2, qwen05, gemma3)
    model: str                  # that config's model name
    window: int | None          # that config's resident window (resv.recent_window_tokens); None when unknown
    measured: MeasuredRatios
    names: tuple = ()           # the files, as printed

    @property
    def tokens(self) -> tuple:
        """Session length in tokens of every report, in the order read."""
        return tuple(r.session_tokens for r in self.measured.runs)


def _builtin_model(key: str):
    """(model name, recent window) of the built-in config ``key``, None when it is no built-in config."""
    if key not in builtin_config_names():
        return None
    cfg = load_config(key)
    return cfg.model.name, cfg.resv.recent_window_tokens


def check_extract(data: dict, name) -> None:
    """Raise a one-sentence :class:`TraceError` when ``data`` is no usable shipped extract: no built-in model config
    named in ``"config"``, or a field the performance model reads missing or out of range."""
    key = data.get("config")
    if not isinstance(key, str) or not key:
        raise TraceError(f"ratio extract {name} has no \"config\" naming the model it measured; add the built-in "
                         f"config the golden run used ({', '.join(builtin_config_names())}).")
    if _builtin_model(key) is None:
        raise TraceError(f"ratio extract {name} names config {key!r}, which is no built-in config, so its model is "
                         f"unknown; use one of {', '.join(builtin_config_names())} or add that model's config.")
    missing = [f for f in ("config_hash", "source") if not isinstance(data.get(f), str) or not data.get(f)]
    if number(dig(data, "trace", "tokens"), 1.0) is None:
        missing.append("trace.tokens")
    methods = data.get("methods") if isinstance(data.get("methods"), dict) else {}
    for method in ("resv",) + tuple(m for m in _OPTIONAL_METHODS if m in methods):
        for stage in STAGES:
            for f in _STAGE_FIELDS:
                v = dig(methods, method, stage, f)
                ok = number(v, 0.0, 1.0) if f == "retrieval_ratio" else number(v, 1e-12)
                if ok is None:
                    missing.append(f"methods.{method}.{stage}.{f}")
    if missing:
        raise TraceError(f"ratio extract {name} (config {key}) lacks valid {', '.join(missing)}; regenerate it from "
                         "the golden report (vrex.perf.per_model.extract_report).")


def extract_report(report: dict, source: str, extract_of: str) -> dict:
    """The fields of a golden report (``vrex golden --json``) that the performance model reads, with ``source``
    (the command, config hash, git revision, wall time and versions of the run) and ``extract_of`` (the report's
    path) in front: ratios and candidate lengths per method and stage, recall, the mean ReSV cluster size."""
    cfg = report.get("config")
    out = {"extract_of": extract_of, "source": source,
           "config": cfg if isinstance(cfg, str) else dig(cfg, "name"),
           "config_hash": report.get("config_hash"), "trace": {"tokens": dig(report, "trace", "tokens")},
           "methods": {}}
    for method in ("resv",) + _OPTIONAL_METHODS:
        entry = dig(report, "methods", method)
        if not isinstance(entry, dict):
            continue
        out["methods"][method] = {
            stage: {f: entry[stage][f] for f in _STAGE_FIELDS + ("recall",) if f in entry.get(stage, {})}
            for stage in STAGES if isinstance(entry.get(stage), dict)}
    size = dig(report, "resv", "resv", "mean_cluster_size")
    if size is not None:
        out["resv"] = {"resv": {"mean_cluster_size": size}}
    return out


def read_shipped(golden: dict) -> dict[str, ModelRatios]:
    """The extracts ``golden`` (name -> path), checked and grouped by model (ordered by config name)."""
    by_key: dict[str, list] = {}
    for name, path in golden.items():
        data = load_json(path, "ratio extract")
        check_extract(data, name)
        by_key.setdefault(data["config"], []).append((name, golden_from_dict(data, name)))
    return {key: _group(key, items) for key, items in sorted(by_key.items())}


def _group(key: str, items: list) -> ModelRatios:
    model, window = _builtin_model(key) or (key, None)
    return ModelRatios(key, model, window, MeasuredRatios(tuple(r for _, r in items)),
                       tuple(n for n, _ in items))


def group_by_model(measured: MeasuredRatios) -> dict[str, ModelRatios]:
    """A user's golden reports grouped by their config name (a report without one is its own group, named by its
    config hash or path); the forgiving reader's notes stay with each run."""
    by_key: dict[str, list] = {}
    for run in measured.runs:
        key = run.config_name or run.config_hash or run.path
        by_key.setdefault(key, []).append((run.path, run))
    return {key: _group(key, items) for key, items in by_key.items()}


def headline(cfg, groups: dict[str, ModelRatios]) -> tuple[str | None, str]:
    """(key, why) of the group the config's headline figures use (docs/decisions.md, M1)."""
    if not groups:
        return None, "no real-LLM ratios"
    for key, g in groups.items():
        if key == cfg.name or g.model == cfg.model.name:
            return key, f"measured with the config's own model ({g.model})"
    window = cfg.resv.recent_window_tokens
    same = [k for k, g in groups.items() if g.window == window]
    if same:
        key = DEFAULT_HEADLINE if DEFAULT_HEADLINE in same else same[0]
        return key, (f"no shipped model is the config's {cfg.model.name}; {groups[key].model} was measured with the "
                     f"config's resident window ({window} tokens), which decides what share of a row's attention "
                     "the window holds")
    key = DEFAULT_HEADLINE if DEFAULT_HEADLINE in groups else next(iter(groups))
    return key, (f"no shipped model is the config's {cfg.model.name} or was measured with its {window}-token "
                 f"window; the default ({groups[key].model})")


def evaluate_per_model(cfg, groups: dict[str, ModelRatios], figures=None, *, strict: bool = False) -> dict:
    """key -> :class:`vrex.perf.sweep.Evaluation` of ``cfg`` with that group's ratios."""
    return {key: evaluate(cfg, g.measured, figures, strict=strict) for key, g in groups.items()}


def ratio_table(ev) -> dict:
    """Per policy with a measured fit (ReSV, ReKV): the ratio used at every KV size, its extrapolation factor
    (candidates at that size / the longest measured session's) and whether it is extrapolated."""
    cfg = ev.cfg
    out = {}
    for key in ("vrex", "gpu:rekv"):
        pol = ev.systems[key].policy
        entry = {"label": pol.label, "source": pol.source, "stages": {}}
        for stage in STAGES:
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
                "measured_r": [r for _, r in fit.points] if fit is not None else [],
                "sources": list(fit.sources) if fit is not None else [], "per_kv": per_kv}
        out[pol.name] = entry
    return out


def _over_limit(ratios: dict) -> list[dict]:
    """Every fitted ratio point extrapolated more than :data:`EXTRAPOLATION_LIMIT` beyond its data."""
    return [{"policy": name, "stage": stage, "kv": p["kv"], "factor": p["factor"]}
            for name, entry in ratios.items() for stage, st in entry["stages"].items() for p in st["per_kv"]
            if p["extrapolated"] and p["factor"] > EXTRAPOLATION_LIMIT]


def model_entry(ev, group: ModelRatios) -> dict:
    """figures.json's ``system.per_model[key]``: one model's ratios with their extrapolation factors and the FPS,
    speedup and energy gain over FlexGen they give, per KV size and batch (JSON-safe)."""
    rows = comparison_rows(ev)
    ratios = ratio_table(ev)
    resv = {st: {p["kv"]: p for p in ratios["resv"]["stages"][st]["per_kv"]} for st in STAGES}
    frame = [{"kv": r["kv"], "batch": r["batch"], "frame_ratio": resv["frame"][r["kv"]]["ratio"],
              "frame_factor": resv["frame"][r["kv"]]["factor"], "latency_ms": r["latency_ms"], "fps": r["fps"],
              "speedup_flexgen": r["speedup"]["flexgen"], "energy_gain_flexgen": r["energy_gain"]["flexgen"]}
             for r in rows["frame"]]
    text = [{"kv": r["kv"], "batch": r["batch"], "text_ratio": resv["text"][r["kv"]]["ratio"],
             "text_factor": resv["text"][r["kv"]]["factor"], "tpot_ms": r["tpot_ms"],
             "speedup_flexgen": r["speedup"]["flexgen"], "energy_gain_flexgen": r["energy_gain"]["flexgen"]}
            for r in rows["text"]]
    return {"config": group.key, "model": group.model, "window": group.window, "golden": list(group.names),
            "session_tokens": list(group.tokens),
            "config_hashes": [r.config_hash for r in group.measured.runs],
            "ratios": ratios, "frame": frame, "text": text, "over_limit": _over_limit(ratios),
            "extrapolation_limit": EXTRAPOLATION_LIMIT, "notes": list(ev.notes)}
