"""ExpWTU — the WTU with the exp2 transform: softmax-like fixed-point weights, bins anchored at the row maximum,
refinement passes over the exit bin; pipelined for the paper's 800 MHz.

Selection semantics: ``vrex.golden.dre.wtu.exp.select_exp2`` (``bucket`` fill), bit for bit. Ports and protocol:
those of :class:`vrex.hdl.dre.wtu.linear.WTU` (docs/formats.md §WTU), which builds this class for ``resv.score_transform =
exp2``.

Why one file of over 500 lines: one pipelined component whose stages share local signals inside ``elaborate``;
the helpers after the class are its small datapath builders.
"""

import math

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.arith import named, popcount, sum_tree
from vrex.hdl.dre.wtu.lanes import clamp, lane_valid, reduce_tree, register_cut, rotate
from vrex.hdl.dre.wtu.layouts import (WTUGeometry, wtu_counts_layout, wtu_group_layout, wtu_row_layout, wtu_scores_layout)

__all__ = ["ExpWTU", "STAGE_CUTS", "RATIO_SEGMENTS", "exp_latencies", "accumulator_slots", "exp_lut",
           "register_queue"]

# Optional register boundaries of the lane datapath, in the order ``pipeline_stages`` adds them: after the multiply,
# after the per-slot adder trees, after the LUT, between the window mask and the accumulate, after the octave shift,
# in the middle of the trees (between the lane groups of four and their sum). ``pipeline_stages = P`` registers the first P - 1 (P = 1: capture register,
# then one combinational path into the accumulators).
STAGE_CUTS = ("mul", "hist", "lut", "merge", "shift", "tree")
OUT_QUEUE = 3              # entries of each output queue: the beats in flight (memory, capture) plus the visible one
RATIO_SEGMENTS = 2         # staggered carry segments of every add of the ratio product total · ratio


class _Phase(enum.Enum, shape=2):
    LOAD = 0
    REFINE = 1
    MASK = 2


def exp_latencies(g: WTUGeometry) -> dict:
    """Fixed latencies (cycles) of the exp2 datapath, the constants of the cycle model
    (``vrex.golden.dre.wtu.linear.exp2_latencies`` states the same; the cycle tests prove both equal to the RTL).

    ``pass``: from a pass's last word (accept or issue) to its last accumulation: memory and capture registers,
    the optional cuts, the accumulator; ``prefix``: Kogge-Stone levels over the ``nacc`` slots, one per register;
    ``fin``: after the load (input register, prefix sums, total, ratio product, compare, priority encoder,
    local threshold); ``walk``: after a refinement pass (input register, prefix sums, compare, encoder, one spare).
    """
    cuts = len(STAGE_CUTS[:g.pipeline_stages - 1])
    nacc = accumulator_slots(g)
    prefix = max(1, (nacc - 1).bit_length())
    ratio_latency = (g.ratio_bits).bit_length() + RATIO_SEGMENTS - 1     # ceil(log2(ratio_bits + 1)) levels
    return {"pass": 3 + cuts, "prefix": prefix, "fin": prefix + ratio_latency + 6, "walk": prefix + 4}


def accumulator_slots(g: WTUGeometry) -> int:
    """Bin accumulators: the next power of two ≥ max(buckets, refine_bins) (slots are bins mod this number)."""
    return 1 << (max(g.buckets, g.refine_bins) - 1).bit_length()


def exp_lut(entries: int, mantissa_bits: int) -> tuple[int, ...]:
    """The 2^fraction LUT: ``round(2^(M-1) · 2^((x + ½)/E))`` (centre values; docs/formats.md §WTU exp2)."""
    return tuple(int(math.floor((1 << (mantissa_bits - 1)) * 2.0 ** ((x + 0.5) / entries) + 0.5))
                 for x in range(entries))


def _named_list(m, name, values, shape=None):
    return [named(m, v, f"{name}{i}", shape) for i, v in enumerate(values)]


