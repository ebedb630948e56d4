"""The perf section: performance-model sweep, V-Rex efficiencies, GPU and baseline policies, energies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .fields import _fail, _Section, param, section


@dataclass(frozen=True)
class VRexPerfConfig(_Section):
    """Achieved fractions of the V-Rex system's peak rates (the LXE is an LPU-style streaming engine)."""

    dpe_efficiency: float = param(0.9, "Fraction of the DPE peak reached by matrix products.", min=0.001, max=1)
    vpe_efficiency: float = param(0.9, "Fraction of the VPE peak reached by elementwise work (norms, RoPE, softmax).",
                                  min=0.001, max=1)
    dram_efficiency: float = param(0.9, "Fraction of the DRAM peak reached when streaming weights and KV.",
                                   min=0.001, max=1)
    link_efficiency: float = param(0.9, "Fraction of the link peak reached by large KVMU transfers (TLP overhead).",
                                   min=0.001, max=1)


@dataclass(frozen=True)
class GPUConfig(_Section):
    """The GPU baseline (paper Table I): Jetson AGX Orin by default, A100 in configs/server.yaml.

    Modelled from its peak rates and the fraction of each that real kernels reach; every factor is a parameter
    (sources and reasons in docs/perf.md).
    """

    name: str = param("Jetson AGX Orin", "GPU baseline name (paper Table I).")
    tensor_tflops: float = param(54.0, "Peak dense tensor throughput (Table I: FP16 on AGX Orin, BF16 on A100).",
                                 min=0.001, unit="TFLOPS")
    vector_tflops: float = param(5.3, "Peak CUDA-core FP32 throughput for elementwise and selection work "
                                      "(NVIDIA datasheets: AGX Orin 64GB 5.3, A100 19.5).", min=0.001, unit="TFLOPS")
    dram_kind: str = param("LPDDR5", "Device memory technology (Table I).")
    dram_gbs: float = param(204.8, "Device memory bandwidth (Table I).", min=0.001, unit="GB/s")
    dram_capacity_gb: float = param(32.0, "Device memory capacity (Table I).", min=0.001, unit="GB")
    dram_pj_per_bit: float = param(4.0, "Device memory access energy (same memory as the V-Rex system).", min=0,
                                   unit="pJ/bit")
    link_gbs: float = param(4.0, "Host/storage link bandwidth (Table I: PCIe 3.0 x4).", min=0.001, unit="GB/s")
    link_lanes: int = param(4, "Link lanes (energy: system.link.watts_per_lane each at full load).", min=1)
    power_w: float = param(40.0, "Board power at full load (Table I; tegrastats / nvidia-smi).", min=0.001, unit="W")
    idle_w: float = param(8.0, "Power drawn while the board is on but idle (assumption).", min=0, unit="W")
    matmul_efficiency: float = param(
        0.27, "Fraction of tensor peak reached by the GEMMs (AGX Orin: fitted to TinyChat's FP16 prefill, "
              "vrex.perf.validation).", min=0.001, max=1)
    vector_efficiency: float = param(0.3, "Fraction of vector peak reached by elementwise kernels.", min=0.001, max=1)
    irregular_efficiency: float = param(
        0.02, "Fraction of vector peak reached by data-dependent selection (top-k, sort, clustering), counted in "
              "compare operations.", min=0.001, max=1)
    dram_efficiency: float = param(
        0.76, "Fraction of memory peak reached by weight and KV streaming kernels (AGX Orin: fitted to TinyChat's FP16 "
              "decode, vrex.perf.validation).", min=0.001, max=1)
    link_efficiency: float = param(0.8, "Fraction of link peak reached by large host/storage copies.", min=0.001,
                                   max=1)
    launch_overhead_us: float = param(
        125.0, "Host-side cost of one kernel launch, eager PyTorch dispatch (AGX Orin: fitted to HF Transformers' FP16 "
               "decode, vrex.perf.validation).", min=0, unit="us")
    llm_kernels_per_layer: int = param(
        40, "Kernels per decoder layer and step of HF-style eager PyTorch: 2 RMSNorms of ~7 kernels, Q/K/V, RoPE "
            "(~10), cache update, GQA expand, attention, O, 2 residual adds, gate, up, SiLU, multiply, down.", min=0)
    prediction_kernels_per_layer: int = param(
        6, "Kernels of one KV prediction per layer (project, score, reduce, threshold, top-k, gather).", min=0)
    kv_tier: Literal["window", "device"] = param(
        "window", "Where the GPU baselines keep KV: only the sinks and recent window, the rest offloaded (window: "
                  "FlexGen, InfiniGen and ReKV as the paper configures them), or the newest KV up to what the GPU "
                  "memory holds after the weights (device: the same rule as dre.kvmu.device_capacity_bytes = 0).")

    def _check(self):
        if self.idle_w >= self.power_w:
            _fail("perf.gpu.idle_w", self.idle_w, f"must be below perf.gpu.power_w ({self.power_w} W).")
        if self.compute_power_w <= 0:
            _fail("perf.gpu.power_w", self.power_w,
                  f"must exceed perf.gpu.idle_w ({self.idle_w} W) plus the memory power at peak bandwidth "
                  f"({self.dram_peak_power_w:.1f} W = dram_gbs x dram_pj_per_bit); nothing is left for compute.")

    @property
    def dram_peak_power_w(self) -> float:
        """Memory power at peak bandwidth."""
        return self.dram_gbs * 8 * self.dram_pj_per_bit * 1e-3

    @property
    def compute_power_w(self) -> float:
        """Power of the compute units when fully busy: board power - idle - memory at peak."""
        return self.power_w - self.idle_w - self.dram_peak_power_w


