"""vrex.perf — system performance and energy model of whole streaming sessions (docs/perf.md).

``evaluate(cfg)`` simulates V-Rex (ReSV on the config's system) and the GPU baseline (FlexGen, InfiniGen,
InfiniGenP, ReKV) at every KV size and batch of ``cfg.perf``; ``vrex perf`` prints and plots the result beside the
paper's numbers. Modules: ``workload`` (work per layer, KV geometry), ``memory`` (the device-memory tier),
``platforms`` (peaks and rooflines), ``policies`` (retrieval ratios and prediction cost), ``ratios`` (ratio fits
over session lengths), ``transfer`` (host-tier transfers by layout), ``dre_timing`` (HCU/WTU/KVMU cycles and
energy), ``timeline`` (task scheduling and critical path), ``model`` (one step), ``energy``, ``sweep`` (the
evaluation of a config), ``inputs`` / ``golden_input`` / ``figures_input`` (measured inputs) and ``provenance``
(their sources and the assumed values), ``paper`` (the paper's numbers), ``report``, ``plots``, ``design_sweep`` and
``links`` (``--sweep``), ``closure`` (values that close a gap to the paper), ``validation`` (GPU baselines against
published runs), ``results`` (``--results``: docs/results-perf.md), ``cli``.
"""

from .model import StepResult, System, simulate_step
from .sweep import Evaluation, evaluate

__all__ = ["evaluate", "Evaluation", "simulate_step", "StepResult", "System"]
