"""The root Config dataclass: every section, the cross-section rules, derived values, hash and conversions."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass

import yaml

from ..errors import ConfigError
from .convert import _build, _hashed_plain, _to_plain
from .dre import DREConfig
from .fields import _fail, _Section, param, section
from .lxe import CoreConfig, LXEConfig
from .memory import CoreMap, KVMUMap, _check_kvmu, _check_perf_capacity, _core_map, _kvmu_map, _kvmu_table_bytes
from .model import ModelConfig
from .perf import PerfConfig
from .resv import ReSVConfig
from .system import SystemConfig
from .technology import FPGAConfig, IPConfig, TechnologyConfig


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
        if r.threshold_mass == "row":
            if r.score_transform not in ("exp2", "exp"):
                _fail("resv.threshold_mass", r.threshold_mass,
                      f"needs resv.score_transform exp2 (or the golden-only exp): the row rule adds resident and "
                      f"offloaded softmax weights taken against one maximum, which {r.score_transform} does not give; "
                      "set resv.threshold_mass: offloaded for that transform.")
            if r.score_transform == "exp2" and wtu.mode != "histogram":
                _fail("resv.threshold_mass", r.threshold_mass,
                      f"needs dre.wtu.mode histogram, the mode that runs the exp2 rule; {wtu.mode} keeps a fixed "
                      "number of clusters whatever the masses (set resv.threshold_mass: offloaded for it).")
            if r.retrieval_scope != "offloaded":
                _fail("resv.retrieval_scope", r.retrieval_scope,
                      "must be offloaded with resv.threshold_mass = row: with all, the resident tokens would count "
                      "in m_res and again in their clusters.")
            if r.score_transform == "exp2" and wtu.resident_sum_bits > wtu.exp_sum_bits:
                _fail("dre.wtu.resident_sum_bits", wtu.resident_sum_bits,
                      f"must be ≤ the WTU's row-sum accumulator ({wtu.exp_sum_bits} bits, dre.wtu's exp_sum_bits) "
                      "with resv.threshold_mass = row.")
        for key in ("wicsum_ratio", "text_wicsum_ratio") + (("row_mass_p", "text_row_mass_p")
                                                            if r.threshold_mass == "row" else ()):
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
        """The WTU ratio input of frame steps (with the guard) in unsigned Q0.ratio_bits (round half up)."""
        return self.stage_ratio_fixed("frame")

    def ratio_for(self, key: str) -> int:
        """``resv.<key> + resv.wicsum_guard`` in unsigned Q0.ratio_bits (round half up)."""
        ratio = getattr(self.resv, key) + self.resv.wicsum_guard
        return int(math.floor(ratio * (1 << self.dre.wtu.ratio_bits) + 0.5))

    def stage_ratio_key(self, stage: str) -> str:
        """The ``resv`` key the WTU's ratio input comes from in a ``frame`` or ``text`` (question / answer) step: the
        WiCSum ratio, or p with ``resv.threshold_mass = row``."""
        row = self.resv.threshold_mass == "row"
        if stage == "frame":
            return "row_mass_p" if row else "wicsum_ratio"
        return "text_row_mass_p" if row else "text_wicsum_ratio"

    def stage_ratio(self, stage: str) -> float:
        """The WTU ratio input of a ``frame`` or ``text`` step as a real number (ratio or p, plus the guard)."""
        return getattr(self.resv, self.stage_ratio_key(stage)) + self.resv.wicsum_guard

    def stage_ratio_fixed(self, stage: str) -> int:
        """The WTU ratio input for a ``frame`` or ``text`` (question / answer) step, in Q0.ratio_bits."""
        return self.ratio_for(self.stage_ratio_key(stage))

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
        """Stable 12-hex-digit hash of every parameter except name and description (and a key added later while it
        holds the value that reproduces the behaviour from before it existed: ``omit_from_hash_at``)."""
        d = _hashed_plain(self)
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
