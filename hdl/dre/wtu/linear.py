"""WTU — WiCSum threshold unit: per-row cluster selection (WiCSum or fixed top-k) and GQA-group aggregation.

Why one file of over 500 lines: one pipelined component (the passes of the linear rule share their counters and
lanes inside ``elaborate``); the exp2 rule is its own file (exp.py).
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.hdl.arith import named, popcount, sum_tree
from vrex.hdl.dre.wtu.lanes import lane_valid, masked_max, masked_min, masked_sum, prefix_counts
from vrex.hdl.dre.wtu.layouts import (WTUGeometry, wtu_counts_layout, wtu_group_layout, wtu_row_layout, wtu_scores_layout)

__all__ = ["WTU", "wtu_for"]


def wtu_for(geometry: WTUGeometry):
    """The WTU component of a geometry: :class:`WTU`, or :class:`vrex.hdl.dre.wtu.exp.ExpWTU` for the exp2 transform
    (same ports and protocol)."""
    if geometry.exp2:
        from vrex.hdl.dre.wtu.exp import ExpWTU
        return ExpWTU(geometry)
    return WTU(geometry)


class _Phase(enum.Enum, shape=3):
    """Which pass owns the lane pipeline (stage B and C registers)."""
    LOAD = 0
    PASS = 1     # early_exit bucket pass
    BIN = 2      # histogram binning pass
    DIGIT = 3    # top-k refinement pass
    MASK = 4


def lanes_of(m, name, shape, values):
    """One named comb signal per lane (``name`` + lane index), driven by ``values`` (so each expression is built
    once); ``shape=None`` keeps each expression's own shape (see :func:`~.arith.named`)."""
    return [named(m, v, f"{name}{lane}", shape) for lane, v in enumerate(values)]


