"""Per-component bench modules: one line per component in BENCH_MODULES.

A bench module provides ``make_bench(cfg, n=, seed=, p_valid=, p_ready=, reference=, jobs=None) ->
StreamBench`` (``jobs``: recorded block jobs from vrex.golden.jobs for trace-driven stimulus, where the block
has jobs) and optionally ``measure_cycles(cfg) -> dict`` (named cycle figures that the report and the
performance model consume).
"""

import importlib

from vrex.errors import UsageError

__all__ = ["BENCH_MODULES", "bench_for", "cycles_for"]

BENCH_MODULES = {
    "hamming_lanes": "vrex.sim.hamming_lanes",
    "hcu": "vrex.sim.hcu",
}


def _module(component: str):
    try:
        return importlib.import_module(BENCH_MODULES[component])
    except KeyError:
        raise UsageError(f"no bench for component {component!r}; benches exist for: "
                         f"{', '.join(sorted(BENCH_MODULES))}.") from None


def bench_for(component: str):
    """The component's ``make_bench`` function."""
    return _module(component).make_bench


def cycles_for(component: str):
    """The component's ``measure_cycles(cfg)`` function, or None if it has none."""
    return getattr(_module(component), "measure_cycles", None) if component in BENCH_MODULES else None