@dataclass(frozen=True)
class InfiniGenConfig(_Section):
    """InfiniGen [16]: partial-key speculation, retrieval in the generation stage only (paper Table II)."""

    frame_ratio: float = param(1.0, "Retrieval ratio in the frame stage (Table II: 100%, no frame retrieval).",
                               min=0, max=1)
    text_ratio: float = param(0.068, "Retrieval ratio in the generation stage (Table II: 6.8%).", min=0, max=1)
    partial_ratio: float = param(0.3, "Fraction of query/key columns the speculation uses.", min=0.001, max=1)


@dataclass(frozen=True)
class InfiniGenPConfig(_Section):
    """InfiniGenP: InfiniGen extended to the frame (prefill) stage (paper Table II)."""

    frame_ratio: float = param(0.508, "Retrieval ratio in the frame stage (Table II: 50.8%).", min=0, max=1)
    text_ratio: float = param(0.068, "Retrieval ratio in the generation stage (Table II: 6.8%).", min=0, max=1)
    partial_ratio: float = param(0.3, "Fraction of query/key columns the speculation uses.", min=0.001, max=1)


@dataclass(frozen=True)
class ReKVConfig(_Section):
    """ReKV [6]: frame-level block retrieval by mean-key representatives (paper Table II)."""

    frame_ratio: float = param(0.584, "Retrieval ratio in the frame stage (Table II: 58.4%).", min=0, max=1)
    text_ratio: float = param(0.312, "Retrieval ratio in the generation stage (Table II: 31.2%).", min=0, max=1)
    block_tokens: int = param(0, "Tokens per retrieval block (0 = model.tokens_per_frame: one block per frame).",
                              min=0)


