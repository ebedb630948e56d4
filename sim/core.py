"""Stimulus for the core top (hdl/core.py): an LXE bench and a DRE bench side by side on the core's ``lxe_*`` and
``dre_*`` ports (independent random traffic), each output checked against its golden model."""

from __future__ import annotations

from . import dre as dre_bench
from .bench import StreamBench
from .lxe import lxe as lxe_bench

__all__ = ["make_bench", "measure_cycles"]


def make_bench(cfg, *, n: int = 60, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               name: str = "core") -> StreamBench:
    if jobs is not None:
        raise ValueError("the core bench takes random stimulus only")
    lx = lxe_bench.make_bench(cfg, n=n, seed=seed, p_valid=p_valid, p_ready=p_ready)
    dr = dre_bench.make_bench(cfg, n=n, seed=seed + 3, p_valid=p_valid, p_ready=p_ready)

    def ren(prefix, d):
        return {f"{prefix}_{k}": v for k, v in d.items()}

    return StreamBench(name=name, inputs={**ren("lxe", lx.inputs), **ren("dre", dr.inputs)},
                       expected={**ren("lxe", lx.expected), **ren("dre", dr.expected)},
                       fields={**ren("lxe", lx.fields), **ren("dre", dr.fields)},
                       statics={**ren("dre", dr.statics)},
                       idle_inputs=[f"dre_{p}" for p in dr.idle_inputs],   # the DRE's KVMU ports (sim/dre.py)
                       expected_signals={k.replace("status__", "dre_status__"): v
                                         for k, v in dr.expected_signals.items()},
                       p_valid=p_valid, p_ready=p_ready, seed=seed,
                       max_cycles=lx.cycle_budget() + dr.cycle_budget())


def measure_cycles(cfg) -> dict:
    """The core's cycle figures: the LXE's (DPE / VPE utilisation on a decoder layer) and the DRE's."""
    lxe, dre = lxe_bench.measure_cycles(cfg), dre_bench.measure_cycles(cfg)
    return {"component": "core", "config": cfg.name, "config_hash": cfg.hash(),
            "dpe_efficiency": lxe["dpe_efficiency"], "vpe_efficiency": lxe["vpe_efficiency"],
            "dpe_retrieval_efficiency": lxe["dpe_retrieval_efficiency"], "lxe": lxe, "dre": dre}
