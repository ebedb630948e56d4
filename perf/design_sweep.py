"""``vrex perf --sweep SPEC``: V-Rex design points past the paper — FPS, energy and power over a parameter grid.

A spec (YAML; a file or a built-in name under ``configs/sweeps/perf/``)::

    name: edge-40k                       # default: the file name
    base: edge                           # default: the run's --config
    at: {kv: 40960, batch: [1, 4]}       # KV size per stream and batch(es) every point is evaluated at
    overrides: {perf.reuse_fraction: 0}  # fixed dotted-key overrides
    grid:                                # axes: dotted config keys, or the named axis ``link``
      dre.kvmu.device_capacity_bytes: [0, 1.0e+9, 4.0e+9]
      link: [pcie3x4, pcie4x4, pcie5x4, cxl2x8]
      system.dram.bandwidth_gbs: [204.8, 409.6]
    targets: {fps: 8, power_w: 35}       # the design questions answered in the summary

Every combination is one config; each is evaluated at every ``at`` batch: V-Rex's frame step (latency, FPS = batch /
latency, energy per frame and stream, average power = energy / latency) with the weight-streaming floor, and its
decode step (TPOT). The summary names, among the points with the base's DRAM bandwidth, the cheapest one that
reaches ``targets.fps`` (cheapest: least energy per frame, then fewest cores and link lanes) and the fastest one
within ``targets.power_w``. Output in ``build/perf/sweep-<name>/``: ``rows.csv``, ``rows.json`` and
``pareto.png`` (FPS against energy per frame, the Pareto front, and the weight-streaming floor of each DRAM
bandwidth).

Bad specs are one sentence and exit 2: an axis that is neither a config key nor ``link``, an axis value that no
config accepts (a ratio outside [0, 1], a capacity larger than the DRAM, …), a ratio axis while measured ratios
are given. Combinations that break a cross-key rule (e.g. a capacity too small for a batch) are listed and
skipped.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import time
from importlib import resources
from pathlib import Path

import yaml

from vrex.config import load_config, read_yaml
from vrex.errors import ConfigError, UsageError
from vrex.paths import build_dir, git_revision, safe_name

from .dre_timing import dre_timing
from .links import LINKS, link_overrides
from .model import simulate_step, vrex_system
from .paper import paper_for
from .policies import policies
from .workload import decode_step, frame_step

__all__ = ["SweepSpec", "load_sweep_spec", "run_design_sweep", "run_sweep_cli", "design_choices", "describe_point",
           "pareto", "SPEC_DIR"]

SPEC_DIR = Path(str(resources.files("vrex.configs") / "sweeps" / "perf"))
_KEYS = {"name", "description", "base", "at", "overrides", "grid", "targets"}
_RATIO_AXES = {"perf.frame_ratio": "frame", "perf.text_ratio": "text"}


@dataclasses.dataclass
class SweepSpec:
    name: str
    base: str | None
    kv: int
    batches: tuple
    grid: dict
    overrides: dict
    targets: dict
    source: str


def _spec_path(name_or_path) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    builtin = SPEC_DIR / f"{name_or_path}.yaml"
    if builtin.is_file():
        return builtin
    names = ", ".join(sorted(q.stem for q in SPEC_DIR.glob("*.yaml")))
    raise UsageError(f"--sweep {name_or_path!r} is neither a YAML file nor a built-in sweep; built-in: {names}.")


def load_sweep_spec(name_or_path) -> SweepSpec:
    path = _spec_path(name_or_path)
    try:
        data = read_yaml(path.read_text(), str(path))
    except FileNotFoundError:
        raise UsageError(f"sweep spec {path}: no such file; give a YAML path or a built-in name.") from None
    except yaml.YAMLError as e:
        raise UsageError(f"sweep spec {path}: malformed YAML ({str(e).splitlines()[0]}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("grid"), dict) or not data["grid"]:
        raise UsageError(f"sweep spec {path}: must be a mapping with a non-empty grid of axes.")
    extra = sorted(set(data) - _KEYS)
    if extra:
        raise UsageError(f"sweep spec {path}: unknown key {extra[0]!r}; valid keys are {', '.join(sorted(_KEYS))}.")
    for axis, values in data["grid"].items():
        if not isinstance(values, list) or not values:
            raise UsageError(f"sweep spec {path}: axis {axis!r} must list at least one value.")
    at = data.get("at") or {}
    batches = at.get("batch", 1)
    batches = tuple(batches) if isinstance(batches, list) else (batches,)
    kv = at.get("kv", 40960)
    if not isinstance(kv, int) or kv < 1 or not all(isinstance(b, int) and b >= 1 for b in batches):
        raise UsageError(f"sweep spec {path}: at.kv must be a positive integer and at.batch one or a list of them.")
    return SweepSpec(str(data.get("name") or path.stem), data.get("base"), kv, batches, dict(data["grid"]),
                     dict(data.get("overrides") or {}), dict(data.get("targets") or {}), str(path))


def _axis_overrides(axis: str, value) -> dict:
    if axis == "link":
        if value not in LINKS:
            raise UsageError(f"sweep axis link: {value!r} is not a link generation; choose from "
                             f"{', '.join(LINKS)}.")
        return link_overrides(value)
    return {axis: value}


def without_measured_axes(spec: SweepSpec, measured) -> SweepSpec:
    """``spec`` without the ratio axes that measured ReSV ratios (``--golden-json``) replace, for the results
    document, which runs the built-in sweep on whatever inputs it is given."""
    if measured is None:
        return spec
    grid = {a: v for a, v in spec.grid.items() if not (a in _RATIO_AXES and measured.points("resv", _RATIO_AXES[a]))}
    return dataclasses.replace(spec, grid=grid) if grid else spec


def _check_axes(spec: SweepSpec, base, measured) -> None:
    """Every axis value must be acceptable on its own; a ratio axis is meaningless beside measured ratios."""
    base = base.with_overrides({"perf.kv_sizes": [spec.kv], "perf.batches": [min(spec.batches)]})
    for axis, values in spec.grid.items():
        if measured is not None and axis in _RATIO_AXES and measured.points("resv", _RATIO_AXES[axis]):
            raise UsageError(f"sweep axis {axis} has no effect: --golden-json supplies measured ReSV ratios; drop "
                             "the axis or the golden JSON.")
        for value in values:
            try:
                base.with_overrides(_axis_overrides(axis, value), source=f"sweep {spec.name}")
            except ConfigError as e:
                if "is not a configuration key" in e.rule:
                    raise UsageError(f"sweep axis {axis!r} is neither a configuration key nor a named axis "
                                     f"(link); see `vrex config show --doc` for the keys.") from None
                if axis in ("perf.batches", "perf.kv_sizes"):
                    raise UsageError(f"sweep axis {axis}: give the evaluation point in `at` instead.") from None
                raise UsageError(f"sweep axis {axis} value {value!r} is invalid for every point: {e.rule}") from None


def _cost(cfg) -> dict:
    return {"cores": cfg.system.cores, "link_lanes": cfg.system.link.lanes, "link_gbs": cfg.system.link.bandwidth_gbs,
            "core_area_mm2": cfg.system.cores * 1.89}      # Table III: 1.89 mm² per core at 14 nm


def run_design_sweep(spec: SweepSpec, base, measured=None, figures=None) -> dict:
    """Evaluate every point of ``spec`` on ``base``; returns {rows, invalid, seconds}."""
    t0 = time.perf_counter()
    if spec.overrides:
        base = base.with_overrides(spec.overrides, source=f"sweep {spec.name} overrides")
    _check_axes(spec, base, measured)
    axes = list(spec.grid)
    rows, invalid = [], []
    for combo in itertools.product(*(spec.grid[a] for a in axes)):
        values = dict(zip(axes, combo))
        over = {}
        for a, v in values.items():
            over.update(_axis_overrides(a, v))
        for batch in spec.batches:
            point = {**values, "batch": batch}
            try:
                cfg = base.with_overrides({**over, "perf.kv_sizes": [spec.kv], "perf.batches": [batch]},
                                          source=f"sweep point {point}")
            except ConfigError as e:
                invalid.append({"point": point, "reason": e.rule})
                continue
            rows.append(_evaluate_point(cfg, point, spec.kv, batch, measured, figures))
    return {"rows": rows, "invalid": invalid, "seconds": time.perf_counter() - t0}


def _evaluate_point(cfg, point, kv, batch, measured, figures) -> dict:
    pols = policies(cfg, measured)
    dre = dre_timing(cfg, figures)
    system = vrex_system(cfg, pols, figures=figures, kvmu=measured.kvmu() if measured is not None else None)
    f = simulate_step(cfg, system, frame_step(cfg, kv, batch), dre)
    d = simulate_step(cfg, system, decode_step(cfg, kv, batch), dre)
    g = f.geometry
    return {**point, "config_hash": cfg.hash(), "kv": kv,
            "frame_latency_ms": f.latency * 1e3, "fps": f.throughput, "energy_per_frame_j": f.energy_total / batch,
            "power_w": f.energy_total / f.latency, "tpot_ms": d.latency * 1e3,
            "weight_floor_ms": f.weight_floor * 1e3, "floor_fps": batch / f.weight_floor,
            "link_payload_gb": f.counters.read.payload / 1e9, "device_tokens_per_stream": g.window + g.device_old,
            "host_tokens_per_stream": g.host, "exposed_retrieval_ms": f.exposed.get("retrieval", 0.0) * 1e3,
            **_cost(cfg)}


_WORKLOAD_AXES = ("perf.frame_ratio", "perf.text_ratio", "perf.reuse_fraction")


def _design_rows(rows: list, base, spec: SweepSpec) -> list:
    """Rows that differ from the base only in hardware: the base's DRAM bandwidth and, on the workload axes (ratio,
    reuse), the base's value (or ``targets.fixed``)."""
    fixed = {a: _dig_cfg(base, a) for a in _WORKLOAD_AXES if a in spec.grid}
    fixed.update(spec.targets.get("fixed") or {})
    bw = base.system.dram.bandwidth_gbs
    return [r for r in rows if r.get("system.dram.bandwidth_gbs", bw) == bw
            and all(r.get(k) == v for k, v in fixed.items())]