@dataclass(frozen=True)
class EnergyConfig(_Section):
    """V-Rex-side energies per operation and per byte (derivations and sources in docs/perf.md)."""

    dpe_pj_per_mac: float = param(0.705, "DPE energy per BF16 MAC (Table III: 2311.39 mW / (4096 MACs x 800 MHz)).",
                                  min=0, unit="pJ")
    vpe_pj_per_op: float = param(2.38, "VPE energy per lane operation (Table III: 122.06 mW / (64 x 800 MHz)).",
                                 min=0, unit="pJ")
    sram_pj_per_byte: float = param(1.16, "LXE SRAM energy per byte (Table III: 118.94 mW at 128 B/cycle, 800 MHz).",
                                    min=0, unit="pJ/B")
    hcu_pj_per_compare: float = param(0.233, "HCU energy per code comparison (Table III: 2.99 mW / (16 x 800 MHz)).",
                                      min=0, unit="pJ")
    wtu_pj_per_score: float = param(3.05, "WTU energy per score visit (Table III: 39.04 mW / (16 x 800 MHz)).",
                                    min=0, unit="pJ")
    kvmu_pj_per_byte: float = param(1.17, "KVMU energy per byte moved (Table III: 15.01 mW at 16 B/cycle, 800 MHz).",
                                    min=0, unit="pJ/B")
    dram_pj_per_bit: float = param(4.0, "Device DRAM access energy (LPDDR5; HBM2e 3.9 in the server config).", min=0,
                                   unit="pJ/bit")
    offload_read_pj_per_byte: float = param(750.0, "Offload-tier read energy (SSD: ~4.5 W active at 6 GB/s).", min=0,
                                            unit="pJ/B")
    offload_write_pj_per_byte: float = param(890.0, "Offload-tier write energy (SSD: ~4.7 W active at 5.3 GB/s).",
                                             min=0, unit="pJ/B")
    static_w: float = param(2.0, "V-Rex system power drawn whenever it is on (DRAM refresh/PHY idle, SSD idle, "
                                 "leakage not in Table III).", min=0, unit="W")


@dataclass(frozen=True)
class PerfConfig(_Section):
    """Whole-session performance model (extended by vrex.perf)."""

    kv_sizes: tuple[int, ...] = param((1024, 5120, 10240, 20480, 40960), "KV cache sizes swept (tokens).", min=1)
    batches: tuple[int, ...] = param((1, 4), "Batch sizes swept.", min=1)
    frames_per_session: int = param(26, "Frames per COIN query (paper Fig. 4b average).", min=1)
    frame_ratio: float = param(0.327, "ReSV retrieval ratio in the frame stage (paper Table II).", min=0, max=1)
    text_ratio: float = param(0.025, "ReSV retrieval ratio in the generation stage (paper Table II).", min=0, max=1)
    tokens_per_cluster: float = param(32.0, "Mean tokens per ReSV cluster (paper §VI-D: 32); sets the clusters "
                                            "scored per context.", min=1)
    cluster_run_tokens: float = param(32.0, "Tokens a selected cluster reads as one contiguous run from the offload "
                                            "tier (cluster-contiguous layout with per-cluster append regions).", min=1)
    ratio_fit: Literal["power", "log_linear", "constant"] = param(
        "power", "How measured retrieval ratios (golden JSONs at several session lengths) extend to other KV sizes: "
                 "r = a * n^b (power), r = a + b * ln n (log_linear) or their mean (constant); n = retrieval "
                 "candidates per stream.")
    overlap: Literal["prefetch", "serial"] = param(
        "prefetch", "prefetch: layer l's prediction selects layer l+1's KV, whose transfer overlaps layer l (paper "
                    "Fig. 5/6, all systems); serial: prediction and transfer of a layer precede its attention.")
    reuse_fraction: float = param(0.0, "Fraction of a step's selected offloaded KV still in device DRAM from the "
                                       "previous step (staging reuse); 0 = every selection is fetched.", min=0, max=1)
    frame_lm_head_tokens: int = param(1, "LM-head rows per stream and frame (VideoLLM-online decides after each frame "
                                         "whether to speak).", min=0)
    hcu_token_overhead_cycles: int = param(2, "HCU formula: fixed cycles per token (used without figures JSON).",
                                           min=0)
    wtu_row_overhead_cycles: int = param(4, "WTU formula: fixed cycles per row (used without figures JSON).", min=0)
    wtu_passes_per_row: float = param(4.0, "WTU formula: mean passes over a row (1 preprocess + early-exit bucket "
                                           "passes; used without figures JSON).", min=1)
    vrex: VRexPerfConfig = section(VRexPerfConfig, "Achieved fractions of the V-Rex peaks.")
    gpu: GPUConfig = section(GPUConfig, "GPU baseline platform.")
    infinigen: InfiniGenConfig = section(InfiniGenConfig, "InfiniGen baseline policy.")
    infinigenp: InfiniGenPConfig = section(InfiniGenPConfig, "InfiniGenP baseline policy.")
    rekv: ReKVConfig = section(ReKVConfig, "ReKV baseline policy.")
    energy: EnergyConfig = section(EnergyConfig, "Energy per operation and per byte.")
