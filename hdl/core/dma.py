"""The core's HC-table port engine: one transfer at a time on an AXI4 master (built inline in the sequencer).

A transfer is ``beats`` whole beats from a beat-aligned byte address, read (the beats come out of ``rdata`` in
order) or written (``wdata`` supplies them; a *narrow* write is one beat whose strobes
enable only the 32-bit word ``word``). It is cut into bursts at every 4 KiB boundary (with beats of at least 16 bytes
a burst is then at most 256 beats: always legal). One burst is in flight at a time (ID 0, INCR, full-width beats and BREADY high are tied by the core top); a write
transfer is done when
its last B response arrives, so a later read of the same bytes sees the write. ``error`` is set by any response that
is not OKAY (or has an unexpected ID) and stays set until ``clear_error``. Reads never wait on ``rdata`` being
ready for the slave's sake: ``rready`` is ``rdata.ready``.
"""

from amaranth import Cat, Module, Mux, Signal

__all__ = ["HctDma"]

PAGE = 4096


class HctDma:
    def __init__(self, m: Module, axi, *, addr_bits: int, data_bits: int, max_beats: int):
        self.beat_bytes = data_bits // 8
        shift = (self.beat_bytes - 1).bit_length()
        words = self.beat_bytes // 4
        self.req_valid, self.req_ready = Signal(name="dma_req_valid"), Signal(name="dma_req_ready")
        self.req_write, self.req_narrow = Signal(name="dma_req_write"), Signal(name="dma_req_narrow")
        self.req_addr = Signal(addr_bits, name="dma_req_addr")
        self.req_beats = Signal(range(max_beats + 1), name="dma_req_beats")
        self.req_word = Signal(range(max(2, words)), name="dma_req_word")
        self.w_valid, self.w_ready = Signal(name="dma_w_valid"), Signal(name="dma_w_ready")
        self.w_data = Signal(data_bits, name="dma_w_data")
        self.r_valid, self.r_ready = Signal(name="dma_r_valid"), Signal(name="dma_r_ready")
        self.r_data = Signal(data_bits, name="dma_r_data")
        self.done, self.error, self.clear_error = Signal(name="dma_done"), Signal(name="dma_error"), \
            Signal(name="dma_clear_error")

        a = axi
        addr, left = Signal(addr_bits, name="dma_addr"), Signal(range(max_beats + 1), name="dma_left")
        write, narrow = Signal(name="dma_write"), Signal(name="dma_narrow")
        word = Signal(range(max(2, words)), name="dma_word")
        blen, sent = Signal(range(PAGE // self.beat_bytes + 1), name="dma_blen"), \
            Signal(range(PAGE // self.beat_bytes + 1), name="dma_sent")
        to_page = Signal(range(PAGE // self.beat_bytes + 1), name="dma_to_page")
        m.d.comb += to_page.eq((PAGE - addr[:12]) >> shift)
        m.d.comb += [a.awaddr.eq(addr), a.araddr.eq(addr), a.awlen.eq(blen - 1),
                     a.arlen.eq(blen - 1), self.r_data.eq(a.rdata), self.w_ready.eq(0)]
        strb_all = (1 << self.beat_bytes) - 1
        narrow_strb = Cat(*((word == k).replicate(4) for k in range(words)))
        m.d.comb += [a.wdata.eq(self.w_data), a.wstrb.eq(Mux(narrow, narrow_strb, strb_all))]
        with m.If(self.clear_error):
            m.d.sync += self.error.eq(0)
        m.d.sync += self.done.eq(0)

        # a burst never crosses a 4 KiB page, so the address above the page offset grows by the offset's carry at
        # most: its increment is a register (addr is stable for two cycles before a burst ends)
        page_bits = PAGE.bit_length() - 1
        hi_inc = Signal(max(1, addr_bits - page_bits), name="dma_addr_hi_inc")
        m.d.sync += hi_inc.eq(addr[page_bits:] + 1)

        def burst_done():
            """A burst's last response: advance past it; done after the transfer's last burst."""
            low = addr[:page_bits] + (blen << shift)
            m.d.sync += [left.eq(left - blen), addr.eq(Cat(low[:page_bits], Mux(low[page_bits], hi_inc,
                                                                                  addr[page_bits:])))]
            with m.If(left == blen):
                m.d.sync += self.done.eq(1)
                m.next = "IDLE"
            with m.Else():
                m.next = "BURST"

        with m.FSM(name="dma"):
            with m.State("IDLE"):
                m.d.comb += self.req_ready.eq(1)
                with m.If(self.req_valid):
                    m.d.sync += [addr.eq(self.req_addr), left.eq(self.req_beats), write.eq(self.req_write),
                                 narrow.eq(self.req_narrow), word.eq(self.req_word)]
                    with m.If(self.req_beats == 0):
                        m.d.sync += self.done.eq(1)
                    with m.Else():
                        m.next = "BURST"
            with m.State("BURST"):
                m.d.sync += [blen.eq(Mux(left < to_page, left, to_page)), sent.eq(0)]
                with m.If(write):
                    m.d.sync += a.awvalid.eq(1)
                    m.next = "WRITE"
                with m.Else():
                    m.d.sync += a.arvalid.eq(1)
                    m.next = "READ"
            with m.State("READ"):
                with m.If(a.arready):
                    m.d.sync += a.arvalid.eq(0)
                m.d.comb += [self.r_valid.eq(a.rvalid), a.rready.eq(self.r_ready)]
                with m.If(a.rvalid & self.r_ready):
                    with m.If((a.rresp != 0) | (a.rid != 0)):
                        m.d.sync += self.error.eq(1)
                    with m.If(a.rlast):
                        burst_done()
            with m.State("WRITE"):
                with m.If(a.awready):
                    m.d.sync += a.awvalid.eq(0)
                more = sent != blen
                m.d.comb += [a.wvalid.eq(self.w_valid & more), self.w_ready.eq(a.wready & more),
                             a.wlast.eq(sent == blen - 1)]
                with m.If(a.wvalid & a.wready):
                    m.d.sync += sent.eq(sent + 1)
                with m.If(a.bvalid):                  # BREADY is tied high (a B only follows the burst's W beats)
                    with m.If((a.bresp != 0) | (a.bid != 0)):
                        m.d.sync += self.error.eq(1)
                    burst_done()
