"""KVMU front-end: jobs (control + token descriptors + mask) become HC-table accesses and copy ranges.

One job at a time, in the order of :mod:`vrex.golden.dre.kvmu.model` (the executable contract; docs/formats.md §KVMU):
the control beat selects the context and the staging half; the arrival phase writes each new token's index entry
(and a zero cluster entry for a new cluster); the eviction phase moves the oldest tokens out of the ring into their
clusters' host block chains; after the engines are drained the prefetch phase walks the mask's clusters and emits
one range per host block; after a second drain the context state is stored and the response leaves.

The per-context state ``{clusters, next_token, evict_upto, evict_pos}`` is a memory of ``contexts`` words; after
reset a sweep clears it (``contexts`` cycles, inputs not ready), so a reset in the middle of traffic leaves a clean
unit. Constant products (context × region strides, slot × record bytes) are registered in their own states, and
table accesses go through :class:`~.table.TableAccess` one at a time, so no long combinational path crosses the
table or the AXI ports. A bad command is flagged in its response and dropped; the unit takes the next job.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.layouts import (CAUSES, COUNT_BITS, control_layout, mask_layout, range_layout, response_layout, token_layout)
from vrex.hdl.dre.kvmu.table import ENTRY_BITS, table_request_layout

__all__ = ["FrontEnd"]

CAP, UNKNOWN, READ_ERR, WRITE_ERR, TABLE_ERR = range(len(CAUSES))
SEGMENT_BIT, INVALID_BIT = 30, 31


class FrontEnd(wiring.Component):
    def __init__(self, g):
        self._g = g
        a = g.addr_bits
        super().__init__({
            "ctrl": In(stream.Signature(control_layout(g))), "tokens": In(stream.Signature(token_layout(g))),
            "masks": In(stream.Signature(mask_layout(g))), "resp": Out(stream.Signature(response_layout(g))),
            "ranges": Out(stream.Signature(range_layout(g))),
            "treq": Out(stream.Signature(table_request_layout(g))), "tdone": In(1), "tdata": In(ENTRY_BITS),
            "terror": In(1),
            "restart": Out(1), "base": Out(a), "limit": Out(a), "drained": In(1),
            "drop": In(1), "drop_address": In(a), "read_error": In(1), "read_error_address": In(a),
            "write_error": In(1), "write_error_address": In(a),
            "busy": Out(1), "job_done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._g
        a = g.addr_bits
        ctx_layout = data.StructLayout({"clusters": g.cluster_count_bits, "next": g.token_bits,
                                        "upto": g.token_bits, "pos": g.ring_bits})
        init = ctx_layout.const({"clusters": 0, "next": 0, "upto": g.sink_tokens, "pos": 0})
        m.submodules.contexts = mem = Memory(shape=ctx_layout, depth=g.contexts, init=[])
        rd, wr = mem.read_port(), mem.write_port()

        # ---- job registers -----------------------------------------------------------------------------------
        ctx = Signal(g.context_bits)
        tag = Signal(16)
        arrive, prefetch = Signal(), Signal()
        st = Signal(ctx_layout)                   # the context's state while the job runs
        index_base, table_base, ring_base = Signal(a), Signal(a), Signal(a)
        cluster = Signal(g.cluster_bits)
        seg, last, new = Signal(), Signal(), Signal()
        count, head, tail = Signal(32), Signal(32), Signal(32)
        next_block = Signal(g.block_bits)
        block = Signal(32)
        left = Signal(32)
        src, dst, host, length = Signal(a), Signal(a), Signal(a), Signal(a)
        bits = Signal(g.mask_bits)
        beat_index = Signal(g.mask_beat_bits)
        c_scan = Signal(g.mask_beat_bits + max(1, (g.mask_bits - 1).bit_length()))
        bad_context = Signal()
        bt_mask = g.block_tokens - 1

        # ---- errors of the job ---------------------------------------------------------------------------------
        seen = Signal(len(CAUSES))               # causes met by the front-end or the engines
        first = [Signal(a, name=f"first_{c}") for c in CAUSES]
        late_cap, late_cap_addr = Signal(), Signal(a)        # staging overflow (the coalescer drops the range)
        n_errors = Signal(COUNT_BITS)
        fe_err = Signal()
        fe_cause = Signal(range(len(CAUSES)))
        fe_addr = Signal(a)
        clear_errors = Signal()
        events = [(fe_err & (fe_cause == c), fe_addr) for c in range(len(CAUSES))]
        events[READ_ERR] = (self.read_error, self.read_error_address)     # the front-end never raises these two
        events[WRITE_ERR] = (self.write_error, self.write_error_address)
        # the events of a cycle are counted one cycle later (no state decode in front of the adder); the last event
        # of a job is at least two cycles before its response (a drain or the DISCARD state lies between)
        new_errors = Signal(3)
        m.d.sync += new_errors.eq(fe_err + self.drop + self.read_error + self.write_error)
        with m.If(clear_errors):
            m.d.sync += [seen.eq(0), n_errors.eq(0), late_cap.eq(0)]
        with m.Else():
            m.d.sync += n_errors.eq(n_errors + new_errors)
            for c, (hit, addr) in enumerate(events):
                with m.If(hit & ~seen[c]):
                    m.d.sync += [seen[c].eq(1), first[c].eq(addr)]
            with m.If(self.drop & ~late_cap):
                m.d.sync += [late_cap.eq(1), late_cap_addr.eq(self.drop_address)]

        def error(cause, addr):
            m.d.comb += [fe_err.eq(1), fe_cause.eq(cause), fe_addr.eq(addr)]

        # ---- table accesses --------------------------------------------------------------------------------------
        t = self.treq
        with m.If(t.valid & t.ready):
            m.d.sync += t.valid.eq(0)
        with m.If(self.tdone & self.terror):
            error(TABLE_ERR, 0)            # the address is the request's, latched below
        t_addr = Signal(a)
        with m.If(t.valid):
            m.d.sync += t_addr.eq(t.payload.addr & ~(g.beat_bytes - 1) if g.beat_bytes > 4 else t.payload.addr)

        def access(write, wide, addr, value, then):
            m.d.sync += [t.valid.eq(1), t.payload.write.eq(write), t.payload.wide.eq(wide), t.payload.addr.eq(addr),
                         t.payload.data.eq(value)]
            m.next = then

        got = self.tdone

        r = self.ranges
        with m.If(r.ready):
            m.d.sync += r.valid.eq(0)

        def emit(src_v, dst_v, len_v, pf, flush=0):
            m.d.sync += [r.valid.eq(1), r.payload.src.eq(src_v), r.payload.dst.eq(dst_v), r.payload.length.eq(len_v),
                         r.payload.prefetch.eq(pf), r.payload.flush.eq(flush)]

        range_free = ~r.valid | r.ready
        m.d.sync += [self.restart.eq(0), self.job_done.eq(0)]
        m.d.comb += [rd.addr.eq(ctx), rd.en.eq(0), wr.data.eq(st), wr.addr.eq(ctx)]   # read once per job

        with m.FSM(init="CLEAR"):
            with m.State("CLEAR"):
                m.d.comb += [wr.en.eq(1), wr.data.eq(init)]
                m.d.sync += ctx.eq(ctx + 1)
                with m.If(ctx == g.contexts - 1):
                    m.d.sync += [ctx.eq(0), next_block.eq(0), self.restart.eq(1),
                                 self.base.eq(g.staging_base), self.limit.eq(g.staging_base + g.staging_half)]
                    m.next = "IDLE"
            with m.State("IDLE"):
                m.d.comb += [self.ctrl.ready.eq(1), clear_errors.eq(self.ctrl.valid)]
                c = self.ctrl.payload
                with m.If(self.ctrl.valid):
                    m.d.sync += [ctx.eq(c.context), tag.eq(c.step), arrive.eq(c.arrive), prefetch.eq(c.prefetch),
                                 bad_context.eq(c.context >= g.contexts)]
                    with m.If(c.restart):
                        base = g.staging_base + c.buffer * g.staging_half
                        m.d.sync += [self.restart.eq(1), self.base.eq(base), self.limit.eq(base + g.staging_half)]
                    m.next = "READ_CONTEXT"
            with m.State("READ_CONTEXT"):       # the context memory's read port answers in the next cycle
                m.d.comb += rd.en.eq(1)
                m.next = "LOAD"
            with m.State("LOAD"):
                m.d.sync += [st.eq(rd.data),
                             index_base.eq(g.index_base + ctx * (g.context_tokens * 4)),
                             table_base.eq(g.table_base + ctx * (g.table_clusters * 16)),
                             ring_base.eq(g.ring_base + ctx * (g.ring_tokens * g.record_bytes))]
                with m.If(bad_context):
                    error(CAP, ctx)
                    m.next = "DISCARD"
                with m.Elif(arrive):
                    m.next = "ARRIVE"
                with m.Elif(prefetch):
                    m.next = "MASK"
                with m.Else():
                    m.next = "FINISH"

            # ---- a bad context: consume its descriptors and mask, change nothing -----------------------------------
            with m.State("DISCARD"):
                m.d.comb += [self.tokens.ready.eq(arrive), self.masks.ready.eq(~arrive & prefetch)]
                with m.If(arrive & self.tokens.valid & self.tokens.payload.last):
                    m.d.sync += arrive.eq(0)
                with m.If(~arrive & prefetch & self.masks.valid & self.masks.payload.last):
                    m.d.sync += prefetch.eq(0)
                with m.If(~arrive & ~prefetch):
                    m.next = "RESPOND"

            # ---- arrivals ----------------------------------------------------------------------------------------
            with m.State("ARRIVE"):
                m.d.comb += self.tokens.ready.eq(1)
                d = self.tokens.payload
                with m.If(self.tokens.valid):
                    m.d.sync += [cluster.eq(d.cluster), seg.eq(d.segment_start), last.eq(d.last),
                                 new.eq(d.cluster == st.clusters), src.eq(index_base + st.next * 4)]
                    with m.If(st.next >= g.context_tokens):
                        error(CAP, st.next)
                        m.next = "ARRIVE_NEXT"
                    with m.Else():
                        m.next = "ARRIVE_INDEX"
            with m.State("ARRIVE_NEXT"):          # a dropped descriptor: go on with the next one or evict
                m.next = "ARRIVE"
                with m.If(last):
                    m.next = "EVICT_START"
            with m.State("ARRIVE_INDEX"):
                invalid = Signal()
                m.d.comb += invalid.eq((cluster >= g.table_clusters) | (cluster > st.clusters))
                with m.If(cluster >= g.table_clusters):
                    error(CAP, cluster)
                with m.Elif(cluster > st.clusters):
                    error(UNKNOWN, cluster)
                m.d.sync += new.eq(new & ~invalid)
                value = cluster | (seg << SEGMENT_BIT) | (invalid << INVALID_BIT)
                access(1, 0, src, value, "ARRIVE_INDEX_WAIT")
            with m.State("ARRIVE_INDEX_WAIT"):
                with m.If(got):
                    with m.If(new):
                        access(1, 1, table_base + cluster * 16, 0, "ARRIVE_ENTRY_WAIT")
                    with m.Else():
                        m.d.sync += st.next.eq(st.next + 1)
                        m.next = "ARRIVE_DONE"
            with m.State("ARRIVE_ENTRY_WAIT"):
                with m.If(got):
                    m.d.sync += [st.clusters.eq(st.clusters + 1), st.next.eq(st.next + 1)]
                    m.next = "ARRIVE_DONE"
            with m.State("ARRIVE_DONE"):
                m.next = "ARRIVE"
                with m.If(last):
                    m.next = "EVICT_START"

            # ---- eviction ----------------------------------------------------------------------------------------
            with m.State("EVICT_START"):
                with m.If(st.upto + g.ring_tokens >= st.next):
                    m.next = "EVICT_DONE"
                with m.Else():
                    m.next = "EVICT_INDEX"
            with m.State("EVICT_INDEX"):
                stop = st.upto >= st.next
                if not g.frame_eviction:      # token granularity: stop as soon as the ring holds the rest
                    stop = stop | (st.upto + g.ring_tokens >= st.next)
                with m.If(stop):
                    m.next = "EVICT_DONE"
                with m.Else():
                    access(0, 0, index_base + st.upto * 4, 0, "EVICT_INDEX_WAIT")
            with m.State("EVICT_INDEX_WAIT"):
                with m.If(got):
                    e = self.tdata
                    m.d.sync += cluster.eq(e[:SEGMENT_BIT])
                    with m.If((st.upto + g.ring_tokens >= st.next) & e[SEGMENT_BIT]):
                        m.next = "EVICT_DONE"
                    with m.Elif(e[INVALID_BIT]):
                        m.next = "EVICT_ADVANCE"
                    with m.Else():
                        m.next = "EVICT_ENTRY"
            with m.State("EVICT_ENTRY"):
                m.d.sync += dst.eq(table_base + cluster * 16)
                m.next = "EVICT_ENTRY_READ"
            with m.State("EVICT_ENTRY_READ"):
                access(0, 1, dst, 0, "EVICT_ENTRY_WAIT")
            with m.State("EVICT_ENTRY_WAIT"):
                with m.If(got):
                    e = self.tdata
                    m.d.sync += [count.eq(e[:32]), head.eq(e[32:64]), tail.eq(e[64:96])]
                    m.next = "EVICT_BLOCK"
            with m.State("EVICT_BLOCK"):
                with m.If((count & bt_mask) != 0):
                    m.next = "EVICT_ADDRESS"
                with m.Elif(next_block >= g.host_blocks):
                    error(CAP, st.upto)
                    m.next = "EVICT_ADVANCE"
                with m.Else():
                    m.d.sync += [block.eq(next_block), next_block.eq(next_block + 1)]
                    with m.If(count != 0):
                        access(1, 0, g.link_base + tail * 4, next_block, "EVICT_LINK_WAIT")
                    with m.Else():
                        m.d.sync += [head.eq(next_block), tail.eq(next_block)]
                        m.next = "EVICT_ADDRESS"
            with m.State("EVICT_LINK_WAIT"):
                with m.If(got):
                    m.d.sync += tail.eq(block)
                    m.next = "EVICT_ADDRESS"
            with m.State("EVICT_ADDRESS"):
                m.d.sync += [src.eq(ring_base + st.pos * g.record_bytes),
                             host.eq(tail * g.block_bytes + (count & bt_mask) * g.record_bytes)]
                m.next = "EVICT_EMIT"
            with m.State("EVICT_EMIT"):
                with m.If(range_free):
                    emit(src, host, g.record_bytes, 0)
                    m.next = "EVICT_ENTRY_WRITE"
            with m.State("EVICT_ENTRY_WRITE"):
                access(1, 1, dst, Cat((count + 1)[:32], head, tail), "EVICT_ENTRY_WRITE_WAIT")
            with m.State("EVICT_ENTRY_WRITE_WAIT"):
                with m.If(got):
                    m.next = "EVICT_ADVANCE"
            with m.State("EVICT_ADVANCE"):
                m.d.sync += [st.upto.eq(st.upto + 1), st.pos.eq(Mux(st.pos == g.ring_tokens - 1, 0, st.pos + 1))]
                m.next = "EVICT_INDEX"
            with m.State("EVICT_DONE"):
                with m.If(range_free):
                    emit(0, 0, 0, 0, flush=1)
                    m.next = "EVICT_DRAIN"
            with m.State("EVICT_DRAIN"):
                with m.If(~r.valid & self.drained):
                    m.next = "FINISH"
                    with m.If(prefetch):
                        m.next = "MASK"

            # ---- prefetch ----------------------------------------------------------------------------------------
            with m.State("MASK"):
                m.d.comb += self.masks.ready.eq(1)
                with m.If(self.masks.valid):
                    m.d.sync += [bits.eq(self.masks.payload.bits), last.eq(self.masks.payload.last)]
                    m.next = "MASK_SCAN"
            with m.State("MASK_SCAN"):
                lowest = Signal(range(max(2, g.mask_bits)))
                for j in reversed(range(g.mask_bits)):
                    with m.If(bits[j]):
                        m.d.comb += lowest.eq(j)
                with m.If(bits == 0):
                    m.d.sync += beat_index.eq(beat_index + 1)
                    m.next = "MASK"
                    with m.If(last):
                        m.d.sync += beat_index.eq(0)
                        m.next = "PREFETCH_DONE"
                with m.Else():
                    m.d.sync += [bits.eq(bits & (bits - 1)), c_scan.eq(beat_index * g.mask_bits + lowest)]
                    m.next = "MASK_CHECK"
            with m.State("MASK_CHECK"):
                with m.If(c_scan >= st.clusters):
                    error(UNKNOWN, c_scan)
                    m.next = "MASK_SCAN"
                with m.Else():
                    m.d.sync += dst.eq(table_base + c_scan * 16)
                    m.next = "PREFETCH_ENTRY"
            with m.State("PREFETCH_ENTRY"):
                access(0, 1, dst, 0, "PREFETCH_ENTRY_WAIT")
            with m.State("PREFETCH_ENTRY_WAIT"):
                with m.If(got):
                    m.d.sync += [left.eq(self.tdata[:32]), block.eq(self.tdata[32:64])]
                    m.next = "PREFETCH_BLOCK"
            with m.State("PREFETCH_BLOCK"):
                used = Mux(left > g.block_tokens, g.block_tokens, left)
                with m.If(left == 0):
                    m.next = "MASK_SCAN"
                with m.Elif(block >= g.host_blocks):
                    error(CAP, block)
                    m.next = "MASK_SCAN"
                with m.Else():
                    m.d.sync += [src.eq(block * g.block_bytes), length.eq(used * g.record_bytes),
                                 left.eq(left - used)]
                    m.next = "PREFETCH_EMIT"
            with m.State("PREFETCH_EMIT"):
                with m.If(range_free):
                    emit(src, 0, length, 1)
                    with m.If(left != 0):
                        access(0, 0, g.link_base + block * 4, 0, "PREFETCH_LINK_WAIT")
                    with m.Else():
                        m.next = "MASK_SCAN"
            with m.State("PREFETCH_LINK_WAIT"):
                with m.If(got):
                    m.d.sync += block.eq(self.tdata[:32])
                    m.next = "PREFETCH_BLOCK"
            with m.State("PREFETCH_DONE"):
                with m.If(range_free):
                    emit(0, 0, 0, 1, flush=1)
                    m.next = "PREFETCH_DRAIN"
            with m.State("PREFETCH_DRAIN"):
                with m.If(~r.valid & self.drained):
                    m.next = "FINISH"

            # ---- the end of a job ----------------------------------------------------------------------------------
            with m.State("FINISH"):
                m.d.comb += wr.en.eq(1)
                m.next = "RESPOND"
            with m.State("RESPOND"):
                p = self.resp.payload
                # the address of the lowest cause met; a capacity error of the front-end before a staging drop
                candidates = [(seen[CAP], first[CAP]), (late_cap, late_cap_addr)] + \
                    [(seen[c], first[c]) for c in range(1, len(CAUSES))]
                addr = 0
                for hit, value in reversed(candidates):
                    addr = Mux(hit, value, addr)
                m.d.comb += [self.resp.valid.eq(1), p.tag.eq(tag), p.causes.eq(seen | late_cap), p.address.eq(addr),
                             p.errors.eq(n_errors)]
                with m.If(self.resp.ready):
                    m.d.sync += self.job_done.eq(1)
                    m.next = "IDLE"
        # the table error's address is the access's (beat-aligned) address
        with m.If(self.tdone & self.terror):
            m.d.comb += fe_addr.eq(t_addr)
        m.d.comb += self.busy.eq(~self.ctrl.ready)
        return m
