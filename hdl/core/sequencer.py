"""The core's retrieval-path sequencer: one command runs one decoder layer's step (a frame) for every KV head.

Per KV head (a *context*, ``layer · kv_heads + head``) the sequencer runs these phases in order (docs/formats.md
§Core has the formats, the memory layout and the cycle model):

``X`` window exits
    the tokens leaving the recent window (``[frontier, window_start)``): each one's cluster (token map) gets one
    more offloaded member (cluster entry read-modify-write on the HC-table port ``hct``).
``H`` hash
    ``passes`` DPE passes: the DPE's weight memories get ``trees`` hyperplanes (from the SRAM), the step's keys stream
    from the SRAM as the broadcast operand; the VPE's ``sign`` op turns each FP32 projection into a code bit.
``C`` cluster
    the open list is read and filtered (newest member in the window), closed by recency to the HCU's limit,
    compacted and preloaded; the step's codes follow (HCU jobs of ``frame_tokens`` tokens). For each assignment:
    the cluster id (new, spilled or the slot's), its entry (count), its FP32 key sum (VPE ``add``), its BF16 mean
    (VPE ``mul`` by the reciprocal of the count), the token map and the KVMU's arrival descriptor; the KVMU job's
    control beat went out before, so it evicts while the sequencer scores.
``S`` score and select (when tokens are offloaded)
    the cluster entries are scanned for candidates (offloaded members), the WTU gets their counts; groups of
    ``trees`` candidates' mean keys are loaded into the DPE (from ``hct``) and the step's query rows stream from the
    SRAM; the VPE's ``fixed`` op gives the WTU scores, written row-major into the SRAM scratch; the rows then go to
    the WTU; its group mask (candidate positions) becomes the KVMU's cluster mask. With ``resv.threshold_mass = row``
    a resident pass comes first (hdl/core/resident_pass.py): the keys every row attends anyway are scored the same
    way and the resident-mass unit gives each row the WTU's resident input.
``K`` the KVMU's response; ``R`` the step's K|V records written into their ring slots (after the response).

Operands come from the LXE SRAM at the command's line addresses; the HC table is in device DRAM behind ``hct``
(``cfg.core_map``). The host owns the SRAM between commands (``host_cmd`` / ``host_rdata``); during a command the
sequencer does.
"""

from math import gcd
from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from vrex.hdl.dre.kvmu.axi import axi4_signature
from ..lxe.vpe import VpeOp
from .banks import BankedFifo, banked_memory
from .dma import HctDma
from .geometry import CORE_CAUSES, CoreGeometry, command_layout, response_layout
from .muxes import onehot, select
from .phases import build_fsm
from .routes import DPE, KEY, M_ADD, M_HASH, M_MUL, M_SCORE, REC, WBUF, WTU
from .reciprocal import Reciprocal
from .resident_mass import resident_mass_layout
from .resize import Resize

__all__ = ["Sequencer", "SEQUENCER_COUNTERS", "PHASES"]

PHASES = ("exits", "hash", "cluster", "score", "select", "kvmu", "records")
SEQUENCER_COUNTERS = {
    "commands": "commands completed (responses delivered)",
    "busy_cycles": "cycles with a command in progress",
    **{f"{p}_cycles": f"cycles spent in phase {p}" for p in PHASES},
    "dpe_beats": "DPE input beats (each beat is trees x dpe_inputs MACs)",
    "vpe_beats": "VPE input beats (each beat is lanes lane operations)",
}



def _u(x, bits):
    return Const(x, bits)


