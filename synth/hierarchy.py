"""Hierarchical figures of a composite component (DPE, VPE, LXE, core): each unique part is synthesised, timed and
power-measured alone (its own figures record), the glue (the composite without its parts, hdl/lxe/parts.py) too,
and the composite's figures are the instance counts times the parts' plus the glue's (docs/figures.md
"Hierarchical figures"). Nothing is flattened: a 4096-MAC DPE costs one MAC tree's synthesis.

- area, logic area, sequential area, generic cells / flops / transistors: Σ count × part + glue;
- timing: every module is timed alone at the same clock; the composite's critical path is the longest of them
  (paths between parts are register-to-register at the boundaries, each given a full cycle as in the part's own
  run);
- power: Σ count × part power (SAIF where the part has it, else its default-activity figure; the record says
  which) + glue; the SRAM macros' power is in the module that holds them;
- scaled figures: the same sums of the parts' scaled figures; fmax the lowest of the parts'.
"""

from __future__ import annotations

import re
from pathlib import Path

from vrex.hdl.registry import parts_of

__all__ = ["hierarchical_figures", "dependency_waves", "leaf_members", "activity_parts", "default_reason",
           "part_outputs"]

_SUMMED = ("area_um2", "logic_area_um2", "sequential_area_um2", "cells")
_POWER = ("internal", "switching", "leakage", "total", "memory", "sequential", "combinational")


def _members(spec, cfg) -> dict:
    parts = dict(parts_of(spec, cfg))
    if spec.glue:
        parts[spec.glue] = 1
    return parts


# Wall seconds of each leaf's cold figures job in `vrex report` on the edge config (sky130, 2 workers, git a3857c6;
# docs/results-figures.md): only the order in which a wave's jobs start (longest first, so that a short job is the
# last to finish, not the WTU alone for four minutes as in name order). Names not listed start after these, in name
# order; the figures never depend on it.
COLD_SECONDS = {"mac_tree": 332, "dpe_glue": 260, "wtu": 257, "core_glue": 242, "dre_glue": 126, "resident_mass": 119,
                "kvmu": 111, "hcu": 66, "vpe_lane": 50, "hamming_lanes": 44, "lxe_glue": 28, "vpe_glue": 7}


def dependency_waves(names: list[str], cfg) -> list[list[str]]:
    """``names`` and every part/glue they need, grouped so that each wave needs only earlier waves; in a wave the
    jobs known to take longest come first (:data:`COLD_SECONDS`)."""
    from vrex.hdl.registry import get_component

    depth: dict[str, int] = {}

    def visit(n):
        if n in depth:
            return depth[n]
        spec = get_component(n)
        depth[n] = 0 if parts_of(spec, cfg) is None else 1 + max(visit(p) for p in _members(spec, cfg))
        return depth[n]

    for n in names:
        visit(n)
    return [sorted((n for n, d in depth.items() if d == k), key=lambda n: (-COLD_SECONDS.get(n, 0.0), n))
            for k in range(max(depth.values(), default=-1) + 1)]


def leaf_members(name: str, cfg) -> list[str]:
    """The components that are synthesised for ``name``: itself, or (for a composite) its parts' and glue's."""
    from vrex.hdl.registry import get_component

    spec = get_component(name)
    if parts_of(spec, cfg) is None:
        return [name]
    return sorted({leaf for p in _members(spec, cfg) for leaf in leaf_members(p, cfg)})


def _power_sum(records, key, fallback=None):
    total = {k: 0.0 for k in _POWER}
    sources = set()
    for rec, count in records:
        p = rec.get(key) or (rec.get(fallback) if fallback else None)
        if not p:
            return None, sources
        sources.add(f"{rec['component']}: {p.get('activity_source')}")
        for k in _POWER:
            total[k] += count * (p.get(k) or 0.0)
    return total, sources


