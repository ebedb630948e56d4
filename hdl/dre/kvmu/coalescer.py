"""Range coalescer with the staging cursor (docs/formats.md §KVMU coalescing; golden
:class:`vrex.golden.dre.kvmu.bursts.Coalescer`).

Ranges from the front-end arrive in emission order. An eviction range joins the pending one when it continues it on
both ports; a prefetch range joins when the source gap ``g`` satisfies ``0 ≤ g ≤ coalesce_gap_bytes`` and the
merged transfer still fits in the staging half (the gap bytes are moved too). Otherwise the pending transfer leaves
and the range becomes pending, a prefetch range at the staging cursor; a prefetch range that does not fit is
dropped and flagged (``drop`` strobe with its source address). A ``flush`` beat emits the pending transfer.

Pipeline: an input register computes the range's end addresses, the next cycle registers the comparisons with the
pending transfer, the cycle after acts on them (merge, or emit and start), and the output is a registered stream:
3 cycles from a range to its transfer's departure, one range every three cycles (a range is at least one record of
whole beats, and the front-end spends more cycles than that per range). ``restart``
(with ``base``/``limit``) moves the cursor; it is only asserted while the coalescer is idle.
"""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.layouts import command_layout, range_layout

__all__ = ["Coalescer"]


class Coalescer(wiring.Component):
    def __init__(self, g):
        self._g = g
        a = g.addr_bits
        super().__init__({"i": In(stream.Signature(range_layout(g))),
                          "o": Out(stream.Signature(command_layout(g))),
                          "restart": In(1), "base": In(a), "limit": In(a),
                          "busy": Out(1), "drop": Out(1), "drop_address": Out(a)})

    def elaborate(self, platform):
        m = Module()
        g = self._g
        a = g.addr_bits
        # stage 0: the input with its end addresses
        s_valid = Signal()
        s = Signal(range_layout(g))
        s_end, s_dst_end = Signal(a + 1), Signal(a + 1)
        # the pending transfer
        p_valid, p_prefetch = Signal(), Signal()
        p_src, p_dst = Signal(a), Signal(a)
        p_end, p_dst_end = Signal(a + 1), Signal(a + 1)
        cursor, room = Signal(a + 1), Signal(a + 1)

        out_free = ~self.o.valid | self.o.ready
        take = Signal()
        # the input register takes a range only when empty: one range per two cycles at most, so the merge decision
        # (two carry chains) does not reach back into the front-end's ready
        m.d.comb += [self.i.ready.eq(~s_valid), self.busy.eq(s_valid | p_valid | self.o.valid)]
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [s_valid.eq(1), s.eq(self.i.payload), s_end.eq(self.i.payload.src + self.i.payload.length),
                         s_dst_end.eq(self.i.payload.dst + self.i.payload.length)]
        with m.Elif(take):
            m.d.sync += s_valid.eq(0)

        # decide stage: the comparisons are registered one cycle after the range arrives (the pending transfer cannot
        # change meanwhile), so no cycle chains more than one carry chain
        decided = Signal()
        gap = Signal(a + 2)
        step = Signal(a + 2)          # bytes the cursor advances on a merge: gap + length = end - pending end
        m.d.comb += [gap.eq(s.src - p_end), step.eq(s_end - p_end)]
        merge_r, fits_r, step_r = Signal(), Signal(), Signal(a + 2)
        with m.If(s_valid & ~decided):
            merge_pf = p_valid & p_prefetch & s.prefetch & ~gap[-1] & (gap <= g.coalesce_gap_bytes) & (step <= room)
            merge_ev = p_valid & ~p_prefetch & ~s.prefetch & (s.src == p_end) & (s.dst == p_dst_end)
            m.d.sync += [decided.eq(1), merge_r.eq(~s.flush & (merge_pf | merge_ev)), fits_r.eq(s.length <= room),
                         step_r.eq(step)]
        with m.If(take):
            m.d.sync += decided.eq(0)
        merge, fits, step = merge_r, fits_r, step_r

        def emit():
            m.d.sync += [self.o.valid.eq(1), self.o.payload.src.eq(p_src), self.o.payload.dst.eq(p_dst),
                         self.o.payload.length.eq(p_end - p_src), self.o.payload.prefetch.eq(p_prefetch)]

        m.d.sync += self.drop.eq(0)
        with m.If(s_valid & decided):
            with m.If(merge):
                m.d.comb += take.eq(1)
                m.d.sync += [p_end.eq(s_end), p_dst_end.eq(s_dst_end)]
                with m.If(s.prefetch):
                    m.d.sync += [cursor.eq(cursor + step), room.eq(room - step)]
            with m.Elif(~p_valid | out_free):
                m.d.comb += take.eq(1)
                with m.If(p_valid):
                    emit()
                m.d.sync += p_valid.eq(0)
                with m.If(~s.flush):
                    with m.If(~s.prefetch):
                        m.d.sync += [p_valid.eq(1), p_prefetch.eq(0), p_src.eq(s.src), p_dst.eq(s.dst),
                                     p_end.eq(s_end), p_dst_end.eq(s_dst_end)]
                    with m.Elif(fits):
                        m.d.sync += [p_valid.eq(1), p_prefetch.eq(1), p_src.eq(s.src), p_dst.eq(cursor),
                                     p_end.eq(s_end), cursor.eq(cursor + s.length), room.eq(room - s.length)]
                    with m.Else():
                        m.d.sync += [self.drop.eq(1), self.drop_address.eq(s.src)]
        with m.If(self.restart):
            m.d.sync += [cursor.eq(self.base), room.eq(self.limit - self.base)]
        return m