def _dig_cfg(cfg, dotted: str):
    node = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def design_choices(rows: list, base, spec: SweepSpec) -> dict:
    """The design questions of the spec, over the hardware-only rows (:func:`_design_rows`): the cheapest point at
    ``targets.fps`` for ``targets.fps_batch`` (default 1: per stream; cheapest = slowest link, then fewest cores,
    then least energy per frame), and the fastest point (any batch) within ``targets.power_w``."""
    targets = spec.targets
    design = _design_rows(rows, base, spec)
    out = {"design_points": len(design)}
    if "fps" in targets:
        batch = targets.get("fps_batch", 1)
        ok = [r for r in design if r["batch"] == batch and r["fps"] >= targets["fps"]]
        out.update(target_fps=targets["fps"], fps_batch=batch, meets_fps=len(ok),
                   cheapest_at_fps=min(ok, key=lambda r: (r["link_gbs"], r["cores"], r["energy_per_frame_j"]))
                   if ok else None)
    if "power_w" in targets:
        ok = [r for r in design if r["power_w"] <= targets["power_w"]]
        out.update(power_budget_w=targets["power_w"], fastest_within_power=max(ok, key=lambda r: r["fps"])
                   if ok else None)
    return out


def pareto(rows: list) -> list[int]:
    """Indices of the rows not dominated in (FPS up, energy per frame down)."""
    from vrex.synth.plots import pareto_front

    return pareto_front([(-r["fps"], r["energy_per_frame_j"]) for r in rows])