def default_reason(record) -> str:
    """Why a synthesised record's power is not activity-based, in one short clause (its ``missing`` entry)."""
    why = (record.get("missing") or {}).get("power_mw") or "no SAIF power figure"
    why = why.removeprefix("activity run failed: ").split("\n")[0]
    for cut in ("; ", " on /", " (log"):
        why = why.split(cut)[0]
    return why.rstrip(".:")


def activity_parts(records: dict) -> dict:
    """The synthesised blocks below a composite (``records``: part -> record), whose power is SAIF-based and whose
    is the default activity with the reason: ``{"saif": [block], "default": {block: reason}}``."""
    saif, default = set(), {}
    for name, rec in records.items():
        sub = (rec.get("power_mw") or {}).get("activity_parts")
        if sub is not None:
            saif.update(sub["saif"])
            default.update(sub["default"])
        elif rec.get("power_mw"):
            saif.add(name)
        else:
            default[name] = default_reason(rec)
    return {"saif": sorted(saif), "default": dict(sorted(default.items()))}


def hierarchical_figures(name, cfg, spec, figures_of, *, cached_only: bool = False) -> dict | None:
    """The composite record of ``name`` from ``figures_of(component)`` records of its parts and glue (None when one
    is None: with ``cached_only``, a part or the cycle figures not in the cache yet)."""
    from vrex.paths import git_revision

    from .measured import NOT_CACHED, figure_tools, measured_cycles

    members = _members(spec, cfg)
    recs = {p: figures_of(p) for p in members}
    if any(r is None for r in recs.values()):
        return None
    pairs = [(recs[p], c) for p, c in members.items()]
    missing = {f"{p}.{k}": v for p, r in recs.items() for k, v in r.get("missing", {}).items() if k != "cycles"}
    record = {"component": name, "top": spec.top, "description": spec.description, "config": cfg.name,
              "config_hash": cfg.hash(), "verilog": None, "liberty": None, "clock_mhz": None, "missing": missing,
              "hierarchy": {"method": "parts synthesised alone, counts multiplied, plus the glue",
                            "parts": {p: {"count": c, "top": recs[p]["top"],
                                          "area_um2": recs[p].get("area_um2"),
                                          "critical_path_ns": (recs[p].get("timing") or {}).get("critical_path_ns"),
                                          "power_mw": ((recs[p].get("power_mw") or recs[p].get("power_default_activity_mw")
                                                        or {}).get("total")),
                                          "power_source": ((recs[p].get("power_mw") or
                                                            recs[p].get("power_default_activity_mw") or {})
                                                           .get("activity_source")),
                                          "scaled": recs[p].get("scaled"), "lint_clean": recs[p].get("lint_clean")}
                                      for p, c in members.items()}}}
    g = [r["generic"] for r, _ in pairs]
    record["generic"] = {"cells": sum(c * x["cells"] for x, (_, c) in zip(g, pairs)),
                         "flops": sum(c * x["flops"] for x, (_, c) in zip(g, pairs)),
                         "transistors": sum(c * x["transistors"] for x, (_, c) in zip(g, pairs)),
                         "logic_depth": max((x["logic_depth"] or 0) for x in g),
                         "sram_memories": [dict(m, count=c) for x, (_, c) in zip(g, pairs)
                                           for m in x.get("sram_memories", [])]}
    first = next(iter(recs.values()))
    record["liberty"], record["clock_mhz"] = first.get("liberty"), first.get("clock_mhz")
    if all(r.get("area_um2") is not None for r, _ in pairs):
        for k in _SUMMED:
            record[k] = sum(c * (r.get(k) or 0) for r, c in pairs)
        record["area_breakdown"] = {f"{r['top']} x{c}": c * r["area_um2"] for r, c in pairs}
        record["cell_types"] = None
        record["memories"] = [dict(m, count=c) for r, c in pairs for m in r.get("memories", [])]
    else:
        record.update({k: None for k in _SUMMED}, area_breakdown=None, memories=[])
    timings = {p: r.get("timing") for p, r in recs.items()}
    if all(t and t.get("critical_path_ns") for t in timings.values()):
        worst = max(timings, key=lambda p: timings[p]["critical_path_ns"])
        t = dict(timings[worst])
        t.update(per_module={p: x["critical_path_ns"] for p, x in timings.items()}, worst_module=worst,
                 met=all(x.get("met") for x in timings.values()))
        record["timing"] = t
    else:
        record["timing"] = None
    record["power_mw"], src = _power_sum(pairs, "power_mw", "power_default_activity_mw")
    if record["power_mw"]:
        parts = activity_parts(recs)
        record["power_mw"].update(activity_source="; ".join(sorted(src)), clock_mhz=record["clock_mhz"],
                                  activity_parts=parts,
                                  saif_parts=f"{len(parts['saif'])} of {len(parts['saif']) + len(parts['default'])}")
    record["power_default_activity_mw"], _ = _power_sum(pairs, "power_default_activity_mw")
    if record["power_default_activity_mw"]:
        record["power_default_activity_mw"].update(activity_source="default", clock_mhz=record["clock_mhz"],
                                                   activity=cfg.technology.default_activity)
    scaled = [(r.get("scaled"), c) for r, c in pairs]
    if all(s for s, _ in scaled):
        s0 = scaled[0][0]
        out = {k: s0.get(k) for k in ("node_nm", "voltage", "clock_mhz", "method", "source", "flavour", "from", "to",
                                      "factors")}
        for k in ("area_mm2", "logic_area_mm2", "power_mw", "dynamic_power_mw", "leakage_power_mw"):
            vals = [s.get(k) for s, _ in scaled]
            out[k] = None if any(v is None for v in vals) else sum(c * v for (_, c), v in zip(scaled, vals))
        crit = [s.get("critical_path_ns") for s, _ in scaled]
        out["critical_path_ns"] = None if any(v is None for v in crit) else max(crit)
        out["fmax_mhz"] = None if out["critical_path_ns"] is None else 1000.0 / out["critical_path_ns"]
        out["meets_target_clock"] = None if out["fmax_mhz"] is None else out["fmax_mhz"] >= cfg.technology.target_clock_mhz
        out["power_source"] = record["power_mw"]["activity_source"] if record["power_mw"] else None
        record["scaled"] = out
    else:
        record["scaled"] = None
        missing.setdefault("scaled", "a part has no scaled figures")
    record["lint_clean"] = all(r.get("lint_clean") is not False for r, _ in pairs) if all(
        r.get("lint_clean") is not None for r, _ in pairs) else None
    record["cycles"] = measured_cycles(name, cfg, missing, cached_only=cached_only)
    if record["cycles"] is NOT_CACHED:
        return None
    record["meta"] = {"git": git_revision(), "tools": figure_tools(), "hierarchical": True}
    return record


def part_outputs(component: str, cfg, netlist: Path) -> tuple[str, ...]:
    """The output ports of glue ``component``'s mapped ``netlist`` that feed its parts: those of the glue's signature
    members that the composite's signature lacks (the parts' flipped signatures, hdl/lxe/parts.py: ``lane0``,
    ``tree3``, ``hcu``…; a member ``p`` is the ports ``p__*``). Empty for a component that is no glue."""
    from vrex.hdl.registry import get_component
    from vrex.hdl.unused import silence_unused

    from .activity import composite_of

    composite = composite_of(component)
    if composite is None:
        return ()
    built = get_component(component).build(cfg), get_component(composite).build(cfg)   # signatures only
    silence_unused(list(built))
    parts = sorted(set(built[0].signature.members) - set(built[1].signature.members))
    outputs = re.findall(r"^\s*output\s+(?:\[[^\]]*\]\s*)?(\S+?)\s*;", Path(netlist).read_text(), re.M)
    return tuple(o for o in outputs if any(o.startswith(f"{p}__") for p in parts))
