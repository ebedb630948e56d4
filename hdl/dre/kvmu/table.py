"""Table port: one HC-table access at a time on its own AXI4 master port to device memory.

A request ``{write, wide, addr, data}`` reads or writes one entry: a 4-byte token-index or block-link entry, or a
16-byte cluster entry (``wide``). An entry narrower than a beat is one beat at the beat-aligned address with the
entry's byte strobes (``WSTRB``) and byte lanes; a wider one is ``16 / beat`` full beats. ``done`` pulses with the
read ``data`` (the entry, little endian) and ``error`` (a non-OKAY response or an unexpected ID). The front-end waits
for ``done`` before its next access, so a write is acknowledged before the entry is read again (AXI4 does not
order reads after writes).
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.axi import OKAY, axi4_signature

__all__ = ["TableAccess", "table_request_layout"]

ENTRY_BITS = 96           # count, head, tail of a cluster entry (its last 4 bytes are written as zero)


def table_request_layout(g) -> data.StructLayout:
    return data.StructLayout({"write": 1, "wide": 1, "addr": g.addr_bits, "data": ENTRY_BITS})


class TableAccess(wiring.Component):
    def __init__(self, g):
        self._g = g
        super().__init__({"req": In(stream.Signature(table_request_layout(g))),
                          "tbl": Out(axi4_signature(g.addr_bits, g.data_bits, g.id_bits, constants=False)),
                          "done": Out(1), "data": Out(ENTRY_BITS), "error": Out(1),
                          "reads": Out(1), "writes": Out(1)})

    def elaborate(self, platform):
        m = Module()
        g = self._g
        bb, bits, sh = g.beat_bytes, g.data_bits, g.beat_shift
        t = self.tbl
        wide_beats = max(1, 16 // bb)
        r = self.req.payload
        offset = r.addr[:sh]
        beats = Signal(range(wide_beats + 1))
        entry = Signal(128)                   # the write entry (multi-beat) or the read accumulator
        lane_data, lane_strb = Signal(bits), Signal(bb)
        shift = Signal(range(bb))
        k = Signal(range(wide_beats + 1))
        err, wide = Signal(), Signal()
        m.d.sync += [self.done.eq(0), self.reads.eq(0), self.writes.eq(0)]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.req.ready.eq(1)
                with m.If(self.req.valid):
                    m.d.sync += [entry.eq(r.data), k.eq(0), err.eq(0), shift.eq(offset), wide.eq(r.wide),
                                 beats.eq(Mux(r.wide, wide_beats, 1))]
                    aligned = r.addr & ~(bb - 1) if bb > 4 else r.addr
                    if bb >= 16:      # any entry fits one beat: place it on its byte lanes
                        m.d.sync += [lane_data.eq(r.data << (offset * 8)),
                                     lane_strb.eq(Mux(r.wide, 0xFFFF, 0xF) << offset)]
                    else:             # a wide entry spans beats (lanes per beat below); a narrow one its lanes
                        m.d.sync += [lane_data.eq(Mux(r.wide, r.data[:bits], r.data[:32] << (offset * 8))),
                                     lane_strb.eq(Mux(r.wide, (1 << bb) - 1, 0xF << offset))]
                    with m.If(r.write):
                        m.d.sync += [t.awvalid.eq(1), t.awaddr.eq(aligned), t.awlen.eq(Mux(r.wide, wide_beats - 1, 0)),
                                     t.wvalid.eq(1), self.writes.eq(1)]
                        m.next = "WRITE"
                    with m.Else():
                        m.d.sync += [t.arvalid.eq(1), t.araddr.eq(aligned), t.arlen.eq(Mux(r.wide, wide_beats - 1, 0)),
                                     self.reads.eq(1)]
                        m.next = "READ"
            with m.State("WRITE"):
                m.d.comb += [t.wdata.eq(lane_data), t.wstrb.eq(lane_strb), t.wlast.eq(k == beats - 1)]
                with m.If(t.awready):
                    m.d.sync += t.awvalid.eq(0)
                with m.If(t.wvalid & t.wready):
                    m.d.sync += k.eq(k + 1)
                    with m.If(k == beats - 1):
                        m.d.sync += t.wvalid.eq(0)
                    if bb < 16:
                        if wide_beats > 1:
                            words = [entry.word_select(i, bits) for i in range(wide_beats)]
                            nxt = words[-1]
                            for i in reversed(range(wide_beats - 1)):
                                nxt = Mux(k == i, words[i + 1], nxt)
                            m.d.sync += lane_data.eq(nxt)
                with m.If(t.bvalid):
                    m.d.sync += [self.done.eq(1), self.error.eq((t.bresp != OKAY) | (t.bid != 0)), self.data.eq(0)]
                    m.next = "IDLE"
            with m.State("READ"):
                m.d.comb += t.rready.eq(1)
                with m.If(t.arready):
                    m.d.sync += t.arvalid.eq(0)
                with m.If(t.rvalid):
                    bad = (t.rresp != OKAY) | (t.rid != 0)
                    m.d.sync += [k.eq(k + 1), err.eq(err | bad)]
                    if bb >= 16:
                        m.d.sync += entry.eq(t.rdata >> (shift * 8))
                    else:
                        with m.If(beats == 1):
                            m.d.sync += entry.eq(t.rdata >> (shift * 8))
                        with m.Else():
                            m.d.sync += entry.word_select(k, bits).eq(t.rdata)
                    with m.If(t.rlast):
                        m.next = "READ_DONE"
            with m.State("READ_DONE"):
                m.d.sync += [self.done.eq(1), self.error.eq(err), self.data.eq(Mux(wide, entry[:ENTRY_BITS], entry[:32]))]
                m.next = "IDLE"
        return m
