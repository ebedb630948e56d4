"""Burst legaliser: cuts a coalesced transfer into AXI4-legal bursts (docs/formats.md §KVMU bursts).

A transfer ``{src, dst, length}`` (bytes, whole beats) is cut at every multiple of B = ``burst_bytes`` (a power
of two ≤ 4096 and ≤ 256 beats) of its source and of its destination address, so no burst crosses a 4 KiB boundary
on either port or exceeds 256 beats, and the read and write bursts of a piece have the same length (the golden rule
is :func:`vrex.golden.dre.kvmu.bursts.legalise`).

Every address and the remaining length are kept in beats, split at B into a high part (B-blocks) and a low part
(the offset in the block). The pieces of one transfer follow from its first one: a piece that is not the last ends at
the next boundary of the nearer side, so the one after it is ``n2 = |to_src − to_dst|`` (the other side's remaining
distance; B when both sides are at the same offset), and from then on the pieces alternate between ``n2`` and
``B − n2``, ending alternately on the source and on the destination side (both when ``n2 = B``). The legaliser
computes the first piece and ``n2`` when it takes the transfer, then only swaps registers: a step compares the
remaining length's low part with the registered piece (one narrow subtraction; the high part enters through its
registered zero flag), and the high parts only ever increment (addresses, when the piece ends on that side) or
decrement (length, on a borrow), from the registers, in parallel: no cycle holds a wide adder.

Timing: one burst per cycle while the output is ready; a transfer is taken in the cycle after its last burst is
registered (``i.ready`` = not busy), and its first burst is registered in the cycle after that.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.layouts import burst_layout, command_layout

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
        low = (mb - 1).bit_length()              # offset bits within a B-block (0 when a burst is one beat)
        lw = low + 1                             # 0 .. mb
        src_hi, dst_hi = Signal(ab - low), Signal(ab - low)
        src_lo, dst_lo = Signal(low), Signal(low)
        left_hi, left_lo = Signal(ab + 1 - lw), Signal(lw)
        left_hi_zero = Signal()
        near, alt = Signal(lw), Signal(lw)       # this step's piece (unless it is the last) and the next one's
        ends_src, ends_dst = Signal(), Signal()  # this step ends at a boundary of the source / destination side
        prefetch = Signal()
        busy = self.busy
        m.d.comb += self.i.ready.eq(~busy)

        p = self.i.payload
        src_in, dst_in, len_in = p.src[sh:], p.dst[sh:], p.length[sh:]
        to_src, to_dst = Signal(lw), Signal(lw)  # beats to the next boundary of each side: 1 .. mb
        m.d.comb += [to_src.eq(mb - src_in[:low]), to_dst.eq(mb - dst_in[:low])]
        apart = Signal(lw)
        m.d.comb += apart.eq(Mux(to_src < to_dst, to_dst - to_src, to_src - to_dst))
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [src_lo.eq(src_in[:low]), src_hi.eq(src_in[low:]), dst_lo.eq(dst_in[:low]),
                         dst_hi.eq(dst_in[low:]), left_lo.eq(len_in[:lw]), left_hi.eq(len_in[lw:]),
                         left_hi_zero.eq(len_in[lw:] == 0), prefetch.eq(p.prefetch), busy.eq(len_in != 0),
                         near.eq(Mux(to_src < to_dst, to_src, to_dst)), alt.eq(Mux(apart == 0, mb, apart)),
                         ends_src.eq(to_src <= to_dst), ends_dst.eq(to_dst <= to_src)]

        diff = Signal(lw + 1)                    # left_lo - near, with the borrow in the top bit
        m.d.comb += diff.eq(left_lo - near)
        borrow = diff[lw]
        last = Signal()
        m.d.comb += last.eq(left_hi_zero & (borrow | (diff == 0)))

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(busy & (~self.o.valid | self.o.ready)):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.src.eq(Cat(src_lo, src_hi)),
                         self.o.payload.dst.eq(Cat(dst_lo, dst_hi)), self.o.payload.beats.eq(Mux(last, left_lo, near)),
                         self.o.payload.prefetch.eq(prefetch), left_lo.eq(diff[:lw]),
                         src_lo.eq(Mux(ends_src, 0, src_lo + near)), dst_lo.eq(Mux(ends_dst, 0, dst_lo + near)),
                         near.eq(alt), alt.eq(Mux(alt == mb, mb, mb - alt)),
                         ends_src.eq(ends_dst), ends_dst.eq(ends_src)]
            with m.If(ends_src):
                m.d.sync += src_hi.eq(src_hi + 1)
            with m.If(ends_dst):
                m.d.sync += dst_hi.eq(dst_hi + 1)
            with m.If(borrow):
                m.d.sync += [left_hi.eq(left_hi - 1), left_hi_zero.eq(left_hi == 1)]
            with m.If(last):
                m.d.sync += busy.eq(0)
        return m
