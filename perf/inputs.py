"""Readers of the optional inputs: measured retrieval ratios (golden JSON) and DRE figures (figures JSON).

Both readers are forgiving about content and strict about form. A file that cannot be read or is not a JSON object
raises :class:`~vrex.errors.TraceError` (the CLI prints one line). A missing or invalid entry is skipped: the model
falls back to its default for that value, and the reader records a note saying which value fell back and why.
The notes are printed by ``vrex perf`` and stored in its JSON, so a result always says where each input came from.

Golden JSON (``vrex golden --json``)::

    {"config": …, "config_hash": …, "trace": …,
     "methods": {METHOD: {"frame": {"retrieval_ratio": r, …}, "text": {"retrieval_ratio": r, …}}}}

Figures JSON (``vrex report``, ``build/report/figures.json``)::

    {"meta": …, "components": {"hcu" | "wtu" | "dre": {"scaled": {"clock_mhz", "power_mw", "method", …},
                                                       "cycles": {…}}}}

with ``hcu.cycles.per_token = {"overhead": a, "per_unit": b}`` (cycles per token = a + b · ⌈n_open / lanes⌉ ·
hash_bits / bits_per_cycle) and ``wtu.cycles.per_row = {"overhead": a, "per_unit": b}`` (cycles per row = a + b ·
⌈N / lanes⌉ · passes) with ``wtu.cycles.mean_passes``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from vrex.errors import TraceError
from vrex.paths import build_root

__all__ = ["MeasuredRatios", "DREFigures", "read_golden_json", "read_figures_json", "default_figures_path",
           "GOLDEN_METHODS"]

# golden method name -> the perf policies whose ratios it measures (stage-wise)
GOLDEN_METHODS = {
    "flexgen": {"flexgen": ("frame", "text")},
    "infinigen": {"infinigen": ("text",), "infinigenp": ("frame", "text")},
    "rekv": {"rekv": ("frame", "text")},
    "resv": {"resv": ("frame", "text")},
}


def _load(path, what: str) -> dict:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise TraceError(f"{what} {p} does not exist; give the path of a file written by the command that makes it.") \
            from None
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"{what} {p} cannot be read ({e}).") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"{what} {p} is not valid JSON ({e.msg} at line {e.lineno}); regenerate it.") from None
    if not isinstance(data, dict):
        raise TraceError(f"{what} {p} must hold a JSON object at the top level, not {type(data).__name__}.")
    return data


def _number(value, lo=None, hi=None):
    """``value`` as a finite float within [lo, hi], else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return None
    return float(value)


# ---- golden ratios ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredRatios:
    """Retrieval ratios measured by the golden model, per perf policy and stage."""

    path: str
    ratios: dict = field(default_factory=dict)    # policy -> {"frame": r, "text": r}
    notes: tuple = ()
    config_name: str | None = None
    config_hash: str | None = None
    predict_from: str | None = None     # the golden run's resv.predict_from, when its config says

    def get(self, policy: str, stage: str) -> float | None:
        return self.ratios.get(policy, {}).get(stage)


def read_golden_json(path) -> MeasuredRatios:
    notes = []
    data = _load(path, "golden JSON")
    methods = _section(data, "methods", path, notes, "every retrieval ratio falls back to paper Table II")
    ratios: dict = {}
    for method, targets in GOLDEN_METHODS.items():
        entry = methods.get(method)
        if not isinstance(entry, dict):
            notes.append(f"{path}: method '{method}' missing; its ratios fall back to paper Table II.")
            continue
        for stage in ("frame", "text"):
            raw = _dig(entry, stage, "retrieval_ratio")
            value = _number(raw, 0.0, 1.0)
            if value is None:
                why = "missing" if raw is None else f"invalid ({raw!r}, must be a number in [0, 1])"
                notes.append(f"{path}: methods.{method}.{stage}.retrieval_ratio {why}; falls back to paper Table II.")
                continue
            for policy, stages in targets.items():
                if stage in stages:
                    ratios.setdefault(policy, {})[stage] = value
    ignored = sorted(set(methods) - set(GOLDEN_METHODS))
    if ignored:
        notes.append(f"{path}: methods {', '.join(ignored)} have no system in the performance model (ignored).")
    cfg = data.get("config") if isinstance(data.get("config"), dict) else {}
    name = cfg.get("name") if isinstance(cfg.get("name"), str) else None
    chash = data.get("config_hash") if isinstance(data.get("config_hash"), str) else None
    predict_from = _dig(cfg, "resv", "predict_from")
    return MeasuredRatios(str(path), ratios, tuple(notes), name, chash,
                          predict_from if isinstance(predict_from, str) else None)


