"""Device-DRAM memory maps of the KVMU and the core (KVMUMap, CoreMap) and the capacity rules on them."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import _fail

# ``cfg`` below is a vrex.config.top.Config (not imported: top imports this module).


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
