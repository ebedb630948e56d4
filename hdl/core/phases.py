"""The sequencer's control FSM (phases X, H, C, S, K, R of hdl/core/sequencer.py; docs/formats.md §Core).

``build_fsm`` adds the FSM to the sequencer's module; ``s`` holds the datapath the sequencer built (memories, the
SRAM and DMA routing, the converters, the VPE back-end). Every state drives only the streams it uses; data that
outlives a state (SRAM reads in flight, VPE results, FIFO writes) is routed by tags and modes, not by the state.

Why one file of over 500 lines: the FSM is one ``with m.FSM()`` block whose states share the sequencer's datapath
handles; split by phase, one state machine would be scattered over files.
"""

from types import SimpleNamespace

from amaranth import Cat, Const, Mux, Signal
from amaranth.lib import data

from ..lxe.vpe import VpeOp
from .geometry import CORE_CAUSES
from .memstream import ReadStream
from .muxes import onehot, select
from .resident_pass import resident_pass
from .routes import DPE, KEY, M_ADD, M_HASH, M_MUL, M_SCORE, REC, WBUF, WTU

__all__ = ["build_fsm", "STATE_PHASES"]

# state name prefix -> phase index (vrex.hdl.core.sequencer.PHASES); other states count as none
STATE_PHASES = {"X_": 0, "H_": 1, "C_": 2, "A_": 2, "S_SCAN": 3, "S_COUNTS": 3, "S_G": 3, "S_W": 3, "S_ST": 3,
                "S_DRAIN": 3, "S_RES": 3, "S_ROWS": 4, "S_SEL": 4, "S_MASK": 4, "K_": 5, "R_": 6}
CAUSE = {name: 1 << k for k, name in enumerate(CORE_CAUSES)}


def _log2(x):
    return (x - 1).bit_length()


