"""What the measured inputs of ``vrex perf`` share: strict loading, forgiving content, and provenance checks.

Every reader (``golden_input``: ratios and KVMU traffic from ``vrex golden --json``; ``figures_input``: cycles,
efficiencies and power from ``vrex report``'s figures JSON) is strict about form and forgiving about content. A file
that cannot be read or is not a JSON object raises :class:`~vrex.errors.TraceError` (the CLI prints one line). A
missing or invalid entry is skipped: the model keeps its default for that value, and the reader records a note
saying which value fell back and why. The notes are printed by ``vrex perf`` and stored in its JSON, so a result
always says where each input came from.

A file made with another configuration (its config hash differs from the run's) is used with a warning that names
the values it replaces, or refused with ``--strict`` (:func:`check_provenance`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from vrex.errors import TraceError, UsageError
from vrex.paths import build_root

__all__ = ["load_json", "number", "dig", "section", "default_figures_path", "check_provenance"]


def load_json(path, what: str) -> dict:
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


def number(value, lo=None, hi=None):
    """``value`` as a finite float within [lo, hi], else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return None
    return float(value)


def dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def section(data: dict, key: str, path, notes: list, fallback: str) -> dict:
    """``data[key]`` if it is an object, else ``{}`` and a note saying what falls back."""
    value = data.get(key)
    if isinstance(value, dict):
        return value
    notes.append(f"{path}: no '{key}' object; {fallback}.")
    return {}


def default_figures_path() -> Path | None:
    """``build/report/figures.json`` when ``vrex report`` has written it, else None."""
    p = build_root() / "report" / "figures.json"
    return p if p.is_file() else None


def check_provenance(what: str, path, made_with: str | None, config_hash: str | None, cfg, replaces: list[str],
                     strict: bool) -> str | None:
    """A warning when ``path`` was made with another config than ``cfg`` (None when it matches, says nothing, or
    replaces nothing); with ``strict`` a :class:`~vrex.errors.UsageError` instead."""
    if not config_hash or config_hash == cfg.hash() or not replaces:
        return None
    made = f"config {made_with} (hash {config_hash})" if made_with else f"config hash {config_hash}"
    if strict:
        raise UsageError(f"{what} {path} was made with {made}, not this run's {cfg.name} (hash {cfg.hash()}); "
                         f"--strict refuses it: regenerate it with -c {cfg.name}, or drop --strict.")
    return (f"warning: {what} {path} was made with {made}, this run is {cfg.name} (hash {cfg.hash()}); it replaces "
            f"{', '.join(replaces)} (--strict refuses such inputs).")
