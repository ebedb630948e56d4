"""Constants the core's sequencer is generated from, its command / response layouts, and the configs it supports.

:class:`CoreGeometry` collects the shapes of the LXE, the DRE, the KVMU's memory map (``cfg.kvmu_map``) and the
core's HC-table regions (``cfg.core_map``); :meth:`CoreGeometry.from_config` rejects, with a
:class:`~vrex.errors.ConfigError`, the configs whose retrieval path the sequencer does not implement (docs/formats.md
§Core lists the rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from amaranth.lib import data

from vrex.errors import ConfigError
from .resident_mass import ResidentMassGeometry

__all__ = ["CoreGeometry", "command_layout", "response_layout", "CORE_CAUSES", "bf16_bits"]

# Error causes of a response (bit index -> name); docs/formats.md §Core.
CORE_CAUSES = ("table_full", "row_overflow", "table_port_error", "kvmu_error", "bad_command")


def bf16_bits(x: float) -> int:
    """BF16 bits of a finite float, RNE (a generation-time constant of the hardware)."""
    if x == 0:
        return 0
    m, e = math.frexp(abs(x))                  # |x| = m · 2^e, 0.5 ≤ m < 1
    q = int(m * (1 << 53))                     # exact
    sh = 53 - 8
    top, rem, half = q >> sh, q & ((1 << sh) - 1), 1 << (sh - 1)
    if rem > half or (rem == half and top & 1):
        top += 1
    if top >> 8:
        top, e = top >> 1, e + 1
    biased = e - 1 + 127
    if not 0 < biased < 255:
        raise ValueError(f"{x} is outside the BF16 normal range")
    return (int(x < 0) << 15) | (biased << 7) | (top & 0x7F)


def _bits(n: int) -> int:
    return max(1, int(n).bit_length())


def _divides(a: int, b: int) -> bool:
    return a % b == 0 or b % a == 0


@dataclass(frozen=True)
class CoreGeometry:
    kv_heads: int
    group: int
    query_heads: int
    head_dim: int
    layers: int
    n: int                  # lxe.dpe_inputs: BF16 elements per DPE beat = per SRAM line
    trees: int              # lxe.dpe_trees = VPE lanes
    beats: int              # DPE beats per head vector (head_dim / n)
    sram_words: int
    banks: int
    word_bits: int
    hash_bits: int
    passes: int             # DPE passes per key for its hash code
    capacity: int           # HCU open-cluster slots
    frame_tokens: int       # HCU current-frame buffer: tokens per HCU job
    max_tokens: int         # tokens of the longest step
    wtu_lanes: int
    score_bits: int
    count_bits: int
    row_capacity: int       # WTU clusters per row
    wtu_clusters_bits: int
    contexts: int
    table_clusters: int
    context_tokens: int
    sinks: int
    ring_tokens: int
    sink_base: int
    ring_base: int
    record_bytes: int
    entry_base: int
    list_base: int
    map_base: int
    sum_base: int
    mean_base: int
    item_bytes: int
    addr_bits: int
    data_bits: int
    id_bits: int
    fill_preload: bool      # resv.preload = fill (the limit is the whole capacity)
    scale_bits: int         # BF16 of Config.score_scale (1/sqrt(head_dim), x log2(e) for exp2)
    fifo_depth: int
    kvmu_cluster_bits: int
    kvmu_context_bits: int
    counter_bits: int
    bank_bits: int          # core.memory_bank_bits: the widest SRAM macro of the sequencer's memories
    window: int = 0         # resv.recent_window_tokens
    resident: ResidentMassGeometry | None = None   # resv.threshold_mass = row: the resident-mass unit's widths

    @classmethod
    def from_config(cls, cfg) -> "CoreGeometry":
        m, r, x, w, km, cm = cfg.model, cfg.resv, cfg.lxe, cfg.dre.wtu, cfg.kvmu_map, cfg.core_map
        rules = [
            ("resv.cluster_scope", r.cluster_scope, r.cluster_scope == "kv_head",
             "must be kv_head for the core: its contexts are (layer, KV head)."),
            ("resv.hashed_key", r.hashed_key, r.hashed_key == "post_rope",
             "must be post_rope for the core: the keys it hashes are the ones it writes to the KV cache."),
            ("resv.predict_from", r.predict_from, r.predict_from == "same_layer",
             "must be same_layer for the core: a layer's step is scored with its own queries."),
            ("resv.dense_layers", r.dense_layers, r.dense_layers == 0, "must be 0 for the core (no dense layers)."),
            ("resv.include_current_frame", r.include_current_frame,
             r.threshold_mass != "row" or r.include_current_frame,
             "must be true for the core with resv.threshold_mass = row: a row's resident keys are then a prefix of "
             "sinks, window and step keys (the resident-mass unit's lane mask)."),
            ("lxe.dpe_trees", x.dpe_trees, r.threshold_mass != "row" or (
                x.dpe_trees % w.lanes == 0 and x.dpe_trees & (x.dpe_trees - 1) == 0),
             f"must be a power of two and a multiple of dre.wtu.lanes ({w.lanes}) for the core with "
             "resv.threshold_mass = row: the resident keys go in groups of dpe_trees, and a group's scores fill "
             "whole beats of the resident-mass unit."),
            ("resv.retrieval_scope", r.retrieval_scope, r.retrieval_scope == "offloaded",
             "must be offloaded for the core: a WTU row holds the clusters with offloaded members."),
            ("resv.score_transform", r.score_transform, r.score_transform != "exp",
             "exp is golden-only; the core's WTU implements shift_min and relu."),
            ("resv.selection", r.selection, r.selection == "bucketed" or w.mode == "topk",
             "must be bucketed: the exact sorted rule is a reference, the WTU implements the bucketed one."),
            ("resv.cluster_text_tokens", r.cluster_text_tokens, r.cluster_text_tokens,
             "must be true for the core: every step's tokens go through the HCU."),
            ("resv.hash_bits", r.hash_bits, r.hash_bits <= 32, "must be ≤ 32 for the core's 32-bit code fields."),
            ("model.kv_bytes", m.kv_bytes, m.kv_bytes == 2, "must be 2 for the core: its KV records are BF16."),
            ("model.head_dim", m.head_dim, m.head_dim % x.dpe_inputs == 0,
             f"must be a multiple of lxe.dpe_inputs ({x.dpe_inputs}) for the core: a head vector is whole DPE beats."),
            ("lxe.dpe_weight_words", x.dpe_weight_words, x.dpe_weight_words * x.dpe_inputs >= m.head_dim,
             f"must be ≥ {-(-m.head_dim // x.dpe_inputs)} for the core: a MAC tree holds one whole head vector "
             f"(model.head_dim {m.head_dim} / lxe.dpe_inputs {x.dpe_inputs}) as its stationary operand."),
            ("lxe.sram_word_bits", x.sram_word_bits, x.sram_banks * x.sram_word_bits == 16 * x.dpe_inputs,
             f"x lxe.sram_banks ({x.sram_banks}) must be 16 x lxe.dpe_inputs ({16 * x.dpe_inputs}) bits for the "
             "core: one SRAM line is one DPE beat."),
            ("lxe.vpe_lanes", x.vpe_lanes, x.lanes == x.dpe_trees,
             f"x lxe.vpe_units must equal lxe.dpe_trees ({x.dpe_trees}) for the core: the VPE takes one DPE result "
             "per beat."),
            ("lxe.dpe_trees", x.dpe_trees, (32 * x.dpe_trees) % (16 * x.dpe_inputs) == 0,
             f"x 32 bits must be whole SRAM lines of {16 * x.dpe_inputs} bits for the core: one pass's scores fill "
             "whole lines."),
            ("dre.kvmu.axi_data_bits", cfg.dre.kvmu.axi_data_bits,
             cfg.dre.kvmu.axi_data_bits >= 128 and (16 * m.head_dim) % cfg.dre.kvmu.axi_data_bits == 0,
             f"must be ≥ 128 and divide a BF16 head vector ({16 * m.head_dim} bits) for the core's HC-table port."),
            ("lxe.vpe_lanes", x.vpe_lanes, all(_divides(a, b) for a, b in (
                (32 * x.lanes, cfg.dre.kvmu.axi_data_bits), (16 * x.lanes, cfg.dre.kvmu.axi_data_bits),
                (16 * x.lanes, 16 * x.dpe_inputs), (32 * w.lanes, 16 * x.dpe_inputs))),
             "must give vectors whose widths divide each other (VPE beats, AXI beats, SRAM lines, WTU beats)."),
        ]
        for key, value, ok, rule in rules:
            if not ok:
                raise ConfigError(key, value, rule)
        k = cfg.dre.kvmu
        return cls(m.kv_heads, m.group_size, m.query_heads, m.head_dim, m.layers, x.dpe_inputs, x.dpe_trees,
                   m.head_dim // x.dpe_inputs, x.sram_words, x.sram_banks, x.sram_word_bits, r.hash_bits,
                   -(-r.hash_bits // x.dpe_trees), cfg.hcu_capacity, cfg.hcu_frame_tokens, km.max_step_tokens,
                   w.lanes, w.score_bits, w.count_bits, w.row_capacity, w.row_capacity.bit_length(), km.contexts,
                   km.table_clusters, km.context_tokens, km.sink_tokens, km.ring_tokens, km.sink_base, km.ring_base,
                   km.record_bytes, cm.entry_base, cm.list_base, cm.map_base, cm.sum_base, cm.mean_base,
                   cm.item_bytes, k.axi_addr_bits, k.axi_data_bits, k.axi_id_bits, r.preload == "fill",
                   bf16_bits(cfg.score_scale), cfg.core.score_fifo_depth, _bits(2 * km.table_clusters),
                   _bits(km.contexts), cfg.dre.counter_bits, cfg.core.memory_bank_bits, r.recent_window_tokens,
                   ResidentMassGeometry.from_config(cfg) if r.threshold_mass == "row" else None)

    # ---- derived ------------------------------------------------------------------------------------------------

    @property
    def line_bits(self) -> int:
        return 16 * self.n

    @property
    def beat_bytes(self) -> int:
        return self.data_bits // 8

    @property
    def beat_shift(self) -> int:
        return (self.beat_bytes - 1).bit_length()

    @property
    def vec_beats(self) -> int:
        """VPE beats per head vector."""
        return self.head_dim // self.trees

    @property
    def lines_per_pass(self) -> int:
        """SRAM lines one pass's scores fill (trees 32-bit slots)."""
        return 32 * self.trees // self.line_bits

    @property
    def rows(self) -> int:
        """WTU rows of the longest step for one KV head."""
        return self.max_tokens * self.group

    @property
    def resident_keys_max(self) -> int:
        """Keys a row attends whatever is fetched, at most: the sinks, the recent window and the step."""
        return self.sinks + self.window + self.max_tokens

    @property
    def token_bits(self) -> int:
        return _bits(self.context_tokens)

    @property
    def cluster_bits(self) -> int:
        return _bits(self.table_clusters)

    @property
    def slot_bits(self) -> int:
        return _bits(self.capacity)

    @property
    def step_token_bits(self) -> int:
        return _bits(self.max_tokens)

    @property
    def layer_bits(self) -> int:
        return _bits(max(1, self.layers - 1))

    @property
    def sram_addr_bits(self) -> int:
        return _bits(max(1, self.sram_words - 1))


def command_layout(g: CoreGeometry) -> data.StructLayout:
    """One step of one layer: its tokens, the recent window, and where its operands are in the LXE SRAM (line
    addresses; docs/formats.md §Core)."""
    a = g.sram_addr_bits
    return data.StructLayout({
        "layer": g.layer_bits, "step": 16, "tokens": g.step_token_bits, "window_start": g.token_bits + 1,
        "segment_start": 1, "planes": a, "keys": a, "values": a, "queries": a, "scratch": a,
    })


def response_layout(g: CoreGeometry) -> data.StructLayout:
    return data.StructLayout({"step": 16, "causes": len(CORE_CAUSES), "kvmu_causes": 5, "kvmu_errors": 16})