class ExpWTU(wiring.Component):
    """WiCSum threshold unit with the exp2 transform (``histogram`` mode).

    Parameters
    ----------
    geometry : WTUGeometry
        with ``transform = "exp2"`` (``WTUGeometry.from_config(cfg)``).

    Members
    -------
    counts, scores, row, group, ratio : as :class:`vrex.hdl.dre.wtu.linear.WTU`. With ``threshold_mass = row`` the
        score beats also carry the row's resident input ``res_max`` / ``res_sum``, read on its first beat, and
        ``ratio`` carries p (docs/formats.md §WTU row mass).

    Micro-architecture (``L`` lanes; docs/formats.md §WTU exp2)
    -----------------------------------------------------------
    Memories as the WTU's: scores (``capacity / L`` words of L signed scores), counts and the aggregated mask, one
    read and one write port each. Every memory read is captured in a register before any logic (stage A), so the
    SRAM access time is a path of its own.

    - **Load and bin.** While a row streams in, each beat goes through the lane datapath: bin ``s >> S`` and
      in-bin position, LUT mantissa, ``count × mantissa``, ``<< octave``, a histogram of the beat relative to its
      own top bin (``buckets`` masked adder trees, with member counts), then the merge into the bin accumulators:
      when a beat raises the row's top bin by Δ, the accumulator array moves Δ bins down (bins falling out of the
      window are dropped), so the bins are those of the final maximum whatever the order (the golden rule).
    - **Threshold and walk** (fixed latency ``fin``): Kogge-Stone prefix sums of ``q_i = M_i >> (i·octaves)``
      from the top bin, ``total · ratio``, all compares ``cum_i · 2^R > total · ratio`` at once, a priority encoder
      for the exit bin ``e``, and the local threshold ``Tloc = (T - acc_before + 1) << (e·octaves)`` that the
      refinement compares against in the exit bin's own units.
    - **Refinement** (up to ``refine_passes``, skipped when the window holds fewer than 2 clusters): a pass re-reads
      the row, bins the window's members into ``refine_bins`` sub-bins through the same lane datapath, and a walk of
      fixed latency ``walk`` (prefix sums from the top, compares against ``Tloc - R_base``, priority encoder) picks
      the sub-bin that becomes the next window.
    - **Mask**: one pass emits ``s ≥ L`` (the final window's lower bound; everything when ``T ≥ total``), ORs it
      into the aggregation memory and, on the job's last row, emits the group mask. Only this pass can be stalled
      by the outputs; the others never stall.
    - **Row mass** (``threshold_mass = row``): the running top bin starts at the resident bin, so the bins are
      anchored at the joint maximum; the resident total, shifted to that anchor (``r``), enters the prefix sums with
      the top bin, so the total is ``J = r + total`` and the unchanged compares test ``T = (J·ratio >> R) - r``; a
      row with ``T < 0`` selects nothing (no refinement). No cycle is added.

    Latency (no back-pressure, ``W = ceil(N / L)``): ``vrex.golden.dre.wtu.linear.wtu_row_cycles`` (exact, tested).
    """

    def __init__(self, geometry: WTUGeometry):
        if not geometry.exp2:
            raise ValueError("ExpWTU needs an exp2 geometry (transform exp2, histogram mode)")
        self._g = g = geometry
        super().__init__({
            "counts": In(stream.Signature(wtu_counts_layout(g))),
            "scores": In(stream.Signature(wtu_scores_layout(g))),
            "row": Out(stream.Signature(wtu_row_layout(g))),
            "group": Out(stream.Signature(wtu_group_layout(g))),
            "ratio": In(g.ratio_bits + 1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self._g
        L, B, C, R = g.lanes, g.score_bits, g.count_bits, g.ratio_bits
        CAP, NB, WORDS = g.capacity, g.clusters_bits, g.words
        K, S, F, O = g.buckets, g.bin_shift, g.frac_bits, g.bucket_octaves.bit_length() - 1
        D, NBINS, PASSES = g.digit_bits_exp, g.refine_bins, g.refine_passes
        NACC = accumulator_slots(g)
        LB, M = g.lut_entries.bit_length() - 1, g.mantissa_bits
        BBW = B - S                               # bin index width (signed)
        TB, MB = g.term_bits, g.mass_bits
        IW = max(1, (NACC - 1).bit_length())      # accumulator index width
        DEPTH = max(2, WORDS)
        cuts = set(STAGE_CUTS[:g.pipeline_stages - 1])
        lat = exp_latencies(g)
        ROW, Z = g.row_mass, g.resident_sum_bits
        PW = MB + 1 if ROW else MB                # prefix sums and the joint total (row: r + total < 2^(MB+1))

        # ---- memories ------------------------------------------------------------------------------------
        m.submodules.score_mem = score_mem = memory.Memory(
            shape=data.ArrayLayout(signed(B), L), depth=DEPTH, init=[])
        score_wr, score_rd = score_mem.write_port(), score_mem.read_port()
        m.submodules.count_mem = count_mem = memory.Memory(
            shape=data.ArrayLayout(unsigned(C), L), depth=DEPTH, init=[])
        count_wr, count_rd = count_mem.write_port(), count_mem.read_port()
        m.submodules.agg_mem = agg_mem = memory.Memory(shape=unsigned(L), depth=DEPTH, init=[])
        agg_wr, agg_rd = agg_mem.write_port(), agg_mem.read_port()

        # ---- job and row state -----------------------------------------------------------------------------
        n_clusters = Signal(NB)
        job_error = Signal()
        first_count = Signal(init=1)
        count_rem = Signal(NB)
        count_word = Signal(range(DEPTH))
        ratio_r = Signal(R + 1)
        first_row = Signal()
        job_last = Signal()
        load_rem = Signal(NB)
        load_word = Signal(range(DEPTH))
        phase = Signal(_Phase)
        rd_rem = Signal(NB)
        rd_word = score_rd.addr                   # the read address register is the port's own signal
        timer = Signal(range(lat["pass"] + max(lat["fin"], lat["walk"]) + 2))

        top_run = Signal(signed(BBW))             # A: top bin of the beats merged so far
        first_beat = Signal()                     # the next merged beat is the row's first
        e_r = Signal(range(K))                    # exit bin (window index)
        low = Signal(signed(B + 2))               # lower bound of the current window
        lvl = Signal(range(PASSES + 1))           # refinement passes done
        tloc = Signal(MB)                         # (T - acc_before + 1) << (e·octaves)
        tcmp = Signal(MB + 1)                     # Tloc - R_base: the walk's compare value
        sel_all = Signal()
        walked = Signal(g.walked_bits)
        sel_count = Signal(NB)

        # ---- output queues: beats leave registers; the masking pass issues a word only when both queues can take
        # every beat in flight, so no pipeline register ever waits for the outputs (no stall fan-out) ------------
        row_load, group_load = Signal(), Signal()
        row_next = Signal(wtu_row_layout(g))
        group_next = Signal(wtu_group_layout(g))
        row_room = register_queue(m, "rowq", self.row, row_load, row_next, OUT_QUEUE)
        group_room = register_queue(m, "groupq", self.group, group_load, group_next, OUT_QUEUE)

        # ---- stage M (memory / input register) and stage A (capture) --------------------------------------------
        issue, load_accept = Signal(), Signal()
        mv, m_rem = Signal(), Signal(NB)
        m_word = score_wr.addr                    # stage M's word is the score write port's address register
        m_load_scores = score_wr.data             # stage M's score beat is the write port's data register
        av, a_rem = Signal(), Signal(NB)
        a_word = agg_wr.addr                      # the A-stage word is the aggregation write port's address
        a_s = [Signal(signed(B), name=f"a_s{lane}") for lane in range(L)]
        a_c = [Signal(C, name=f"a_c{lane}") for lane in range(L)]
        a_agg = Signal(L)
        mask_phase = phase == _Phase.MASK
        a_consume = Signal()                      # the mask beat in stage A goes to the output queues
        m.d.comb += a_consume.eq(av & mask_phase)
        in_flight = mv.as_unsigned() + av.as_unsigned()
        mask_room = named(m, (row_room > in_flight) & (~job_last | (group_room > in_flight)), "mask_room")

        with m.If(load_accept):
            m.d.sync += [mv.eq(1), m_rem.eq(load_rem), m_word.eq(load_word),
                         m_load_scores.eq(self.scores.payload.scores)]
        with m.Elif(issue):
            m.d.sync += [mv.eq(1), m_rem.eq(rd_rem), m_word.eq(rd_word)]
        with m.Else():
            m.d.sync += mv.eq(0)
        m.d.sync += score_wr.en.eq(load_accept)
        # Memory writes leave registers (no logic in front of a macro's write pins): a score beat is written from
        # stage M, a count beat one cycle after its handshake. A count read in the cycle that write lands returns
        # the old word, so the pending word is taken instead (bypass).
        c_bypass, c_bypass_data = Signal(name="count_bypass"), Signal.like(count_rd.data, name="count_bypass_data")
        count_rd_addr = Mux(load_accept, load_word, rd_word)
        with m.If(load_accept | issue):
            m.d.sync += [c_bypass.eq(count_wr.en & (count_wr.addr == count_rd_addr)), c_bypass_data.eq(count_wr.data)]
        counts_now = [Mux(c_bypass, c_bypass_data[lane], count_rd.data[lane]) for lane in range(L)]
        m.d.sync += [av.eq(mv), a_rem.eq(m_rem), a_word.eq(m_word), a_agg.eq(agg_rd.data)]
        for lane in range(L):
            m.d.sync += [a_s[lane].eq(Mux(phase == _Phase.LOAD, m_load_scores[lane], score_rd.data[lane])),
                         a_c[lane].eq(counts_now[lane])]
        m.d.comb += [score_rd.en.eq(issue), agg_rd.addr.eq(rd_word), agg_rd.en.eq(issue),

                     count_rd.addr.eq(count_rd_addr), count_rd.en.eq(load_accept | issue)]

        # ---- row mass: the row's resident input, read with its first score beat ---------------------------------
        # The joint anchor: a row with resident mass starts its running top bin at the resident bin b_res (as if
        # the resident maximum were a beat merged first), so the window, the bins and the walk are anchored at
        # A = max(A_off, b_res) whatever the beat order; a row without (res_sum = 0) starts as the offloaded rule.
        if ROW:
            res_max, res_sum = Signal(signed(B), name="res_max"), Signal(Z, name="res_sum")
            res_nz, res_apply = Signal(name="res_nz"), Signal(name="res_apply")
            sp_in = self.scores.payload
            m.d.sync += res_apply.eq(0)
            with m.If(load_accept & (load_word == 0)):
                m.d.sync += [res_max.eq(sp_in.res_max), res_sum.eq(sp_in.res_sum), res_nz.eq(sp_in.res_sum != 0),
                             res_apply.eq(1)]
            with m.If(res_apply & res_nz):         # the cycle before the first beat can reach the merge
                m.d.sync += [top_run.eq(res_max[S:].as_signed()), first_beat.eq(0)]

        # ---- stage B: bins, LUT, window ---------------------------------------------------------------------
        valid = _named_list(m, "valid", lane_valid(a_rem, L), 1)
        lut = Array(Const(v, M) for v in exp_lut(g.lut_entries, M))
        bins = [x[S:].as_signed() for x in a_s]
        mant = _named_list(m, "mant", [lut[x[F - LB:F]] for x in a_s], M) if LB else [lut[0]] * L
        octv = [x[F:S] if O else Const(0, 1) for x in a_s]
        levels = [S - k * D for k in range(max(1, PASSES))]       # window width shift w at each level
        inwin, sub = [], []
        for lane, x in enumerate(a_s):
            hit = [x[w:] == low[w:B] for w in levels]
            u = [x[w - D:w] for w in levels]
            inwin.append(named(m, valid[lane] & (Array(hit)[lvl] if len(levels) > 1 else hit[0]), f"inwin{lane}"))
            sub.append(named(m, Array(u)[lvl], f"sub{lane}", D) if len(levels) > 1 else u[0])
        refine = phase == _Phase.REFINE
        key = [Mux(refine, sub[lane], bins[lane]) for lane in range(L)]
        flag = [Mux(refine, inwin[lane], valid[lane]) for lane in range(L)]
        a_live = av & ~mask_phase

        stage = {"v": a_live, "ref": refine, "bins": bins, "valid": valid, "m": mant, "c": a_c, "k": key, "f": flag}
        if O:
            stage["o"] = octv
        stage = register_cut(m, "lut", stage, cuts)
        # the beat's top bin: a max tree over the lanes, after the lut cut (beside the multiply), so the memory
        # capture → lane-valid → max path is not one cycle
        stage["top"] = reduce_tree(m, "beat_top", [Mux(v, b, Const(-(1 << (BBW - 1)), signed(BBW)))
                                                   for v, b in zip(stage["valid"], stage["bins"])],
                                   lambda a, b: Mux(b > a, b, a), signed(BBW))
        del stage["bins"], stage["valid"]
        # stage C: multiply
        stage["p"] = [named(m, c * mm, f"prod{lane}") for lane, (c, mm) in enumerate(zip(stage["c"], stage["m"]))]
        del stage["c"], stage["m"]
        stage = register_cut(m, "mul", stage, cuts)
        # stage D: octave shift; accumulator slot (absolute bin mod NACC, or the sub-bin); lanes within the beat's
        # window; one select bit per (slot, lane)
        stage["t"] = ([named(m, (p << o)[:TB], f"term{lane}", TB) for lane, (p, o) in enumerate(zip(stage["p"], stage["o"]))]
                      if O else list(stage["p"]))
        stage.pop("o", None)
        rel = [named(m, stage["top"] - k.as_signed(), f"rel{lane}", signed(BBW + 1)) for lane, k in enumerate(stage["k"])]
        slot = [named(m, Mux(stage["ref"], k[:D], k[:IW]), f"slot{lane}", IW) for lane, k in enumerate(stage["k"])]
        keep = [named(m, f & (stage["ref"] | (r < K)), f"keep{lane}") for lane, (f, r) in enumerate(zip(stage["f"], rel))]
        stage["sel"] = [named(m, keep[lane] & (slot[lane] == b), f"sel{b}_{lane}") for b in range(NACC) for lane in range(L)]
        del stage["p"], stage["k"], stage["f"]
        stage = register_cut(m, "shift", stage, cuts)
        # stage E: per-slot masked adder trees over lane groups of four, then over the groups
        groups = [list(range(i, min(L, i + 4))) for i in range(0, L, 4)]
        part, partc = [], []
        for b in range(NACC):
            sel = stage["sel"][b * L:(b + 1) * L]
            part.append([named(m, sum_tree([Mux(sel[lane], stage["t"][lane], 0) for lane in grp]), f"part{b}_{gi}")
                         for gi, grp in enumerate(groups)])
            partc.append([popcount(Cat(*[sel[lane] for lane in grp])) for grp in groups])
        stage2 = {"v": stage["v"], "ref": stage["ref"], "top": stage["top"],
                  "ps": [x for row in part for x in row], "pc": [x for row in partc for x in row]}
        stage2 = register_cut(m, "tree", stage2, cuts)
        ng = len(groups)
        hist = [_sum_named(m, stage2["ps"][b * ng:(b + 1) * ng], f"hist{b}") for b in range(NACC)]
        histc = [_sum_named(m, stage2["pc"][b * ng:(b + 1) * ng], f"histc{b}") for b in range(NACC)]
        stage3 = {"v": stage2["v"], "ref": stage2["ref"], "top": stage2["top"], "h": hist, "hc": histc}
        stage3 = register_cut(m, "hist", stage3, cuts)

        # stage F1: running top bin A. Slot s holds the window bin congruent to s mod NACC (a circular window, so a
        # rising maximum clears slots instead of moving the array): the beat's slots outside A's window are
        # masked, and accumulator slots whose bin falls out of the window are cleared.
        v3, ref3, top3 = stage3["v"], stage3["ref"], stage3["top"]
        top_new = named(m, Mux(first_beat | (top3 > top_run), top3, top_run), "top_new", signed(BBW))
        d_arr = clamp(m, "d_arr", (top_new - top_run).as_unsigned(), K)
        d_beat = clamp(m, "d_beat", (top_new - top3).as_unsigned(), K)
        with m.If(v3 & ~ref3):
            m.d.sync += [top_run.eq(top_new), first_beat.eq(0)]
        h_in, hc_in, keep_acc = [], [], []
        for b in range(NACC):
            r_beat = (top3[:IW] - b)[:IW]
            r_old = (top_run[:IW] - b)[:IW]
            win = named(m, ref3 | (r_beat + d_beat < K), f"win{b}")
            keep_acc.append(named(m, ref3 | (~first_beat & (r_old + d_arr < K)), f"keep_acc{b}"))
            h_in.append(Mux(win, stage3["h"][b], 0))
            hc_in.append(Mux(win, stage3["hc"][b], 0))
        stage4 = {"v": [v3] * NACC, "h": h_in, "hc": hc_in, "k": keep_acc}   # per-slot valid copies
        stage4 = register_cut(m, "merge", stage4, cuts)
        # stage F2: accumulate
        acc = [Signal(MB, name=f"acc{b}") for b in range(NACC)]
        accc = [Signal(NB, name=f"accc{b}") for b in range(NACC)]
        acc_clear = Signal()
        clear_r = [Signal(name=f"acc_clear_r{b}") for b in range(NACC)]     # one register per slot: no fan-out tree
        m.d.sync += [c.eq(acc_clear) for c in clear_r]
        for b in range(NACC):
            with m.If(clear_r[b]):
                m.d.sync += [acc[b].eq(0), accc[b].eq(0)]
            with m.Elif(stage4["v"][b]):
                m.d.sync += [acc[b].eq(Mux(stage4["k"][b], acc[b], 0) + stage4["h"][b]),
                             accc[b].eq(Mux(stage4["k"][b], accc[b], 0) + stage4["hc"][b])]

        # ---- post-pass pipeline (free-running; its inputs are stable once a pass has drained) -------------------
        # FIN: window index i is slot (A - i) mod NACC, q_i = M_i >> (i·octaves); WALK: the sub-bins from the top.
        walk_phase = phase == _Phase.REFINE
        used = max(K, NBINS)                       # slots beyond both the window and the sub-bins stay 0
        walk_r = [Signal(name=f"walk_r{i}") for i in range(used)]          # per-slot copies of the phase
        m.d.sync += [w.eq(walk_phase) for w in walk_r]
        rev = [acc[(-i) % NACC] for i in range(NACC)]
        rot = rotate(m, "rot", rev, (-top_run)[:IW], NACC)               # rot[i] = acc[(A - i) mod NACC]
        xin = [Signal(MB, name=f"xin{i}") for i in range(used)] + [Const(0, MB)] * (NACC - used)
        m.d.sync += [x.eq(Mux(walk_r[i], acc[NBINS - 1 - i] if i < NBINS else 0, (rot[i] >> (i << O)) if i < K else 0))
                     for i, x in enumerate(xin[:used])]
        cnt_slot = [accc[(-i) % NACC] for i in range(NACC)]
        cnt_rot = rotate(m, "cnt_rot", cnt_slot, (-top_run)[:IW], NACC)
        if ROW:
            # r = res_sum >> ((A - b_res) · octaves) (0 once the shift reaches Z), registered beside xin and added to
            # the top bin's term at the first prefix level: every prefix sum is then r + Σ q, the total is the joint
            # mass J = r + total, and the compares against T_J = (J · ratio) >> R are those against T = T_J - r
            # (pre'_i > T_J ⟺ pre_i > T), with no extra cycle. 0 during a refinement walk.
            dmax = -(-Z // g.bucket_octaves)       # bins of shift that leave nothing of Z bits
            d_res = named(m, (top_run - res_max[S:].as_signed())[:BBW], "res_bins", BBW)   # ≥ 0 when res_sum ≠ 0
            r_shift = named(m, Mux(d_res >= dmax, dmax, d_res), "res_shift") if dmax < 1 << BBW else d_res
            r_add = Signal(Z, name="res_rescaled")
            m.d.sync += r_add.eq(Mux(walk_r[0], 0, res_sum >> (r_shift << O)))
        pre = _prefix_pipeline(m, xin, PW, r_add if ROW else None)
        total = Signal(PW)                         # row: the joint mass J
        m.d.sync += total.eq(pre[K - 1])
        tr = _ratio_product(m, total, ratio_r, R)
        hits = Signal(NACC - 1)                    # the last slot needs no bit: the encoder defaults to it
        all_r = Signal()
        with m.If(walk_phase):
            m.d.sync += hits.eq(Cat(*[pre[i] >= tcmp for i in range(NACC - 1)]))
        with m.Else():
            m.d.sync += hits.eq(Cat(*[(pre[i] << R) > tr if i < K else Const(0, 1) for i in range(NACC - 1)]))
        m.d.sync += all_r.eq(tr >= Cat(Const(0, R), total))
        if ROW:                                    # T < 0 ⟺ T_J < r ⟺ r · 2^R > J · ratio: nothing is selected
            none_r = Signal(name="none_r")
            m.d.sync += none_r.eq(Cat(Const(0, R), r_add) > tr)
        first_hit = Signal(range(NACC))
        before = Signal(PW)                        # prefix sum before the hit (0 at the top; row: r at the top)
        hit_cnt = Signal(NB)
        enc = _priority(hits, NACC)
        m.d.sync += [first_hit.eq(enc), before.eq(Mux(enc == 0, r_add if ROW else 0, Array(pre)[enc - 1])),
                     hit_cnt.eq(Mux(walk_phase, Array(accc)[NBINS - 1 - enc], Array(cnt_rot)[enc]))]
        t_val = tr[R:]
        tdiff = Signal(MB + 1)                     # T - acc_before (≥ 0; row: T_J - (r + acc_before))
        m.d.sync += tdiff.eq(t_val - before)
        m.d.sync += tloc.eq(((tdiff + 1) << (e_r << O))[:MB])

        # ---- control ---------------------------------------------------------------------------------------
        def start_row(n):
            return [load_rem.eq(n), load_word.eq(0), phase.eq(_Phase.LOAD), first_beat.eq(1)]

        def start_pass(kind):
            return [rd_rem.eq(n_clusters), rd_word.eq(0), phase.eq(kind)]

        def issue_words(next_state):
            with m.If(issue):
                m.d.sync += [rd_rem.eq(Mux(rd_rem > L, rd_rem - L, 0)), rd_word.eq(rd_word + 1)]
                with m.If(rd_rem <= L):
                    m.d.sync += timer.eq(0)
                    m.next = next_state

        def refine_or_mask(refine):
            """After a pass: another refinement pass over the exit bin while ``refine`` holds (``None``: never),
            else the masking pass."""
            def to_mask():
                m.d.sync += start_pass(_Phase.MASK) + [sel_count.eq(0)]
                m.next = "MASK"
            if refine is None:
                to_mask()
                return
            with m.If(refine):
                m.d.sync += start_pass(_Phase.REFINE)
                m.d.comb += acc_clear.eq(1)
                m.next = "REFINE"
            with m.Else():
                to_mask()

        m.d.comb += acc_clear.eq(0)
        m.d.sync += count_wr.en.eq(0)             # a count write lasts one cycle (set again in COUNTS)
        with m.FSM(init="COUNTS") as fsm:
            with m.State("COUNTS"):
                cp = self.counts.payload
                n_cur = Mux(first_count, cp.clusters, n_clusters)
                rem_cur = Mux(first_count, cp.clusters, count_rem)
                err_cur = Mux(first_count, (cp.clusters == 0) | (cp.clusters > CAP), job_error)
                m.d.sync += [count_wr.addr.eq(count_word), count_wr.data.eq(cp.counts),
                             count_wr.en.eq(self.counts.valid & ~err_cur)]
                with m.If(self.counts.valid):
                    m.d.sync += [first_count.eq(0), count_rem.eq(rem_cur - L), count_word.eq(count_word + 1)]
                    with m.If(first_count):
                        m.d.sync += [n_clusters.eq(cp.clusters), job_error.eq(err_cur), ratio_r.eq(self.ratio)]
                    with m.If(rem_cur <= L):
                        m.d.sync += [first_count.eq(1), count_word.eq(0), first_row.eq(1)] + start_row(n_cur)
                        with m.If(err_cur):
                            m.next = "SKIP"
                        with m.Else():
                            m.d.comb += acc_clear.eq(1)
                            m.next = "LOAD"

            with m.State("LOAD"):
                with m.If(self.scores.valid):
                    m.d.sync += [load_rem.eq(load_rem - L), load_word.eq(load_word + 1)]
                    with m.If(load_rem <= L):
                        m.d.sync += [job_last.eq(self.scores.payload.last), timer.eq(0)]
                        m.next = "FIN"

            with m.State("FIN"):                  # drain the lane datapath, then the fixed-latency walk
                m.d.sync += timer.eq(timer + 1)
                with m.If(timer == lat["pass"] + lat["fin"] - 2):
                    m.d.sync += e_r.eq(first_hit)        # tloc uses e one cycle later
                with m.If(timer == lat["pass"] + lat["fin"]):
                    if ROW:                       # nothing: no walk, exit 0, a lower bound above every score
                        m.d.sync += [sel_all.eq(all_r), lvl.eq(0), walked.eq(Mux(all_r | none_r, 0, e_r + 1)),
                                     low.eq(Mux(none_r, 1 << (B - 1), (top_run - e_r).as_signed() << S)),
                                     tcmp.eq(tloc)]
                        with m.If(none_r):
                            m.d.sync += e_r.eq(0)
                        refine_or_mask(~all_r & ~none_r & (hit_cnt >= 2) if PASSES else None)
                    else:
                        m.d.sync += [sel_all.eq(all_r), lvl.eq(0), walked.eq(Mux(all_r, 0, e_r + 1)),
                                     low.eq((top_run - e_r).as_signed() << S), tcmp.eq(tloc)]
                        refine_or_mask(~all_r & (hit_cnt >= 2) if PASSES else None)

            if PASSES:
                with m.State("REFINE"):
                    issue_words("WALK")
                with m.State("WALK"):
                    m.d.sync += timer.eq(timer + 1)
                    with m.If(timer == lat["pass"] + lat["walk"] - 1):
                        u = named(m, NBINS - 1 - first_hit, "sub_exit", D)
                        steps = [Cat(Const(0, w - D), u) for w in levels]
                        step = Array(steps)[lvl] if len(levels) > 1 else steps[0]
                        m.d.sync += [lvl.eq(lvl + 1), low.eq(low + step),
                                     tcmp.eq(tcmp - before)]
                        refine_or_mask((lvl + 1 < PASSES) & (hit_cnt >= 2))

            with m.State("MASK"):
                issue_words("MASK_END")
            with m.State("MASK_END"):
                with m.If(~mv):
                    m.d.sync += first_row.eq(0)
                    with m.If(job_last):
                        m.next = "COUNTS"
                    with m.Else():
                        m.d.sync += start_row(n_clusters)
                        m.d.comb += acc_clear.eq(1)
                        m.next = "LOAD"

            with m.State("SKIP"):
                with m.If(self.scores.valid):
                    m.d.sync += load_rem.eq(load_rem - L)
                    with m.If(load_rem <= L):
                        m.d.sync += job_last.eq(self.scores.payload.last)
                        m.next = "ERROR"
            with m.State("ERROR"):
                with m.If((row_room != 0) & (~job_last | (group_room != 0))):
                    m.d.comb += [row_load.eq(1), group_load.eq(job_last),
                                 row_next.last.eq(1), row_next.job_last.eq(job_last), row_next.error.eq(1),
                                 group_next.last.eq(1), group_next.error.eq(1)]
                    with m.If(job_last):
                        m.next = "COUNTS"
                    with m.Else():
                        m.d.sync += load_rem.eq(n_clusters)
                        m.next = "SKIP"

        # ---- mask pass outputs (stage A) -----------------------------------------------------------------------
        amask = Cat(*[v & (sel_all | (x >= low)) for v, x in zip(valid, a_s)])
        mask_beat = named(m, Mux(av, amask, 0), "mask_beat", L)
        agg_beat = Mux(first_row, mask_beat, a_agg | mask_beat)
        m.d.comb += [agg_wr.data.eq(agg_beat), agg_wr.en.eq(a_consume)]
        with m.If(a_consume):
            selected_now = sel_count + popcount(mask_beat)
            m.d.comb += [row_load.eq(1), group_load.eq(job_last),
                         row_next.mask.eq(mask_beat), row_next.last.eq(a_rem <= L),
                         row_next.job_last.eq(job_last), row_next.selected.eq(selected_now),
                         row_next.exit_bucket.eq(Mux(sel_all, 0, e_r)), row_next.buckets_walked.eq(walked),
                         group_next.mask.eq(agg_beat), group_next.last.eq(a_rem <= L)]
            m.d.sync += sel_count.eq(selected_now)

        reading = fsm.ongoing("MASK") | (fsm.ongoing("REFINE") if PASSES else Const(0))
        m.d.comb += [self.counts.ready.eq(fsm.ongoing("COUNTS")),
                     self.scores.ready.eq(fsm.ongoing("LOAD") | fsm.ongoing("SKIP")),
                     load_accept.eq(fsm.ongoing("LOAD") & self.scores.valid),
                     issue.eq(reading & (rd_rem != 0) & (~mask_phase | mask_room))]
        return m


def register_queue(m, name, port, push, data_in, depth, pop=None):
    """A ``depth``-entry queue of registers feeding stream ``port``: ``push`` writes ``data_in`` (the caller
    guarantees room); ``pop`` is the port's handshake (``port.valid & port.ready`` unless the caller has it named
    already). Returns the room it has this cycle (free entries plus the one the port hands over now), which is what
    may be in flight. The payload is an entry register, defined while not valid."""
    entries = [Signal.like(data_in, name=f"{name}_e{i}") for i in range(depth)]
    head, tail, count = Signal(range(depth)), Signal(range(depth)), Signal(range(depth + 1))
    if pop is None:
        pop = named(m, port.valid & port.ready, f"{name}_pop")
    m.d.comb += [port.valid.eq(count != 0), port.payload.eq(Array(entries)[head])]
    with m.If(push):
        m.d.sync += [Array(entries)[tail].eq(data_in), tail.eq(Mux(tail == depth - 1, 0, tail + 1))]
    with m.If(pop):
        m.d.sync += head.eq(Mux(head == depth - 1, 0, head + 1))
    m.d.sync += count.eq(count + push - pop)
    return depth - count + pop


def _sum_named(m, values, name):
    """``sum(values)`` as a named signal; a single value is returned as it is (a name would be an unused alias)."""
    return values[0] if len(values) == 1 else named(m, sum_tree(values), name)


def _ratio_product(m, total, ratio, ratio_bits):
    """``total · ratio`` as a registered adder tree over the ``ratio_bits + 1`` gated, shifted copies of ``total``
    (one tree level per register), each add split into ``RATIO_SEGMENTS`` staggered segments: segment ``s`` of a
    level adds the segment-``s`` bits of its operands and the carry out of segment ``s − 1``, registered one
    cycle earlier. No carry crosses more than a segment in one cycle, whatever the mapper makes of the adder
    (ABC's area recovery rebuilt a one-cycle 54-bit add as a 38-bit carry chain, the WTU's critical path at
    765 MHz scaled). Segment ``s`` of the leaves is taken from ``s``-cycle delayed copies of ``total`` and
    ``ratio``; the output's segments are re-aligned at the end.

    Latency: ``ceil(log2(ratio_bits + 1)) + RATIO_SEGMENTS − 1`` cycles (``vrex.golden.dre.wtu.linear.exp2_latencies``)."""
    width = len(total) + ratio_bits + 1
    n = ratio_bits + 1
    seg = -(-width // RATIO_SEGMENTS)
    bounds = [(s * seg, min(width, (s + 1) * seg)) for s in range(RATIO_SEGMENTS) if s * seg < width]
    # copy s of the operands, s cycles late, feeds segment s of the leaves: (total's bits from `base` up, ratio,
    # base); segment s reads no bit of total below its lowest bit minus ratio_bits
    copies = [(total, ratio, 0)]
    for s in range(1, len(bounds)):
        base = max(0, bounds[s][0] - ratio_bits)
        t_d = Signal(len(total) - base, name=f"ratio_total_d{s}")
        r_d = Signal.like(ratio, name=f"ratio_ratio_d{s}")
        t_prev, r_prev, b_prev = copies[-1]
        m.d.sync += [t_d.eq(t_prev[base - b_prev:]), r_d.eq(r_prev)]
        copies.append((t_d, r_d, base))
    terms = []
    for j in range(n):
        segs = []
        for s, (lo, hi) in enumerate(bounds):
            t_s, r_s, base = copies[s]
            leaf = Value.cast(Mux(r_s[j], t_s, 0) << (j + base))[lo:hi]
            segs.append(Cat(leaf, Const(0, hi - lo - len(leaf))) if len(leaf) < hi - lo else leaf)
        terms.append(segs)
    level = 0
    while len(terms) > 1:
        nxt = []
        for i in range(0, len(terms), 2):
            out = []
            if i + 1 == len(terms):                # the odd term passes through a register per segment
                for s, v in enumerate(terms[i]):
                    r = Signal(len(v), name=f"ratio_l{level}_{i}_s{s}")
                    m.d.sync += r.eq(v)
                    out.append(r)
                nxt.append(out)
                continue
            carry = Const(0, 1)
            for s, (a, b) in enumerate(zip(terms[i], terms[i + 1])):
                r = Signal(len(a), name=f"ratio_l{level}_{i}_s{s}")
                total_s = a + b + carry
                m.d.sync += r.eq(total_s[:len(a)])
                if s + 1 < len(bounds):
                    c = Signal(name=f"ratio_l{level}_{i}_c{s}")
                    m.d.sync += c.eq(total_s[len(a)])
                    carry = c
                out.append(r)
            nxt.append(out)
        terms, level = nxt, level + 1
    segs = terms[0]
    aligned = []
    for s, v in enumerate(segs):                   # segment s is ready s cycles after segment 0
        for d in range(len(segs) - 1 - s):
            r = Signal(len(v), name=f"ratio_out_s{s}_d{d}")
            m.d.sync += r.eq(v)
            v = r
        aligned.append(v)
    return Cat(*aligned)


def _prefix_pipeline(m, values, width, add0=None):
    """Inclusive prefix sums of ``values`` (Kogge-Stone), one adder level per register stage. ``add0`` is added to
    every sum: at the first level, to the first value and to the second value's sum (the only one that reads the
    first value before it is registered; a three-input add there), so every later level reads sums that hold it."""
    cur, n, d, level = list(values), len(values), 1, 0
    while d < n:
        regs = [Signal(width, name=f"pfx{level}_{i}") for i in range(n)]
        sums = [cur[i] + cur[i - d] if i >= d else cur[i] for i in range(n)]
        if level == 0 and add0 is not None:
            sums[0], sums[1] = cur[0] + add0, cur[1] + cur[0] + add0
        m.d.sync += [r.eq(v) for r, v in zip(regs, sums)]
        cur, d, level = regs, d * 2, level + 1
    return cur


def _priority(bits, n):
    """Index of the lowest set bit of the ``n - 1`` bits ``bits`` (n - 1 if none)."""
    out = Const(n - 1, range(n))
    for i in reversed(range(n - 1)):
        out = Mux(bits[i], i, out)
    return out
