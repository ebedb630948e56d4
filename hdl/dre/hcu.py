"""HCU: the hash-bit cluster unit. Assigns each token code to the nearest open cluster, or opens a new one.

Why one file of over 500 lines: the HCU's ``elaborate`` is one pipeline whose stages share signals; its code
memory, frame buffer and argmin helpers follow it.
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from vrex.errors import ConfigError

from vrex.hdl.arith import named, popcount

__all__ = ["HCU", "hcu_input_layout", "hcu_output_layout", "hcu_token_bits", "FRAME_BUFFER_MIN_CODES"]

# The current-frame buffer (a memory plus a registered read port) streams one item per cycle from depth 3 up.
FRAME_BUFFER_MIN_CODES = 3


def hcu_token_bits(recent_window_tokens):
    """Width of the token index: a job's tokens all enter the recent window, so it indexes 0 .. window-1."""
    return max(1, (recent_window_tokens - 1).bit_length())


def hcu_input_layout(code_bits):
    return data.StructLayout({
        "code": code_bits,   # a token's hash code, or an open cluster's code when `preload` is set
        "preload": 1,        # 1: store `code` in the next free slot (no output); 0: assign the token
        "last": 1,           # last item of the job; the next item starts a new job with an empty table
    })


def hcu_output_layout(code_bits, capacity, token_bits):
    return data.StructLayout({
        "token": token_bits,                   # index of the token within its job (modulo 2**token_bits)
        "cluster": unsigned((capacity).bit_length()),   # slot 0..capacity-1; capacity = spilled singleton
        "distance": code_bits.bit_length(),    # Hamming distance to the joined slot; 0 when new
        "new": 1,                              # the token opened a cluster (or spilled)
        "full": 1,                             # the table was full when the token needed a slot
        "first": 1,                            # first token of the job
        "last": 1,                             # last token of the job (the input item had `last`)
    })


