"""The dre section: DRE hardware blocks (HCUConfig, WTUConfig, KVMUConfig under DREConfig)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .fields import _fail, _Section, param, section


@dataclass(frozen=True)
class HCUConfig(_Section):
    """Hash-bit cluster unit (paper §V-B, Fig. 10)."""

    lanes: int = param(16, "N_HCU-w: cluster codes compared per cycle.", min=1, max=256)
    bits_per_cycle: int = param(32, "Code bits each lane examines per cycle (1 = bit-serial, hash_bits = parallel).",
                                min=1)
    early_exit: bool = param(True, "Stop a comparison once its partial distance can no longer win.")
    code_memory_bytes: int = param(4096, "Open-cluster code memory (key-cache hash-bit MEM).", min=1)
    current_memory_bytes: int = param(128, "Current-frame token code buffer (current hash-bit MEM).", min=1)
    full_policy: Literal["spill", "join_nearest"] = param(
        "spill", "When the code memory is full: the token becomes a closed singleton cluster (spill), "
                 "or joins its nearest open cluster regardless of the threshold (join_nearest). Both are flagged.")
    pipeline_stages: int = param(3, "Register stages from the code memory to the HCU commit (latency vs fmax; from 3 "
                                    "the first one captures the memory read data).", min=1, max=4)

    def capacity(self, hash_bits: int) -> int:
        """Open-cluster codes that fit in the code memory."""
        return self.code_memory_bytes * 8 // hash_bits


@dataclass(frozen=True)
class WTUConfig(_Section):
    """WiCSum threshold unit (paper §V-B, Fig. 11)."""

    lanes: int = param(16, "N_WTU-w: scores processed per cycle.", min=1, max=256)
    mode: Literal["early_exit", "histogram", "topk"] = param(
        "histogram", "Bucket-by-bucket early exit (paper), one-pass histogram variant, or fixed top-k (baselines).")
    buckets: int = param(16, "Score buckets over [min, max] (power-of-two widths; paper Fig. 11 suggests ~20).",
                         min=2, max=256)
    score_bits: int = param(16, "Signed fixed-point score width at the WTU input.", min=4, max=32)
    score_frac_bits: int = param(8, "Fraction bits of the score format (Q(score_bits-frac).frac).", min=0)
    count_bits: int = param(16, "Unsigned token-count width.", min=1, max=32)
    ratio_bits: int = param(16, "Fraction bits of the WiCSum ratio (unsigned Q0.ratio_bits, ratio 1.0 allowed).",
                            min=4, max=24)
    score_memory_bytes: int = param(8192, "Score MEM: bounds the clusters per row.", min=1)
    count_memory_bytes: int = param(8192, "Token-count MEM.", min=1)
    topk_k: int = param(64, "Clusters kept per row in top-k mode.", min=1)
    bucket_octaves: int = param(2, "exp2: octaves of weight per bin (power of two); the window is buckets x "
                                "bucket_octaves octaves below the row maximum's bin, lower scores weigh 0.",
                                min=1, max=64)
    exp_lut_entries: int = param(16, "exp2: entries of the 2^fraction LUT (power of two, at most "
                                 "2^score_frac_bits; centre values).", min=1, max=4096)
    exp_mantissa_bits: int = param(8, "exp2: bits of each LUT value (the weight mantissa).", min=2, max=24)
    refine_passes: int = param(1, "exp2: passes that split the exit bin into refine_bins sub-bins.", min=0, max=8)
    refine_bins: int = param(16, "exp2: sub-bins per refinement pass (power of two).", min=2, max=256)
    pipeline_stages: int = param(7, "exp2: register stages of the WTU lane datapath between the memory-capture "
                                 "register and the bin accumulators (fmax vs cycles per pass).", min=1, max=7)
    resident_sum_bits: int = param(
        24, "exp2 with resv.threshold_mass = row: width of the per-row resident-mass sum input (unsigned, saturating; "
            "the WTU's own total over the resident scores as count-1 clusters, relative to the resident maximum's bin; "
            "docs/formats.md §WTU row mass); at most the row-sum accumulator's exp_sum_bits.", min=1, max=62,
        omit_from_hash_at=24)
    exit_fill: Literal["bucket", "greedy"] = param(
        "bucket", "exp2: take the final (sub-)bin whole (bucket), or its clusters in index order until the sum "
                  "exceeds the threshold (greedy).")

    def _check(self):
        for key in ("bucket_octaves", "exp_lut_entries", "refine_bins"):
            v = getattr(self, key)
            if v & (v - 1):
                _fail(f"dre.wtu.{key}", v, "must be a power of two.")
        if self.score_frac_bits >= self.score_bits:
            _fail("dre.wtu.score_frac_bits", self.score_frac_bits,
                  f"must be < dre.wtu.score_bits ({self.score_bits}).")
        if self.row_capacity < self.lanes:
            _fail("dre.wtu.score_memory_bytes", self.score_memory_bytes,
                  f"must hold at least dre.wtu.lanes ({self.lanes}) scores of {self.score_bits} bits.")
        if self.row_capacity % self.lanes:
            _fail("dre.wtu.lanes", self.lanes,
                  f"must divide the row capacity ({self.row_capacity} scores in the score memory).")
        if self.count_memory_bytes * 8 // self.count_bits < self.row_capacity:
            _fail("dre.wtu.count_memory_bytes", self.count_memory_bytes,
                  f"must hold a count for each of the {self.row_capacity} clusters of a row.")
        if self.topk_k > self.row_capacity:
            _fail("dre.wtu.topk_k", self.topk_k, f"must be ≤ the row capacity ({self.row_capacity}).")

    def check_exp2(self):
        """Rules of the exp2 transform's format (checked when resv.score_transform is exp2)."""
        if self.exp_lut_entries > 1 << self.score_frac_bits:
            _fail("dre.wtu.exp_lut_entries", self.exp_lut_entries,
                  f"must be ≤ 2^dre.wtu.score_frac_bits ({1 << self.score_frac_bits}): the LUT is indexed by "
                  "fraction bits of the score.")
        in_bin = self.bucket_octaves.bit_length() - 1 + self.score_frac_bits
        need = self.refine_passes * (self.refine_bins.bit_length() - 1)
        if need > in_bin:
            _fail("dre.wtu.refine_passes", self.refine_passes,
                  f"needs {need} bits of a score's position in its bin (log2(refine_bins) each), but a bin of "
                  f"dre.wtu.bucket_octaves ({self.bucket_octaves}) octaves at score_frac_bits "
                  f"({self.score_frac_bits}) has {in_bin}.")
        if self.exp_term_bits > 48:
            _fail("dre.wtu.exp_mantissa_bits", self.exp_mantissa_bits,
                  f"with count_bits ({self.count_bits}) and bucket_octaves ({self.bucket_octaves}) gives "
                  f"{self.exp_term_bits}-bit weight terms; at most 48 are supported.")
        if self.exp_sum_bits > 62:
            _fail("dre.wtu.exp_mantissa_bits", self.exp_mantissa_bits,
                  f"gives {self.exp_sum_bits}-bit row sums over {self.row_capacity} clusters; at most 62 are "
                  "supported.")

    @property
    def row_capacity(self) -> int:
        """Clusters per row that fit in the score memory."""
        return self.score_memory_bytes * 8 // self.score_bits

    @property
    def product_bits(self) -> int:
        """Width of one transformed score x count product (transformed score is unsigned score_bits)."""
        return self.score_bits + self.count_bits

    @property
    def acc_bits(self) -> int:
        """Accumulator width that cannot overflow over a full row."""
        return self.product_bits + max(1, math.ceil(math.log2(self.row_capacity)))

    @property
    def exp_term_bits(self) -> int:
        """exp2: width of one weight term (count x mantissa << octave in bin)."""
        return self.count_bits + self.exp_mantissa_bits + self.bucket_octaves - 1

    @property
    def exp_sum_bits(self) -> int:
        """exp2: width of a bin mass / row total that cannot overflow over a full row."""
        return self.exp_term_bits + max(1, math.ceil(math.log2(self.row_capacity))) + 1


