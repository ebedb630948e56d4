"""``vrex sweep SPEC.yaml``: figures over a grid of parameters.

A spec (YAML) names a base config and grids of dotted keys; their cartesian product gives named configs::

    name: hcu-lanes                    # default: the file name without .yaml
    base: tiny                         # built-in name or YAML path (relative to the spec)
    overrides:                         # optional: fixed dotted-key overrides applied to every point
      technology.activity_transactions: 500
    components: [hamming_lanes]        # default: every registered component
    grid:                              # dotted key -> list of values (cartesian product, in this order)
      dre.hcu.lanes: [4, 8]
      dre.hcu.bits_per_cycle: [8, 16]
    options:                           # optional figure options (as for `vrex synth`)
      liberty: sky130
      clock_mhz: 100
      activity: true
    pareto:
      cycles: per_token.per_unit       # cycles figure (flattened key) on the Pareto x axis

Each point becomes ``<name>-<key>=<value>-...`` (last key component). Points whose config does not validate are
reported with the rule they break and skipped. The figures run in parallel worker processes; records are cached
per config hash (``build/figures/``), so an interrupted sweep resumes where it stopped. Output in
``build/sweeps/<name>/``: ``expanded.yaml`` (the spec and every point), ``rows.csv`` and ``rows.json`` (one row per
config and component: config hash, parameters, area, fmax, power, cycles), and Pareto plots of area and power
against cycles (both minimised).
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from vrex.config import load_config, read_yaml
from vrex.errors import ConfigError, UsageError
from vrex.paths import build_dir, git_revision, safe_name

from .measured import figure_tools
from .parallel import DaskCluster, run_jobs
from .report import flat_numbers

__all__ = ["SweepSpec", "SweepResult", "load_spec", "expand", "run_sweep", "row_of"]

_OPTION_KEYS = {"liberty", "clock_mhz", "activity", "transactions", "stimulus", "fpga"}


@dataclass
class SweepSpec:
    name: str
    base: str
    grid: dict
    overrides: dict = field(default_factory=dict)
    components: list | None = None
    options: dict = field(default_factory=dict)
    pareto_cycles: str | None = None
    source: str = ""


@dataclass
class SweepResult:
    name: str
    rows: list
    invalid: list
    failed: list
    csv: Path
    json: Path
    plots: list
    cached: int = 0


def load_spec(path) -> SweepSpec:
    """Read and check a sweep spec; errors name the file and the problem."""
    path = Path(path)
    try:
        data = read_yaml(path.read_text(), str(path))
    except FileNotFoundError:
        raise UsageError(f"sweep spec {path}: no such file") from None
    except yaml.YAMLError as e:
        raise UsageError(f"sweep spec {path}: malformed YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"sweep spec {path}: must be a mapping with base, grid and optional name/components")
    unknown = set(data) - {"name", "base", "grid", "overrides", "components", "options", "pareto", "description"}
    if unknown:
        raise UsageError(f"sweep spec {path}: unknown key(s) {', '.join(sorted(unknown))}; valid keys are name, "
                         "description, base, overrides, components, grid, options, pareto")
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid or not all(isinstance(v, list) and v for v in grid.values()):
        raise UsageError(f"sweep spec {path}: grid must map dotted config keys to non-empty lists of values")
    options = data.get("options") or {}
    bad = set(options) - _OPTION_KEYS
    if bad:
        raise UsageError(f"sweep spec {path}: unknown option(s) {', '.join(sorted(bad))}; valid: "
                         f"{', '.join(sorted(_OPTION_KEYS))}")
    base = str(data.get("base", "edge"))
    if base.endswith((".yaml", ".yml")) and not Path(base).is_absolute():
        base = str(path.parent / base)
    comps = data.get("components")
    if comps is not None and (not isinstance(comps, list) or not comps):
        raise UsageError(f"sweep spec {path}: components must be a non-empty list of component names")
    return SweepSpec(name=str(data.get("name") or path.stem), base=base, grid=dict(grid),
                     overrides=dict(data.get("overrides") or {}), components=comps, options=dict(options),
                     pareto_cycles=(data.get("pareto") or {}).get("cycles"), source=str(path))


def _point_name(spec: SweepSpec, values: dict) -> str:
    return safe_name(spec.name + "-" + "-".join(f"{k.split('.')[-1]}={v}" for k, v in values.items()))


def expand(spec: SweepSpec):
    """``(points, invalid)``: points are ``(name, values, config)``; invalid are ``(name, values, reason)``."""
    base = load_config(spec.base)
    if spec.overrides:
        base = base.with_overrides(spec.overrides, source=f"sweep {spec.name} overrides")
    points, invalid = [], []
    keys = list(spec.grid)
    for combo in itertools.product(*(spec.grid[k] for k in keys)):
        values = dict(zip(keys, combo))
        name = _point_name(spec, values)
        try:
            cfg = base.with_overrides(values, source=f"sweep point {name}")
        except ConfigError as e:
            invalid.append((name, values, str(e)))
            continue
        points.append((name, values, _renamed(cfg, name)))
    return points, invalid


def _renamed(cfg, name):
    import dataclasses

    return dataclasses.replace(cfg, name=name)


def row_of(name: str, values: dict, component: str, r: dict | None, error: str | None) -> dict:
    """One CSV/JSON row: point, config hash, parameters, area, fmax, power and cycles."""
    row = {"point": name, "component": component, "config_hash": r["config_hash"] if r else None, **values}
    t, p = (r or {}).get("timing") or {}, (r or {}).get("power_mw") or {}
    pd, s = (r or {}).get("power_default_activity_mw") or {}, (r or {}).get("scaled") or {}
    row.update({"generic_cells": (r or {}).get("generic", {}).get("cells"), "area_um2": (r or {}).get("area_um2"),
                "critical_path_ns": t.get("critical_path_ns"), "fmax_mhz": t.get("fmax_mhz"),
                "power_mw": p.get("total"), "power_default_mw": pd.get("total"),
                "scaled_area_mm2": s.get("area_mm2"), "scaled_power_mw": s.get("power_mw"),
                "scaled_fmax_mhz": s.get("fmax_mhz")})
    row.update({f"cycles.{k}": v for k, v in flat_numbers((r or {}).get("cycles")).items()})
    f = (r or {}).get("fpga")
    if f:
        b, ft = f.get("block") or {}, f.get("timing") or {}
        row.update({"fpga_fits": f.get("fits"), "fpga_lut4": b.get("lut4"), "fpga_ff": b.get("ff"),
                    "fpga_ebr": b.get("ebr"), "fpga_mult18": b.get("mult18"), "fpga_fmax_mhz": ft.get("fmax_mhz")})
    row["status"] = "ok" if r and not error else f"failed: {error}"
    if r and r.get("missing"):
        row["missing"] = "; ".join(f"{k}: {v}" for k, v in r["missing"].items())
    return row


def run_sweep(spec_path, *, out_dir: Path | None = None, workers: int = 2, use_cache: bool = True,
              progress: bool = True, scheduler: str | None = None) -> SweepResult:
    """Run a sweep; ``scheduler`` (``"local"`` or a Dask scheduler address) runs the points on a Dask cluster
    (vrex.synth.parallel), otherwise in ``workers`` local processes. Nothing is written before the cluster answers."""
    from vrex.hdl.registry import component_names, get_component

    spec = load_spec(spec_path)
    comps = spec.components or component_names()
    for c in comps:
        get_component(c)
    points, invalid = expand(spec)
    options = {k: v for k, v in spec.options.items()}
    if options.get("fpga"):
        from .fpga import fpga_settings

        fpga_settings(points[0][2] if points else load_config(spec.base), family=options["fpga"])
        options["fpga"] = {"family": options["fpga"]}
    options["use_cache"] = use_cache
    jobs = [((n, c), c, cfg, options) for n, v, cfg in points for c in comps]
    # connect (or fail) before anything is written
    with DaskCluster(scheduler, workers) if scheduler else contextlib.nullcontext() as cluster:
        return _run_points(spec, comps, points, invalid, jobs, out_dir, workers, progress, cluster)


def _run_points(spec, comps, points, invalid, jobs, out_dir, workers, progress, cluster) -> SweepResult:
    out = Path(out_dir) if out_dir else build_dir("sweeps", safe_name(spec.name))
    out.mkdir(parents=True, exist_ok=True)
    import sys

    for name, values, reason in invalid:
        print(f"sweep {spec.name}: skipped invalid point {name}: {reason}", file=sys.stderr)
    header = {"spec": spec.source, "name": spec.name, "base": spec.base, "grid": spec.grid,
              "overrides": spec.overrides, "components": comps, "options": spec.options, "git": git_revision(),
              "tools": figure_tools()}
    (out / "expanded.yaml").write_text(yaml.safe_dump(
        {"sweep": header, "points": [{"name": n, "values": v, "config_hash": c.hash()} for n, v, c in points],
         "invalid": [{"name": n, "values": v, "reason": r} for n, v, r in invalid]}, sort_keys=False,
        allow_unicode=True))
    values_of = {n: v for n, v, _ in points}
    rows, failed, cached = [], [], 0
    with open(out / "rows.jsonl", "w") as live:
        for (name, comp), record, error, from_cache in run_jobs(jobs, workers, f"sweep {spec.name}", progress,
                                                                cluster):
            row = row_of(name, values_of[name], comp, record, error)
            rows.append(row)
            cached += from_cache
            if error:
                failed.append((name, comp, error))
            live.write(json.dumps(row, default=str) + "\n")
            live.flush()
    order = {(n, c): k for k, (n, c) in enumerate((n, c) for n, _, _ in points for c in comps)}
    rows.sort(key=lambda r: order[(r["point"], r["component"])])
    csv_path, json_path = out / "rows.csv", out / "rows.json"
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    json_path.write_text(json.dumps({"sweep": header, "rows": rows,
                                     "invalid": [{"name": n, "values": v, "reason": r} for n, v, r in invalid]},
                                    indent=1, default=str) + "\n")
    plots = _pareto_plots(rows, comps, spec, out)
    return SweepResult(spec.name, rows, invalid, failed, csv_path, json_path, plots, cached)


def _pareto_plots(rows, comps, spec, out: Path) -> list:
    from .plots import pareto_plot

    plots = []
    for comp in comps:
        mine = [r for r in rows if r["component"] == comp and r["status"] == "ok"]
        if not mine:
            continue
        key = f"cycles.{spec.pareto_cycles}" if spec.pareto_cycles else next(
            (k for k in mine[0] if k.startswith("cycles.")), None)
        if key and all(r.get(key) is not None for r in mine):
            xlabel, xs = key, [r[key] for r in mine]
        else:
            xlabel, xs = "critical path (ns, library node): time per cycle, no cycle figures", \
                [r["critical_path_ns"] for r in mine]
        for metric, label in (("area", "area (µm², library node)"), ("power", "power (mW, SAIF or default)")):
            ys = [r["area_um2"] if metric == "area" else (r["power_mw"] if r["power_mw"] is not None
                                                          else r["power_default_mw"]) for r in mine]
            pts = [(r["point"].replace(spec.name + "-", ""), x, y) for r, x, y in zip(mine, xs, ys)
                   if x is not None and y is not None]
            if pts:
                plots.append(pareto_plot(pts, xlabel, label, f"{spec.name}: {comp}, {metric} vs cycles",
                                         out / f"pareto_{metric}_{safe_name(comp)}.png"))
    return plots
