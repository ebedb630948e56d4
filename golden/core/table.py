"""The core's HC-table regions in device DRAM (``cfg.core_map``, docs/formats.md §Core): item formats and the writer
of a context's golden content.

Every item is little endian; an *item* is one AXI beat (``item_bytes``), of which the first 16 bytes are used:

==============  ======================================================================================
cluster entry   u32 code, u32 count (members), u32 offloaded members, u32 0
open-list entry u32 cluster id, u32 newest member (token index), u32 code, u32 0; the context's open clusters in
                ascending id, entries beyond the list's length are left as they were
token map       u32 cluster id per token (4 bytes, packed)
key sum         ``head_dim`` FP32 words per cluster
mean key        ``head_dim`` BF16 halves per cluster
==============  ======================================================================================
"""

from __future__ import annotations

__all__ = ["entry_item", "list_item", "write_context"]


def _item(words: list[int], size: int) -> bytes:
    return b"".join((w & 0xFFFFFFFF).to_bytes(4, "little") for w in words).ljust(size, b"\0")


def entry_item(code: int, count: int, offloaded: int, size: int) -> bytes:
    return _item([code, count, offloaded, 0], size)


def list_item(cluster: int, newest: int, code: int, size: int) -> bytes:
    return _item([cluster, newest, code, 0], size)


def write_context(mem, cmap, ctx: int, snap) -> None:
    """Write a context's :class:`~.session.TableSnapshot` into ``mem`` (``write(address, bytes)``) as the core
    leaves it after the step."""
    size = cmap.item_bytes
    for c in range(snap.clusters):
        mem.write(cmap.entry_address(ctx, c), entry_item(snap.codes[c], snap.counts[c], snap.offloaded[c], size))
        mem.write(cmap.sum_address(ctx, c), b"".join(w.to_bytes(4, "little") for w in snap.sums[c]))
        mem.write(cmap.mean_address(ctx, c), b"".join(h.to_bytes(2, "little") for h in snap.means[c]))
    for i, (c, newest, code) in enumerate(snap.open_list):
        mem.write(cmap.list_address(ctx, i), list_item(c, newest, code, size))
    if snap.token_clusters:
        mem.write(cmap.map_address(ctx, 0), b"".join(c.to_bytes(4, "little") for c in snap.token_clusters))
