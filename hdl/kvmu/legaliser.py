"""Burst legaliser: cuts a coalesced transfer into AXI4-legal bursts (docs/formats.md §KVMU bursts).

A transfer ``{src, dst, length}`` (bytes, whole beats) is cut at every multiple of B = ``burst_bytes`` (a power
of two ≤ 4096 and ≤ 256 beats) of its source and of its destination address, so no burst crosses a 4 KiB boundary
on either port or exceeds 256 beats, and the read and write bursts of a piece have the same length (the golden rule
is :func:`vrex.golden.kvmu.bursts.legalise`).

Timing: one burst per cycle while the output is ready; a transfer is taken in the cycle after its last burst is
registered (``i.ready`` = not busy). All arithmetic is in beats: log2(B) + 1-bit distances and one adder per address.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import burst_layout, command_layout

__all__ = ["Legaliser"]


class Legaliser(wiring.Component):
    """Members: ``i`` (transfers), ``o`` (bursts, addresses in beats), ``busy`` (a transfer is being cut)."""

    def __init__(self, g):
        self._g = g
        super().__init__({"i": In(stream.Signature(command_layout(g))),
                          "o": Out(stream.Signature(burst_layout(g))), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        g = self._g
        ab, sh = g.addr_bits - g.beat_shift, g.beat_shift
        mb = g.burst_beats
        src, dst = Signal(ab), Signal(ab)
        left = Signal(ab + 1)
        prefetch = Signal()
        busy = self.busy
        m.d.comb += self.i.ready.eq(~busy)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [src.eq(self.i.payload.src >> sh), dst.eq(self.i.payload.dst >> sh),
                         left.eq(self.i.payload.length >> sh), prefetch.eq(self.i.payload.prefetch),
                         busy.eq(self.i.payload.length >> sh != 0)]

        lowmask = mb - 1
        to_src = mb - (src & lowmask)          # beats to the next boundary of each side
        to_dst = mb - (dst & lowmask)
        near = Mux(to_src < to_dst, to_src, to_dst)
        piece_expr = Mux(left < near, left, near)
        piece = Signal(piece_expr.shape())
        m.d.comb += piece.eq(piece_expr)
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(busy & (~self.o.valid | self.o.ready)):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.src.eq(src), self.o.payload.dst.eq(dst),
                         self.o.payload.beats.eq(piece), self.o.payload.prefetch.eq(prefetch),
                         src.eq(src + piece), dst.eq(dst + piece), left.eq(left - piece)]
            with m.If(left == piece):
                m.d.sync += busy.eq(0)
        return m