class WTU(wiring.Component):
    """WiCSum threshold unit: selects clusters per score row and ORs the rows of a job (a GQA group).

    One *job* is one GQA group of one (layer, KV head): the token counts of its ``N`` clusters, then ``R ≥ 1``
    rows of ``N`` scores (one row per query token × query head). For every row the unit emits the row's cluster
    mask, and after the job's last row the OR of the rows' masks. Selection semantics are those of
    ``vrex.golden.dre.wtu.linear.select_row`` (docs/formats.md §WTU), bit for bit.

    Parameters
    ----------
    geometry : WTUGeometry
        Lanes, mode, buckets, widths and row capacity (``WTUGeometry.from_config(cfg)``).

    Members
    -------
    counts : In(stream.Signature(wtu_counts_layout))
        ``max(1, ceil(N / lanes))`` beats per job: ``counts[l]`` is the token count of cluster
        ``beat·lanes + l`` (lanes ≥ N in the last beat are ignored); ``clusters`` = N, taken from the job's first
        beat.
    scores : In(stream.Signature(wtu_scores_layout))
        Per row ``max(1, ceil(N / lanes))`` beats of signed scores in the same cluster order; ``last`` on a row's
        final beat marks the job's last row. exp2 with ``resv.threshold_mass = row``: also the row's resident input
        ``res_max`` / ``res_sum`` on its first beat (:class:`vrex.hdl.dre.wtu.exp.ExpWTU`).
    row : Out(stream.Signature(wtu_row_layout))
        Per row ``ceil(N / lanes)`` beats: ``mask`` bit l = cluster ``beat·lanes + l`` selected (0 beyond N);
        ``last`` on the row's final beat; ``job_last`` on every beat of the job's last row; ``selected`` = number
        of selected clusters up to and including this beat; ``exit_bucket`` / ``buckets_walked`` as the golden
        ``RowSelection`` (0 in top-k mode); ``error`` = 0.
    group : Out(stream.Signature(wtu_group_layout))
        Per job ``ceil(N / lanes)`` beats of the OR of the job's row masks, ``last`` on the final beat.
    ratio : In(ratio_bits + 1)   (``early_exit`` and ``histogram`` modes)
        WiCSum ratio, unsigned Q0.ratio_bits (2**ratio_bits = 1.0; larger values are allowed and select all).
    k : In(bit_length(capacity))   (``topk`` mode)
        Clusters kept per row.

    Protocol
    --------
    Counts, then rows, then the next job; ``counts.ready`` is high only between jobs and ``scores.ready`` only
    while a row is being loaded, so producers may run ahead. ``ratio`` / ``k`` are sampled with the job's first
    count beat and hold for the whole job. Any back-pressure pattern is tolerated: outputs are registered,
    payloads are stable while ``valid`` is high, and a stalled output stalls the masking pass (the last row's
    masking pass advances only when both ``row`` and ``group`` have room).

    Micro-architecture (``lanes`` clusters per cycle)
    -----------------------------------------------
    Memories (``amaranth.lib.memory``, ``capacity / lanes`` words): scores (lanes × score_bits), counts
    (lanes × count_bits; WiCSum modes only) and the aggregated mask (lanes bits), one read and one write port
    each. A *pass* reads the row once, one word per cycle, through a two-stage lane pipeline (stage B: memory
    data → transform, bucket compare, products; stage C: adder tree → accumulator).

    - **Load** (all modes): the score beats are written to the score memory while the pipeline computes the
      preprocess of paper Fig. 11 on the fly: min and max of the row and Σ s·c. With ``shift_min`` the total is
      then Σ s'·c = Σ s·c − min·Σc (exact; Σc is summed while the counts arrive), so no separate preprocess
      pass is needed. Three finishing cycles compute the total, T = (total·ratio) >> ratio_bits, the bucket
      shift ``sh`` (smallest with (hi − lo) >> sh < buckets) and the top bucket.
    - ``early_exit``: one pass per bucket from the top: the lower bucket sorter keeps the lanes with
      s' ≥ lo + b·2^sh (the walked buckets so far), the multipliers and the adder tree give the running sum,
      which is compared with T; the walk stops at the first bucket whose running sum exceeds T. Bucket 0 needs
      no pass (its running sum is the total). No pass at all when top = 0 or T ≥ total (everything selected).
    - ``histogram``: one binning pass accumulates Σ s'·c of every bucket (``buckets`` masked adder trees), then
      the walk over the bucket sums takes one cycle per bucket.
    - ``topk``: exact bucket select. Each refinement pass counts, within the current window, the scores of
      each of 2^D bins (D = floor(log2(buckets)); the first window is [min, max] with power-of-two bin widths),
      then walks the bins from the top (one cycle per bin) to the bin holding the k-th largest score; the
      window shrinks to that bin and the bin width by 2^D, until the width is 1 (the k-th value v is then
      exact). Passes: 1 + ceil(sh0 / D).
    - **Mask** (all modes): one pass emits the row mask (WiCSum: s' ≥ the exit bucket's lower bound; top-k:
      s > v, plus the first k − #(s > v) scores equal to v in cluster order, from a running prefix count), ORs
      it into the aggregation memory (the first row of a job writes it) and, on the job's last row, emits the
      group mask.

    Latency and throughput (no back-pressure; W = ceil(N / lanes))
    -------------------------------------------------------------
    Per row ``2W + 6`` cycles plus the selection: early_exit ``P·(W + 3)`` (P bucket passes), histogram
    ``W + 2 + walked`` (0 if everything is selected at once), top-k ``Σ_passes (W + 2 + bins walked)``; per job
    ``W`` more for the counts. ``vrex.golden.dre.wtu.linear.wtu_row_cycles`` gives the exact figure for any row.

    Tie rules
    ---------
    WiCSum: bucket granularity — every cluster of a walked bucket is selected. Top-k: ties at the k-th value
    go to the lower cluster index.

    Limits and flags
    ----------------
    A job needs 1 ≤ N ≤ capacity. Otherwise (``clusters`` = 0 or > capacity) the job is rejected: its count
    and score beats are consumed and dropped (``max(1, ceil(N / lanes))`` per row, nothing is written), each
    row yields one ``row`` beat with ``error = 1``, ``last = 1`` and an empty mask, and the job one ``group``
    beat with ``error = 1``, ``last = 1``. The unit then takes the next job normally.
    """

    def __init__(self, geometry: WTUGeometry):
        self._g = g = geometry
        members = {
            "counts": In(stream.Signature(wtu_counts_layout(g))),
            "scores": In(stream.Signature(wtu_scores_layout(g))),
            "row": Out(stream.Signature(wtu_row_layout(g))),
            "group": Out(stream.Signature(wtu_group_layout(g))),
        }
        if g.mode == "topk":
            members["k"] = In(g.clusters_bits)
        else:
            members["ratio"] = In(g.ratio_bits + 1)
        super().__init__(members)

    @classmethod
    def from_config(cls, cfg):
        """The WTU of ``cfg``: this class, or :class:`vrex.hdl.dre.wtu.exp.ExpWTU` for ``resv.score_transform = exp2``
        (same ports and protocol)."""
        return wtu_for(WTUGeometry.from_config(cfg))

    def elaborate(self, platform):
        m = Module()
        g = self._g
        L, B, R = g.lanes, g.score_bits, g.ratio_bits
        CAP, NB, WORDS = g.capacity, g.clusters_bits, g.words
        D, BINS = g.digit_bits, g.topk_bins
        wicsum, topk = g.mode != "topk", g.mode == "topk"
        shift_min = g.transform == "shift_min"
        SHW = (B + D + 1).bit_length()        # shift amounts 0 .. B + D
        ACCW = B + g.count_bits + NB + 2      # signed accumulator (Σ s·c of a row may be negative)
        DEPTH = max(2, WORDS)                 # a one-word row still gets a 1-bit address (no zero-width ports)

        # ---- memories ------------------------------------------------------------------------------------
        m.submodules.score_mem = score_mem = memory.Memory(
            shape=data.ArrayLayout(signed(B), L), depth=DEPTH, init=[])
        score_wr, score_rd = score_mem.write_port(), score_mem.read_port()
        m.submodules.agg_mem = agg_mem = memory.Memory(shape=unsigned(L), depth=DEPTH, init=[])
        agg_wr, agg_rd = agg_mem.write_port(), agg_mem.read_port()
        if wicsum:
            m.submodules.count_mem = count_mem = memory.Memory(
                shape=data.ArrayLayout(unsigned(g.count_bits), L), depth=DEPTH, init=[])
            count_wr, count_rd = count_mem.write_port(), count_mem.read_port()

        # ---- job and row state -----------------------------------------------------------------------------
        n_clusters = Signal(NB)
        job_error = Signal()
        first_count = Signal(init=1)
        count_rem = Signal(NB)
        count_word = Signal(range(DEPTH))
        count_sum = Signal(g.count_sum_bits)
        ratio_r = Signal(R + 1)
        k_r = Signal(NB)
        first_row = Signal()
        job_last = Signal()
        load_rem = Signal(NB)
        load_word = Signal(range(DEPTH))

        smin = Signal(signed(B))
        smax = Signal(signed(B))
        acc = Signal(signed(ACCW))
        total = Signal(g.acc_bits)
        thr = Signal(g.acc_bits + 1)
        lo = Signal(B)                        # min s' (WiCSum)
        rng = Signal(B)                       # hi - lo (WiCSum) or max - min (top-k)
        sh = Signal(SHW)
        top = Signal(g.bucket_bits)
        bk = Signal(g.bucket_bits)            # current bucket / bin
        lower = Signal(B + 1)                 # lower bound of bucket bk: lo + bk·2^sh
        st_exit = Signal(g.bucket_bits)
        st_walked = Signal(g.walked_bits)

        base = Signal(signed(B))              # top-k window base (finally the k-th value v)
        wsh = Signal(SHW)                     # top-k window width 2^wsh
        k_rem = Signal(NB)                    # top-k: ranks still to place inside the window
        cum = Signal(NB + 1)
        sel_all = Signal()
        sel_none = Signal()

        sel_count = Signal(NB)
        eq_run = Signal(NB)

        phase = Signal(_Phase)
        rd_rem = Signal(NB)                   # clusters of the row not yet issued in this pass
        rd_word = Signal(range(DEPTH))

        # stage B: one word of the row (from the load input or from the memories)
        b_valid = Signal()
        b_rem = Signal(NB)
        b_word = Signal(range(DEPTH))
        b_load_scores = Signal(data.ArrayLayout(signed(B), L))
        # stage C: per-lane products / bin indices
        c_valid = Signal()
        prod_shape = signed(B + 1 + g.count_bits)
        c_prod = [Signal(prod_shape, name=f"c_prod{lane}") for lane in range(L)]
        c_bin = [Signal(max(g.bucket_bits, D, 1), name=f"c_bin{lane}") for lane in range(L)]
        c_flag = [Signal(name=f"c_flag{lane}") for lane in range(L)]
        hsum = [Signal(g.acc_bits, name=f"hsum{b}") for b in range(g.buckets)] if g.mode == "histogram" else []
        cnt = [Signal(NB, name=f"cnt{b}") for b in range(BINS)] if topk else []

        # ---- output registers ------------------------------------------------------------------------------
        row_free = ~self.row.valid | self.row.ready
        group_free = ~self.group.valid | self.group.ready
        out_free = row_free & (~job_last | group_free)
        row_load, group_load = Signal(), Signal()
        row_next = Signal(wtu_row_layout(g))
        group_next = Signal(wtu_group_layout(g))
        with m.If(self.row.ready):
            m.d.sync += self.row.valid.eq(0)
        with m.If(row_load):
            m.d.sync += [self.row.valid.eq(1), self.row.payload.eq(row_next)]
        with m.If(self.group.ready):
            m.d.sync += self.group.valid.eq(0)
        with m.If(group_load):
            m.d.sync += [self.group.valid.eq(1), self.group.payload.eq(group_next)]

        # ---- lane pipeline ---------------------------------------------------------------------------------
        pipe_empty = ~b_valid & ~c_valid
        consume = Signal()
        m.d.comb += consume.eq(b_valid & Mux(phase == _Phase.MASK, out_free, 1))
        issue = Signal()
        load_accept = Signal()

        # per-lane values at stage B, materialised once (Amaranth re-lowers an expression at every use)
        valid = lanes_of(m, "valid", 1, lane_valid(b_rem, L))
        s = lanes_of(m, "s", signed(B), [Mux(phase == _Phase.LOAD, b_load_scores[lane], score_rd.data[lane])
                                          for lane in range(L)])
        beat_last = b_rem <= L

        with m.If(load_accept):
            m.d.sync += [b_valid.eq(1), b_rem.eq(load_rem), b_load_scores.eq(self.scores.payload.scores)]
        with m.Elif(issue):
            m.d.sync += [b_valid.eq(1), b_rem.eq(rd_rem), b_word.eq(rd_word)]
        with m.Elif(consume):
            m.d.sync += b_valid.eq(0)
        m.d.sync += c_valid.eq(b_valid & (phase != _Phase.MASK))

        m.d.comb += [score_rd.addr.eq(rd_word), score_rd.en.eq(issue),
                     agg_rd.addr.eq(rd_word), agg_rd.en.eq(issue),
                     score_wr.addr.eq(load_word), score_wr.data.eq(self.scores.payload.scores),
                     score_wr.en.eq(load_accept)]

        # stage B, load: min / max of the row
        lane_min, lane_max = masked_min(m, "lane_min", s, valid, B), masked_max(m, "lane_max", s, valid, B)
        with m.If(b_valid & (phase == _Phase.LOAD)):
            m.d.sync += [smin.eq(Mux(lane_min < smin, lane_min, smin)), smax.eq(Mux(lane_max > smax, lane_max, smax))]

        if wicsum:
            m.d.comb += [count_rd.addr.eq(Mux(load_accept, load_word, rd_word)),
                         count_rd.en.eq(load_accept | issue)]
            # s' (unsigned, B bits): the transformed score
            if shift_min:
                sp = lanes_of(m, "sp", None, [x - smin for x in s])             # 0 .. 2^B - 1
            else:
                sp = lanes_of(m, "sp", None, [Mux(x < 0, 0, x) for x in s])     # 0 .. 2^(B-1) - 1
            in_bucket = [x >= lower for x in sp]
            with m.If(b_valid):
                for lane in range(L):
                    # load with shift_min: Σ s·c of the raw (signed) scores; otherwise s'·c
                    operand = Mux(phase == _Phase.LOAD, s[lane], sp[lane]) if shift_min else sp[lane]
                    product = operand * count_rd.data[lane]
                    keep = valid[lane] & Mux(phase == _Phase.PASS, in_bucket[lane], 1)
                    m.d.sync += c_prod[lane].eq(Mux(keep, product, 0))
                    if g.mode == "histogram":
                        m.d.sync += c_bin[lane].eq(((sp[lane] - lo)[:B] >> sh)[:g.bucket_bits])
            # stage C: adder tree into the accumulator (load, bucket pass) or into the bucket sums (binning)
            with m.If(c_valid & ((phase == _Phase.LOAD) | (phase == _Phase.PASS))):
                m.d.sync += acc.eq(acc + sum_tree(c_prod))
            if g.mode == "histogram":
                with m.If(c_valid & (phase == _Phase.BIN)):
                    for b in range(g.buckets):
                        m.d.sync += hsum[b].eq(hsum[b] + masked_sum(c_prod, [cb == b for cb in c_bin]))
            row_mask = Cat(v & (x >= lower) for v, x in zip(valid, sp))
            eq_flags = None
        else:
            # top-k refinement pass: window and bin of each score
            with m.If(b_valid & (phase == _Phase.DIGIT)):
                for lane in range(L):
                    d = (s[lane] - base).as_unsigned()[:B + 1]
                    inside = valid[lane] & ~d[B] & ((d >> wsh) == 0)
                    m.d.sync += [c_flag[lane].eq(inside), c_bin[lane].eq((d >> sh)[:D])]
            with m.If(c_valid & (phase == _Phase.DIGIT)):
                for b in range(BINS):
                    m.d.sync += cnt[b].eq(cnt[b] + sum_tree([f & (cb == b) for f, cb in zip(c_flag, c_bin)]))
            eq_flags = lanes_of(m, "eq", 1, [v & (x == base) for v, x in zip(valid, s)])
            ranks = [eq_run + p for p in prefix_counts(eq_flags)]
            row_mask = Cat(v & (sel_all | (~sel_none & ((x > base) | (e & (r < k_rem)))))
                           for v, x, e, r in zip(valid, s, eq_flags, ranks))

        # masking pass: row beat, aggregation, group beat
        mask_beat = Signal(L)
        with m.If(b_valid):
            m.d.comb += mask_beat.eq(row_mask)
        agg_beat = Mux(first_row, mask_beat, agg_rd.data | mask_beat)
        mask_consume = consume & (phase == _Phase.MASK)
        m.d.comb += [agg_wr.addr.eq(b_word), agg_wr.data.eq(agg_beat), agg_wr.en.eq(mask_consume)]
        with m.If(mask_consume):
            selected_now = sel_count + popcount(mask_beat)
            m.d.comb += [row_load.eq(1), group_load.eq(job_last),
                         row_next.mask.eq(mask_beat), row_next.last.eq(beat_last),
                         row_next.job_last.eq(job_last), row_next.selected.eq(selected_now),
                         row_next.exit_bucket.eq(st_exit), row_next.buckets_walked.eq(st_walked),
                         group_next.mask.eq(agg_beat), group_next.last.eq(beat_last)]
            m.d.sync += sel_count.eq(selected_now)
            if eq_flags is not None:
                m.d.sync += eq_run.eq(eq_run + popcount(Cat(*eq_flags)))

        # ---- control ---------------------------------------------------------------------------------------
        def start_row(n):
            return [load_rem.eq(n), load_word.eq(0), phase.eq(_Phase.LOAD), acc.eq(0),
                    smin.eq((1 << (B - 1)) - 1), smax.eq(-(1 << (B - 1)))]

        def start_pass(kind):
            return [rd_rem.eq(n_clusters), rd_word.eq(0), phase.eq(kind)]

        def start_mask():
            return start_pass(_Phase.MASK) + [sel_count.eq(0), eq_run.eq(0)]

        def issue_words(next_state):
            with m.If(issue):
                m.d.sync += [rd_rem.eq(Mux(rd_rem > L, rd_rem - L, 0)), rd_word.eq(rd_word + 1)]
                with m.If(rd_rem <= L):
                    m.next = next_state

        with m.FSM(init="COUNTS") as fsm:
            with m.State("COUNTS"):
                cp = self.counts.payload
                n_cur = Mux(first_count, cp.clusters, n_clusters)
                rem_cur = Mux(first_count, cp.clusters, count_rem)
                err_cur = Mux(first_count, (cp.clusters == 0) | (cp.clusters > CAP), job_error)
                if wicsum:
                    m.d.comb += [count_wr.addr.eq(count_word), count_wr.data.eq(cp.counts),
                                 count_wr.en.eq(self.counts.valid & ~err_cur)]
                with m.If(self.counts.valid):
                    m.d.sync += [first_count.eq(0), count_rem.eq(rem_cur - L), count_word.eq(count_word + 1)]
                    if wicsum and shift_min:
                        m.d.sync += count_sum.eq(Mux(first_count, 0, count_sum)
                                                 + masked_sum(cp.counts, lane_valid(rem_cur, L)))
                    with m.If(first_count):
                        m.d.sync += [n_clusters.eq(cp.clusters), job_error.eq(err_cur)]
                        m.d.sync += k_r.eq(self.k) if topk else ratio_r.eq(self.ratio)
                    with m.If(rem_cur <= L):
                        m.d.sync += [first_count.eq(1), count_word.eq(0), first_row.eq(1)] + start_row(n_cur)
                        with m.If(err_cur):
                            m.next = "SKIP"
                        with m.Else():
                            m.next = "LOAD"

            with m.State("LOAD"):
                with m.If(self.scores.valid):
                    m.d.sync += [load_rem.eq(load_rem - L), load_word.eq(load_word + 1)]
                    with m.If(load_rem <= L):
                        m.d.sync += job_last.eq(self.scores.payload.last)
                        m.next = "FIN1"

            with m.State("FIN1"):
                with m.If(pipe_empty):
                    if wicsum and shift_min:
                        m.d.sync += [total.eq(acc - smin * count_sum), lo.eq(0), rng.eq((smax - smin)[:B])]
                    elif wicsum:
                        lo_v, hi_v = Mux(smin < 0, 0, smin), Mux(smax < 0, 0, smax)
                        m.d.sync += [total.eq(acc), lo.eq(lo_v), rng.eq((hi_v - lo_v)[:B])]
                    else:
                        m.d.sync += [rng.eq((smax - smin)[:B]), base.eq(smin)]
                    m.next = "FIN2"

            with m.State("FIN2"):
                limit = g.buckets if wicsum else BINS
                sh_v = sum_tree([(rng >> s_) >= limit for s_ in range(B + 1)])
                top_v = (rng >> sh_v)[:g.bucket_bits]
                m.d.sync += [sh.eq(sh_v), top.eq(top_v), bk.eq(top_v)]
                if wicsum:
                    m.d.sync += [thr.eq((total * ratio_r) >> R), lower.eq(lo + ((rng >> sh_v) << sh_v))]
                else:
                    m.d.sync += [wsh.eq(sh_v + D), k_rem.eq(k_r), cum.eq(0)] + [c.eq(0) for c in cnt]
                m.next = "FIN3"

            with m.State("FIN3"):
                if wicsum:
                    with m.If((top == 0) | (thr >= total)):
                        m.d.sync += [st_exit.eq(0), st_walked.eq(top + 1), lower.eq(lo)] + start_mask()
                        m.next = "MASK"
                    with m.Else():
                        m.d.sync += acc.eq(0)
                        if g.mode == "early_exit":
                            m.d.sync += start_pass(_Phase.PASS)
                            m.next = "PASS"
                        else:
                            m.d.sync += start_pass(_Phase.BIN) + [h.eq(0) for h in hsum]
                            m.next = "BIN"
                else:
                    m.d.sync += [st_exit.eq(0), st_walked.eq(0),
                                 sel_all.eq(k_r >= n_clusters), sel_none.eq(k_r == 0)]
                    with m.If((k_r == 0) | (k_r >= n_clusters)):
                        m.d.sync += start_mask()
                        m.next = "MASK"
                    with m.Else():
                        m.d.sync += start_pass(_Phase.DIGIT)
                        m.next = "DIGIT"

            if g.mode == "early_exit":
                with m.State("PASS"):
                    issue_words("CHECK")
                with m.State("CHECK"):
                    with m.If(pipe_empty):
                        with m.If(acc > thr):
                            m.d.sync += [st_exit.eq(bk), st_walked.eq(top - bk + 1)] + start_mask()
                            m.next = "MASK"
                        with m.Elif(bk == 1):
                            m.d.sync += [st_exit.eq(0), st_walked.eq(top + 1), lower.eq(lo)] + start_mask()
                            m.next = "MASK"
                        with m.Else():
                            m.d.sync += [bk.eq(bk - 1), lower.eq(lower - (Const(1) << sh)), acc.eq(0)]
                            m.d.sync += start_pass(_Phase.PASS)
                            m.next = "PASS"

            if g.mode == "histogram":
                with m.State("BIN"):
                    issue_words("WALK")
                with m.State("WALK"):
                    with m.If(pipe_empty):
                        acc_next = acc + Array(hsum)[bk]
                        with m.If((acc_next > thr) | (bk == 0)):
                            m.d.sync += [st_exit.eq(bk), st_walked.eq(top - bk + 1)] + start_mask()
                            m.next = "MASK"
                        with m.Else():
                            m.d.sync += [acc.eq(acc_next), bk.eq(bk - 1), lower.eq(lower - (Const(1) << sh))]

            if topk:
                with m.State("DIGIT"):
                    issue_words("TWALK")
                with m.State("TWALK"):
                    with m.If(pipe_empty):
                        cum_next = cum + Array(cnt)[bk]
                        with m.If((cum_next >= k_rem) | (bk == 0)):
                            m.d.sync += [k_rem.eq(k_rem - cum), base.eq(base + (bk << sh))]
                            with m.If(sh == 0):
                                m.d.sync += start_mask()
                                m.next = "MASK"
                            with m.Else():
                                narrow = sh > D
                                m.d.sync += [wsh.eq(sh), sh.eq(Mux(narrow, sh - D, 0)),
                                             bk.eq(Mux(narrow, BINS - 1, (Const(1) << sh) - 1)), cum.eq(0)]
                                m.d.sync += [c.eq(0) for c in cnt] + start_pass(_Phase.DIGIT)
                                m.next = "DIGIT"
                        with m.Else():
                            m.d.sync += [cum.eq(cum_next), bk.eq(bk - 1)]

            with m.State("MASK"):
                issue_words("MASK")
                with m.If(mask_consume & beat_last):
                    m.d.sync += first_row.eq(0)
                    with m.If(job_last):
                        m.next = "COUNTS"
                    with m.Else():
                        m.d.sync += start_row(n_clusters)
                        m.next = "LOAD"

            # rejected job: drop the score beats of each row, then flag the row (and the group)
            with m.State("SKIP"):
                with m.If(self.scores.valid):
                    m.d.sync += load_rem.eq(load_rem - L)
                    with m.If(load_rem <= L):
                        m.d.sync += job_last.eq(self.scores.payload.last)
                        m.next = "ERROR"
            with m.State("ERROR"):
                with m.If(out_free):
                    m.d.comb += [row_load.eq(1), group_load.eq(job_last),
                                 row_next.last.eq(1), row_next.job_last.eq(job_last), row_next.error.eq(1),
                                 group_next.last.eq(1), group_next.error.eq(1)]
                    with m.If(job_last):
                        m.next = "COUNTS"
                    with m.Else():
                        m.d.sync += load_rem.eq(n_clusters)
                        m.next = "SKIP"
        # Handshakes and pipeline strobes are plain expressions of the state (continuous assignments in the
        # Verilog), so they are defined from time 0 in every simulator, before the state first changes.
        reading = fsm.ongoing("MASK")
        for name in ("PASS", "BIN", "DIGIT"):
            if name in fsm.encoding:
                reading |= fsm.ongoing(name)
        m.d.comb += [self.counts.ready.eq(fsm.ongoing("COUNTS")),
                     self.scores.ready.eq(fsm.ongoing("LOAD") | fsm.ongoing("SKIP")),
                     load_accept.eq(fsm.ongoing("LOAD") & self.scores.valid),
                     issue.eq(reading & (rd_rem != 0) & (~b_valid | consume))]
        return m
