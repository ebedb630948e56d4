"""Platforms: V-Rex (Table I, from the LXE / system config) and the GPU baseline (from ``perf.gpu``).

A platform turns :class:`~vrex.perf.workload.Work` into time with a per-task roofline::

    t = max( matmul / (P_mm · e_mm) + vector / (P_vec · e_vec) + irregular / (P_vec · e_irr),
             dram_bytes / (BW · e_dram),
             kernels · t_launch )

The three terms are the compute engines, device memory, and (GPU only) the host issuing kernels asynchronously.
Peaks are the hardware's; the ``e`` factors are the fraction real kernels reach (parameters). V-Rex's matrix work
runs on the DPE (2 FLOP per MAC and cycle) and its elementwise work on the VPE (one operation per lane and cycle);
Table I's peak also counts the VPE lanes at 2 FLOP per cycle (8 cores: 53.25 TFLOPS), which ``peak_flops`` reports. V-Rex has a DRE: clustering and thresholding run there
(``vrex.perf.dre_timing``), so V-Rex never sees irregular work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .workload import Work

__all__ = ["Platform", "vrex_platform", "gpu_platform"]


@dataclass(frozen=True)
class Platform:
    name: str
    kind: Literal["vrex", "gpu"]
    matmul_peak: float          # FLOP/s
    matmul_eff: float
    vector_peak: float          # op/s
    vector_eff: float
    irregular_eff: float
    dram_bw: float              # B/s
    dram_eff: float
    link_bw: float              # B/s
    link_eff: float
    link_lanes: int
    launch_s: float = 0.0
    llm_kernels_per_layer: int = 0
    prediction_kernels_per_layer: int = 0
    cores: int = 1
    clock_hz: float = 0.0
    # energy
    compute_power_w: float = 0.0   # GPU: compute units fully busy
    static_w: float = 0.0          # drawn for the whole latency
    dram_pj_per_bit: float = 0.0

    @property
    def has_dre(self) -> bool:
        return self.kind == "vrex"

    @property
    def peak_flops(self) -> float:
        """Table I peak: the matrix engine, plus for V-Rex the VPE lanes at 2 FLOP per cycle as Table I counts them."""
        return self.matmul_peak + (2 * self.vector_peak if self.kind == "vrex" else 0.0)

    def compute_busy(self, w: Work) -> float:
        """Time the compute engines need for ``w`` at their achieved rates."""
        t = w.matmul_flops / (self.matmul_peak * self.matmul_eff) + w.vector_ops / (self.vector_peak * self.vector_eff)
        if w.irregular_ops:
            if self.has_dre:
                raise ValueError("irregular work on a platform with a DRE (a modelling error)")
            t += w.irregular_ops / (self.vector_peak * self.irregular_eff)
        return t

    def memory_busy(self, w: Work) -> float:
        return w.dram_bytes / (self.dram_bw * self.dram_eff)

    def time(self, w: Work) -> float:
        """Roofline time of one task."""
        return max(self.compute_busy(w), self.memory_busy(w), w.kernels * self.launch_s)


def vrex_platform(cfg) -> Platform:
    s, lxe, v = cfg.system, cfg.lxe, cfg.perf.vrex
    f = s.clock_mhz * 1e6
    return Platform(
        name=s.name, kind="vrex",
        matmul_peak=2 * s.cores * lxe.macs_per_cycle * f, matmul_eff=v.dpe_efficiency,
        vector_peak=s.cores * lxe.vpe_units * lxe.vpe_lanes * f, vector_eff=v.vpe_efficiency,
        irregular_eff=1.0,
        dram_bw=s.dram.bandwidth_gbs * 1e9, dram_eff=v.dram_efficiency,
        link_bw=s.link.bandwidth_gbs * 1e9, link_eff=v.link_efficiency, link_lanes=s.link.lanes,
        cores=s.cores, clock_hz=f, static_w=cfg.perf.energy.static_w, dram_pj_per_bit=cfg.perf.energy.dram_pj_per_bit)


def gpu_platform(cfg) -> Platform:
    g = cfg.perf.gpu
    return Platform(
        name=g.name, kind="gpu",
        matmul_peak=g.tensor_tflops * 1e12, matmul_eff=g.matmul_efficiency,
        vector_peak=g.vector_tflops * 1e12, vector_eff=g.vector_efficiency, irregular_eff=g.irregular_efficiency,
        dram_bw=g.dram_gbs * 1e9, dram_eff=g.dram_efficiency,
        link_bw=g.link_gbs * 1e9, link_eff=g.link_efficiency, link_lanes=g.link_lanes,
        launch_s=g.launch_overhead_us * 1e-6, llm_kernels_per_layer=g.llm_kernels_per_layer,
        prediction_kernels_per_layer=g.prediction_kernels_per_layer,
        compute_power_w=g.compute_power_w, static_w=g.idle_w, dram_pj_per_bit=g.dram_pj_per_bit)
