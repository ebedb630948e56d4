"""The AXI engines: bursts from the legaliser become reads on the source port and writes on the destination port.

- **Read engine.** A burst is issued (AR registered) only when the data buffer has room for its whole response
  (``beats ≤ free``, the buffer beats that no read in flight has reserved: the read-reservation gate) and fewer
  than ``max_outstanding`` reads are in flight, so R is never back-pressured and cannot block the writes (no
  deadlock by construction).
- **Write engine.** AW is issued from the queue of read bursts (fewer than ``max_outstanding`` writes without B);
  W beats follow AW order and may precede their AW handshake (AXI4 allows it, and a slave may wait for W). A write
  counts as outstanding until its B response: :attr:`idle` means every write of the phase is acknowledged.
- **Errors.** A read burst with any non-OKAY ``rresp`` (or an unexpected ``rid``) strobes ``read_error`` with its
  address; a non-OKAY ``bresp`` strobes ``write_error``. The data still flows, so the unit keeps working.

Direction: eviction bursts read the device port and write the host port, prefetch bursts the reverse. The front-end
drains the engines (``idle``) before it changes direction, so every read in flight uses the same port. A port's
address, length and data outputs are zero while the other port is addressed. Bursts use ID 0, INCR, full-width
beats and all byte strobes (tied at the top).
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.axi import OKAY, axi4_signature
from vrex.hdl.dre.kvmu.fifo import Fifo
from vrex.hdl.dre.kvmu.layouts import burst_layout

__all__ = ["Engines"]


class Engines(wiring.Component):
    def __init__(self, g):
        self._g = g
        axi = axi4_signature(g.addr_bits, g.data_bits, g.id_bits, constants=False, strobes=False)
        a = g.addr_bits
        super().__init__({"i": In(stream.Signature(burst_layout(g))), "dev": Out(axi), "host": Out(axi),
                          "idle": Out(1), "read_error": Out(1), "read_error_address": Out(a),
                          "write_error": Out(1), "write_error_address": Out(a),
                          "burst_done": Out(1), "beat_done": Out(1), "port_wait": Out(1)})

    def elaborate(self, platform):
        m = Module()
        g = self._g
        sh, ab, mo = g.beat_shift, g.addr_bits - g.beat_shift, g.max_outstanding
        depth = g.buffer_beats
        buf = Fifo(m, "buffer", g.data_bits, depth, synchronous=True)
        wcmd_layout = data.StructLayout({"dst": ab, "beats": 9, "prefetch": 1})
        wcmd = Fifo(m, "wcmd", wcmd_layout.size, mo + 2)
        wlen_layout = data.StructLayout({"beats": 9, "prefetch": 1})
        wlen = Fifo(m, "wlen", wlen_layout.size, max(2, mo))
        raddr = Fifo(m, "raddr", ab, max(2, mo))
        waddr = Fifo(m, "waddr", ab, max(2, mo))

        free = Signal(range(depth + 1), init=depth)     # buffer beats not reserved by a read in flight
        out_r, out_w = Signal(range(mo + 1)), Signal(range(mo + 1))
        rmode = Signal()          # port direction of the reads in flight (1 = prefetch: the host port)

        # ---- read engine -------------------------------------------------------------------------------------
        ar_valid, ar_addr, ar_len, ar_mode = Signal(), Signal(ab), Signal(8), Signal()
        b = self.i.payload
        ar_handshake = Signal()
        m.d.comb += ar_handshake.eq(ar_valid & Mux(ar_mode, self.host.arready, self.dev.arready))
        r_done = Signal()      # a read burst's last beat this cycle
        w_pop = self.beat_done  # a W beat leaves the buffer this cycle
        accept = self.i.ready
        m.d.comb += accept.eq(self.i.valid & (~ar_valid | ar_handshake) & (out_r < mo) & (b.beats <= free)
                              & wcmd.w_rdy & raddr.w_rdy)
        for p, mode in ((self.dev, 0), (self.host, 1)):
            mine = ar_mode == mode
            m.d.comb += [p.arvalid.eq(ar_valid & mine), p.araddr.eq(Mux(mine, Cat(_zeros(sh), ar_addr), 0)),
                         p.arlen.eq(Mux(mine, ar_len, 0))]
        with m.If(ar_handshake):
            m.d.sync += ar_valid.eq(0)
        with m.If(accept):
            m.d.sync += [ar_valid.eq(1), ar_addr.eq(b.src), ar_len.eq(b.beats - 1), ar_mode.eq(b.prefetch),
                         rmode.eq(b.prefetch)]
        m.d.sync += free.eq(free - Mux(accept, b.beats, 0) + w_pop)
        m.d.sync += out_r.eq(out_r + accept - r_done)

        r_valid, r_last, r_bad = Signal(), Signal(), Signal()
        m.d.comb += [r_valid.eq(Mux(rmode, self.host.rvalid, self.dev.rvalid)),
                     r_last.eq(Mux(rmode, self.host.rlast, self.dev.rlast)),
                     r_bad.eq(Mux(rmode, (self.host.rresp != OKAY) | (self.host.rid != 0),
                                  (self.dev.rresp != OKAY) | (self.dev.rid != 0))),
                     self.host.rready.eq(rmode & buf.w_rdy), self.dev.rready.eq(~rmode & buf.w_rdy)]
        r_fire = r_valid & buf.w_rdy
        sticky = Signal()
        m.d.comb += r_done.eq(r_fire & r_last)
        buf.connect(w_en=r_fire, w_data=Mux(rmode, self.host.rdata, self.dev.rdata), r_en=w_pop)
        wcmd.connect(w_en=accept, w_data=Cat(b.dst, b.beats, b.prefetch), r_en=self.burst_done)
        raddr.connect(w_en=accept, w_data=b.src, r_en=r_done)
        with m.If(r_fire):
            m.d.sync += sticky.eq(Mux(r_last, 0, sticky | r_bad))
        m.d.sync += [self.read_error.eq(r_done & (sticky | r_bad)),
                     self.read_error_address.eq(Cat(_zeros(sh), raddr.r_data))]

        # ---- write engine ------------------------------------------------------------------------------------
        head = Signal(wcmd_layout)
        m.d.comb += head.eq(wcmd.r_data)
        aw_valid, aw_addr, aw_len, aw_mode = Signal(), Signal(ab), Signal(8), Signal()
        aw_handshake = Signal()
        m.d.comb += aw_handshake.eq(aw_valid & Mux(aw_mode, self.dev.awready, self.host.awready))
        b_done = Signal()
        issue = self.burst_done
        m.d.comb += issue.eq(wcmd.r_rdy & (~aw_valid | aw_handshake) & (out_w < mo) & wlen.w_rdy & waddr.w_rdy)
        # prefetch bursts write the device port (staging), evictions the host port
        for p, mode in ((self.dev, 1), (self.host, 0)):
            mine = aw_mode == mode
            m.d.comb += [p.awvalid.eq(aw_valid & mine), p.awaddr.eq(Mux(mine, Cat(_zeros(sh), aw_addr), 0)),
                         p.awlen.eq(Mux(mine, aw_len, 0))]
        with m.If(aw_handshake):
            m.d.sync += aw_valid.eq(0)
        with m.If(issue):
            m.d.sync += [aw_valid.eq(1), aw_addr.eq(head.dst), aw_len.eq(head.beats - 1), aw_mode.eq(head.prefetch)]
        m.d.sync += out_w.eq(out_w + issue - b_done)

        wl = Signal(wlen_layout)
        m.d.comb += wl.eq(wlen.r_data)
        wbeat = Signal(9)
        w_valid = Signal()
        m.d.comb += w_valid.eq(buf.r_rdy & wlen.r_rdy)
        w_last = Signal()
        m.d.comb += w_last.eq(wbeat == wl.beats - 1)
        w_ready = Signal()
        m.d.comb += w_ready.eq(Mux(wl.prefetch, self.dev.wready, self.host.wready))
        for p, mode in ((self.dev, 1), (self.host, 0)):
            mine = wl.prefetch == mode
            m.d.comb += [p.wvalid.eq(w_valid & mine), p.wdata.eq(Mux(mine, buf.r_data, 0)),
                         p.wlast.eq(w_last & mine)]
        m.d.comb += w_pop.eq(w_valid & w_ready)
        wlen.connect(w_en=issue, w_data=Cat(head.beats, head.prefetch), r_en=w_pop & w_last)
        with m.If(w_pop):
            m.d.sync += wbeat.eq(Mux(w_last, 0, wbeat + 1))

        b_bad = Signal()
        m.d.comb += [b_done.eq(self.dev.bvalid | self.host.bvalid),
                     b_bad.eq((self.dev.bvalid & ((self.dev.bresp != OKAY) | (self.dev.bid != 0)))
                              | (self.host.bvalid & ((self.host.bresp != OKAY) | (self.host.bid != 0)))),
                     ]
        waddr.connect(w_en=issue, w_data=head.dst, r_en=b_done)
        m.d.sync += [self.write_error.eq(b_done & b_bad),
                     self.write_error_address.eq(Cat(_zeros(sh), waddr.r_data))]

        m.d.comb += [
            self.idle.eq(~ar_valid & ~aw_valid & (out_r < 1) & (out_w < 1) & wcmd.empty & wlen.empty),
            self.port_wait.eq((ar_valid & ~ar_handshake) | (aw_valid & ~aw_handshake) | (w_valid & ~w_ready)),
        ]
        return m


def _zeros(n: int):
    from amaranth import Const
    return Const(0, n)
