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

__all__ = ["Platform", "vrex_platform", "gpu_platform", "TABLE_III_CORE_MW"]

TABLE_III_CORE_MW = 2609.43     # paper Table III: one V-Rex core at 14 nm, 0.8 V, 800 MHz


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
    dpe_pj_per_mac: float = 0.0    # V-Rex: per-operation energies (Table III or the figures' SAIF power)
    vpe_pj_per_op: float = 0.0
    sram_pj_per_byte: float = 0.0
    sources: tuple = ()            # (what, where it came from) of the values that can be measured

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


def vrex_platform(cfg, figures=None) -> Platform:
    """V-Rex from the config; DPE/VPE efficiencies (LXE cycles) and per-operation energies (SAIF power of the DPE
    and VPE) from ``figures`` where it has them."""
    s, lxe, v, e = cfg.system, cfg.lxe, cfg.perf.vrex, cfg.perf.energy
    f = s.clock_mhz * 1e6
    fig = figures
    src = []

    def measured(value, what, fallback, fallback_src):
        if value is not None:
            src.append((what, f"measured ({fig.path})"))
            return value
        src.append((what, fallback_src))
        return fallback

    dpe_eff = measured(fig.dpe_efficiency if fig else None, "DPE efficiency", v.dpe_efficiency,
                       "assumed (perf.vrex.dpe_efficiency)")
    vpe_eff = measured(fig.vpe_efficiency if fig else None, "VPE efficiency", v.vpe_efficiency,
                       "assumed (perf.vrex.vpe_efficiency)")
    target = cfg.technology.target_clock_mhz * 1e6
    # without per-engine power, a measured core power scales Table III's LXE energies by core / Table III total
    scale = fig.core_power_mw / TABLE_III_CORE_MW if fig is not None and fig.core_power_mw else None
    dpe_pj = measured(_pj(fig.dpe_power_mw, lxe.macs_per_cycle, fig.dpe_clock_mhz, target) if fig else None,
                      "DPE energy", e.dpe_pj_per_mac * (scale or 1.0),
                      f"core power {fig.core_power_mw:g} mW ({fig.path}) × Table III's DPE energy" if scale else
                      "paper Table III (perf.energy.dpe_pj_per_mac)")
    vpe_pj = measured(_pj(fig.vpe_power_mw, lxe.vpe_units * lxe.vpe_lanes, fig.vpe_clock_mhz, target) if fig
                      else None, "VPE energy", e.vpe_pj_per_op * (scale or 1.0),
                      f"core power {fig.core_power_mw:g} mW ({fig.path}) × Table III's VPE energy" if scale else
                      "paper Table III (perf.energy.vpe_pj_per_op)")
    sram_pj = e.sram_pj_per_byte * (scale or 1.0)
    src.append(("SRAM energy", f"core power {fig.core_power_mw:g} mW ({fig.path}) × Table III's SRAM energy" if scale
                else "paper Table III (perf.energy.sram_pj_per_byte)"))
    return Platform(
        name=s.name, kind="vrex",
        matmul_peak=2 * s.cores * lxe.macs_per_cycle * f, matmul_eff=dpe_eff,
        vector_peak=s.cores * lxe.vpe_units * lxe.vpe_lanes * f, vector_eff=vpe_eff,
        irregular_eff=1.0,
        dram_bw=s.dram.bandwidth_gbs * 1e9, dram_eff=v.dram_efficiency,
        link_bw=s.link.bandwidth_gbs * 1e9, link_eff=v.link_efficiency, link_lanes=s.link.lanes,
        cores=s.cores, clock_hz=f, static_w=cfg.perf.energy.static_w, dram_pj_per_bit=cfg.perf.energy.dram_pj_per_bit,
        dpe_pj_per_mac=dpe_pj, vpe_pj_per_op=vpe_pj, sram_pj_per_byte=sram_pj, sources=tuple(src))


def _pj(power_mw, units, clock_mhz, default_hz) -> float | None:
    """pJ per unit-operation of an engine of ``units`` parallel units at full activity, or None."""
    if power_mw is None:
        return None
    hz = clock_mhz * 1e6 if clock_mhz else default_hz
    return power_mw * 1e-3 / (units * hz) * 1e12


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