# ---- DRE figures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DREFigures:
    """DRE cycle and power figures from the figures flow; None where the file does not give them."""

    path: str
    hcu_overhead: float | None = None
    hcu_per_unit: float | None = None
    wtu_overhead: float | None = None
    wtu_per_unit: float | None = None
    wtu_mean_passes: float | None = None
    wtu_per_pass_overhead: float = 0.0     # optional: fixed cycles each pass adds (RTL pipeline fill / decision)
    hcu_power_mw: float | None = None
    wtu_power_mw: float | None = None
    hcu_clock_mhz: float | None = None
    wtu_clock_mhz: float | None = None
    power_method: str | None = None
    config_hash: str | None = None
    notes: tuple = ()

    @property
    def has_hcu_cycles(self) -> bool:
        return self.hcu_overhead is not None and self.hcu_per_unit is not None

    @property
    def has_wtu_cycles(self) -> bool:
        return self.wtu_overhead is not None and self.wtu_per_unit is not None


def _section(data: dict, key: str, path, notes: list, fallback: str) -> dict:
    """``data[key]`` if it is an object, else ``{}`` and a note saying what falls back."""
    value = data.get(key)
    if isinstance(value, dict):
        return value
    notes.append(f"{path}: no '{key}' object; {fallback}.")
    return {}


def _dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def read_figures_json(path) -> DREFigures:
    notes = []
    data = _load(path, "figures JSON")
    comps = _section(data, "components", path, notes, "DRE cycles and power fall back to formulas and Table III")
    values = {}

    def take(name, comp, *keys, lo=0.0, what):
        raw = _dig(comps, comp, *keys)
        v = _number(raw, lo)
        if v is None:
            why = "missing" if raw is None else f"invalid ({raw!r})"
            notes.append(f"{path}: components.{comp}.{'.'.join(keys)} {why}; {what}.")
        values[name] = v

    take("hcu_overhead", "hcu", "cycles", "per_token", "overhead", what="HCU cycles use the formula")
    take("hcu_per_unit", "hcu", "cycles", "per_token", "per_unit", what="HCU cycles use the formula")
    take("wtu_overhead", "wtu", "cycles", "per_row", "overhead", what="WTU cycles use the formula")
    take("wtu_per_unit", "wtu", "cycles", "per_row", "per_unit", what="WTU cycles use the formula")
    take("wtu_mean_passes", "wtu", "cycles", "mean_passes", lo=1.0,
         what="WTU passes per row use perf.wtu_passes_per_row")
    extra = _number(_dig(comps, "wtu", "cycles", "per_row", "per_pass_overhead"), 0.0)
    values["wtu_per_pass_overhead"] = extra if extra is not None else 0.0
    take("hcu_power_mw", "hcu", "scaled", "power_mw", what="HCU energy uses perf.energy.hcu_pj_per_compare")
    take("wtu_power_mw", "wtu", "scaled", "power_mw", what="WTU energy uses perf.energy.wtu_pj_per_score")
    for comp in ("hcu", "wtu"):
        clock = _number(_dig(comps, comp, "scaled", "clock_mhz"), 1e-3)
        if values[f"{comp}_power_mw"] is not None and clock is None:
            notes.append(f"{path}: components.{comp}.scaled.clock_mhz missing; its power is taken at "
                         "technology.target_clock_mhz.")
        values[f"{comp}_clock_mhz"] = clock
    # both halves of a cycle formula or neither
    for comp, keys in (("hcu", ("hcu_overhead", "hcu_per_unit")), ("wtu", ("wtu_overhead", "wtu_per_unit"))):
        if any(values[k] is None for k in keys):
            values.update({k: None for k in keys})
    method = _dig(comps, "hcu", "scaled", "method") or _dig(comps, "wtu", "scaled", "method")
    meta_hash = _dig(data, "meta", "config_hash")
    return DREFigures(str(path), power_method=method if isinstance(method, str) else None,
                      config_hash=meta_hash if isinstance(meta_hash, str) else None, notes=tuple(notes), **values)


def default_figures_path() -> Path | None:
    """``build/report/figures.json`` when ``vrex report`` has written it, else None."""
    p = build_root() / "report" / "figures.json"
    return p if p.is_file() else None
