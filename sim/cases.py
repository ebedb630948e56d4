"""Parametrization tables: one list of named configs per block drives golden, amaranth.sim and cocotb tests.

A :class:`Case` is a built-in base config plus dotted-key overrides; ``case.config()`` validates it like any
user config. Tests turn a table into ``pytest.param``s with readable ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from vrex.config import Config, load_config

__all__ = ["Case", "HAMMING_LANES_CASES", "HCU_CASES", "WTU_CASES", "DRE_CASES", "EXP2", "LINEAR", "ROW_MASS",
           "OFFLOADED"]


@dataclass(frozen=True)
class Case:
    id: str
    base: str
    overrides: dict = field(default_factory=dict, hash=False)

    @cached_property
    def cfg(self) -> Config:
        return load_config(self.base).with_overrides(self.overrides, source=f"case {self.id}")

    def config(self) -> Config:
        return self.cfg


# The WTU's two score transforms as overrides: the exp2 datapath (the edge default) and the paper's linear rule (the
# tiny default).
EXP2 = {"resv.score_transform": "exp2", "dre.wtu.mode": "histogram"}
# The rule on a share of the offloaded mass alone (the default before the row rule; tiny's own mode)
OFFLOADED = {"resv.threshold_mass": "offloaded"}
LINEAR = {"resv.score_transform": "shift_min", "dre.wtu.mode": "early_exit", **OFFLOADED}
# The row-mass threshold (resv.threshold_mass = row, docs/formats.md §WTU row mass) on the exp2 datapath: the score beats
# carry each row's resident input; p = 0.9 in frame steps and 0.99 in question and answer steps, the shipped pair
# (docs/decisions.md P1-P4; the ratio input the benches drive per job's stage).
ROW_MASS = {**EXP2, "resv.threshold_mass": "row", "resv.row_mass_p": 0.9, "resv.text_row_mass_p": 0.99}

HAMMING_LANES_CASES = [
    Case("tiny-16b-4lanes", "tiny"),
    Case("edge-32b-16lanes", "edge"),
    Case("narrow-8b-1lane", "tiny", {"resv.hash_bits": 8, "dre.hcu.lanes": 1, "dre.hcu.bits_per_cycle": 8}),
    Case("wide-64b-8lanes", "tiny", {"resv.hash_bits": 64, "dre.hcu.lanes": 8, "dre.hcu.bits_per_cycle": 64,
                                     "dre.hcu.code_memory_bytes": 512}),
]

# ReSV session variants (tests/golden/test_session.py): the session's recorded HCU/WTU jobs must replay through the
# block references under each; they are also trace-driven stimulus configs for the HCU and WTU benches
# (vrex.golden.resv.block_jobs.record_jobs). "fill-*" cases exercise a full HCU code memory.
RESV_SESSION_CASES = [
    Case("session-default", "tiny"),
    Case("session-fill-spill", "tiny", {"resv.preload": "fill", "dre.hcu.full_policy": "spill",
                                        "resv.hamming_threshold": 2}),
    Case("session-fill-join-first-majority", "tiny", {"resv.preload": "fill", "dre.hcu.full_policy": "join_nearest",
                                                      "resv.hamming_threshold": 2, "resv.assignment": "first",
                                                      "resv.cluster_code": "majority"}),
    Case("session-exact-all-relu", "tiny", {"resv.selection": "exact", "resv.retrieval_scope": "all",
                                            "resv.score_transform": "relu"}),
    Case("session-exp2-sinks-stage-ratios", "tiny", {**EXP2, "resv.sink_tokens": 2, "resv.wicsum_ratio": 0.2,
                                                     "resv.text_wicsum_ratio": 0.5, "resv.wicsum_guard": 0.05}),
    Case("session-topk-layer-global", "tiny", {"dre.wtu.mode": "topk", "resv.cluster_scope": "layer",
                                               "resv.hyperplane_sharing": "per_layer",
                                               "resv.gqa_aggregation": "global"}),
]
__all__ += ["RESV_SESSION_CASES"]

# WTU (hdl/dre/wtu/linear.py): every mode, lanes 1 to 16 (also not a power of two), 2 to 16 buckets, both transforms, score /
# count widths 10/5, 12/8 and 16/16, capacities that are not powers of two.
WTU_CASES = [
    Case("wtu-edge-early_exit", "edge", LINEAR),          # 16 lanes, 16 buckets, Q8.8, 16-bit counts, 4096/row
    Case("wtu-edge-exp2", "edge", OFFLOADED),             # exp2, 16 bins x 2 octaves, 1 refinement, the rule before row
    Case("wtu-tiny-early_exit", "tiny"),                  # 4 lanes, 8 buckets, 12-bit scores, 8-bit counts
    Case("wtu-histogram-12buckets", "tiny", {"dre.wtu.mode": "histogram", "dre.wtu.lanes": 8,
                                             "dre.wtu.buckets": 12, "dre.wtu.score_memory_bytes": 192,
                                             "dre.wtu.count_memory_bytes": 128}),
    Case("wtu-topk-k8", "tiny", {"dre.wtu.mode": "topk"}),
    Case("wtu-topk-3lanes-4bins", "tiny", {"dre.wtu.mode": "topk", "dre.wtu.lanes": 3, "dre.wtu.buckets": 6,
                                           "dre.wtu.score_memory_bytes": 72, "dre.wtu.topk_k": 5}),
    Case("wtu-lanes1-relu-odd", "tiny", {"dre.wtu.lanes": 1, "resv.score_transform": "relu",
                                         "dre.wtu.buckets": 4, "dre.wtu.score_bits": 10,
                                         "dre.wtu.score_frac_bits": 3, "dre.wtu.count_bits": 5,
                                         "dre.wtu.ratio_bits": 6, "dre.wtu.score_memory_bytes": 30,
                                         "dre.wtu.count_memory_bytes": 15}),
    Case("wtu-buckets2", "tiny", {"dre.wtu.buckets": 2, "dre.wtu.lanes": 2, "dre.wtu.score_memory_bytes": 60}),
    # exp2 datapath (hdl/dre/wtu/exp.py): tiny; 3 lanes, 5 bins of 4 octaves, a one-entry LUT, two refinement passes of
    # 4 sub-bins, no optional pipeline register; one lane, 1-octave bins, three passes of 2 sub-bins, 4-bit ratio
    Case("wtu-tiny-exp2", "tiny", EXP2),
    Case("wtu-exp2-3lanes-2passes-p1", "tiny", {**EXP2, "dre.wtu.lanes": 3, "dre.wtu.score_memory_bytes": 72,
                                                "dre.wtu.buckets": 5, "dre.wtu.bucket_octaves": 4,
                                                "dre.wtu.exp_lut_entries": 1, "dre.wtu.refine_bins": 4,
                                                "dre.wtu.refine_passes": 2, "dre.wtu.pipeline_stages": 1}),
    Case("wtu-exp2-1lane-3passes-p4", "tiny", {**EXP2, "dre.wtu.lanes": 1, "dre.wtu.score_memory_bytes": 30,
                                               "dre.wtu.count_memory_bytes": 20, "dre.wtu.bucket_octaves": 1,
                                               "dre.wtu.refine_bins": 2, "dre.wtu.refine_passes": 3,
                                               "dre.wtu.pipeline_stages": 4, "dre.wtu.ratio_bits": 4,
                                               "dre.wtu.exp_mantissa_bits": 5}),
    # row mass: tiny (a 24-bit resident sum as wide as the row sums); 3 lanes, 5 bins of 4 octaves, two passes, no
    # optional pipeline register and a 10-bit resident sum (shifted out after 3 bins); the edge rule with row mass
    Case("wtu-tiny-exp2-row", "tiny", ROW_MASS),
    Case("wtu-exp2-row-3lanes-p1-z10", "tiny", {**ROW_MASS, "dre.wtu.lanes": 3, "dre.wtu.score_memory_bytes": 72,
                                                "dre.wtu.buckets": 5, "dre.wtu.bucket_octaves": 4,
                                                "dre.wtu.refine_bins": 4, "dre.wtu.refine_passes": 2,
                                                "dre.wtu.pipeline_stages": 1, "dre.wtu.resident_sum_bits": 10}),
    Case("wtu-edge-exp2-row", "edge", ROW_MASS),          # the edge as shipped (the row rule)
]

# HCU: parallel edge, bit-serial, 4-bit slices with and without early exit (and a 2-stage pipeline), `first` with
# `join_nearest`, one lane with a table that fills often, and odd sizes (3 lanes, 12-bit codes, 3-stage pipeline).
HCU_CASES = [
    Case("edge-parallel-16x32", "edge"),
    Case("bitserial-1b", "tiny", {"dre.hcu.bits_per_cycle": 1}),
    Case("slice4-early-exit-p2", "tiny", {"dre.hcu.bits_per_cycle": 4, "dre.hcu.pipeline_stages": 2}),
    Case("slice4-no-early-exit", "tiny", {"dre.hcu.bits_per_cycle": 4, "dre.hcu.early_exit": False}),
    Case("first-join-nearest-s8", "tiny", {"resv.assignment": "first", "dre.hcu.full_policy": "join_nearest",
                                           "dre.hcu.bits_per_cycle": 8, "dre.hcu.code_memory_bytes": 24}),
    Case("lanes1-cap8-join-nearest", "tiny", {"dre.hcu.lanes": 1, "dre.hcu.code_memory_bytes": 16,
                                              "dre.hcu.bits_per_cycle": 2, "dre.hcu.full_policy": "join_nearest"}),
    Case("lanes3-12b-cap6-p3", "tiny", {"resv.hash_bits": 12, "dre.hcu.lanes": 3, "dre.hcu.code_memory_bytes": 9,
                                        "dre.hcu.bits_per_cycle": 3, "dre.hcu.pipeline_stages": 3}),
]

# DRE top (hdl/dre/top.py): the paper's edge blocks, and mixes of HCU schedules with every WTU mode.
DRE_CASES = [
    Case("dre-tiny", "tiny"),
    Case("dre-edge", "edge", OFFLOADED),
    Case("dre-tiny-exp2", "tiny", {**EXP2, "dre.hcu.pipeline_stages": 3}),
    Case("dre-topk-slice4", "tiny", {"dre.wtu.mode": "topk", "dre.hcu.bits_per_cycle": 4}),
    Case("dre-histogram-first-bitserial", "tiny", {"dre.wtu.mode": "histogram", "resv.assignment": "first",
                                                   "dre.hcu.full_policy": "join_nearest",
                                                   "dre.hcu.bits_per_cycle": 1, "dre.counter_bits": 8}),
    Case("dre-tiny-exp2-row", "tiny", {**ROW_MASS, "dre.hcu.bits_per_cycle": 4}),
    Case("dre-edge-row", "edge", ROW_MASS),                              # the edge as shipped
]


# LXE (hdl/lxe): MAC trees of 4 to 64 inputs with shallow and deep pipelines (normalisers of 1 to 3 cycles), VPE
# lanes 1 to 16 of 4 to 7 stages, DPE weight memories of 3 to 8 words loaded 1 to 16 trees per beat; tiny model
# shapes (head_dim 16) unless the case is the edge core.
LXE_CASES = [
    Case("lxe-tiny", "tiny"),                       # 4 trees x 8 inputs, cuts 4,5,8, normaliser 1; 4 lanes of 6 stages
    Case("tree4-cut1-lanes1", "tiny", {"lxe.dpe_inputs": 4, "lxe.mac_cuts": [1], "lxe.vpe_lanes": 1,
                                       "lxe.dpe_trees": 2, "lxe.guard_bits": 3,
                                       "lxe.dpe_weight_words": 3, "lxe.dpe_load_trees": 1,
                                       "lxe.mac_norm_stages": 1, "lxe.vpe_stages": 4}),
    Case("tree16-cuts-lanes8", "tiny", {"lxe.dpe_inputs": 16, "lxe.mac_cuts": [1, 5, 6, 8, 10], "lxe.vpe_lanes": 8,
                                        "lxe.dpe_trees": 3, "lxe.acc_headroom_bits": 4,
                                        "lxe.dpe_load_trees": 3, "lxe.mac_norm_stages": 3, "lxe.vpe_stages": 5}),
    Case("tree32-deep-lanes16", "tiny", {"lxe.dpe_inputs": 32, "lxe.mac_cuts": [2, 4, 6, 7, 9, 11],
                                         "lxe.vpe_lanes": 16, "lxe.dpe_trees": 2, "lxe.guard_bits": 12,
                                         "lxe.sram_banks": 2, "lxe.sram_word_bits": 64,
                                         "lxe.mac_norm_stages": 2, "lxe.vpe_stages": 7}),
    Case("tree64-edge", "edge"),                                        # the paper's core: 64 x 64, 64 lanes
]
__all__ += ["LXE_CASES"]
# DPE operand pipeline (hdl/lxe/dpe.py): 0 to 2 registers after the weight read, weight memories of 1 to 4 macros,
# more trees than one broadcast-operand copy serves (hdl.lxe.dpe.BROADCAST_FANOUT = 8), so groups stall apart
DPE_CASES = [
    Case("dpe-10trees-stages2-banks2", "tiny", {"lxe.dpe_inputs": 4, "lxe.dpe_trees": 10, "lxe.dpe_load_trees": 5,
                                                "lxe.mac_cuts": [1], "lxe.dpe_read_stages": 2,
                                                "lxe.dpe_weight_banks": 2, "lxe.dpe_weight_words": 3}),
    Case("dpe-17trees-stages0-banks4", "tiny", {"lxe.dpe_inputs": 8, "lxe.dpe_trees": 17, "lxe.dpe_load_trees": 17,
                                                "lxe.dpe_read_stages": 0, "lxe.dpe_weight_banks": 4}),
]
__all__ += ["DPE_CASES"]
# KVMU (hdl/dre/kvmu): AXI data widths 64 to 512, narrow (8-beat) and wide (64/256-beat) bursts, coalescing off and on,
# 1 to 8 outstanding bursts, frame and token eviction, sinks; every device capacity holds just the recent window plus
# one step (89 to 120 tokens per context), so once the ring is full every frame evicts. Small tables keep the
# memories of the bench (filled with a guard pattern) in the megabytes.
_KVMU_SMALL = {"dre.kvmu.context_tokens": 512, "dre.kvmu.table_clusters": 256, "dre.kvmu.staging_bytes": 32768}
KVMU_CASES = [
    Case("kvmu-128b-evict-every-frame", "tiny", {**_KVMU_SMALL, "dre.kvmu.device_capacity_bytes": 32768 + 4 * 89 * 64}),
    Case("kvmu-64b-narrow-gap", "tiny", {**_KVMU_SMALL, "dre.kvmu.axi_data_bits": 64, "dre.kvmu.dma_burst_bytes": 64,
                                         "dre.kvmu.coalesce_gap_bytes": 128, "dre.kvmu.block_tokens": 8,
                                         "dre.kvmu.max_outstanding": 4,
                                         "dre.kvmu.device_capacity_bytes": 32768 + 4 * 120 * 64}),
    Case("kvmu-512b-wide-token-sinks", "tiny", {**_KVMU_SMALL, "dre.kvmu.axi_data_bits": 512,
                                                "dre.kvmu.eviction_granularity": "token", "resv.sink_tokens": 4,
                                                "dre.kvmu.max_outstanding": 2, "dre.kvmu.buffer_bursts": 1,
                                                "dre.kvmu.device_capacity_bytes": 32768 + 4 * 104 * 64}),
    Case("kvmu-256b-gap-serial", "tiny", {**_KVMU_SMALL, "dre.kvmu.axi_data_bits": 256, "dre.kvmu.dma_burst_bytes": 256,
                                          "dre.kvmu.coalesce_gap_bytes": 256, "dre.kvmu.max_outstanding": 1,
                                          "dre.kvmu.block_tokens": 16,
                                          "dre.kvmu.device_capacity_bytes": 32768 + 4 * 96 * 64}),
]
__all__ += ["KVMU_CASES"]
# Core (hdl/core): the tiny core with a device capacity of the recent window plus one step (the KVMU evicts every
# frame once the ring is full) and small KVMU tables (perf.kv_sizes [128]: a staging area the capacity holds).
# "core-tiny-short-window": a 16-token recent window and a ring of 25 tokens (retrieval and eviction from the fourth
# frame on), for the default tier's amaranth.sim run; its score FIFO and candidate list in banks of at most 48 bits
# and two registers after the DPE's weight read (the exp2 case: none).
# The model section of configs/smollm2.yaml as overrides (a core case that replays the llm-video trace needs it)
_SMOLLM2_MODEL = {f"model.{k}": v for k, v in vars(load_config("smollm2").model).items()}

CORE_CASES = [
    Case("core-tiny", "tiny", {**_KVMU_SMALL, "dre.kvmu.device_capacity_bytes": 32768 + 4 * 89 * 64,
                               "perf.kv_sizes": [128]}),
    Case("core-tiny-short-window", "tiny", {**_KVMU_SMALL, "resv.recent_window_tokens": 8,
                                            "dre.kvmu.device_capacity_bytes": 32768 + 4 * 33 * 64,
                                            "perf.kv_sizes": [128], "core.memory_bank_bits": 48,
                                            "lxe.dpe_read_stages": 2}),
    # the edge rule on the tiny core: exp2 scores (the LXE's score scale folds log2 e in), the histogram WTU
    Case("core-tiny-exp2", "tiny", {**_KVMU_SMALL, **EXP2, "resv.recent_window_tokens": 8,
                                    "dre.kvmu.device_capacity_bytes": 32768 + 4 * 33 * 64, "perf.kv_sizes": [128],
                                    "lxe.dpe_read_stages": 0}),
    # the row-mass rule on the tiny exp2 core (issue 23): the resident pass of S (sinks, window and step keys scored,
    # the resident-mass unit, its pairs on the WTU's row beats); 2 sinks so both record sources are exercised
    Case("core-tiny-row", "tiny", {**_KVMU_SMALL, **EXP2, "resv.recent_window_tokens": 8, "resv.sink_tokens": 2,
                                   "resv.threshold_mass": "row", "resv.row_mass_p": 0.7,
                                   "resv.text_row_mass_p": 0.8,
                                   "dre.kvmu.device_capacity_bytes": 32768 + 4 * 35 * 64, "perf.kv_sizes": [128],
                                   "lxe.dpe_read_stages": 0}),
    # between tiny and edge for the retrieval-path cycle model (vrex.sim.core.cycle_model): head_dim 32 (four DPE
    # beats per head vector), 8 DPE trees and VPE lanes (12-bit codes: two hash passes, the second with 4 zero
    # trees; three HCU slices), 8-candidate score groups
    Case("core-medium", "tiny", {**_KVMU_SMALL, "resv.recent_window_tokens": 8, "model.head_dim": 32,
                                 "model.hidden": 128, "lxe.dpe_trees": 8, "lxe.vpe_lanes": 8,
                                 "resv.hash_bits": 12, "dre.hcu.bits_per_cycle": 4,
                                 "dre.hcu.code_memory_bytes": 48, "dre.hcu.current_memory_bytes": 12,
                                 "dre.kvmu.device_capacity_bytes": 32768 + 4 * 33 * 128, "perf.kv_sizes": [128],
                                 "core.memory_bank_bits": 48, "lxe.dpe_read_stages": 2}),
    # the short-window core with a slow HCU (1 code bit per cycle, no early exit): the sequencer waits for its
    # assignments, so the cycle model's HCU timing is checked against the RTL
    Case("core-tiny-slow-hcu", "tiny", {**_KVMU_SMALL, "resv.recent_window_tokens": 8,
                                        "dre.kvmu.device_capacity_bytes": 32768 + 4 * 33 * 64, "perf.kv_sizes": [128],
                                        "core.memory_bank_bits": 48, "lxe.dpe_read_stages": 2,
                                        "dre.hcu.bits_per_cycle": 1, "dre.hcu.early_exit": False}),
    # a real LLM through the core (issue 33 item 4): the model section of configs/smollm2.yaml (SmolLM2-135M: head_dim
    # 64, GQA 9 / 3, 10-token frames) on the tiny core with the shipped row rule, so `make_bench(trace="llm-video")`
    # replays the model's own keys and queries (the chat opening, then frames). A 20-token window and 2 sinks so the
    # first frame already retrieves; the device holds exactly the sinks, the window plus one step of its 90 contexts
    # and the staging area (every frame evicts); a MAC tree holds a 64-element head vector (8 words of 8) and the
    # LXE SRAM the step's operands and score scratch (3 414 lines of 16 bytes at a 10-token step)
    Case("core-smollm2-row", "tiny", {**_KVMU_SMALL, **ROW_MASS, **_SMOLLM2_MODEL, "resv.recent_window_tokens": 20,
                                      "resv.sink_tokens": 2, "dre.kvmu.device_capacity_bytes": 1115648,
                                      "lxe.dpe_weight_words": 8, "lxe.sram_kib": 64, "perf.kv_sizes": [128]}),
]
__all__ += ["CORE_CASES"]
# Resident-mass unit (hdl/core/resident_mass.py; the WTU's score format and resident-sum width): tiny (4 lanes,
# 8 bins, a 24-bit sum: 38-bit accumulators in two segments); 3 lanes, 5 bins of 4 octaves (8 slots), a one-entry
# LUT, a 10-bit sum and no optional pipeline register; one lane, 3 bins of 1 octave, 5-bit mantissas, a 6-bit sum
# (sticky saturation within a few keys) and 3 cuts; 8 lanes, 12 bins (16 slots) and a 50-bit sum (72-bit
# accumulators: three carry segments); the edge unit (16 lanes, 16 bins, 54-bit accumulators in two segments).
RESIDENT_MASS_CASES = [
    Case("rm-tiny", "tiny"),
    Case("rm-3lanes-5bins-p1-z10", "tiny", {"dre.wtu.lanes": 3, "dre.wtu.score_memory_bytes": 72,
                                            "dre.wtu.buckets": 5, "dre.wtu.bucket_octaves": 4,
                                            "dre.wtu.exp_lut_entries": 1, "dre.wtu.pipeline_stages": 1,
                                            "dre.wtu.resident_sum_bits": 10}),
    Case("rm-1lane-3bins-p4-z6", "tiny", {"dre.wtu.lanes": 1, "dre.wtu.score_memory_bytes": 30,
                                          "dre.wtu.count_memory_bytes": 20, "dre.wtu.buckets": 3,
                                          "dre.wtu.bucket_octaves": 1, "dre.wtu.exp_mantissa_bits": 5,
                                          "dre.wtu.pipeline_stages": 4, "dre.wtu.resident_sum_bits": 6}),
    Case("rm-8lanes-12bins-z50", "tiny", {"dre.wtu.lanes": 8, "dre.wtu.buckets": 12, "dre.wtu.resident_sum_bits": 50}),
    Case("rm-edge", "edge"),
]
__all__ += ["RESIDENT_MASS_CASES"]
