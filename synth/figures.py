"""The figures of one component for one config: the record that ``vrex synth``, ``vrex report`` and
``vrex sweep`` write and that the performance model reads (docs/figures.md, "figures.json").

Steps (each optional piece that cannot be had is ``null`` with a reason under ``missing``, never absent):

1. Verilog (:mod:`vrex.synth.verilog`) and the generic Yosys figures (no library);
2. with a Liberty library: mapping, area per hierarchy level, memories (:mod:`vrex.synth.mapped`);
3. with OpenSTA: critical path / slack / fmax at the clock, power with the default activity, and power with
   the SAIF activity of a Verilator run of the component's bench (:mod:`vrex.synth.activity`);
4. SRAM macro power: access energy × access rate (duty of the port enable in the SAIF; 0.5 with the default
   activity), added to the internal power;
5. scaling to ``technology.target_*`` (Stillmaker & Baas, :mod:`vrex.synth.scaling`);
6. cycles from the component's ``measure_cycles(cfg)`` when it has one.

Records are cached in ``build/figures/<component>-<config hash>/<key>.json``; the key covers the Verilog, the
library files, the clock, the stimulus, the tool versions and this module's :data:`FIGURES_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from filelock import FileLock

from vrex.errors import VrexError
from vrex.paths import build_dir, build_root, git_revision, pdk_dir
from vrex.tools import find, recording_retries

from .activity import composite_of, glue_activity_refused
from .generic import generic_figures
from .liberty import LibertyError, resolve_library
from .scaling import scaling_between
from .measured import figure_tools, measured_cycles
from .stopwatch import lap
from .verilog import emit, flow_source_hash

__all__ = ["FIGURES_VERSION", "component_figures", "figure_tools", "install_hint", "constraint_clock",
           "AUTO_CLOCK_MARGIN", "read_json_cache", "write_json_atomic"]

FIGURES_VERSION = 2


def install_hint(tool: str) -> str:
    t = find(tool)
    return f"{t.name} was not found ({t.purpose}); install it with: {t.install}"


def _cache_key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _memory_power(memories, rates_for, clock_mhz: float) -> tuple[float, list]:
    """mW of all SRAM macros: f × Σ (rate × energy per access); returns (mW, per-memory detail)."""
    total, detail = 0.0, []
    for m in memories:
        if m.kind != "sram":
            continue
        reads = [rates_for(n) for n in m.read_enables] or [0.0]
        writes = [rates_for(n) for n in m.write_enables] or [0.0]
        pj_per_cycle = sum(r for r, _ in reads) * m.read_pj + sum(w for w, _ in writes) * m.write_pj
        mw = clock_mhz * pj_per_cycle * 1e-3
        total += mw
        detail.append({"memory": f"{m.path}/{m.name}", "power_mw": mw,
                       "read_rate": [r for r, _ in reads], "write_rate": [w for w, _ in writes],
                       "rate_source": sorted({s for _, s in reads + writes})})
    return total, detail


def _add_memory_power(power: dict, memories, rates_for, clock_mhz: float, source: str, **extra) -> dict:
    """``power`` (OpenSTA's figures, mW) with the SRAM macros' power added to internal and total, the macro detail,
    ``activity_source`` and ``extra``."""
    mem_mw, mem_detail = _memory_power(memories, rates_for, clock_mhz)
    power.update({"internal": power["internal"] + mem_mw, "total": power["total"] + mem_mw, "memory": mem_mw,
                  "memory_detail": mem_detail, "activity_source": source, **extra})
    return power


def component_figures(name: str, cfg, *, liberty: str | None = None, clock_mhz: float | None = None,
                      require_library: bool = False, activity: bool = True, transactions: int | None = None,
                      stimulus: str | None = None, p_valid: float = 1.0, p_ready: float = 1.0,
                      use_cache: bool = True, skip_tools: tuple = (), progress=None,
                      cached_only: bool = False) -> dict | None:
    """The figures record of component ``name`` built from ``cfg`` (``cached_only``: the cached record or None,
    running no tool).

    Parameters
    ----------
    liberty, clock_mhz
        override ``technology.liberty`` / ``technology.clock_mhz``.
    require_library
        raise :class:`~vrex.synth.liberty.LibertyError` when the library cannot be had (``vrex synth --liberty``);
        otherwise the library figures are null with the reason (a partial report).
    activity
        run the Verilator SAIF stimulus for activity-based power (else only the default-activity figure).
    transactions, stimulus, p_valid, p_ready
        the SAIF run (default ``technology.activity_transactions`` / ``activity_stimulus``, full throughput).
    skip_tools
        tools to treat as absent (``"sta"``), to produce and test partial results.
    progress
        called with a short description of each step as it starts (the CLI prints it).
    """
    from vrex.hdl.registry import get_component, parts_of

    tech = cfg.technology
    spec = get_component(name)
    if parts_of(spec, cfg) is not None:
        from .hierarchy import hierarchical_figures

        opts = dict(liberty=liberty, clock_mhz=clock_mhz, require_library=require_library, activity=activity,
                    transactions=transactions, stimulus=stimulus, p_valid=p_valid, p_ready=p_ready,
                    use_cache=use_cache, skip_tools=skip_tools)
        return hierarchical_figures(name, cfg, spec,
                                    lambda part: component_figures(part, cfg, cached_only=cached_only, **opts),
                                    cached_only=cached_only)
    lib_spec = liberty or tech.liberty
    n_txn = int(transactions or tech.activity_transactions)
    say = progress or (lambda what: None)
    say("Verilog")
    emitted = emit(name, cfg)
    missing: dict[str, str] = {}
    try:
        lib = resolve_library(lib_spec, pdk_folder=tech.pdk_dir, source_node_nm=tech.source_node_nm,
                              drive_cell=tech.input_drive_cell)
    except LibertyError as e:
        if require_library:
            raise
        lib = None
        for key in ("liberty", "area_um2", "timing", "power_mw", "power_default_activity_mw", "scaled"):
            missing[key] = f"no Liberty library: {e}"
    clock = constraint_clock(tech, lib, clock_mhz)
    sta_ok = "sta" not in skip_tools and find("sta").found
    verilator_ok = "verilator" not in skip_tools and find("verilator").found
    key_parts = {"v": FIGURES_VERSION, "flows": flow_source_hash(),
                 "verilog": hashlib.sha256(emitted.verilog.read_bytes()).hexdigest(),
                 "config": cfg.hash(), "lib": lib.identity() if lib else None, "clock": clock,
                 "tools": figure_tools(), "sta": sta_ok, "verilator": verilator_ok, "activity": activity,
                 "txn": n_txn, "max_cycles": tech.activity_max_cycles, "stimulus": stimulus or tech.activity_stimulus, "traffic": (p_valid, p_ready),
                 "pdk_sram": bool(pdk_dir(tech.pdk_dir, required=False))}
    composite = composite_of(name)
    glue_refused = glue_activity_refused(name, cfg) if composite is not None else None
    if activity and composite is not None and glue_refused is None:   # a glue's activity: its composite's Verilog
        key_parts["composite_verilog"] = hashlib.sha256(emit(composite, cfg).verilog.read_bytes()).hexdigest()
    folder = build_dir("figures", f"{name}-{cfg.hash()}")
    cache = folder / f"{_cache_key(key_parts)}.json"
    cached = read_json_cache(cache) if use_cache else None
    if cached is not None or cached_only:
        if cached is not None:
            say(f"cached record {cache}")
        return cached
    # One computation per component and config at a time, across processes: every record of the folder maps, times
    # and simulates in the same work directories (<lib>-<clock>/, saif_run/), so two test workers or report jobs
    # computing figures of one part at once would overwrite each other's netlists and SAIF files. The second waits,
    # then takes the record the first cached.
    with FileLock(folder / ".compute.lock"):
        cached = read_json_cache(cache) if use_cache else None
        if cached is not None:
            say(f"cached record {cache} (computed by another process meanwhile)")
            return cached
        return _compute_record(name, cfg, spec, emitted, lib, clock, folder, cache, missing, sta_ok=sta_ok,
                               verilator_ok=verilator_ok, activity=activity, n_txn=n_txn, stimulus=stimulus,
                               p_valid=p_valid, p_ready=p_ready, say=say)


def _compute_record(name, cfg, spec, emitted, lib, clock, folder, cache, missing, *, sta_ok, verilator_ok, activity,
                    n_txn, stimulus, p_valid, p_ready, say) -> dict:
    """Compute the figures record of :func:`component_figures` (its lock held) and cache it."""
    say("generic Yosys figures")
    with recording_retries() as retries:
        record = {"component": name, "top": emitted.top, "description": spec.description, "config": cfg.name,
                  "config_hash": cfg.hash(), "verilog": str(emitted.verilog), "generic": generic_figures(emitted),
                  "liberty": None, "clock_mhz": clock, "area_um2": None, "logic_area_um2": None,
                  "area_breakdown": None, "cells": None, "cell_types": None, "memories": [], "timing": None,
                  "power_mw": None, "power_default_activity_mw": None, "scaled": None, "cycles": None,
                  "missing": missing}
        t0 = time.time()
        if lib is not None:
            _library_figures(record, name, cfg, emitted, lib, clock, folder, missing, sta_ok=sta_ok,
                             verilator_ok=verilator_ok, activity=activity, n_txn=n_txn, stimulus=stimulus,
                             p_valid=p_valid, p_ready=p_ready, say=say)
        say("cycle figures")
        record["cycles"] = measured_cycles(name, cfg, missing)
    # tool_retries: the tool calls that crashed once and were run again (vrex.tools.run_tool)
    record["meta"] = {"git": git_revision(), "tools": figure_tools(), "seconds": round(time.time() - t0, 2),
                      "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "figures_version": FIGURES_VERSION,
                      "cache": str(cache.relative_to(build_root())), "tool_retries": retries}
    write_json_atomic(cache, record)
    return record


def read_json_cache(path: Path) -> dict | None:
    """A cached JSON record, or None when it is absent or unreadable (then it is recomputed)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as JSON through a temporary file and a rename, so a reader never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def _library_figures(record, name, cfg, emitted, lib, clock, folder, missing, *, sta_ok, verilator_ok, activity,
                     n_txn, stimulus, p_valid, p_ready, say):
    from .hierarchy import part_outputs
    from .mapped import abc_delay_target_ps, flop_state_nets, map_design
    from .register_overhead import register_overhead_ps
    from .saif import activity_tcl, read_saif, tie_constants
    from .sram import sram_model
    from .sta import run_power, run_timing_and_power

    tech = cfg.technology
    record["liberty"] = lib.identity()
    work = folder / f"{lib.name}-{lib.digest}-{clock:g}MHz"
    model = sram_model(pdk_dir(tech.pdk_dir, required=False), tech.sram_model)
    overhead = 0.0
    if sta_ok:
        say(f"register overhead of {lib.name} (OpenSTA)")
        overhead = register_overhead_ps(lib)
    record["abc_delay_target_ps"] = abc_delay_target_ps(clock, overhead)
    record["register_overhead_ps"] = overhead if sta_ok else None
    say(f"mapping to {lib.name} (Yosys + ABC)")
    mapped = map_design(emitted, lib, cfg, work, clock_mhz=clock, sram_model=model, register_overhead_ps=overhead)
    mapped.part_outputs = part_outputs(name, cfg, mapped.directory / mapped.netlist.name)
    record.update({"area_um2": mapped.area_um2, "logic_area_um2": mapped.logic_area_um2,
                   "area_breakdown": mapped.area_breakdown, "cells": mapped.cells, "cell_types": mapped.cell_types,
                   "sequential_area_um2": mapped.sequential_area_um2,
                   "memories": [m.record() for m in mapped.memories]})
    if not sta_ok:
        reason = install_hint("sta")
        for key in ("timing", "power_mw", "power_default_activity_mw"):
            missing[key] = reason
    else:
        say("timing and default-activity power (OpenSTA)")
        record["timing"], default = run_timing_and_power(mapped, lib, clock, tech,
                                                         default_activity=tech.default_activity)
        record["power_default_activity_mw"] = _add_memory_power(
            default, mapped.memories, lambda n: (0.5, "default duty 0.5"), clock, "default",
            activity=tech.default_activity)
        if not activity:
            missing["power_mw"] = "activity run disabled (--no-activity)"
        elif not verilator_ok:
            missing["power_mw"] = install_hint("verilator")
        elif composite_of(name) is not None and glue_activity_refused(name, cfg):
            missing["power_mw"] = glue_activity_refused(name, cfg)
        else:
            try:
                from .activity import glue_activity, record_activity

                say(f"SAIF activity run on Verilator ({n_txn} transactions), then power (OpenSTA)")
                traffic = dict(transactions=n_txn, stimulus=stimulus, p_valid=p_valid, p_ready=p_ready)
                saif = None
                with lap("saif sim"):
                    if composite_of(name) is not None:     # a glue: its composite's bench, its part of the SAIF
                        run, saif = glue_activity(name, cfg, work / "saif_run", **traffic)
                    else:
                        run = record_activity(name, cfg, emitted, work / "saif_run", **traffic)
                with lap("saif annotation"):
                    saif = saif or read_saif(run.saif, emitted.top)
                    text = mapped.netlist.read_text()
                    tcl, coverage = activity_tcl(saif, text, flop_state_nets(text, lib))
                    tied, tie_tcl, coverage["constants_tied"] = tie_constants(text, mapped.top)
                    (mapped.directory / "netlist_saif.v").write_text(tied)
                power = run_power(mapped, lib, clock, tech, activity_tcl=tie_tcl + tcl, tag="saif",
                                  netlist="netlist_saif.v")
                record["power_mw"] = _add_memory_power(
                    power, mapped.memories, _saif_rates(saif, mapped.memories, emitted.top), clock, "saif",
                    stimulus=run.stimulus, coverage=coverage, sim_cycles=run.cycles)
            except VrexError as e:
                missing["power_mw"] = f"activity run failed: {e}"
    record["scaled"] = _scaled(record, lib, clock, tech, missing)


def _saif_rates(saif, memories, top):
    """rate_for(net) closure: the SAIF duty of an enable net (path-qualified), constants as such."""
    from .saif import normalise_net

    paths = {}
    for m in memories:
        prefix = m.path.split("/", 1)[1].replace("/", ".") + "." if "/" in m.path else ""
        for n in m.read_enables + m.write_enables:
            paths.setdefault(n, prefix)

    def rate_for(net):
        if net in ("0", "1"):
            return float(net), "constant"
        a = saif.activity(paths.get(net, "") + normalise_net(net))
        if a is None:
            return 1.0, "not in the SAIF: assumed every cycle (upper bound)"
        return a[1], "SAIF duty of the enable"

    return rate_for


AUTO_CLOCK_MARGIN = 1.1


def constraint_clock(tech, lib, override=None) -> float:
    """The clock constraint (MHz) for mapping and timing: ``override``, ``technology.clock_mhz``, or with 0 (auto)
    ``target_clock_mhz`` moved to the library's node (Stillmaker & Baas delay factor) times
    :data:`AUTO_CLOCK_MARGIN`; 100 MHz for a library of unknown node."""
    if override:
        return float(override)
    if tech.clock_mhz:
        return float(tech.clock_mhz)
    if lib is None or lib.node_nm is None:
        return 100.0
    try:
        f = scaling_between(lib.node_nm, lib.voltage, 1.0, tech.target_node_nm, tech.target_voltage, 1.0).delay
    except ValueError:
        return 100.0
    return round(tech.target_clock_mhz * f * AUTO_CLOCK_MARGIN, 1)


def _scaled(record, lib, clock, tech, missing):
    if lib.node_nm is None:
        missing["scaled"] = (f"the node of {lib.name} is unknown; set technology.source_node_nm to scale it")
        return None
    try:
        s = scaling_between(lib.node_nm, lib.voltage, clock, tech.target_node_nm, tech.target_voltage,
                            tech.target_clock_mhz)
    except ValueError as e:
        missing["scaled"] = f"cannot scale: {e}"
        return None
    out = {"node_nm": tech.target_node_nm, "voltage": tech.target_voltage, "clock_mhz": tech.target_clock_mhz,
           "area_mm2": record["area_um2"] * s.area * 1e-6, "logic_area_mm2": record["logic_area_um2"] * s.area * 1e-6,
           "power_mw": None, "power_source": None, "fmax_mhz": None, "method": s.method(), **s.as_dict()}
    p = record["power_mw"] or record["power_default_activity_mw"]
    if p:
        dyn = (p["internal"] + p["switching"]) * s.dynamic_power
        out["power_mw"] = dyn + p["leakage"] * s.leakage
        out["power_source"] = p["activity_source"]
        out["dynamic_power_mw"], out["leakage_power_mw"] = dyn, p["leakage"] * s.leakage
    else:
        missing.setdefault("scaled_power", "no power figure to scale")
    t = record["timing"]
    if t and t.get("critical_path_ns"):
        crit = t["critical_path_ns"] * s.delay
        out["critical_path_ns"], out["fmax_mhz"] = crit, 1000.0 / crit
        out["meets_target_clock"] = out["fmax_mhz"] >= tech.target_clock_mhz
    return out
