"""vrex.perf — system performance and energy model of whole streaming sessions (docs/perf.md).

``evaluate(cfg)`` simulates V-Rex (ReSV on the config's system) and the GPU baseline (FlexGen, InfiniGen,
InfiniGenP, ReKV) at every KV size and batch of ``cfg.perf``; ``vrex perf`` prints and plots the result beside the
paper's numbers. Modules: ``workload`` (work per layer), ``platforms`` (peaks and rooflines), ``policies``
(retrieval ratios and prediction cost), ``transfer`` (offload-tier transfers by layout), ``dre_timing`` (HCU/WTU
cycles), ``timeline`` (task scheduling and critical path), ``model`` (one step), ``energy``, ``sweep``,
``inputs`` (golden / figures JSON readers), ``paper`` (the paper's numbers), ``report``, ``plots``, ``cli``.
"""

from .model import StepResult, System, simulate_step
from .sweep import Evaluation, evaluate

__all__ = ["evaluate", "Evaluation", "simulate_step", "StepResult", "System"]
