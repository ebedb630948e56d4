"""The resident pass of the sequencer's S phase (``resv.threshold_mass = row``; docs/formats.md §Core, "Driving the
resident-mass unit from the sequencer").

After the cluster scores of a context are in the scratch (S_DRAIN), the resident keys of the step — the sinks, the
recent window ``[window_start, step start)`` and the step's own keys, in that order — are scored against the step's
query rows exactly as candidate groups are: groups of ``trees`` keys in the DPE's weight memories (a sink's or a
window token's key is the K half of its record over ``hct``, at ``sink_base`` or its ring slot; a step key comes from
the SRAM like a hash plane), the rows streamed through S_ST, VPE ``fixed`` with the cluster scores' constant, the
scores written to the scratch behind each row's cluster scores (``row_lines`` = cluster lines + resident lines).
Then each row's resident scores go through the resident-mass unit with the lane mask ``key < n_fix + t + 1`` (row
of step token t attends its step's keys causally), and its ``(res_max, res_sum)`` lands in a ``rows``-entry memory
that S_ROWS puts on the row's WTU beats.

``ctx`` is the FSM's namespace (:func:`vrex.hdl.core.phases.build_fsm`): its registers, helpers and datapath ``s``.
"""

from amaranth import Mux

from .routes import M_ADD, M_SCORE, WBUF, WTU

__all__ = ["resident_pass"]


def resident_pass(m, ctx, state, to_rows):
    c = ctx
    s, g = c.s, c.s.g
    T, B, L = s.T, s.B, s.L
    Bm = 2 * g.head_dim // g.beat_bytes

    def record_addr(base, index, per_context):
        return base + (s.ctx * per_context + index) * g.record_bytes

    with state("S_RES_START"):
        m.d.comb += s.busy.eq(1)
        back = s.ring - c.n_win                     # the ring slot of the window's first token
        m.d.sync += [c.mass.eq(1), c.kj.eq(0), c.slot.eq(Mux(s.ring >= c.n_win, back, back + g.ring_tokens)),
                     s.w_base.eq(c.cmd.scratch + c.res_off), s.w_gbase.eq(c.cmd.scratch + c.res_off),
                     s.w_r.eq(0), s.sub.eq(0), s.mode.eq(M_SCORE), c.wi.eq(0)]
        m.next = "S_RES_W"

    with state("S_RES_W"):                          # tree wi gets resident key kj (or zeros past the last one)
        m.d.comb += s.busy.eq(1)
        with m.If(c.wi == T):
            with m.If(s.sram_idle):                 # the step keys' weight lines have landed
                m.d.sync += [c.r_i.eq(0), c.bi.eq(0), c.qj.eq(0), c.jB.eq(0),
                             c.vbase.eq(c.cmd.queries + s.h * g.group * B)]
                m.next = "S_ST"
        with m.Elif(c.kj < c.n_fix):
            ring = record_addr(g.ring_base, c.slot, g.ring_tokens)
            advance = c.slot.eq(Mux(c.slot == g.ring_tokens - 1, 0, c.slot + 1))
            m.d.sync += c.wbb.eq(0)
            if g.sinks:
                in_sink = c.kj < g.sinks
                m.d.sync += c.raddr.eq(Mux(in_sink, record_addr(g.sink_base, c.kj, g.sinks), ring))
                with m.If(~in_sink):
                    m.d.sync += advance
            else:
                m.d.sync += [c.raddr.eq(ring), advance]
            m.next = "S_RES_DMA"
        with m.Elif(c.kj < c.n_res):
            m.d.sync += c.wbb.eq(0)
            m.next = "S_RES_KEY"
        with m.Else():
            m.d.sync += c.wbb.eq(0)
            m.next = "S_RES_ZERO"

    def next_tree():
        m.d.sync += [c.wi.eq(c.wi + 1), c.kj.eq(c.kj + 1)]
        m.next = "S_RES_W"

    for name in ("S_RES_DMA", "S_RES_DMA_DRAIN"):  # a record's K half over hct -> the tree's weight words
        with state(name):
            m.d.comb += [s.busy.eq(1), s.ld_valid.eq(s.r_mean_in.o_valid), s.ld_addr.eq(c.wbb), s.ld_tree.eq(c.wi),
                         s.ld_data.eq(s.r_mean_in.o_data)]
            with m.If(s.ld_taken):
                m.d.sync += c.wbb.eq(c.wbb + 1)
            if name == "S_RES_DMA":
                with m.If(c.dma_op(0, c.raddr, Bm, s.D_MEAN_IN)):
                    m.next = "S_RES_DMA_DRAIN"
            else:
                with m.If(c.wbb == B):
                    next_tree()

    with state("S_RES_KEY"):                        # a step key from the SRAM, as a hash plane is loaded
        m.d.comb += s.busy.eq(1)
        with m.If(c.wbb < B):
            with m.If(c.sram_read(c.key_line(c.cmd.keys, c.kj - c.n_fix) + c.wbb, WBUF, b=c.wbb, i=c.wi)):
                m.d.sync += c.wbb.eq(c.wbb + 1)
        with m.Else():
            next_tree()

    with state("S_RES_ZERO"):
        m.d.comb += [s.busy.eq(1), s.ld_valid.eq(1), s.ld_addr.eq(c.wbb), s.ld_tree.eq(c.wi), s.ld_data.eq(0)]
        with m.If(s.ld_taken):
            m.d.sync += c.wbb.eq(c.wbb + 1)
            with m.If(c.wbb == B - 1):
                next_tree()

    with state("S_RES_DRAIN"):
        m.d.comb += s.busy.eq(1)
        with m.If(c.drained):
            m.d.sync += [c.rbase.eq(c.cmd.scratch + c.res_off), c.rl.eq(0), c.r_i.eq(0), c.rwb.eq(0), c.t_o.eq(0),
                         c.q_o.eq(0), s.n_pairs.eq(0), s.mode.eq(M_ADD)]
            m.next = "S_RES_ROWS"

    with state("S_RES_ROWS"):                       # resident score rows -> the resident-mass unit -> pairs
        m.d.comb += s.busy.eq(1)
        with m.If(c.r_i < s.rows):
            with m.If(c.sram_read(c.rbase + c.rl, WTU)):
                m.d.sync += c.rl.eq(c.rl + 1)
                with m.If(c.rl == c.res_lines - 1):
                    m.d.sync += [c.rl.eq(0), c.r_i.eq(c.r_i + 1), c.rbase.eq(c.rbase + s.row_lines)]
        u = s.rmu.scores
        valid_keys = c.n_fix + c.t_o + 1
        last = c.rwb == c.res_beats - 1
        m.d.comb += [u.valid.eq(s.r_wtu.o_valid), s.r_wtu.o_ready.eq(u.ready), u.payload.last.eq(last)]
        for lane in range(L):
            m.d.comb += [u.payload.scores[lane].eq(s.r_wtu.o_data.word_select(lane, 32)[:g.score_bits]),
                         u.payload.mask[lane].eq(c.rwb * L + lane < valid_keys)]
        with m.If(u.valid & u.ready):
            m.d.sync += c.rwb.eq(c.rwb + 1)
            with m.If(last):
                m.d.sync += [c.rwb.eq(0), c.q_o.eq(c.q_o + 1)]
                with m.If(c.q_o == g.group - 1):
                    m.d.sync += [c.q_o.eq(0), c.t_o.eq(c.t_o + 1)]
        with m.If(s.n_pairs == s.rows):
            m.d.sync += c.mass.eq(0)
            to_rows()