@dataclass(frozen=True)
class KVMUConfig(_Section):
    """KV memory-hierarchy manager (paper §V-C, Fig. 12); memory map and protocols in docs/formats.md §KVMU."""

    eviction_granularity: Literal["frame", "token"] = param("frame", "Unit of eviction to the offload tier.")
    layout: Literal["cluster_contiguous", "token_order"] = param(
        "cluster_contiguous", "Offloaded KV layout: grouped by cluster (paper) or in arrival order.")
    device_capacity_bytes: int = param(
        0, "Device DRAM bytes for the KV of all streams of a batch, all layers: sinks, resident window, older KV kept "
           "on the device and the retrieval staging area (0 = auto: the DRAM left after weights, activations and the "
           "KVMU tables). The device tier keeps the newest KV up to this capacity; older KV is evicted (whole frames) "
           "to the host/SSD tier. An explicit value must hold the sinks, recent window and staging area of the "
           "largest batch and must not exceed the DRAM.",
        min=0, unit="B")
    staging_bytes: int = param(
        0, "Retrieval staging area per stream, two halves of one layer's prefetch each (0 = auto: two layers of "
           "the largest perf.kv_sizes).", min=0, unit="B")
    block_tokens: int = param(32, "Tokens per host-tier block of a cluster's chain (paper: 32 tokens per cluster on "
                                  "average); a power of two.", min=1, max=4096)
    context_tokens: int = param(0, "Tokens per (layer, KV head) context the KVMU tables are sized for (0 = the "
                                   "largest perf.kv_sizes).", min=0)
    table_clusters: int = param(0, "Clusters per context the HC table holds (0 = context_tokens: every token may open one).", min=0)
    dma_burst_bytes: int = param(4096, "Largest single AXI burst (a power of two, at most 4096).", min=64)
    coalesce_gap_bytes: int = param(0, "Merge two prefetch ranges whose gap is at most this many bytes.", min=0)
    max_outstanding: int = param(8, "Outstanding AXI bursts per direction of a port.", min=1, max=64)
    buffer_bursts: int = param(2, "Data buffer between the read and write engines, in largest bursts.", min=1,
                               max=8)
    axi_data_bits: int = param(128, "AXI4 data width (a power of two, 32 to 1024).", min=32)
    axi_addr_bits: int = param(40, "AXI4 address width.", min=32, max=64)
    axi_id_bits: int = param(4, "AXI4 ID width (the KVMU issues ID 0: responses of a port come back in order).",
                             min=1, max=16)

    def _check(self):
        for key, value, lo, hi in (("dma_burst_bytes", self.dma_burst_bytes, 64, 4096),
                                   ("axi_data_bits", self.axi_data_bits, 32, 1024)):
            if value & (value - 1) or not lo <= value <= hi:
                _fail(f"dre.kvmu.{key}", value, f"must be a power of two from {lo} to {hi} (AXI4 rules).")
        if self.block_tokens & (self.block_tokens - 1):
            _fail("dre.kvmu.block_tokens", self.block_tokens, "must be a power of two.")


@dataclass(frozen=True)
class DREConfig(_Section):
    hcu: HCUConfig = section(HCUConfig, "Hash-bit cluster unit.")
    wtu: WTUConfig = section(WTUConfig, "WiCSum threshold unit.")
    kvmu: KVMUConfig = section(KVMUConfig, "KV memory manager.")
    counter_bits: int = param(32, "Width of the DRE top's status counters (they wrap around).", min=8, max=64)