class Sequencer(wiring.Component):
    """See the module docstring. ``ports``: the stream signatures of the LXE and DRE ports the sequencer drives or
    consumes (``dpe_i``, ``dpe_o``, ``vpe_i``, ``vpe_o``, ``sram_cmd``, ``sram_rdata``, ``codes``, ``assignments``,
    ``counts``, ``scores``, ``selection``, ``kvmu_ctrl``, ``kvmu_tokens``, ``kvmu_masks``, ``kvmu_resp``).
    ``resident``: with ``resv.threshold_mass = row``, the signature of the core's resident-mass unit
    (hdl/core/resident_mass.py), which the sequencer drives through its ``resident_unit`` member (the unit is a part
    of the core, beside the LXE and the DRE, so that hierarchical figures measure it once, alone)."""

    def __init__(self, g: CoreGeometry, ports: dict, resident=None):
        self._g = g
        p = ports
        if (resident is None) != (g.resident is None):
            raise ValueError("the sequencer needs the resident-mass unit's signature exactly when "
                             "resv.threshold_mass = row")
        status = {name: Out(g.counter_bits) for name in SEQUENCER_COUNTERS} | {"busy": Out(1)}
        unit = {} if resident is None else {"resident_unit": In(resident)}
        super().__init__({**unit,
            "cmd": In(stream.Signature(command_layout(g))), "resp": Out(stream.Signature(response_layout(g))),
            "host_cmd": In(p["sram_cmd"]), "host_rdata": Out(p["sram_rdata"]),
            "sram_cmd": Out(p["sram_cmd"]), "sram_rdata": In(p["sram_rdata"]),
            "dpe_i": Out(p["dpe_i"]), "dpe_o": In(p["dpe_o"]), "vpe_i": Out(p["vpe_i"]), "vpe_o": In(p["vpe_o"]),
            "codes": Out(p["codes"]), "assign_in": In(p["assignments"]), "assign_out": Out(p["assignments"]),
            "counts": Out(p["counts"]), "scores": Out(p["scores"]),
            "group_in": In(p["selection"]), "group_out": Out(p["selection"]),
            "kvmu_ctrl": Out(p["kvmu_ctrl"]), "kvmu_tokens": Out(p["kvmu_tokens"]), "kvmu_masks": Out(p["kvmu_masks"]),
            "kvmu_resp": In(p["kvmu_resp"]),
            "table": Out(axi4_signature(g.addr_bits, g.data_bits, g.id_bits, constants=False)),
            "clear": In(1), "status": Out(wiring.Signature(status)),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._g
        B, T, LN, L = g.beats, g.trees, g.line_bits, g.wtu_lanes
        J = g.vec_beats
        CB, TB, SB = g.cluster_bits, g.token_bits, g.slot_bits
        ab = g.sram_addr_bits
        words_per_beat = g.beat_bytes // 4

        # ==== command, context state ============================================================================
        cmd = Signal(command_layout(g), name="cmd_reg")
        h = Signal(range(g.kv_heads + 1), name="head")
        ctx = Signal(range(g.contexts + 1), name="context")
        offl = Signal(name="offloaded")
        causes = Signal(len(CORE_CAUSES), name="causes")
        kv_causes, kv_errors = Signal(5, name="kvmu_causes"), Signal(16, name="kvmu_errors")
        ring_bits = max(1, (max(1, g.ring_tokens) - 1).bit_length())
        ctx_layout = data.StructLayout({"clusters": CB, "open": SB, "next": TB + 1, "frontier": TB + 1,
                                        "ring": ring_bits})
        m.submodules.ctxmem = ctxmem = Memory(shape=ctx_layout, depth=g.contexts, init=[])
        ctx_w, ctx_r = ctxmem.write_port(), ctxmem.read_port()
        n_cl = Signal(CB, name="clusters")          # clusters of the context
        k_open = Signal(SB, name="open_len")        # open-list length (physical, with holes while closing)
        vk = Signal(SB, name="open_valid")          # valid open-list entries
        next_tok = Signal(TB + 1, name="next_token")
        frontier = Signal(TB + 1, name="frontier")
        ring = Signal(ring_bits, name="ring_slot")

        # ==== memories ==========================================================================================
        gran = gcd(T, g.hash_bits)
        m.submodules.codes_mem = codes_mem = Memory(shape=g.hash_bits, depth=max(2, g.max_tokens), init=[])
        code_w, code_r = codes_mem.write_port(granularity=gran), codes_mem.read_port()
        lst_layout = data.StructLayout({"valid": 1, "cid": CB, "newest": TB + 1, "code": g.hash_bits})
        m.submodules.lst = lst = Memory(shape=lst_layout, depth=g.capacity, init=[])
        lst_w, lst_r = lst.write_port(), lst.read_port()
        cand_layout = data.StructLayout({"cid": CB, "count": g.count_bits})
        cwords = -(-g.row_capacity // L)
        cand_w, cand_r = banked_memory(m, "cand", data.ArrayLayout(cand_layout, L), max(2, cwords), g.bank_bits,
                                       granularity=cand_layout.size)
        m.submodules.gmask = gmask = Memory(shape=L, depth=max(2, cwords), init=[])
        gm_w, gm_r = gmask.write_port(), gmask.read_port()
        # weight loads into the DPE's stationary memories (hyperplanes, mean keys, zero fill) that do not come from
        # an SRAM line: offered on dpe_i when no SRAM line is being routed there (ld_taken = accepted)
        ld_valid, ld_taken = Signal(name="wload_valid"), Signal(name="wload_taken")
        ld_tree, ld_addr = Signal(range(max(2, T)), name="wload_tree"), Signal(range(max(2, B)), name="wload_word")
        ld_data = Signal(LN, name="wload_data")
        # a read port's enable is 1 unless driven: these ports read only where a state says so and hold their
        # data otherwise (a state may use a word read several cycles before, e.g. after a stalled stream)
        m.d.comb += [ctx_r.en.eq(0), cand_r.en.eq(0), gm_r.en.eq(0)]
        sumbuf = Array(Signal(32 * T, name=f"sum{j}") for j in range(J))
        fifo = BankedFifo(m, "score_fifo", 32 * T, g.fifo_depth, g.bank_bits)
        lpp = g.lines_per_pass
        sub = Signal(range(max(2, lpp)), name="score_sub")      # the line of the FIFO's head that is written next

        dma = HctDma(m, self.table, addr_bits=g.addr_bits, data_bits=g.data_bits,
                     max_beats=max(g.table_clusters, g.capacity, 4 * g.head_dim // g.beat_bytes))
        recip = Reciprocal(m, "recip", TB + 1)

        # ==== SRAM port: host between commands, the sequencer during one =========================================
        busy = Signal(name="busy")
        rd_valid, rd_addr = Signal(name="rd_valid"), Signal(ab, name="rd_addr")
        rd_tag = Signal(data.StructLayout({"to": 3, "b": range(max(2, B)), "i": range(max(2, T)), "first": 1,
                                           "last": 1}), name="rd_tag")
        tag = Signal.like(rd_tag, name="tag")
        wr_valid, wr_addr = Signal(name="wr_valid"), Signal(ab, name="wr_addr")
        wr_data = select(m, fifo.r_data, sub, LN, "score_line")    # (an expression when the FIFO word is one line)
        sc, sr = self.sram_cmd, self.sram_rdata
        rd_taken, wr_taken = Signal(name="rd_taken"), Signal(name="wr_taken")
        with m.If(busy):
            m.d.comb += [sc.valid.eq(wr_valid | rd_valid), sc.payload.write.eq(wr_valid),
                         sc.payload.addr.eq(Mux(wr_valid, wr_addr, rd_addr)),
                         sc.payload.data.eq(Mux(wr_valid, wr_data, 0)),
                         sc.payload.mask.eq(Mux(wr_valid, (1 << g.banks) - 1, 0)),
                         rd_taken.eq(sc.ready & rd_valid & ~wr_valid), wr_taken.eq(sc.ready & wr_valid)]
            with m.If(rd_taken):
                m.d.sync += tag.eq(rd_tag)
        with m.Else():
            wiring.connect(m, wiring.flipped(self.host_cmd), wiring.flipped(sc))
            wiring.connect(m, wiring.flipped(sr), wiring.flipped(self.host_rdata))
        rline = sr.payload.data.as_value()

        # ==== width converters ==================================================================================
        r_sum_in = Resize(m, "r_sum_in", g.data_bits, 32 * T)       # hct beats -> FP32 sum chunk (a operand)
        r_sum_out = Resize(m, "r_sum_out", 32 * T, g.data_bits)     # FP32 sum chunk -> hct beats
        r_mean_out = Resize(m, "r_mean_out", 16 * T, g.data_bits)   # BF16 mean chunk -> hct beats
        r_mean_in = Resize(m, "r_mean_in", g.data_bits, LN)         # hct beats -> operand-buffer lines
        r_rec = Resize(m, "r_rec", LN, g.data_bits)                 # SRAM K / V lines -> hct beats
        r_key = Resize(m, "r_key", LN, 16 * T)                      # SRAM key lines -> BF16 chunk (b operand)
        r_wtu = Resize(m, "r_wtu", LN, 32 * L)                      # SRAM score lines -> WTU beats of 32-bit slots

        # ==== SRAM read data routing (by the read's tag) ========================================================
        # dpe_i: an SRAM line (a WBUF line is a weight load of tree tag.i, word tag.b; a DPE line a compute beat on
        # word tag.b), else a load the phases offer; a load beat writes one tree (its bit of the group's mask)
        dpe_p = self.dpe_i.payload
        Lt = len(dpe_p.mask)
        routed = busy & sr.valid
        w_tree = Mux(routed, tag.i, ld_tree)
        w_mask = onehot(w_tree % Lt if Lt > 1 else 0, Lt)
        is_load = Mux(routed, tag.to == WBUF, 1)
        m.d.comb += [dpe_p.load.eq(is_load), dpe_p.addr.eq(Mux(routed, tag.b, ld_addr)),
                     dpe_p.mask.eq(w_mask), dpe_p.first.eq(tag.first),
                     dpe_p.last.eq(tag.last), r_key.i_data.eq(rline), r_rec.i_data.eq(rline), r_wtu.i_data.eq(rline)]
        if T > Lt:
            m.d.comb += dpe_p.group.eq(w_tree // Lt)
        # the line goes only into the words the beat uses (a load's tree, a compute beat's word 0), the others are 0:
        # one driver per word (identical words were one gate driving every word's port); the words are built from
        # is_load, not from the port's own load bit (a vector that feeds itself is circular logic to Verilator)
        dpe_line = Signal(LN, name="dpe_line")
        m.d.comb += dpe_line.eq(Mux(routed, rline, ld_data))
        for k in range(Lt):
            used = Mux(is_load, w_mask[k], k == 0)
            m.d.comb += dpe_p.data[k].eq(Mux(used, dpe_line, 0))
        with m.If(routed):
            with m.Switch(tag.to):
                with m.Case(WBUF, DPE):
                    m.d.comb += [self.dpe_i.valid.eq(1), sr.ready.eq(self.dpe_i.ready)]
                with m.Case(KEY):
                    m.d.comb += [r_key.i_valid.eq(1), sr.ready.eq(r_key.i_ready)]
                with m.Case(REC):
                    m.d.comb += [r_rec.i_valid.eq(1), sr.ready.eq(r_rec.i_ready)]
                with m.Case(WTU):
                    m.d.comb += [r_wtu.i_valid.eq(1), sr.ready.eq(r_wtu.i_ready)]
        with m.Elif(ld_valid):
            m.d.comb += [self.dpe_i.valid.eq(1), ld_taken.eq(self.dpe_i.ready)]
        sram_idle = ~sr.valid

        # ==== back-end: DPE -> VPE -> sink ======================================================================
        mode = Signal(2, name="mode")
        vp, vo = self.vpe_i.payload, self.vpe_o.payload
        lanes_b = Signal(16, name="vpe_b_scalar")
        with m.Switch(mode):
            with m.Case(M_HASH, M_SCORE):
                m.d.comb += [self.vpe_i.valid.eq(self.dpe_o.valid), self.dpe_o.ready.eq(self.vpe_i.ready),
                             vp.op.eq(Mux(mode == M_HASH, VpeOp.SIGN, VpeOp.FIXED)),
                             lanes_b.eq(Mux(mode == M_HASH, 0, g.scale_bits))]
                m.d.comb += [vp.a[k].eq(self.dpe_o.payload.fp32[k]) for k in range(T)]
                m.d.comb += [vp.b[k].eq(lanes_b) for k in range(T)]
        m.d.comb += [vp.first.eq(1), vp.last.eq(0)]
        # code collection (hash mode): output of pass p, token t
        t_out, p_out = Signal(range(g.max_tokens + 1), name="hash_t_out"), Signal(range(g.passes + 1),
                                                                                    name="hash_p_out")
        m.d.comb += [code_w.addr.eq(t_out), code_w.data.eq(Cat(*([vo.flags] * g.passes))[:g.hash_bits])]
        # score results (score mode): into the FIFO, drained to the SRAM scratch
        fifo_push = Signal(name="fifo_push")
        fifo_pop = Signal(name="fifo_pop")
        fifo.connect(w_en=fifo_push, w_data=vo.value.as_value(), r_en=fifo_pop)
        # sums (add mode) and means (mul mode)
        j_out = Signal(range(J + 1), name="vec_j_out")
        m.d.comb += r_mean_out.i_data.eq(vo.bf16.as_value())
        with m.Switch(mode):
            with m.Case(M_HASH):
                m.d.comb += self.vpe_o.ready.eq(1)
                with m.If(self.vpe_o.valid):
                    words = g.hash_bits // gran
                    en = Signal(words, name="code_en")
                    for wd in range(words):
                        lo = wd * gran
                        m.d.comb += en[wd].eq((lo // T) == p_out) if g.passes > 1 else en[wd].eq(1)
                    m.d.comb += code_w.en.eq(en)
                    m.d.sync += t_out.eq(t_out + 1)
                    with m.If(t_out == cmd.tokens - 1):
                        m.d.sync += [t_out.eq(0), p_out.eq(p_out + 1)]
            with m.Case(M_SCORE):
                m.d.comb += [self.vpe_o.ready.eq(fifo.w_rdy), fifo_push.eq(self.vpe_o.valid)]
            with m.Case(M_ADD):
                m.d.comb += self.vpe_o.ready.eq(1)
                with m.If(self.vpe_o.valid):
                    m.d.sync += [sumbuf[j_out].eq(vo.value.as_value()), j_out.eq(j_out + 1)]
            with m.Case(M_MUL):
                m.d.comb += [r_mean_out.i_valid.eq(self.vpe_o.valid), self.vpe_o.ready.eq(r_mean_out.i_ready)]
                with m.If(self.vpe_o.valid & self.vpe_o.ready):
                    m.d.sync += j_out.eq(j_out + 1)

        # ==== score writes: FIFO head -> SRAM lines (priority over reads) ======================================
        w_base, w_gbase = Signal(ab, name="score_w_base"), Signal(ab, name="score_w_gbase")
        w_r = Signal(range(g.rows + 1), name="score_w_row")
        rows = Signal(range(g.rows + 1), name="rows")
        row_lines = Signal(ab, name="row_lines")
        m.d.comb += [wr_valid.eq((mode == M_SCORE) & fifo.r_rdy), wr_addr.eq(w_base + sub)]
        with m.If(wr_taken):
            m.d.sync += sub.eq(sub + 1)
            with m.If(sub == lpp - 1):
                m.d.comb += fifo_pop.eq(1)
                m.d.sync += [sub.eq(0), w_r.eq(w_r + 1), w_base.eq(w_base + row_lines)]
                with m.If(w_r == rows - 1):
                    m.d.sync += [w_r.eq(0), w_gbase.eq(w_gbase + lpp), w_base.eq(w_gbase + lpp)]

        # ==== DMA data routing defaults =========================================================================
        dma_to = Signal(4, name="dma_route")          # which producer / consumer the DMA's data belongs to
        D_NONE, D_LIST_IN, D_ENTRY, D_MAP, D_SUM_IN, D_SUM_OUT, D_MEAN_OUT, D_MEAN_IN, D_SCAN, D_REC, D_LIST_OUT, \
            D_ENTRY_OUT, D_MAP_OUT = range(13)
        beat = Signal(g.data_bits, name="dma_beat")   # the beat a single-beat read returned
        w_item = Signal(g.data_bits, name="dma_item")  # the beat a single-beat write sends
        with m.Switch(dma_to):
            with m.Case(D_ENTRY, D_MAP):
                m.d.comb += dma.r_ready.eq(1)
                with m.If(dma.r_valid):
                    m.d.sync += beat.eq(dma.r_data)
            with m.Case(D_ENTRY_OUT, D_MAP_OUT):
                m.d.comb += [dma.w_valid.eq(1), dma.w_data.eq(w_item)]
            with m.Case(D_SUM_IN):
                m.d.comb += [r_sum_in.i_valid.eq(dma.r_valid), r_sum_in.i_data.eq(dma.r_data),
                             dma.r_ready.eq(r_sum_in.i_ready), r_sum_in.o_ready.eq(1)]
            with m.Case(D_SUM_OUT):
                m.d.comb += [dma.w_valid.eq(r_sum_out.o_valid), dma.w_data.eq(r_sum_out.o_data),
                             r_sum_out.o_ready.eq(dma.w_ready)]
            with m.Case(D_MEAN_OUT):
                m.d.comb += [dma.w_valid.eq(r_mean_out.o_valid), dma.w_data.eq(r_mean_out.o_data),
                             r_mean_out.o_ready.eq(dma.w_ready)]
            with m.Case(D_MEAN_IN):
                m.d.comb += [r_mean_in.i_valid.eq(dma.r_valid), r_mean_in.i_data.eq(dma.r_data),
                             dma.r_ready.eq(r_mean_in.i_ready), r_mean_in.o_ready.eq(ld_taken)]
            with m.Case(D_REC):
                m.d.comb += [dma.w_valid.eq(r_rec.o_valid), dma.w_data.eq(r_rec.o_data),
                             r_rec.o_ready.eq(dma.w_ready)]

        # ==== selection tap: the WTU's group beats pass through, their masks are kept ===========================
        gi, go = self.group_in, self.group_out
        gcount = Signal(range(cwords + 1), name="group_beats")
        m.d.comb += [go.valid.eq(gi.valid), go.payload.eq(gi.payload), gi.ready.eq(go.ready),
                     gm_w.addr.eq(gcount), gm_w.data.eq(gi.payload.mask)]
        with m.If(gi.valid & gi.ready):
            m.d.comb += gm_w.en.eq(1)
            m.d.sync += gcount.eq(gcount + 1)

        # ==== resident input (resv.threshold_mass = row): resident-key scores -> the WTU's (res_max, res_sum) =====
        if g.resident is not None:
            rg = g.resident
            rmu = self.resident_unit   # the core's resident-mass unit, seen from its driver
            pair_layout = resident_mass_layout(rg)
            m.submodules.pairs = pairs = Memory(shape=pair_layout, depth=max(2, g.rows), init=[])
            pair_w, pair_r = pairs.write_port(), pairs.read_port(domain="comb")
            n_pairs = Signal(range(g.rows + 1), name="resident_pairs")
            m.d.comb += [rmu.resident.ready.eq(1), pair_w.addr.eq(n_pairs), pair_w.data.eq(rmu.resident.payload),
                         pair_w.en.eq(rmu.resident.valid)]
            with m.If(rmu.resident.valid):
                m.d.sync += n_pairs.eq(n_pairs + 1)

        names = {k: val for k, val in locals().items() if k not in ("self", "m")}
        self._phase = build_fsm(self, m, SimpleNamespace(**names))
        self._counters(m, busy)
        return m

    # ---- status counters ----------------------------------------------------------------------------------------

    def _counters(self, m, busy):
        st = self.status
        inc = {"commands": self.resp.valid & self.resp.ready, "busy_cycles": busy,
               "dpe_beats": self.dpe_i.valid & self.dpe_i.ready, "vpe_beats": self.vpe_i.valid & self.vpe_i.ready}
        for k, name in enumerate(PHASES):
            inc[f"{name}_cycles"] = busy & (self._phase == k)
        staged = {name: Signal(name=f"inc_{name}") for name in inc}
        m.d.sync += [staged[name].eq(v) for name, v in inc.items()]
        m.d.comb += st.busy.eq(busy)
        with m.If(self.clear):
            m.d.sync += [getattr(st, name).eq(0) for name in SEQUENCER_COUNTERS]
        with m.Else():
            m.d.sync += [getattr(st, name).eq(getattr(st, name) + staged[name]) for name in SEQUENCER_COUNTERS]
