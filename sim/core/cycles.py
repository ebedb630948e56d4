"""The core's cycle figures.

:func:`measure_cycles` (the figures flow's hook) keeps the core record's LXE and DRE figures (DPE / VPE utilisation
on a decoder layer's matmuls, which the system model reads as ``dpe_efficiency`` / ``vpe_efficiency``);
:func:`retrieval_path_cycles` runs a golden session on the core without back-pressure or memory pauses and reads
the sequencer's phase counters per command.
"""

from __future__ import annotations

__all__ = ["measure_cycles", "retrieval_path_cycles"]

PHASE_COUNTERS = ("exits_cycles", "hash_cycles", "cluster_cycles", "score_cycles", "select_cycles", "kvmu_cycles",
                  "records_cycles", "dpe_beats", "vpe_beats")


def retrieval_path_cycles(cfg, steps: int = 12, seed: int = 1) -> dict:
    """Cycles of the first ``steps`` frame steps of a ReSV session on layer 0 (both KV heads of the layer): per
    command the cycles from the command's acceptance to its response and the sequencer's counters' increments."""
    from vrex.hdl.core import Core

    from .amaranth_run import run_amaranth
    from .bench import make_bench

    bench = make_bench(cfg, n=steps, seed=seed, p_valid=1.0, p_ready=1.0, p_pause=0.0)
    result = run_amaranth(Core.from_config(cfg), bench, cfg)
    report = bench.report(result)
    if report:
        raise AssertionError(f"the core does not match the golden session:\n{report}")
    rows, prev = [], {k: 0 for k in PHASE_COUNTERS + ("busy_cycles",)}
    for job, got in zip(bench.jobs, result["jobs"], strict=True):
        now = got["counters"]
        rows.append({"step": job["step"], "retrieval": bool(job["expected"]["rows"]),
                     "busy_cycles": now["busy_cycles"] - prev["busy_cycles"],
                     **{k: now[k] - prev[k] for k in PHASE_COUNTERS}})
        prev = now
    return {"config_hash": cfg.hash(), "steps": rows, "kv_heads": cfg.model.kv_heads,
            "tokens_per_step": cfg.model.tokens_per_frame}


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    """The core's cycle figures: the LXE's (DPE / VPE utilisation on a decoder layer) and the DRE's; the retrieval
    path's cycles per step are :func:`retrieval_path_cycles` on the tiny core cases (docs/results-rtl.md, V-Rex
    core), not part of this record (``retrieval_path_missing`` says so). ``cycles_of(part)``: the LXE's and DRE's
    figures measured already (the figures flow's), else they are measured here."""
    from vrex.sim.dre import top as dre_bench
    from ..lxe import lxe as lxe_bench

    lxe, dre = (cycles_of(p) for p in ("lxe", "dre")) if cycles_of else (lxe_bench.measure_cycles(cfg),
                                                                         dre_bench.measure_cycles(cfg))
    return {"component": "core", "config": cfg.name, "config_hash": cfg.hash(),
            "dpe_efficiency": lxe["dpe_efficiency"], "vpe_efficiency": lxe["vpe_efficiency"],
            "dpe_retrieval_efficiency": lxe["dpe_retrieval_efficiency"], "lxe": lxe, "dre": dre,
            "retrieval_path_missing": "measured by vrex.sim.core.cycles.retrieval_path_cycles on the tiny core cases "
                                      "(amaranth.sim of the whole core, minutes per session; docs/results-rtl.md)"}
