"""The core's cycle figures.

:func:`measure_cycles` (the figures flow's hook) keeps the core record's LXE and DRE figures (DPE / VPE utilisation
on a decoder layer's matmuls, which the system model reads as ``dpe_efficiency`` / ``vpe_efficiency``) and the
retrieval path's cycle model parameters (:mod:`.cycle_model`, which the system model runs per step);
:func:`retrieval_path_cycles` runs a golden session on the core without back-pressure or memory pauses and reads
the sequencer's phase counters per command.
"""

from __future__ import annotations

__all__ = ["measure_cycles", "retrieval_path_cycles", "retrieval_path_record"]

CHECKED_ON = ("core-tiny-short-window", "core-medium", "core-tiny-slow-hcu", "core-tiny-exp2", "core-tiny-row")   # sim/cases.py, tests/core/test_core.py
PHASE_COUNTERS = ("exits_cycles", "hash_cycles", "cluster_cycles", "score_cycles", "select_cycles", "kvmu_cycles",
                  "records_cycles", "dpe_beats", "vpe_beats")


def retrieval_path_cycles(cfg, steps: int = 12, seed: int = 1) -> dict:
    """Cycles of the first ``steps`` frame steps of a ReSV session on layer 0 (every KV head of the layer): per
    command the sequencer's counters' increments and, beside them, the cycle model's phases
    (:mod:`.cycle_model`, ``model``) and its bound on the waits for the KVMU (``kvmu_wait_bound``)."""
    from vrex.hdl.core import Core

    from .amaranth_run import run_amaranth
    from .bench import make_bench

    from vrex.golden.core import core_session, frame_steps
    from vrex.golden.traces.sources import TraceOptions, make_trace

    from .cycle_model import command_phases, kvmu_wait_bound, session_counts

    tr = make_trace(cfg, "synthetic", layers=[0], options=TraceOptions(frames=max(1, steps), seed=seed))
    session = core_session(cfg, tr, layer=0, steps=min(max(1, steps), frame_steps(tr)))
    counts = session_counts(cfg, session, tr)
    bench = make_bench(cfg, n=steps, seed=seed, p_valid=1.0, p_ready=1.0, p_pause=0.0, session=(tr, session))
    result = run_amaranth(Core.from_config(cfg), bench, cfg)
    report = bench.report(result)
    if report:
        raise AssertionError(f"the core does not match the golden session:\n{report}")
    rows, prev = [], {k: 0 for k in PHASE_COUNTERS + ("busy_cycles",)}
    for job, got, cmd in zip(bench.jobs, result["jobs"], counts, strict=True):
        now = got["counters"]
        rows.append({"step": job["step"], "retrieval": bool(job["expected"]["rows"]),
                     "busy_cycles": now["busy_cycles"] - prev["busy_cycles"],
                     **{k: now[k] - prev[k] for k in PHASE_COUNTERS},
                     "model": {f"{k}_cycles": v for k, v in command_phases(cfg, cmd).items()},
                     "kvmu_wait_bound": sum(kvmu_wait_bound(c) for c in cmd)})
        prev = now
    return {"config_hash": cfg.hash(), "steps": rows, "kv_heads": cfg.model.kv_heads,
            "tokens_per_step": cfg.model.tokens_per_frame}


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    """The core's cycle figures: the LXE's (DPE / VPE utilisation on a decoder layer), the DRE's and the retrieval
    path's cycle model (``retrieval_path``: :func:`retrieval_path_record`; measured against the RTL by
    :func:`retrieval_path_cycles` in the tests, not here). ``cycles_of(part)``: the LXE's and DRE's figures measured
    already (the figures flow's), else they are measured here."""
    from vrex.sim.dre import top as dre_bench
    from ..lxe import lxe as lxe_bench

    lxe, dre = (cycles_of(p) for p in ("lxe", "dre")) if cycles_of else (lxe_bench.measure_cycles(cfg),
                                                                         dre_bench.measure_cycles(cfg))
    return {"component": "core", "config": cfg.name, "config_hash": cfg.hash(),
            "dpe_efficiency": lxe["dpe_efficiency"], "vpe_efficiency": lxe["vpe_efficiency"],
            "dpe_retrieval_efficiency": lxe["dpe_retrieval_efficiency"], "lxe": lxe, "dre": dre,
            "retrieval_path": retrieval_path_record(cfg)}


def retrieval_path_record(cfg) -> dict:
    """The retrieval path's part of the core's record: the cycle model's parameters for ``cfg`` (the system model
    runs :func:`.cycle_model.step_phases` with them) and what the model is checked against."""
    from .cycle_model import BOUNDED_PHASES, EXACT_PHASES, params_record

    return {"model": "vrex.sim.core.cycle_model", "parameters": params_record(cfg),
            "exact_phases": list(EXACT_PHASES), "bounded_phases": list(BOUNDED_PHASES),
            "checked_on": list(CHECKED_ON),
            "provenance": "per-phase cycle model of the sequencer's states, equal to the RTL's phase counters per "
                          "command in amaranth.sim on the checked cases (tests/core/test_core.py); S select and K "
                          "exclude the waits on the KVMU (bounded, the KVMU's own time is its record's)"}
