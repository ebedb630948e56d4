"""Per-component bench modules: one line per component in BENCH_MODULES.

A bench module provides a ``JOB_KIND`` ("hcu", "wtu" or "both": which recorded block jobs its ``jobs=``
takes; absent when it takes none), ``make_bench(cfg, n=, seed=, p_valid=, p_ready=, reference=, jobs=None) ->
StreamBench`` (``jobs``: recorded block jobs from vrex.golden.dre.jobs for trace-driven stimulus, where the block
has jobs) and optionally ``measure_cycles(cfg) -> dict`` (named cycle figures that the report and the
performance model consume).
"""

import importlib

from vrex.errors import UsageError

__all__ = ["BENCH_MODULES", "bench_for", "cycles_for", "job_kind", "trace_jobs", "trace_stimulus_for", "runs_itself"]

BENCH_MODULES = {
    "hamming_lanes": "vrex.sim.dre.hamming_lanes",
    "wtu": "vrex.sim.dre.wtu.bench",
    "hcu": "vrex.sim.dre.hcu",
    "dre": "vrex.sim.dre.top",
    "kvmu": "vrex.sim.dre.kvmu.bench",
    "mac_tree": "vrex.sim.lxe.mac_tree",
    "dpe": "vrex.sim.lxe.dpe",
    "vpe": "vrex.sim.lxe.vpe",
    "vpe_lane": "vrex.sim.lxe.vpe_lane",
    "lxe": "vrex.sim.lxe.lxe",
    "core": "vrex.sim.core",
    "resident_mass": "vrex.sim.core.resident_mass",
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


def trace_stimulus_for(component: str):
    """The bench's own ``trace_stimulus(cfg, kind)`` (real operand streams of a session), or None."""
    return getattr(_module(component), "trace_stimulus", None) if component in BENCH_MODULES else None
def runs_itself(component: str) -> bool:
    """Whether the component's bench module runs its own cocotb test (``run_bench``: AXI ports) instead of a
    StreamBench."""
    return hasattr(_module(component), "run_bench")


def job_kind(component: str):
    """Which recorded jobs the component's bench replays: "hcu", "wtu", "both" or None."""
    return getattr(_module(component), "JOB_KIND", None)


def trace_jobs(cfg, component: str, trace: str, *, frames=None, layers=None, seed: int = 0, max_jobs=None,
               save=None):
    """Recorded block jobs for ``component`` from a trace: a jobs JSON file, or "synthetic" / "video" / a trace
    file run through a ReSV session (vrex.golden.resv.block_jobs.record_jobs with ``frames``, ``layers``, ``seed`` and
    ``max_jobs``); ``save``: a jobs JSON file to write a recorded session's HCU and WTU jobs to."""
    from pathlib import Path

    from vrex.golden.dre.jobs import load_jobs, save_jobs

    from vrex.golden.resv.block_jobs import record_jobs

    kind = job_kind(component)
    own = trace_stimulus_for(component)
    if own is not None:
        return own(cfg, trace, limit=max_jobs or 200)
    if kind is None:
        raise UsageError(f"component {component!r} takes random stimulus only; --trace applies to components that "
                         "replay recorded block jobs.")
    if kind == "kvmu":
        from vrex.golden.dre.kvmu import session_jobs
        from vrex.golden.traces.sources import TraceOptions, make_trace

        t = make_trace(cfg, trace, layers=layers, options=TraceOptions(frames=frames, seed=seed))
        return session_jobs(cfg, t, layers=layers, max_jobs=max_jobs)
    if trace.endswith(".json") and Path(trace).is_file():
        hcu, wtu, _ = load_jobs(trace)
        if max_jobs is not None:
            hcu, wtu = hcu[:max_jobs], wtu[:max_jobs]
    else:
        hcu, wtu = record_jobs(cfg, trace, frames=frames, layers=layers, seed=seed, max_jobs=max_jobs)
        if save is not None:
            save_jobs(save, hcu, wtu, {"trace": trace, "layers": layers, "frames": frames, "config": cfg.hash()})
    return {"hcu": hcu, "wtu": wtu, "both": (hcu, wtu)}[kind]