def build_fsm(seq, m, s):
    g = s.g
    B, T, L, J = s.B, s.T, s.L, s.J
    dma, cmd = s.dma, s.cmd
    lsh = _log2(L)
    item = g.item_bytes
    beat_mask = ~(g.beat_bytes - 1)
    word_sh = _log2(s.words_per_beat)
    Bs, Bm, Br = 4 * g.head_dim // g.beat_bytes, 2 * g.head_dim // g.beat_bytes, 4 * g.head_dim // g.beat_bytes
    phase = Signal(3, name="phase", init=7)

    # ---- helpers ---------------------------------------------------------------------------------------------------
    dma_sent = Signal(name="dma_sent")

    def dma_op(write, addr, beats, route, narrow=0, word=0):
        """Issue one DMA transfer from the current state; returns its done condition (the state moves on)."""
        with m.If(~dma_sent):
            m.d.comb += [dma.req_valid.eq(1), dma.req_write.eq(write), dma.req_addr.eq(addr),
                         dma.req_beats.eq(beats), dma.req_narrow.eq(narrow), dma.req_word.eq(word)]
            with m.If(dma.req_ready):
                m.d.sync += [dma_sent.eq(1), s.dma_to.eq(route)]
        done = dma_sent & dma.done
        with m.If(done):
            m.d.sync += dma_sent.eq(0)
        return done

    def sram_read(addr, to, b=0, i=0, first=0, last=0):
        m.d.comb += [s.rd_valid.eq(1), s.rd_addr.eq(addr), s.rd_tag.to.eq(to), s.rd_tag.b.eq(b), s.rd_tag.i.eq(i),
                     s.rd_tag.first.eq(first), s.rd_tag.last.eq(last)]
        return s.rd_taken

    def field(value, k):
        return value.word_select(k, 32)

    def entry_beat(code, count, off):
        return Cat(code[:32] if len(code) > 32 else code, Const(0, 32 - min(32, len(code))), count[:32],
                   Const(0, 32 - min(32, len(count))), off[:32], Const(0, 32 - min(32, len(off))))

    # ---- shared registers ------------------------------------------------------------------------------------------
    ws = cmd.window_start
    e_code, e_count, e_off = Signal(32, name="e_code"), Signal(32, name="e_count"), Signal(32, name="e_off")
    x_cid, cid = Signal(32, name="x_cid"), Signal(s.CB + 1, name="cid")
    p, idx = Signal(range(g.passes + 1), name="pass"), Signal(range(T * B + 1), name="load_idx")
    bi, ti = Signal(range(B + 1), name="beat_i"), Signal(range(g.max_tokens + 1), name="token_i")
    kaddr = Signal(s.ab, name="key_addr")
    tb, cl = Signal(range(g.max_tokens + 1), name="chunk_base"), Signal(range(g.frame_tokens + 1), name="chunk_len")
    jw = Signal(range(g.capacity + 1), name="compact")
    best_new, best_idx = Signal(s.TB + 1, name="best_newest"), Signal(range(g.capacity + 1), name="best_index")
    a_idx = Signal(range(g.frame_tokens + 1), name="assign_index")
    a_slot, a_new, a_spill = Signal(range(g.capacity + 1), name="a_slot"), Signal(name="a_new"), Signal(name="a_spill")
    fresh, skip = Signal(name="fresh"), Signal(name="skip_token")
    jj = Signal(range(J + 1), name="vec_j_in")
    kb = Signal(range(2 * B + 1), name="key_beat")
    n_c = Signal(range(g.row_capacity + 1), name="candidates")
    ovf = Signal(name="row_overflow")
    groups, gfill = Signal(range(g.row_capacity + 1), name="groups"), Signal(range(T + 1), name="group_fill")
    scan_i = Signal(s.CB + 1, name="scan_index")
    W = Signal(range(s.cwords + 1), name="wtu_beats")
    lr = Signal(s.ab, name="row_read_lines")
    wr_beats = Signal(s.ab, name="row_read_beats")
    gi_ = Signal(range(g.row_capacity + 1), name="group")
    wi, wbb = Signal(range(T + 1), name="wbuf_tree"), Signal(range(B + 1), name="wbuf_beat")
    ci = Signal(range(g.row_capacity + T + 1), name="cand_index")
    inflight = Signal(range(g.fifo_depth + 1), name="inflight")
    r_i, qj = Signal(range(g.rows + 1), name="row_i"), Signal(range(g.group + 1), name="query_j")
    vbase, jB = Signal(s.ab, name="query_base"), Signal(s.ab, name="query_off")
    rbase, rl = Signal(s.ab, name="row_base"), Signal(s.ab, name="row_line")
    orow, wbo = Signal(range(g.rows + 1), name="out_row"), Signal(s.ab, name="out_beat")
    q, mj = Signal(range(s.cwords + (g.table_clusters >> lsh) + 2), name="mask_beat"), \
        Signal(range(g.row_capacity + 1), name="mask_cand")
    q_beats = Signal.like(q, name="mask_beats")
    head_valid, head_sel, head_cid = Signal(name="mask_head_valid"), Signal(name="mask_head_sel"), \
        Signal(s.CB, name="mask_head_cid")
    bits = Signal(L, name="mask_bits")
    rt = Signal(range(g.max_tokens + 1), name="record_token")
    sweep = Signal(range(g.contexts + 1), name="sweep")

    RM = g.resident is not None                         # resv.threshold_mass = row: the resident pass of S
    if RM:
        mass = Signal(name="resident_pass")             # S_ST streams a resident-key group (not a candidate group)
        kj = Signal(range(g.resident_keys_max + T + 1), name="resident_key")
        slot = Signal(range(max(2, g.ring_tokens)), name="resident_slot")
        raddr = Signal(g.addr_bits, name="resident_record")
        res_off = Signal(s.ab, name="resident_offset")  # lines from a row's cluster scores to its resident scores
        res_lines = Signal(s.ab, name="resident_lines")
        rwb = Signal(range(g.resident_keys_max // L + T + 2), name="resident_beat")
        t_o, q_o = Signal(range(g.max_tokens + 1), name="resident_token"), Signal(range(g.group + 1),
                                                                                  name="resident_query")
        n_win = Signal(s.TB + 2, name="window_tokens")
        m.d.comb += n_win.eq(s.next_tok - ws)
        n_fix = g.sinks + n_win                         # sinks and window: the keys every row of the step attends
        n_res = n_fix + cmd.tokens
        res_groups = (n_res + T - 1) >> _log2(T)
        res_beats = res_groups * (T // L)
    T_cmd = cmd.tokens
    t_tok = tb + a_idx                                  # token (within the step) of the current assignment
    next_tok = s.next_tok
    cur_tok = Signal(s.TB + 2, name="cur_token")
    m.d.comb += cur_tok.eq(next_tok + t_tok)

    def entry_addr(c):
        return g.entry_base + (s.ctx * g.table_clusters + c[:s.CB]) * item

    def sum_addr(c):
        return g.sum_base + (s.ctx * g.table_clusters + c[:s.CB]) * (4 * g.head_dim)

    def mean_addr(c):
        return g.mean_base + (s.ctx * g.table_clusters + c[:s.CB]) * (2 * g.head_dim)

    def map_addr(t):
        return g.map_base + (s.ctx * g.context_tokens + t) * 4

    def key_line(base, t):
        return base + (t * g.kv_heads + s.h) * B

    # inflight score passes: +1 when a pass's first beat is issued, -1 when its results leave the FIFO
    pass_issued = Signal(name="pass_issued")
    m.d.sync += inflight.eq(inflight + pass_issued - s.fifo_pop)
    lrs = ReadStream(m, "lst_rs", s.lst_r, g.capacity)
    crs = ReadStream(m, "code_rs", s.code_r, max(2, g.max_tokens))

    names = []

    def state(name):
        names.append(name)
        return m.State(name)

    with m.FSM(name="seq") as fsm:
        # ---- reset: clear the context state ----------------------------------------------------------------------
        with state("SWEEP"):
            m.d.comb += [s.busy.eq(1), s.ctx_w.addr.eq(sweep), s.ctx_w.data.eq(0), s.ctx_w.en.eq(1)]
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == g.contexts - 1):
                m.next = "IDLE"

        with state("IDLE"):
            go = seq.cmd.valid & ~s.sr.valid
            m.d.comb += [s.busy.eq(go), seq.cmd.ready.eq(~s.sr.valid)]
            with m.If(go):
                c = seq.cmd.payload
                bad = (c.tokens == 0) | (c.tokens > g.max_tokens) | (c.layer >= g.layers)
                m.d.sync += [cmd.eq(c), s.h.eq(0), s.ctx.eq(c.layer * g.kv_heads), s.causes.eq(0),
                             s.kv_causes.eq(0), s.kv_errors.eq(0), s.offl.eq(c.window_start > g.sinks)]
                m.d.comb += dma.clear_error.eq(1)
                with m.If(bad):
                    m.d.sync += s.causes.eq(CAUSE["bad_command"])
                    m.next = "RESP"
                with m.Else():
                    m.next = "CTX_LOAD"

        with state("CTX_LOAD"):
            m.d.comb += [s.busy.eq(1), s.ctx_r.addr.eq(s.ctx), s.ctx_r.en.eq(1)]
            m.next = "CTX_LATCH"
        with state("CTX_LATCH"):
            d = s.ctx_r.data
            m.d.comb += s.busy.eq(1)
            m.d.sync += [s.n_cl.eq(d.clusters), s.k_open.eq(d.open), s.next_tok.eq(d.next),
                         s.frontier.eq(Mux(d.next == 0, g.sinks, d.frontier)), s.ring.eq(d.ring)]
            m.next = "X_CHECK"

        # ---- X: window exits -------------------------------------------------------------------------------------
        with state("X_CHECK"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.frontier < ws):
                m.next = "X_MAP"
            with m.Else():
                m.next = "H_START"
        with state("X_MAP"):
            m.d.comb += s.busy.eq(1)
            a = map_addr(s.frontier)
            with m.If(dma_op(0, a & beat_mask, 1, s.D_MAP)):
                m.d.sync += x_cid.eq(select(m, s.beat, a[2:2 + word_sh] if word_sh else 0, 32, "map_word",
                                            count=s.words_per_beat))
                m.next = "X_ENT"
        with state("X_ENT"):
            m.d.comb += s.busy.eq(1)
            with m.If(dma_op(0, entry_addr(x_cid), 1, s.D_ENTRY)):
                m.d.sync += [e_code.eq(field(s.beat, 0)), e_count.eq(field(s.beat, 1)), e_off.eq(field(s.beat, 2))]
                m.next = "X_WR"
        with state("X_WR"):
            m.d.comb += [s.busy.eq(1), s.w_item.eq(entry_beat(e_code, e_count, e_off + 1))]
            with m.If(dma_op(1, entry_addr(x_cid), 1, s.D_ENTRY_OUT)):
                m.d.sync += s.frontier.eq(s.frontier + 1)
                m.next = "X_CHECK"

        # ---- H: hash codes of the step's keys --------------------------------------------------------------------
        with state("H_START"):
            m.d.comb += s.busy.eq(1)
            m.d.sync += [s.mode.eq(M_HASH), p.eq(0), idx.eq(0), s.t_out.eq(0), s.p_out.eq(0)]
            m.next = "H_LOAD"
        with state("H_LOAD"):
            m.d.comb += s.busy.eq(1)
            plane_base = cmd.planes + (s.h * g.hash_bits + p * T) * B
            real = idx < (g.hash_bits - p * T) * B
            with m.If(idx == T * B):
                with m.If(s.sram_idle):
                    m.d.sync += [bi.eq(0), ti.eq(0), kaddr.eq(key_line(cmd.keys, 0))]
                    m.next = "H_STREAM"
            with m.Elif(real):
                with m.If(sram_read(plane_base + idx, WBUF, b=idx % B, i=idx // B)):
                    m.d.sync += idx.eq(idx + 1)
            with m.Elif(s.sram_idle):      # the trees beyond the hash bits get zero weights
                m.d.comb += [s.ld_valid.eq(1), s.ld_addr.eq(idx % B), s.ld_tree.eq(idx // B), s.ld_data.eq(0)]
                with m.If(s.ld_taken):
                    m.d.sync += idx.eq(idx + 1)
        with state("H_STREAM"):
            m.d.comb += s.busy.eq(1)
            with m.If(sram_read(kaddr + bi, DPE, b=bi, first=bi == 0, last=bi == B - 1)):
                m.d.sync += bi.eq(bi + 1)
                with m.If(bi == B - 1):
                    m.d.sync += [bi.eq(0), ti.eq(ti + 1), kaddr.eq(kaddr + g.kv_heads * B)]
                    with m.If(ti == T_cmd - 1):
                        m.d.sync += [p.eq(p + 1), idx.eq(0)]
                        with m.If(p == g.passes - 1):
                            m.next = "H_DRAIN"
                        with m.Else():
                            m.next = "H_LOAD"
        with state("H_DRAIN"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.p_out == g.passes):
                m.next = "C_START"

        # ---- C: cluster the step's tokens ------------------------------------------------------------------------
        with state("C_START"):
            kc = seq.kvmu_ctrl
            m.d.comb += [s.busy.eq(1), kc.valid.eq(1), kc.payload.context.eq(s.ctx), kc.payload.step.eq(cmd.step),
                         kc.payload.restart.eq(s.h == 0), kc.payload.buffer.eq(cmd.layer[0]),
                         kc.payload.arrive.eq(1), kc.payload.prefetch.eq(s.offl)]
            with m.If(kc.ready):
                m.d.sync += [jw.eq(0), tb.eq(0)]
                m.next = "C_LREAD"
        with state("C_LREAD"):
            m.d.comb += [s.busy.eq(1), dma.r_ready.eq(1)]
            rd = dma.r_data
            with m.If(dma.r_valid & (field(rd, 1) >= ws)):
                m.d.comb += [s.lst_w.addr.eq(jw), s.lst_w.en.eq(1),
                             s.lst_w.data.eq(Cat(Const(1, 1), field(rd, 0)[:s.CB], field(rd, 1)[:s.TB + 1],
                                                 field(rd, 2)[:g.hash_bits]))]
                m.d.sync += jw.eq(jw + 1)
            with m.If(dma_op(0, g.list_base + s.ctx * (g.capacity * item), s.k_open, s.D_NONE)):
                m.d.sync += [s.k_open.eq(jw), s.vk.eq(jw)]
                m.next = "C_CLOSE"
        with state("C_CLOSE"):
            m.d.comb += s.busy.eq(1)
            left = T_cmd - tb
            chunk = Mux(left < g.frame_tokens, left, g.frame_tokens)
            limit = g.capacity if g.fill_preload else Mux(chunk > g.capacity, 0, g.capacity - chunk)
            m.d.sync += cl.eq(chunk)
            with m.If(s.vk > limit):
                m.d.comb += [lrs.start.eq(1), lrs.first.eq(0), lrs.count.eq(s.k_open)]
                m.d.sync += best_new.eq(-1)
                m.next = "C_SCAN"
            with m.Else():
                m.d.comb += [lrs.start.eq(1), lrs.first.eq(0), lrs.count.eq(s.k_open)]
                m.d.sync += jw.eq(0)
                m.next = "C_PRELOAD"
        with state("C_SCAN"):           # the open entry with the oldest newest member is closed
            m.d.comb += [s.busy.eq(1), lrs.ready.eq(1)]
            e = data.View(s.lst_layout, lrs.data)
            with m.If(lrs.valid & e.valid & (e.newest < best_new)):
                m.d.sync += [best_new.eq(e.newest), best_idx.eq(lrs.index)]
            with m.If(lrs.done):
                m.d.comb += [s.lst_w.addr.eq(best_idx), s.lst_w.data.eq(0), s.lst_w.en.eq(1)]
                m.d.sync += s.vk.eq(s.vk - 1)
                m.next = "C_CLOSE"
        with state("C_PRELOAD"):        # compaction in place, each kept code preloaded into the HCU
            m.d.comb += s.busy.eq(1)
            e = data.View(s.lst_layout, lrs.data)
            cd = seq.codes
            with m.If(lrs.valid & e.valid):
                m.d.comb += [cd.valid.eq(1), cd.payload.code.eq(e.code), cd.payload.preload.eq(1),
                             lrs.ready.eq(cd.ready)]
                with m.If(cd.ready):
                    m.d.comb += [s.lst_w.addr.eq(jw), s.lst_w.data.eq(lrs.data), s.lst_w.en.eq(1)]
                    m.d.sync += jw.eq(jw + 1)
            with m.Else():
                m.d.comb += lrs.ready.eq(1)
            with m.If(lrs.done):
                m.d.sync += s.k_open.eq(jw)
                m.d.comb += [crs.start.eq(1), crs.first.eq(tb), crs.count.eq(cl)]
                m.next = "C_TOKENS"
        with state("C_TOKENS"):
            cd = seq.codes
            m.d.comb += [s.busy.eq(1), cd.valid.eq(crs.valid), cd.payload.code.eq(crs.data),
                         cd.payload.last.eq(crs.index == cl - 1), crs.ready.eq(cd.ready)]
            with m.If(crs.done):
                m.d.sync += a_idx.eq(0)
                m.next = "C_ASSIGN"
        with state("C_ASSIGN"):
            ai, ao = seq.assign_in, seq.assign_out
            m.d.comb += [s.busy.eq(1), ao.valid.eq(ai.valid), ao.payload.eq(ai.payload), ai.ready.eq(ao.ready)]
            with m.If(ai.valid & ao.ready):
                spill = ai.payload.cluster == g.capacity
                m.d.sync += [a_slot.eq(ai.payload.cluster), a_new.eq(ai.payload.new), a_spill.eq(spill)]
                with m.If(ai.payload.new):
                    m.d.comb += [crs.start.eq(1), crs.first.eq(t_tok), crs.count.eq(1)]
                    m.next = "A_NEW"
                with m.Else():
                    m.d.comb += [lrs.start.eq(1), lrs.first.eq(ai.payload.cluster), lrs.count.eq(1)]
                    m.next = "A_JOIN"
        with state("A_NEW"):
            m.d.comb += [s.busy.eq(1), crs.ready.eq(1)]
            with m.If(crs.valid):
                full = (s.n_cl >= g.table_clusters) | (cur_tok >= g.context_tokens)
                m.d.sync += [cid.eq(s.n_cl), s.n_cl.eq(s.n_cl + ~full), e_code.eq(crs.data), e_count.eq(1),
                             e_off.eq(0), fresh.eq(1), skip.eq(full)]
                with m.If(full):
                    m.d.sync += s.causes.eq(s.causes | CAUSE["table_full"])
                    m.next = "A_KV"
                with m.Else():
                    with m.If(~a_spill):
                        m.d.comb += [s.lst_w.addr.eq(s.k_open), s.lst_w.en.eq(1),
                                     s.lst_w.data.eq(Cat(Const(1, 1), s.n_cl[:s.CB], cur_tok[:s.TB + 1], crs.data))]
                        m.d.sync += [s.k_open.eq(s.k_open + 1), s.vk.eq(s.vk + 1)]
                    m.next = "A_EWRITE"
        with state("A_JOIN"):
            m.d.comb += [s.busy.eq(1), lrs.ready.eq(1)]
            e = data.View(s.lst_layout, lrs.data)
            with m.If(lrs.valid):
                m.d.comb += [s.lst_w.addr.eq(a_slot), s.lst_w.en.eq(1),
                             s.lst_w.data.eq(Cat(Const(1, 1), e.cid, cur_tok[:s.TB + 1], e.code))]
                m.d.sync += [cid.eq(e.cid), fresh.eq(0), skip.eq(cur_tok >= g.context_tokens)]
                m.next = "A_EREAD"
        with state("A_EREAD"):
            m.d.comb += s.busy.eq(1)
            with m.If(dma_op(0, entry_addr(cid), 1, s.D_ENTRY)):
                m.d.sync += [e_code.eq(field(s.beat, 0)), e_count.eq(field(s.beat, 1) + 1),
                             e_off.eq(field(s.beat, 2))]
                m.next = "A_EWRITE"
        with state("A_EWRITE"):
            m.d.comb += [s.busy.eq(1), s.w_item.eq(entry_beat(e_code, e_count, e_off))]
            with m.If(dma_op(1, entry_addr(cid), 1, s.D_ENTRY_OUT)):
                m.d.comb += [s.recip.start.eq(1), s.recip.count.eq(e_count)]
                m.d.sync += [jj.eq(0), s.j_out.eq(0), kb.eq(0), s.mode.eq(M_ADD)]
                with m.If(fresh):
                    m.next = "A_ADD"
                with m.Else():
                    m.next = "A_SREAD"
        with state("A_SREAD"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.r_sum_in.o_valid):
                m.d.sync += [s.sumbuf[jj].eq(s.r_sum_in.o_data), jj.eq(jj + 1)]
            with m.If(dma_op(0, sum_addr(cid), Bs, s.D_SUM_IN)):
                m.next = "A_SREAD_END"
        with state("A_SREAD_END"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.r_sum_in.o_valid):
                m.d.sync += [s.sumbuf[jj].eq(s.r_sum_in.o_data), jj.eq(jj + 1)]
            with m.If(~s.r_sum_in.busy & ~s.r_sum_in.o_valid):
                m.d.sync += jj.eq(0)
                m.next = "A_ADD"
        with state("A_ADD"):
            m.d.comb += s.busy.eq(1)
            with m.If(kb < B):
                with m.If(sram_read(key_line(cmd.keys, t_tok) + kb, KEY)):
                    m.d.sync += kb.eq(kb + 1)
            vi = seq.vpe_i
            m.d.comb += [vi.valid.eq(s.r_key.o_valid & (jj < J)), vi.payload.op.eq(VpeOp.ADD),
                         s.r_key.o_ready.eq(vi.ready & (jj < J))]
            for k in range(T):
                m.d.comb += [vi.payload.a[k].eq(Mux(fresh, 0, s.sumbuf[jj].word_select(k, 32))),
                             vi.payload.b[k].eq(s.r_key.o_data.word_select(k, 16))]
            with m.If(vi.valid & vi.ready):
                m.d.sync += jj.eq(jj + 1)
            with m.If(s.j_out == J):
                m.d.sync += [jj.eq(0)]
                m.next = "A_SWRITE"
        with state("A_SWRITE"):
            m.d.comb += [s.busy.eq(1), s.r_sum_out.i_valid.eq(jj < J), s.r_sum_out.i_data.eq(s.sumbuf[jj])]
            with m.If(s.r_sum_out.i_valid & s.r_sum_out.i_ready):
                m.d.sync += jj.eq(jj + 1)
            with m.If(dma_op(1, sum_addr(cid), Bs, s.D_SUM_OUT)):
                m.d.sync += [jj.eq(0), s.j_out.eq(0)]
                m.next = "A_MUL"
        with state("A_MUL"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.recip.done):
                m.d.sync += s.mode.eq(M_MUL)
                vi = seq.vpe_i
                m.d.comb += [vi.valid.eq((jj < J) & (s.mode == M_MUL)), vi.payload.op.eq(VpeOp.MUL)]
                for k in range(T):
                    m.d.comb += [vi.payload.a[k].eq(s.sumbuf[jj].word_select(k, 32)),
                                 vi.payload.b[k].eq(s.recip.result)]
                with m.If(vi.valid & vi.ready):
                    m.d.sync += jj.eq(jj + 1)
                with m.If(dma_op(1, mean_addr(cid), Bm, s.D_MEAN_OUT)):
                    m.next = "A_MAP"
        with state("A_MAP"):
            m.d.comb += s.busy.eq(1)
            a = map_addr(cur_tok)
            word = a[2:2 + word_sh] if word_sh else 0
            m.d.comb += s.w_item.eq(Cat(*(Mux(word == k, Cat(cid[:s.CB], Const(0, 32 - s.CB)), 0)
                                          for k in range(s.words_per_beat))))
            with m.If(skip):
                m.next = "A_KV"
            with m.Else():
                with m.If(dma_op(1, a & beat_mask, 1, s.D_MAP_OUT, narrow=1, word=word)):
                    m.next = "A_KV"
        with state("A_KV"):
            kt = seq.kvmu_tokens
            m.d.comb += [s.busy.eq(1), kt.valid.eq(1), kt.payload.cluster.eq(cid),
                         kt.payload.segment_start.eq(cmd.segment_start & (t_tok == 0)),
                         kt.payload.last.eq(t_tok == T_cmd - 1)]
            with m.If(kt.ready):
                m.d.sync += a_idx.eq(a_idx + 1)
                with m.If(a_idx == cl - 1):
                    m.d.sync += tb.eq(tb + cl)
                    with m.If(tb + cl < T_cmd):
                        m.next = "C_CLOSE"
                    with m.Else():
                        m.d.comb += [lrs.start.eq(1), lrs.first.eq(0), lrs.count.eq(s.k_open)]
                        m.next = "C_LWRITE"
                with m.Else():
                    m.next = "C_ASSIGN"
        with state("C_LWRITE"):
            m.d.comb += s.busy.eq(1)
            e = data.View(s.lst_layout, lrs.data)
            m.d.comb += [dma.w_valid.eq(lrs.valid & (s.dma_to == s.D_LIST_OUT)),
                         dma.w_data.eq(Cat(e.cid, Const(0, 32 - s.CB), e.newest, Const(0, 31 - s.TB), e.code)),
                         lrs.ready.eq(dma.w_ready)]
            with m.If(dma_op(1, g.list_base + s.ctx * (g.capacity * item), s.k_open, s.D_LIST_OUT)):
                with m.If(s.offl):
                    m.d.sync += [n_c.eq(0), ovf.eq(0), groups.eq(0), gfill.eq(0), scan_i.eq(0)]
                    m.next = "S_SCAN"
                with m.Else():
                    m.next = "K_WAIT"

        # ---- S: candidates, scores -------------------------------------------------------------------------------
        with state("S_SCAN"):
            m.d.comb += [s.busy.eq(1), dma.r_ready.eq(1)]
            off = field(dma.r_data, 2)
            with m.If(dma.r_valid):
                m.d.sync += scan_i.eq(scan_i + 1)
                with m.If(off != 0):
                    with m.If(n_c < g.row_capacity):
                        sat = Mux(off > (1 << g.count_bits) - 1, (1 << g.count_bits) - 1, off[:g.count_bits])
                        m.d.comb += [s.cand_w.addr.eq(n_c >> lsh), s.cand_w.en.eq(onehot(n_c[:lsh], L) if lsh else 1),
                                     s.cand_w.data.eq(Cat(scan_i[:s.CB], sat).replicate(L))]
                        m.d.sync += [n_c.eq(n_c + 1), gfill.eq(Mux(gfill == T - 1, 0, gfill + 1))]
                        with m.If(gfill == 0):
                            m.d.sync += groups.eq(groups + 1)
                    with m.Else():
                        m.d.sync += ovf.eq(1)
            with m.If(dma_op(0, g.entry_base + s.ctx * (g.table_clusters * item), s.n_cl, s.D_NONE)):
                m.next = "S_SCAN_END"
        with state("S_SCAN_END"):
            m.d.comb += s.busy.eq(1)
            w = (n_c + L - 1) >> lsh
            ratio = 32 * L // s.LN if 32 * L >= s.LN else 0
            k = s.LN // (32 * L) if 32 * L < s.LN else 1
            lines = w * ratio if ratio else (w + k - 1) >> _log2(k)
            wlines = groups * g.lines_per_pass
            cl_lines = Mux(wlines > lines, wlines, lines)
            if RM:                      # a row's resident scores follow its cluster scores in the scratch
                m.d.sync += [res_off.eq(cl_lines), res_lines.eq(res_groups * g.lines_per_pass)]
            m.d.sync += [W.eq(w), lr.eq(lines), wr_beats.eq(w if ratio else lines * k),
                         s.row_lines.eq(cl_lines + res_groups * g.lines_per_pass if RM else cl_lines),
                         s.rows.eq(T_cmd * g.group)]
            with m.If(ovf):
                m.d.sync += [s.causes.eq(s.causes | CAUSE["row_overflow"]), n_c.eq(0)]
            with m.If(ovf | (n_c == 0)):
                m.d.sync += [q.eq(0), mj.eq(0), bits.eq(0), head_valid.eq(0)]
                m.next = "S_MASK_USE"
            with m.Else():
                m.d.comb += [s.cand_r.addr.eq(0), s.cand_r.en.eq(1)]
                m.d.sync += ci.eq(0)
                m.next = "S_COUNTS"
        with state("S_COUNTS"):
            cn = seq.counts
            word = ci >> lsh
            m.d.comb += [s.busy.eq(1), cn.valid.eq(1), cn.payload.clusters.eq(n_c)]
            for lane in range(L):
                m.d.comb += cn.payload.counts[lane].eq(Mux(word * L + lane < n_c, s.cand_r.data[lane].count, 0))
            with m.If(cn.ready):
                m.d.comb += [s.cand_r.addr.eq(word + 1), s.cand_r.en.eq(1)]
                m.d.sync += ci.eq(ci + L)
                with m.If(word == W - 1):
                    m.d.sync += [gi_.eq(0), ci.eq(0), s.w_base.eq(cmd.scratch), s.w_gbase.eq(cmd.scratch),
                                 s.w_r.eq(0), s.sub.eq(0), s.mode.eq(M_SCORE), wi.eq(0), s.gcount.eq(0)]
                    m.next = "S_WL"
        with state("S_WL"):            # the DPE's weights: tree wi gets candidate ci's mean key (or zeros)
            m.d.comb += s.busy.eq(1)
            with m.If(wi == T):
                m.d.sync += [r_i.eq(0), bi.eq(0), qj.eq(0), jB.eq(0), vbase.eq(cmd.queries + s.h * g.group * B)]
                m.next = "S_ST"
            with m.Elif(ci < n_c):
                m.d.comb += [s.cand_r.addr.eq(ci >> lsh), s.cand_r.en.eq(1)]
                m.next = "S_WL_CID"
            with m.Else():
                m.d.sync += wbb.eq(0)
                m.next = "S_WL_ZERO"
        with state("S_WL_CID"):
            m.d.comb += s.busy.eq(1)
            cids = Cat(*(s.cand_r.data[k].cid for k in range(L)))
            m.d.sync += [cid.eq(select(m, cids, ci[:lsh] if lsh else 0, s.CB, "wl_cand")), wbb.eq(0)]
            m.next = "S_WL_DMA"
        for name in ("S_WL_DMA", "S_WL_DRAIN"):
            with state(name):
                m.d.comb += s.busy.eq(1)
                m.d.comb += [s.ld_valid.eq(s.r_mean_in.o_valid), s.ld_addr.eq(wbb), s.ld_tree.eq(wi),
                             s.ld_data.eq(s.r_mean_in.o_data)]
                with m.If(s.ld_taken):
                    m.d.sync += wbb.eq(wbb + 1)
                if name == "S_WL_DMA":
                    with m.If(dma_op(0, mean_addr(cid), Bm, s.D_MEAN_IN)):
                        m.next = "S_WL_DRAIN"
                else:
                    with m.If(wbb == B):
                        m.d.sync += [wi.eq(wi + 1), ci.eq(ci + 1)]
                        m.next = "S_WL"
        with state("S_WL_ZERO"):
            m.d.comb += [s.busy.eq(1), s.ld_valid.eq(1), s.ld_addr.eq(wbb), s.ld_tree.eq(wi), s.ld_data.eq(0)]
            with m.If(s.ld_taken):
                m.d.sync += wbb.eq(wbb + 1)
                with m.If(wbb == B - 1):
                    m.d.sync += [wi.eq(wi + 1), ci.eq(ci + 1)]
                    m.next = "S_WL"
        with state("S_ST"):            # query rows against the buffer: one pass per row
            m.d.comb += s.busy.eq(1)
            start = bi == 0
            allowed = ~start | (inflight + 0 < g.fifo_depth)
            with m.If(allowed):
                with m.If(sram_read(vbase + jB + bi, DPE, b=bi, first=start, last=bi == B - 1)):
                    m.d.comb += pass_issued.eq(start)
                    m.d.sync += bi.eq(bi + 1)
                    with m.If(bi == B - 1):
                        m.d.sync += [bi.eq(0), qj.eq(qj + 1), jB.eq(jB + B), r_i.eq(r_i + 1)]
                        with m.If(qj == g.group - 1):
                            m.d.sync += [qj.eq(0), jB.eq(0), vbase.eq(vbase + g.query_heads * B)]
                        with m.If(r_i == s.rows - 1):
                            m.d.sync += [gi_.eq(gi_ + 1), wi.eq(0)]
                            if RM:
                                with m.If(mass):
                                    with m.If(kj >= n_res):
                                        m.next = "S_RES_DRAIN"
                                    with m.Else():
                                        m.next = "S_RES_W"
                                with m.Elif(gi_ == groups - 1):
                                    m.next = "S_DRAIN"
                                with m.Else():
                                    m.next = "S_WL"
                            else:
                                with m.If(gi_ == groups - 1):
                                    m.next = "S_DRAIN"
                                with m.Else():
                                    m.next = "S_WL"
        drained = (inflight == 0) & s.fifo.empty & s.sram_idle

        def to_rows():
            m.d.sync += [rbase.eq(cmd.scratch), rl.eq(0), r_i.eq(0), orow.eq(0), wbo.eq(0), s.mode.eq(M_ADD)]
            m.next = "S_ROWS"

        with state("S_DRAIN"):
            m.d.comb += s.busy.eq(1)
            with m.If(drained):
                if RM:
                    m.next = "S_RES_START"
                else:
                    to_rows()
        if RM:
            resident_pass(m, SimpleNamespace(**locals()), state, to_rows)
        with state("S_ROWS"):          # score rows from the scratch to the WTU
            m.d.comb += s.busy.eq(1)
            with m.If(r_i < s.rows):
                with m.If(sram_read(rbase + rl, WTU)):
                    m.d.sync += rl.eq(rl + 1)
                    with m.If(rl == lr - 1):
                        m.d.sync += [rl.eq(0), r_i.eq(r_i + 1), rbase.eq(rbase + s.row_lines)]
            sco = seq.scores
            keep = wbo < W
            m.d.comb += [sco.valid.eq(s.r_wtu.o_valid & keep),
                         sco.payload.last.eq((orow == s.rows - 1) & (wbo == W - 1)),
                         s.r_wtu.o_ready.eq(Mux(keep, sco.ready, 1))]
            for lane in range(L):
                m.d.comb += sco.payload.scores[lane].eq(s.r_wtu.o_data.word_select(lane, 32)[:g.score_bits])
            if RM:                      # the row's resident input, read on its first beat (on every beat here)
                m.d.comb += [s.pair_r.addr.eq(orow), sco.payload.res_max.eq(s.pair_r.data.res_max),
                             sco.payload.res_sum.eq(s.pair_r.data.res_sum)]
            with m.If(s.r_wtu.o_valid & s.r_wtu.o_ready):
                m.d.sync += wbo.eq(wbo + 1)
                with m.If(wbo == wr_beats - 1):
                    m.d.sync += [wbo.eq(0), orow.eq(orow + 1)]
                    with m.If(orow == s.rows - 1):
                        m.next = "S_SEL"
        with state("S_SEL"):
            m.d.comb += s.busy.eq(1)
            with m.If(s.gcount == W):
                m.d.sync += [q.eq(0), mj.eq(0), bits.eq(0), head_valid.eq(0)]
                m.d.comb += [s.cand_r.addr.eq(0), s.cand_r.en.eq(1), s.gm_r.addr.eq(0), s.gm_r.en.eq(1)]
                m.next = "S_MASK_USE"
        with state("S_MASK_USE"):      # group mask (candidate positions) -> KVMU mask (cluster ids)
            # the entry at the head (its cluster id and selected bit) is a register loaded from the read ports,
            # whose words are read one ahead: the compare never waits on a memory read
            m.d.comb += s.busy.eq(1)
            lane = mj[:lsh] if lsh else 0
            ent_cid = select(m, Cat(*(s.cand_r.data[k].cid for k in range(L))), lane, s.CB, "mask_cand")
            sel = select(m, s.gm_r.data, lane, 1, "mask_selected")
            m.d.sync += q_beats.eq(Mux(s.n_cl == 0, 1, (s.n_cl + L - 1) >> lsh))
            match = head_valid & ((head_cid >> lsh) == q)
            with m.If(match & head_sel):
                m.d.sync += bits.eq(bits | (onehot(head_cid[:lsh], L) if lsh else 1))
            with m.If((~head_valid | match) & (mj < n_c)):
                m.d.sync += [head_valid.eq(1), head_cid.eq(ent_cid), head_sel.eq(sel), mj.eq(mj + 1)]
                nxt = (mj + 1) >> lsh
                new_word = (mj[:lsh] == L - 1) if lsh else 1
                m.d.comb += [s.cand_r.addr.eq(nxt), s.cand_r.en.eq(new_word), s.gm_r.addr.eq(nxt),
                             s.gm_r.en.eq(new_word)]
            with m.Elif(match):
                m.d.sync += head_valid.eq(0)
            with m.If(~match & (head_valid | (mj >= n_c))):
                m.next = "S_MASK_SEND"
        with state("S_MASK_SEND"):
            km = seq.kvmu_masks
            m.d.comb += [s.busy.eq(1), km.valid.eq(1), km.payload.bits.eq(bits), km.payload.last.eq(q == q_beats - 1)]
            with m.If(km.ready):
                m.d.sync += [q.eq(q + 1), bits.eq(0)]
                with m.If(q == q_beats - 1):
                    m.next = "K_WAIT"
                with m.Else():
                    m.next = "S_MASK_USE"

        # ---- K, R: the KVMU's response, then the step's records into the ring ------------------------------------
        with state("K_WAIT"):
            kr = seq.kvmu_resp
            m.d.comb += [s.busy.eq(1), kr.ready.eq(1)]
            with m.If(kr.valid):
                m.d.sync += [s.kv_causes.eq(s.kv_causes | kr.payload.causes),
                             s.kv_errors.eq(s.kv_errors + kr.payload.errors), rt.eq(0), kb.eq(0)]
                m.next = "R_WRITE"
        with state("R_WRITE"):
            m.d.comb += s.busy.eq(1)
            t_abs = Signal(s.TB + 2, name="record_abs")
            m.d.comb += t_abs.eq(next_tok + rt)
            vec = (rt * g.kv_heads + s.h) * B
            with m.If(kb < 2 * B):
                base = Mux(kb < B, cmd.keys, cmd.values)
                with m.If(sram_read(base + vec + Mux(kb < B, kb, kb - B), REC)):
                    m.d.sync += kb.eq(kb + 1)
            in_sink = t_abs < g.sinks if g.sinks else Const(0, 1)
            addr = Mux(in_sink, g.sink_base + (s.ctx * g.sinks + t_abs) * g.record_bytes,
                       g.ring_base + (s.ctx * g.ring_tokens + s.ring) * g.record_bytes)
            with m.If(dma_op(1, addr, Br, s.D_REC)):
                with m.If(~in_sink):
                    m.d.sync += s.ring.eq(Mux(s.ring == g.ring_tokens - 1, 0, s.ring + 1))
                m.d.sync += [rt.eq(rt + 1), kb.eq(0)]
                with m.If(rt == T_cmd - 1):
                    m.next = "CTX_DONE"

        with state("CTX_DONE"):
            m.d.comb += [s.busy.eq(1), s.ctx_w.addr.eq(s.ctx), s.ctx_w.en.eq(1),
                         s.ctx_w.data.eq(Cat(s.n_cl, s.k_open, (next_tok + T_cmd)[:s.TB + 1], s.frontier, s.ring))]
            m.d.sync += [s.h.eq(s.h + 1), s.ctx.eq(s.ctx + 1)]
            with m.If(dma.error):
                m.d.sync += s.causes.eq(s.causes | CAUSE["table_port_error"])
            with m.If(s.h == g.kv_heads - 1):
                m.next = "RESP"
            with m.Else():
                m.next = "CTX_LOAD"
        with state("RESP"):
            r = seq.resp
            m.d.comb += [s.busy.eq(1), r.valid.eq(1), r.payload.step.eq(cmd.step),
                         r.payload.causes.eq(s.causes | Mux(s.kv_causes != 0, CAUSE["kvmu_error"], 0)),
                         r.payload.kvmu_causes.eq(s.kv_causes), r.payload.kvmu_errors.eq(s.kv_errors)]
            with m.If(r.ready):
                m.next = "IDLE"
    seq.states = {name: fsm.ongoing(name) for name in names}     # for benches: which state is active
    for name in names:
        k = max((pre for pre in STATE_PHASES if name.startswith(pre)), key=len, default=None)
        if k is not None:
            with m.If(fsm.ongoing(name)):
                m.d.comb += phase.eq(STATE_PHASES[k])
    return phase

