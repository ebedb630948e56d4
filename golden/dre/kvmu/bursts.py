"""Range coalescing and AXI burst legalisation: the KVMU's transfer rules, shared by its golden model.

A *range* is one copy of ``length`` bytes from ``src`` (on the source port) to ``dst`` (on the destination port).
Addresses and lengths are whole AXI beats (the config guarantees it: records are whole beats and every region is
4 KiB aligned), so source and destination always have the same byte-lane phase and no data is shifted.

**Coalescing** (:class:`Coalescer`, streaming, in the order the front-end emits ranges, no sorting):

- an *eviction* range (explicit destination) merges into the pending one when it continues it on both sides
  (``src == pending.src_end`` and ``dst == pending.dst_end``);
- a *prefetch* range (packed destination in the staging area) merges when the gap on the source side
  ``g = src - pending.src_end`` satisfies ``0 ≤ g ≤ coalesce_gap_bytes``; the gap bytes are moved too, so the
  staging area mirrors the merged source span. Otherwise the pending range is emitted and the new range starts at
  the staging cursor;
- a prefetch range that does not fit in the staging half (cursor + length > limit) is dropped and flagged
  (capacity overflow, address = its source); a merge that would not fit is not made.

**Legalisation** (:func:`legalise`): a range is cut at every multiple of ``B = min(dma_burst_bytes, 256 beats,
4096)`` of its source address and of its destination address. ``B`` is a power of two that divides 4096, so no
burst crosses a 4 KiB boundary on either side, none exceeds 256 beats or ``dma_burst_bytes``, and the read and
write bursts of a piece have the same length.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Range", "Burst", "Coalescer", "legalise", "EVICT", "PREFETCH"]

EVICT, PREFETCH = 0, 1


@dataclass(frozen=True)
class Range:
    src: int
    dst: int
    length: int
    mode: int = EVICT       # EVICT: device -> host, explicit dst; PREFETCH: host -> device staging, packed dst


@dataclass(frozen=True)
class Burst:
    src: int
    dst: int
    beats: int


def legalise(r: Range, burst_bytes: int, beat_bytes: int) -> list[Burst]:
    """The AXI bursts of one range (see the module docstring)."""
    out, src, dst, left = [], r.src, r.dst, r.length
    while left > 0:
        piece = min(left, burst_bytes - src % burst_bytes, burst_bytes - dst % burst_bytes)
        out.append(Burst(src, dst, piece // beat_bytes))
        src, dst, left = src + piece, dst + piece, left - piece
    return out


class Coalescer:
    """Streaming range coalescer with the staging cursor (see the module docstring).

    ``push`` returns the ranges that leave the coalescer (0 or 1) and whether the pushed range was dropped;
    ``flush`` returns the pending range. ``restart(base, limit)`` moves the staging cursor.
    """

    def __init__(self, gap_bytes: int):
        self.gap = gap_bytes
        self.pending: Range | None = None
        self.cursor = 0
        self.limit = 0

    def restart(self, base: int, limit: int) -> None:
        self.cursor, self.limit = base, limit

    def mergeable(self, p: Range, r: Range) -> bool:
        """Whether ``r`` extends the pending range ``p`` (the rule the mutants invert)."""
        if r.mode == EVICT:
            return p.mode == EVICT and r.src == p.src + p.length and r.dst == p.dst + p.length
        g = r.src - (p.src + p.length)
        return p.mode == PREFETCH and 0 <= g <= self.gap and self.cursor + g + r.length <= self.limit

    def push(self, r: Range) -> tuple[list[Range], bool]:
        p = self.pending
        if p is not None and self.mergeable(p, r):
            g = r.src - (p.src + p.length)
            self.pending = Range(p.src, p.dst, p.length + g + r.length, p.mode)
            if r.mode == PREFETCH:
                self.cursor += g + r.length
            return [], False
        out = [p] if p is not None else []
        self.pending = None
        if r.mode == PREFETCH:
            if self.cursor + r.length > self.limit:
                return out, True
            r = Range(r.src, self.cursor, r.length, PREFETCH)
            self.cursor += r.length
        self.pending = r
        return out, False

    def flush(self) -> list[Range]:
        out = [self.pending] if self.pending is not None else []
        self.pending = None
        return out