class HCU(wiring.Component):
    """Hash-bit cluster unit: nearest-open-cluster assignment by Hamming distance, with early exit.

    A *job* clusters the tokens of one frame for one (layer, KV head) context, exactly as
    ``vrex.golden.dre.hcu.reference.hcu_assign`` (docs/formats.md §HCU): the job's preload items store the open cluster codes
    in slots ``0 .. n-1``; each token item is compared with every occupied slot and joins the nearest one
    (``nearest``, ties to the lowest slot) or the lowest one (``first``) whose distance is below the threshold;
    otherwise it opens slot ``count`` with its own code, or, when the table is full, sets ``full`` and follows
    ``full_policy`` (``spill``: cluster id ``capacity``, nothing stored; ``join_nearest``: the nearest slot).

    Parameters
    ----------
    code_bits : int
        Hash code width B (``resv.hash_bits``).
    lanes : int
        N slots compared per cycle (``dre.hcu.lanes``); slot ``s`` is lane ``s % N`` of lane group ``s // N``.
    bits_per_cycle : int
        b code bits each lane examines per cycle; ``S = B / b`` slices (1 = parallel, B = bit-serial).
    capacity : int
        Slots in the code memory (``cfg.hcu_capacity``); a multiple of ``lanes``.
    frame_tokens : int
        Depth of the current-frame buffer in front of the comparator (``cfg.hcu_frame_tokens``), ≥ 3.
    token_bits : int
        Width of the output token index.
    early_exit : bool
        Enable the early exits below (``dre.hcu.early_exit``); disabled, every token takes the worst case.
    pipeline_stages : int
        P: register stages from the lane array to the exit/select logic (``dre.hcu.pipeline_stages``).
    assignment : "nearest" | "first"
    full_policy : "spill" | "join_nearest"

    Members
    -------
    i : In(stream.Signature(hcu_input_layout(code_bits)))
        Items ``{code, preload, last}``. A job is the items up to and including the one with ``last``; its
        preload items come first. Preload items beyond the capacity are dropped (``preload_overflow``).
    o : Out(stream.Signature(hcu_output_layout(code_bits, capacity, token_bits)))
        One assignment per token, in order: ``{token, cluster, distance, new, full, first, last}``.
    threshold : In(bit_length(code_bits) + 1)
        Th_hd; a token joins only at a distance strictly below it (0: nothing joins; ≥ B + 1: everything
        joins). Quasi-static: latched when a job's first item enters the engine (at the latest when the job's
        first assignment appears) and held for the job; change it while ``busy`` is 0 to switch between jobs.
    busy : Out(1)
        Items are buffered, being processed, or an assignment waits at ``o``.
    open_slots : Out(range(capacity + 1))
        Occupied slots of the current (or last) job.
    preload_overflow : Out(1)
        Sticky for the job: a preload item found the table full and was dropped.
    group_exit, scan_stop : Out(1)
        One-cycle strobes for event counters: a lane group ended before its last slice because every lane
        exited; a token's scan ended before its last open group.

    Micro-architecture and timing
    -----------------------------
    The code memory (``amaranth.lib.memory``) holds ``capacity / N`` rows of N codes (write granularity one
    code; a single row is a register); a row is read once per lane group and held while its slices are
    compared. A slice multiplexer feeds b bits of each lane to an XOR + popcount lane array whose partial
    distances accumulate over the slices. The current-frame buffer holds ``frame_tokens`` items: ``frame_tokens -
    1`` in an ``amaranth.lib.memory`` memory and one in its registered read port (2 cycles from ``i`` to the
    engine). A preload item that follows a token of the same job also appends a slot (the golden model has no
    such job).

    A lane can still win only while its partial distance is below the *bound*: the threshold, tightened in
    ``nearest`` mode to the best distance of the earlier groups (equal does not win: ties keep the lower slot);
    with a full table and ``join_nearest`` only the best distance bounds. Early exit ends a group after the
    first slice after which no lane is below the bound, stops the scan after a ``first`` hit or once the bound is
    0, and skips the scan of a token whose bound starts at 0. None of this changes any result.

    Under no back-pressure a preload item takes 1 cycle and a token ``1`` cycle without comparisons, else
    ``sum_{g<f} min(S, n(g) + P - 1) + n(f) + P`` cycles (``n(g)`` slices run by group ``g``, ``f`` the last
    group scanned); the worst case (no exit) is ``P + ceil(count / N) * S``. ``vrex.golden.dre.hcu.reference.hcu_cycles``
    computes it exactly. Tokens and jobs follow each other without idle cycles; the assignment of a token
    appears at ``o`` the cycle after its decision.

    Every port tolerates any back-pressure: the buffer absorbs input stalls, and a decision waits for ``o``
    (nothing is written or counted before the assignment is handed over).
    """

    def __init__(self, *, code_bits, lanes, bits_per_cycle, capacity, frame_tokens, token_bits, early_exit=True,
                 pipeline_stages=1, assignment="nearest", full_policy="spill"):
        if code_bits < 1 or lanes < 1 or bits_per_cycle < 1 or code_bits % bits_per_cycle:
            raise ValueError(f"bits_per_cycle ({bits_per_cycle}) must divide code_bits ({code_bits}); lanes "
                             f"({lanes}) must be ≥ 1")
        if capacity < lanes or capacity % lanes:
            raise ValueError(f"capacity ({capacity}) must be a positive multiple of lanes ({lanes})")
        if frame_tokens < FRAME_BUFFER_MIN_CODES:
            raise ValueError(f"frame_tokens ({frame_tokens}) must be ≥ {FRAME_BUFFER_MIN_CODES}")
        if assignment not in ("nearest", "first") or full_policy not in ("spill", "join_nearest"):
            raise ValueError(f"unknown assignment {assignment!r} or full policy {full_policy!r}")
        if not 1 <= pipeline_stages <= 4 or token_bits < 1:
            raise ValueError(f"pipeline_stages ({pipeline_stages}) must be 1..4, token_bits ({token_bits}) ≥ 1")
        self._code_bits, self._lanes, self._bits_per_cycle = code_bits, lanes, bits_per_cycle
        self._capacity, self._frame_tokens, self._token_bits = capacity, frame_tokens, token_bits
        self._early_exit, self._pipeline_stages = bool(early_exit), pipeline_stages
        self._assignment, self._full_policy = assignment, full_policy
        super().__init__({
            "i": In(stream.Signature(hcu_input_layout(code_bits))),
            "o": Out(stream.Signature(hcu_output_layout(code_bits, capacity, token_bits))),
            "threshold": In(code_bits.bit_length() + 1),
            "busy": Out(1),
            "open_slots": Out(range(capacity + 1)),
            "preload_overflow": Out(1),
            "group_exit": Out(1),
            "scan_stop": Out(1),
        })

    @classmethod
    def from_config(cls, cfg):
        """Build from a Config; raise ConfigError for a combination this HCU cannot implement."""
        if cfg.resv.cluster_code != "first":
            raise ConfigError("resv.cluster_code", cfg.resv.cluster_code,
                              "cannot be built by the HCU: its code memory is write-once (a cluster's code is its "
                              "first member's); use `first`, or evaluate `majority` in the golden model only.")
        if cfg.hcu_frame_tokens < FRAME_BUFFER_MIN_CODES:
            need = -(-FRAME_BUFFER_MIN_CODES * cfg.resv.hash_bits // 8)
            raise ConfigError("dre.hcu.current_memory_bytes", cfg.dre.hcu.current_memory_bytes,
                              f"holds {cfg.hcu_frame_tokens} code(s) of resv.hash_bits ({cfg.resv.hash_bits}) bits; "
                              f"the HCU's current-frame buffer needs at least {FRAME_BUFFER_MIN_CODES} to take one "
                              f"code per cycle: set it to ≥ {need} bytes.")
        h = cfg.dre.hcu
        return cls(code_bits=cfg.resv.hash_bits, lanes=h.lanes, bits_per_cycle=h.bits_per_cycle,
                   capacity=cfg.hcu_capacity, frame_tokens=cfg.hcu_frame_tokens,
                   token_bits=hcu_token_bits(cfg.resv.recent_window_tokens), early_exit=h.early_exit,
                   pipeline_stages=h.pipeline_stages, assignment=cfg.resv.assignment, full_policy=h.full_policy)

    def elaborate(self, platform):
        m = Module()
        B, N, b, C = self._code_bits, self._lanes, self._bits_per_cycle, self._capacity
        S, G, L = B // b, C // N, self._pipeline_stages - 1
        DB = B.bit_length()
        EE, FIRST = self._early_exit, self._assignment == "first"
        JOIN_NEAREST = self._full_policy == "join_nearest"
        TRACK_NEAREST = not FIRST or JOIN_NEAREST        # a nearest slot may be needed
        UNBOUNDED = B + 1

        state = Signal(2)                         # 0 idle (takes items), 1 scanning, 2 waiting for `o`
        idle, scanning, waiting = state == 0, state == 1, state == 2

        # ---- current-frame buffer --------------------------------------------------------------------------------
        item_valid, item_bits, buffered = _frame_buffer(m, self.i, B + 2, self._frame_tokens, take=idle)
        item = data.View(hcu_input_layout(B), item_bits)
        accept = idle & item_valid

        # ---- job state ---------------------------------------------------------------------------------------
        job_open = Signal()                       # 0: the next item starts a job (empty table)
        count = self.open_slots                   # occupied slots = fill_group * N + fill_lane
        fill_group = Signal(range(G + 1))
        fill_lane = Signal(_index(N))
        thr = Signal(DB + 1)
        token_idx = Signal(self._token_bits)
        first_pending = Signal()                  # no token of the open job has been handed over yet
        code = Signal(B)                          # the token being assigned
        tok_last = Signal()
        code_cur = Mux(idle, item.code, code)     # the code a store writes (the item itself when idle)

        # Effective values: a job's first item sees an empty table and the current threshold input.
        e_count = Mux(job_open, count, 0)
        e_group = Mux(job_open, fill_group, 0)
        e_lane = Mux(job_open, fill_lane, 0)
        e_thr = Mux(job_open, thr, self.threshold)
        e_token = Mux(job_open, token_idx, 0)
        e_first = Mux(job_open, first_pending, 1)
        e_full = e_count == C

        # ---- scan state --------------------------------------------------------------------------------------
        last_group = Signal(_index(G))
        bound = Signal(DB + 1)
        iss_active, iss_g, iss_s = Signal(), Signal(_index(G)), Signal(_index(S))

        # ---- issue: one (group, slice) operation per cycle; the table row is read at slice 0 ---------------------
        issue, issue_g, issue_s = Signal(), Signal(_index(G)), Signal(_index(S))
        op_valid, op_g, op_s = Signal(), Signal(_index(G)), Signal(_index(S))
        m.d.sync += [op_valid.eq(issue), op_g.eq(issue_g), op_s.eq(issue_s)]
        do_store = Signal()                       # write code_cur into slot e_count this cycle
        store_lane = [Mux(job_open, fill_lane == k, k == 0) for k in range(N)]     # e_lane == k
        CAPTURE = self._pipeline_stages >= 3
        w_addr, w_en, w_code = e_group, Cat(*(do_store & store_lane[k] for k in range(N))), code_cur
        read_now = issue & (issue_s == 0)
        # With CAPTURE the store is registered at the memory's write port (the decision logic stays off the memory's
        # pins) and lands one cycle late; a row read in that cycle returns the old codes, so the pending code is
        # merged into it (bypass below).
        row, pending = _code_table(m, G, N * B, B, read_addr=issue_g, read_en=read_now, write_addr=w_addr,
                                   write_en=w_en, write_data=Cat(*([w_code] * N)), registered_write=CAPTURE)
        if CAPTURE:
            pw_row, pw_en, pw_data = pending
            byp_en, byp_code = Signal(N, name="bypass_en"), Signal(B, name="bypass_code")
            with m.If(read_now):
                m.d.sync += [byp_en.eq(Mux(issue_g == pw_row, pw_en, 0)), byp_code.eq(pw_data[:B])]

        # ---- with P ≥ 3 the first of the P - 1 registers captures the memory's read data (the SRAM access is then
        # a path of its own); the cycles are those of any P: the latency from issue to commit is P either way -----
        lane_valid, lane_g, lane_s = op_valid, op_g, op_s
        if CAPTURE:
            row_c = Signal(N * B, name="code_row_capture")
            lane_valid, lane_g, lane_s = Signal(name="cap_valid"), Signal(_index(G), name="cap_g"), \
                Signal(_index(S), name="cap_s")
            merged = Cat(*(Mux(byp_en[k], byp_code, row[k * B:(k + 1) * B]) for k in range(N)))
            m.d.sync += [row_c.eq(merged), lane_g.eq(op_g), lane_s.eq(op_s)]
            row = row_c

        # ---- lane array: each lane's code slice XOR the token's slice, popcount ---------------------------------
        token_slice = _slice(m, code, lane_s, b, "token_slice")
        lane_counts = [popcount(_slice(m, row[k * B:(k + 1) * B], lane_s, b, f"lane{k}_slice") ^ token_slice)
                       for k in range(N)]

        # ---- register stages from the lane array to the commit stage ---------------------------------------------
        stages = [(lane_valid, lane_g, lane_counts, lane_s)]
        for n in range(L - 1 if CAPTURE else L):
            stages.append((Signal(name=f"p{n}_valid"), Signal(_index(G), name=f"p{n}_g"),
                           [Signal(len(lane_counts[k]), name=f"p{n}_count{k}") for k in range(N)],
                           Signal(_index(S), name=f"p{n}_s")))
        c_valid, c_g, c_counts, c_s = stages[-1]

        # ---- commit: accumulate partial distances, early exit, resolve a finished group ------------------------
        valid_lanes = [(c_g < fill_group) | ((c_g == fill_group) & (fill_lane > k)) if k < N - 1
                       else c_g < fill_group for k in range(N)]
        partial = [Signal(DB, name=f"partial{k}") for k in range(N)]
        p_new = [named(m, Mux(c_s == 0, 0, partial[k]) + c_counts[k], f"partial_next{k}") for k in range(N)]
        with m.If(c_valid):
            m.d.sync += [partial[k].eq(p_new[k]) for k in range(N)]
        alive = Cat(*(named(m, valid_lanes[k] & (p_new[k] < bound), f"alive{k}") for k in range(N)))
        last_slice = c_s == S - 1
        group_end = c_valid & (last_slice | ((alive == 0) if EE else 0))
        cands = Cat(*(named(m, last_slice & alive[k], f"candidate{k}") for k in range(N)))
        base = c_g * N

        # Selection registers and their next values (default: hold; reset when a token is accepted).
        bound_n = Signal(DB + 1)
        m.d.comb += bound_n.eq(bound)
        m.d.sync += bound.eq(bound_n)
        hit_now = Const(0)
        if FIRST:
            hits = Cat(*(named(m, cands[k] & (p_new[k] < e_thr), f"hit{k}") for k in range(N)))
            hit_now = hits.any()
            hit_lane, hit_lane_d = Signal(_index(N)), Signal(DB)
            for k in reversed(range(N)):                     # priority: the lowest hitting lane wins
                with m.If(hits[k]):
                    m.d.comb += [hit_lane.eq(k), hit_lane_d.eq(p_new[k])]
            hit = _Choice(m, "hit", C, DB)
            with m.If(group_end & hit_now & ~hit.found):
                hit.take(m, base + hit_lane, hit_lane_d)
        if TRACK_NEAREST:
            # `first` tracks the nearest slot only for a full table with join_nearest (then the threshold does
            # not bound); `nearest` always does.
            join_any = Signal() if FIRST else Const(1)
            best_valid, best_d, best_lane = _argmin_lowest(m, cands, p_new)
            near = _Choice(m, "near", C, DB)
            with m.If(group_end & best_valid & join_any):
                near.take(m, base + best_lane, best_d)
                m.d.comb += bound_n.eq(best_d)
        # bound_n == 0 without waiting for the argmin tree: the best candidate is at 0 iff some candidate is at 0
        if TRACK_NEAREST and EE:
            upd = named(m, group_end & cands.any() & join_any, "bound_update")
            any_zero = named(m, Cat(*(cands[k] & (p_new[k] == 0) for k in range(N))).any(), "candidate_at_zero")
            bound_zero = Mux(upd, any_zero, bound == 0)
        else:
            bound_zero = bound == 0
        stop_early = (bound_zero | hit_now) if EE else 0
        scan_done = Signal()
        m.d.comb += [scan_done.eq(scanning & group_end & ((c_g == last_group) | stop_early)),
                     self.group_exit.eq(scanning & group_end & ~last_slice),
                     self.scan_stop.eq(scan_done & (c_g != last_group))]
        # Squash in-flight operations behind the commit stage: all when the scan is done, those of the exiting
        # group when a group exits early (operations of later groups stay valid).
        for (pv, pg, ppcs, ps), (v, g, pcs, s) in zip(stages[:-1], stages[1:]):
            kill = scan_done | (self.group_exit & (pg == c_g))
            m.d.sync += [v.eq(pv & ~kill), g.eq(pg), s.eq(ps)] + [pcs[k].eq(ppcs[k]) for k in range(N)]
        if CAPTURE:
            m.d.sync += lane_valid.eq(op_valid & ~(scan_done | (self.group_exit & (op_g == c_g))))

        # ---- token acceptance --------------------------------------------------------------------------------
        token_accept = accept & ~item.preload
        join_any0 = e_full if JOIN_NEAREST else 0
        bound0 = Mux(join_any0, UNBOUNDED, e_thr)
        empty_scan = (e_count == 0) | ((bound0 == 0) if EE else 0)
        with m.If(token_accept):
            m.d.comb += bound_n.eq(bound0)
            if FIRST:
                m.d.comb += hit.found_n.eq(0)
            if TRACK_NEAREST:
                m.d.comb += near.found_n.eq(0)
            if FIRST and JOIN_NEAREST:
                m.d.sync += join_any.eq(join_any0)

        # ---- decision: join, open a cluster, or the full policy ------------------------------------------------
        decide = (token_accept & empty_scan) | scan_done | waiting
        emit = decide & (~self.o.valid | self.o.ready)
        last_cur = Mux(idle, item.last, tok_last)
        r_cluster, r_distance, r_new, r_full = Signal(range(C + 1)), Signal(DB), Signal(), Signal()
        r_store = Signal()                        # the token opens a cluster: its code goes to slot e_count
        winner = hit if FIRST else near
        if FIRST:
            joined = hit.found_n
        else:
            # near.d_n < e_thr without the argmin tree: when this group updates the nearest slot, some candidate is
            # below the threshold iff the nearest one is
            near_take = named(m, group_end & best_valid & join_any, "near_take")
            below = named(m, Cat(*(cands[k] & (p_new[k] < e_thr) for k in range(N))).any(), "candidate_below")
            joined = named(m, ~token_accept & Mux(near_take, below, near.found & (near.d < e_thr)), "joined")
        with m.If(joined):
            m.d.comb += [r_cluster.eq(winner.slot_n), r_distance.eq(winner.d_n)]
        with m.Elif(~e_full):
            m.d.comb += [r_cluster.eq(e_count), r_new.eq(1), r_store.eq(1)]
        with m.Else():
            m.d.comb += r_full.eq(1)
            if JOIN_NEAREST:
                m.d.comb += [r_cluster.eq(near.slot_n), r_distance.eq(near.d_n)]
            else:
                m.d.comb += [r_cluster.eq(C), r_new.eq(1)]

        # ---- issue control -------------------------------------------------------------------------------------
        lane_zero = ~job_open | (fill_lane == 0)            # e_lane == 0, tested on the register
        scan_last_group = Mux(idle, Mux(lane_zero, e_group - 1, e_group), last_group)
        with m.If(token_accept & ~empty_scan):
            m.d.comb += [issue.eq(1), issue_g.eq(0), issue_s.eq(0)]
        with m.Elif(scanning & ~scan_done):
            with m.If(self.group_exit & iss_active & (iss_g == c_g)):
                m.d.comb += [issue.eq(1), issue_g.eq(c_g + 1), issue_s.eq(0)]
            with m.Else():
                m.d.comb += [issue.eq(iss_active), issue_g.eq(iss_g), issue_s.eq(iss_s)]
        with m.If(issue):
            with m.If(issue_s == S - 1):
                m.d.sync += [iss_g.eq(issue_g + 1), iss_s.eq(0), iss_active.eq(issue_g != scan_last_group)]
            with m.Else():
                m.d.sync += [iss_g.eq(issue_g), iss_s.eq(issue_s + 1), iss_active.eq(1)]
        with m.Else():
            m.d.sync += iss_active.eq(0)

        # ---- job state updates (later statements win) ----------------------------------------------------------
        with m.If(accept):
            m.d.sync += [job_open.eq(1), count.eq(e_count), fill_group.eq(e_group), fill_lane.eq(e_lane),
                         thr.eq(e_thr), token_idx.eq(e_token), first_pending.eq(e_first)]
            with m.If(~job_open):
                m.d.sync += self.preload_overflow.eq(0)
            with m.If(item.preload):
                with m.If(e_full):
                    m.d.sync += self.preload_overflow.eq(1)
                m.d.sync += job_open.eq(~item.last)
            with m.Else():
                m.d.sync += [code.eq(item.code), tok_last.eq(item.last), last_group.eq(scan_last_group),
                             state.eq(Mux(empty_scan, 2, 1))]
        with m.If(scan_done):
            m.d.sync += state.eq(2)

        # Store a code in slot e_count: a preload, or the token that opened a cluster (when it is handed over).
        m.d.comb += do_store.eq((accept & item.preload & ~e_full) | (emit & r_store))
        with m.If(do_store):
            m.d.sync += count.eq(e_count + 1)
            with m.If(e_lane == N - 1 if N > 1 else 1):
                m.d.sync += [fill_group.eq(e_group + 1), fill_lane.eq(0)]
            with m.Else():
                m.d.sync += [fill_group.eq(e_group), fill_lane.eq(e_lane + 1)]

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(emit):
            p = self.o.payload
            m.d.sync += [self.o.valid.eq(1), p.token.eq(e_token), p.cluster.eq(r_cluster),
                         p.distance.eq(r_distance), p.new.eq(r_new), p.full.eq(r_full), p.first.eq(e_first),
                         p.last.eq(last_cur), token_idx.eq(Mux(last_cur, 0, e_token + 1)), first_pending.eq(0),
                         job_open.eq(~last_cur), state.eq(0)]

        m.d.comb += self.busy.eq(buffered | ~idle | self.o.valid)
        return m


class _Choice:
    """A selected slot (found, slot, distance) held in registers, with next-value signals (default: hold)."""

    def __init__(self, m, name, capacity, distance_bits):
        self.found, self.slot, self.d = (Signal(name=f"{name}_found"), Signal(range(capacity), name=f"{name}_slot"),
                                         Signal(distance_bits, name=f"{name}_distance"))
        self.found_n, self.slot_n, self.d_n = (Signal(name=f"{name}_found_next"),
                                               Signal(range(capacity), name=f"{name}_slot_next"),
                                               Signal(distance_bits, name=f"{name}_distance_next"))
        m.d.comb += [self.found_n.eq(self.found), self.slot_n.eq(self.slot), self.d_n.eq(self.d)]
        m.d.sync += [self.found.eq(self.found_n), self.slot.eq(self.slot_n), self.d.eq(self.d_n)]

    def take(self, m, slot, distance):
        m.d.comb += [self.found_n.eq(1), self.slot_n.eq(slot), self.d_n.eq(distance)]


def _frame_buffer(m, port, width, depth, *, take):
    """The current-frame buffer: a FIFO of ``depth`` items in front of the engine (no submodule).

    ``depth - 1`` items live in an ``amaranth.lib.memory`` memory and one in the registered read port, as in
    ``SyncFIFOBuffered``: one item per cycle in and out from depth 3 up, 2 cycles from input to output. Returns
    (output valid, output bits, any item buffered); the engine takes the output in a cycle where ``take`` is 1.
    """
    inner = depth - 1
    mem = m.submodules.frame_memory = Memory(shape=unsigned(width), depth=inner, init=[])
    wp, rp = mem.write_port(), mem.read_port(domain="sync")
    produce, consume, level = Signal(range(inner)), Signal(range(inner)), Signal(range(inner + 1))
    out_valid = Signal()
    write = port.valid & (level != inner)
    read = (level != 0) & (~out_valid | take)
    m.d.comb += [port.ready.eq(level != inner), wp.addr.eq(produce), wp.data.eq(port.payload.as_value()),
                 wp.en.eq(write), rp.addr.eq(consume), rp.en.eq(read)]
    with m.If(write):
        m.d.sync += produce.eq(Mux(produce == inner - 1, 0, produce + 1))
    with m.If(read):
        m.d.sync += [consume.eq(Mux(consume == inner - 1, 0, consume + 1)), out_valid.eq(1)]
    with m.Elif(take):
        m.d.sync += out_valid.eq(0)
    with m.If(write & ~read):
        m.d.sync += level.eq(level + 1)
    with m.Elif(read & ~write):
        m.d.sync += level.eq(level - 1)
    return out_valid, rp.data, out_valid | (level != 0)


def _code_table(m, rows, width, granule, *, read_addr, read_en, write_addr, write_en, write_data,
                registered_write=False):
    """The open-cluster code memory: ``rows`` rows of ``width`` bits, one read port (data the cycle after an
    enabled read, held otherwise) and one write port with one enable per ``granule``-bit code.

    An ``amaranth.lib.memory`` memory; a single row is a plain register (no memory macro for one word). With
    ``registered_write`` the write port's address, enables and data are registers (a write lands one cycle after
    it is asked for). Returns the read data and the write port's ``(addr, en, data)`` as the memory sees them.
    """
    wd = m.d.sync if registered_write else m.d.comb
    if rows > 1:
        mem = m.submodules.code_memory = Memory(shape=unsigned(width), depth=rows, init=[])
        wp, rp = mem.write_port(granularity=granule), mem.read_port(domain="sync")
        wd += [wp.addr.eq(write_addr), wp.data.eq(write_data), wp.en.eq(write_en)]
        m.d.comb += [rp.addr.eq(read_addr), rp.en.eq(read_en)]
        return rp.data, (wp.addr, wp.en, wp.data)
    table, data_out = Signal(width, name="code_row"), Signal(width, name="code_row_read")
    w_en, w_data = write_en, write_data
    if registered_write:
        w_en, w_data = Signal.like(write_en, name="code_row_wen"), Signal(width, name="code_row_wdata")
        wd += [w_en.eq(write_en), w_data.eq(write_data)]
    for k in range(width // granule):
        with m.If(w_en[k]):
            m.d.sync += table[k * granule:(k + 1) * granule].eq(w_data[k * granule:(k + 1) * granule])
    with m.If(read_en):
        m.d.sync += data_out.eq(table)
    return data_out, (Const(0, 1), w_en, w_data)


def _argmin_lowest(m, valid, values):
    """(any valid, smallest value, its lowest lane) over the lanes whose ``valid`` bit is set.

    All pairs are compared at once (a lane wins when it is below every valid lower lane and not above every valid
    higher lane), then the one-hot winner selects its value and index: a few gate levels instead of a tournament
    of log2(lanes) compare-and-select levels, which is the HCU's critical loop (bound → candidates → nearest →
    bound)."""
    n = len(values)
    if n == 1:
        return valid[0], values[0], Const(0, 1)
    below = {}
    for i in range(n):
        for j in range(i + 1, n):
            below[i, j] = named(m, values[i] <= values[j], f"min_le_{i}_{j}")      # i wins ties against j > i
    win = []
    for i in range(n):
        beats = [~valid[j] | ~below[j, i] for j in range(i)] + [~valid[j] | below[i, j] for j in range(i + 1, n)]
        win.append(named(m, valid[i] & Cat(*beats).all(), f"min_win{i}"))
    width = max(len(Value.cast(v)) for v in values)
    value = named(m, _one_hot_or([Mux(w, v, 0) for w, v in zip(win, values)]), "min_value", width)
    lane = named(m, _one_hot_or([Mux(w, i, 0) for i, w in enumerate(win)]), "min_lane", _index(n))
    return named(m, Cat(*valid).any(), "min_valid"), value, lane


def _one_hot_or(values):
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out


def _index(n):
    """Shape of an index 0 .. n-1, at least one bit wide (zero-width signals make ill-formed Verilog ranges)."""
    return range(max(2, n))


def _slice(m, value, index, width, name):
    """Bits ``[index*width +: width]`` of ``value`` as a case multiplexer (no variable shift)."""
    count = len(value) // width
    if count == 1:
        return value
    out = Signal(width, name=name)
    with m.Switch(index):
        for s in range(count):
            with (m.Case(s) if s < count - 1 else m.Default()):     # every index pattern covered
                m.d.comb += out.eq(value[s * width:(s + 1) * width])
    return out