def write_pareto_plot(rows: list, base, spec: SweepSpec, path: Path) -> Path:
    """One panel per batch: FPS against energy per frame, colour = link, marker = DRAM bandwidth, the Pareto
    front, the weight-streaming floor of each DRAM bandwidth, the paper's point and the FPS target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(7 * len(batches), 5.5), squeeze=False)
    links = sorted({str(r.get("link", base.system.link.kind)) for r in rows})
    bws = sorted({r.get("system.dram.bandwidth_gbs", base.system.dram.bandwidth_gbs) for r in rows})
    markers = "os^Dv"
    paper = paper_for(base).get("frame_latency_ms", {}).get(1, {}).get(spec.kv)
    for ax, batch in zip(axes[0], batches):
        pts = [r for r in rows if r["batch"] == batch]
        for i, link in enumerate(links):
            for j, bw in enumerate(bws):
                sel = [r for r in pts if str(r.get("link", base.system.link.kind)) == link
                       and r.get("system.dram.bandwidth_gbs", base.system.dram.bandwidth_gbs) == bw]
                if sel:
                    ax.scatter([r["energy_per_frame_j"] for r in sel], [r["fps"] for r in sel], s=14, alpha=0.6,
                               color=f"C{i}", marker=markers[j % len(markers)], label=f"{link}, {bw:g} GB/s")
        front = sorted((pts[i] for i in pareto(pts)), key=lambda r: r["energy_per_frame_j"])
        ax.plot([r["energy_per_frame_j"] for r in front], [r["fps"] for r in front], "k-", marker="o", mfc="none",
                ms=9, lw=1.2,
                label="Pareto front (max FPS, min energy)")
        for floor in sorted({round(r["floor_fps"], 3) for r in pts}):
            ax.axhline(floor, color="r", ls=":", lw=1)
            ax.annotate(f"weight-streaming floor {floor:.1f} FPS", (0.01, floor), xycoords=("axes fraction", "data"),
                        color="r", fontsize=7, va="bottom")
        if paper and batch == 1:
            ax.axhline(1e3 / paper, color="g", ls="--", lw=1, label=f"paper {base.system.name}: {1e3 / paper:.2f} FPS")
        if "fps" in spec.targets:
            ax.axhline(spec.targets["fps"], color="b", ls="-.", lw=1, label=f"target {spec.targets['fps']} FPS")
        ax.set(xscale="log", xlabel="energy per frame and stream (J)", ylabel="frames per second (all streams)",
               title=f"batch {batch}, KV {spec.kv}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper right", ncol=2)
    fig.suptitle(f"{spec.name}: {len(rows)} points (base {base.name} {base.hash()})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def run_sweep_cli(spec_arg, cfg, measured, figures, *, strict: bool = False, out_dir: Path | None = None,
                  plot: bool = True) -> int:
    spec = load_sweep_spec(spec_arg)
    base = load_config(spec.base) if spec.base else cfg
    if measured is not None or figures is not None:     # provenance of the inputs (and --strict) as for a run
        from .sweep import evaluate

        ev = evaluate(base.with_overrides({"perf.kv_sizes": [spec.kv], "perf.batches": [max(spec.batches)]}),
                      measured, figures, strict=strict)
        for n in ev.notes:
            print(n if n.startswith("warning:") else f"note: {n}")
    res = run_design_sweep(spec, base, measured, figures)
    rows = res["rows"]
    out = Path(out_dir) if out_dir else build_dir("perf", f"sweep-{safe_name(spec.name)}")
    out.mkdir(parents=True, exist_ok=True)
    reasons: dict = {}
    for inv in res["invalid"]:
        reasons.setdefault(inv["reason"], []).append(inv["point"])
    for reason, pts in reasons.items():
        print(f"sweep {spec.name}: skipped {len(pts)} combination(s), e.g. {pts[0]}: {reason}")
    choices = design_choices(rows, base, spec)
    header = {"spec": spec.source, "name": spec.name, "base": base.name, "base_hash": base.hash(),
              "at": {"kv": spec.kv, "batch": list(spec.batches)}, "grid": spec.grid, "overrides": spec.overrides,
              "targets": spec.targets, "git": git_revision(), "seconds": res["seconds"]}
    if rows:
        columns = list(dict.fromkeys(k for r in rows for k in r))
        tmp = out / "rows.csv.tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(rows)
        tmp.replace(out / "rows.csv")
    _write_atomic(out / "rows.json", json.dumps({"sweep": header, "rows": rows, "invalid": res["invalid"],
                                                 "choices": choices}, indent=1, default=str) + "\n")
    print(f"sweep {spec.name}: {len(rows)} points ({len(res['invalid'])} skipped) at KV {spec.kv} on {base.name} "
          f"({base.hash()}) in {res['seconds']:.1f} s")
    print(summary_text(choices))
    if plot and rows:
        print(f"plot: {write_pareto_plot(rows, base, spec, out / 'pareto.png')}")
    print(f"json: {out / 'rows.json'}")
    return 0


def describe_point(r: dict) -> str:
    skip = {"config_hash", "kv", "frame_latency_ms", "fps", "energy_per_frame_j", "power_w", "tpot_ms",
            "weight_floor_ms", "floor_fps", "link_payload_gb", "device_tokens_per_stream", "host_tokens_per_stream",
            "exposed_retrieval_ms", "cores", "link_lanes", "link_gbs", "core_area_mm2"}
    params = ", ".join(f"{k}={v}" for k, v in r.items() if k not in skip)
    return (f"{params}: {r['fps']:.2f} FPS ({r['frame_latency_ms']:.1f} ms), {r['energy_per_frame_j']:.2f} J/frame, "
            f"{r['power_w']:.1f} W, TPOT {r['tpot_ms']:.1f} ms; {r['cores']} cores ({r['core_area_mm2']:.1f} mm²), "
            f"{r['link_lanes']} link lanes, {r['host_tokens_per_stream']} tokens per stream in the host tier")


def summary_text(choices: dict) -> str:
    lines = []
    if "target_fps" in choices:
        best = choices["cheapest_at_fps"]
        lines.append(f"≥ {choices['target_fps']} FPS at batch {choices['fps_batch']}, base DRAM bandwidth and "
                     f"workload: {choices['meets_fps']} of {choices['design_points']} design points; cheapest: "
                     + (describe_point(best) if best else "none"))
    if "power_budget_w" in choices:
        best = choices["fastest_within_power"]
        lines.append(f"fastest within {choices['power_budget_w']} W (base DRAM bandwidth and workload): "
                     + (describe_point(best) if best else "none"))
    return "\n".join(lines)
