"""Geometry and stream payload layouts of the KVMU (docs/formats.md §KVMU has every field).

:class:`KVMUGeometry` holds the constants the RTL is generated from: the memory map of
:class:`vrex.config.KVMUMap` and the widths that follow from it. The layouts are the contract with the
sequencer (control, token descriptors, masks, responses) and with the testbenches, which pack stimulus with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from vrex.errors import ConfigError

__all__ = ["KVMUGeometry", "control_layout", "token_layout", "mask_layout", "response_layout", "range_layout",
           "command_layout", "burst_layout", "CAUSES", "STEP_BITS", "COUNT_BITS"]

CAUSES = ("capacity", "unknown_cluster", "read_error", "write_error", "table_error")
STEP_BITS = 16          # the step tag echoed in the response
COUNT_BITS = 16         # error events per job in the response


def _bits(n: int) -> int:
    """Bits of an unsigned value 0..n."""
    return max(1, int(n).bit_length())


@dataclass(frozen=True)
class KVMUGeometry:
    addr_bits: int
    data_bits: int
    id_bits: int
    contexts: int
    record_bytes: int
    sink_tokens: int
    ring_tokens: int
    context_tokens: int
    table_clusters: int
    block_tokens: int
    host_blocks: int
    sink_base: int
    ring_base: int
    staging_base: int
    staging_half: int
    index_base: int
    table_base: int
    link_base: int
    burst_bytes: int
    mask_bits: int
    coalesce_gap_bytes: int
    max_outstanding: int
    buffer_beats: int
    frame_eviction: bool
    counter_bits: int

    @classmethod
    def from_config(cls, cfg) -> "KVMUGeometry":
        k, km = cfg.dre.kvmu, cfg.kvmu_map
        if k.layout != "cluster_contiguous":
            raise ConfigError("dre.kvmu.layout", k.layout, "must be cluster_contiguous for the KVMU RTL (token_order "
                                                         "is a layout the performance model compares against).")
        beat = km.beat_bytes
        return cls(k.axi_addr_bits, k.axi_data_bits, k.axi_id_bits, km.contexts, km.record_bytes, km.sink_tokens,
                   km.ring_tokens, km.context_tokens, km.table_clusters, km.block_tokens, km.host_blocks,
                   km.sink_base, km.ring_base, km.staging_base, km.staging_half, km.index_base, km.table_base,
                   km.link_base, km.burst_bytes, cfg.dre.wtu.lanes, k.coalesce_gap_bytes, k.max_outstanding,
                   k.buffer_bursts * (km.burst_bytes // beat), k.eviction_granularity == "frame",
                   cfg.dre.counter_bits)

    # ---- derived widths ----------------------------------------------------------------------------------------

    @property
    def beat_bytes(self) -> int:
        return self.data_bits // 8

    @property
    def beat_shift(self) -> int:
        return (self.beat_bytes - 1).bit_length()

    @property
    def burst_beats(self) -> int:
        return self.burst_bytes // self.beat_bytes

    @property
    def block_bytes(self) -> int:
        return self.block_tokens * self.record_bytes

    @property
    def context_bits(self) -> int:
        return _bits(self.contexts)           # one more than needed: a context beyond the table is flagged

    @property
    def token_bits(self) -> int:
        return _bits(self.context_tokens)

    @property
    def cluster_bits(self) -> int:
        """Width of a cluster id at the ports: room for ids beyond the table (flagged as capacity errors)."""
        return _bits(2 * self.table_clusters)

    @property
    def cluster_count_bits(self) -> int:
        return _bits(self.table_clusters)

    @property
    def block_bits(self) -> int:
        return _bits(self.host_blocks)

    @property
    def ring_bits(self) -> int:
        return _bits(max(1, self.ring_tokens - 1))

    @property
    def mask_beat_bits(self) -> int:
        """Index of a mask beat: enough beats to name every cluster of the table and beyond."""
        return _bits(-(-2 * self.table_clusters // self.mask_bits))


def control_layout(g: KVMUGeometry) -> data.StructLayout:
    return data.StructLayout({"context": g.context_bits, "step": STEP_BITS, "restart": 1, "buffer": 1, "arrive": 1,
                              "prefetch": 1})


def token_layout(g: KVMUGeometry) -> data.StructLayout:
    return data.StructLayout({"cluster": g.cluster_bits, "segment_start": 1, "last": 1})


def mask_layout(g: KVMUGeometry) -> data.StructLayout:
    return data.StructLayout({"bits": g.mask_bits, "last": 1})


def response_layout(g: KVMUGeometry) -> data.StructLayout:
    return data.StructLayout({"tag": STEP_BITS, "causes": len(CAUSES), "address": g.addr_bits,
                              "errors": COUNT_BITS})


def range_layout(g: KVMUGeometry) -> data.StructLayout:
    """Front-end -> coalescer: one copy (``flush`` = end of a phase, the other fields unused)."""
    return data.StructLayout({"src": g.addr_bits, "dst": g.addr_bits, "length": g.addr_bits, "prefetch": 1,
                              "flush": 1})


def command_layout(g: KVMUGeometry) -> data.StructLayout:
    """Coalescer -> legaliser: one coalesced transfer."""
    return data.StructLayout({"src": g.addr_bits, "dst": g.addr_bits, "length": g.addr_bits, "prefetch": 1})


def burst_layout(g: KVMUGeometry) -> data.StructLayout:
    """Legaliser -> engines: one burst, addresses in beats, ``beats`` = AXI len + 1 (1..256)."""
    return data.StructLayout({"src": g.addr_bits - g.beat_shift, "dst": g.addr_bits - g.beat_shift, "beats": 9,
                              "prefetch": 1})
