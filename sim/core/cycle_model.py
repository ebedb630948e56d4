"""A per-phase cycle model of the core's retrieval path (no simulation): one command's cycles per phase from its
counts.

The sequencer (hdl/core/phases.py) runs, per KV head, states whose lengths follow from the step's counts and a few
pipeline depths of the config. :func:`context_states` walks that program for one context and returns the states
with their cycles (``[(state, cycles), …]``, the order the RTL visits them); :func:`command_phases` sums them per
phase (``vrex.hdl.core.sequencer.PHASES``) over the command's contexts. The counts of a context
(:class:`ContextCounts`) come from the golden session the bench replays (:func:`session_counts`).

What each state costs (``R(n)`` / ``W(n)``: one HC-table transfer of n beats, a read n + 4 cycles, a write n + 5
(the request, the address, n beats, the response, the done); a read of 0 beats 2):

- X: ``1 + exits · (R(1) + R(1) + W(1) + 1)``;
- H: ``1 + passes · (T · B + 2 + tokens · B) + dpe_latency + vpe_stages + 2`` (T trees' weight lines, the step's
  keys, the drain);
- C: list read, close scans, preload, codes, per assignment the entry, sum, mean, token map and KVMU descriptor, the
  list write; the VPE ``add`` of a key sum ``J + vpe_stages + 2`` cycles (+ 1 through a width converter), the
  ``mul`` of a mean and its write as the converter and the write's beats allow (:func:`_mul_cycles`);
- S score: the entry scan ``R(clusters)``, the count beats (the WTU takes one per cycle), per group the mean-key
  loads (``R(Bm) + 3`` per candidate, ``B + 1`` per zero tree) and the query rows, whose score writes take the SRAM
  port before reads: a small cycle loop of reads, passes in flight (the FIFO's credit) and line writes;
- S score with ``resv.threshold_mass = row``: the resident pass (:func:`_resident_states`);
- S select: the rows to the WTU (:func:`vrex.golden.dre.wtu.linear.wtu_row_cycles` per row, the WTU's own exact
  model), the mask translation (a loop over the candidates, as the FSM does) and one cycle per mask beat;
- K: one cycle; R: ``tokens · W(Br)``.

**Exact** (equal to the RTL's counters on every command of ``core-tiny-short-window``, ``core-medium``,
``core-tiny-slow-hcu``, ``core-tiny-exp2`` and ``core-tiny-row``, tests/core/test_core.py) for X, H, C, S score and R under the bench's memory (the Python AXI
slave without pauses: an address is taken in its first cycle, data follow the next). C includes the waits for the
HCU's assignments, from the HCU's exact model (:func:`vrex.golden.dre.hcu.reference.hcu_cycles`: an item reaches
its engine 2 cycles after its handshake, a decision waits for the output register). **Bounded**: S select and K
also wait on the KVMU (``kvmu_masks.ready`` while it looks up and prefetches the selected clusters, its response);
the model counts one cycle per mask beat and one for the response, a lower bound, and :func:`kvmu_wait_bound`
bounds the excess from the KVMU golden model's work on the job. Not exercised by the RTL cases: a chunk-to-line
merge on the key path (``16 · dpe_trees`` > the SRAM line), the split of a BF16 mean chunk into AXI beats (edge: 8
beats a chunk) and the beat-to-line merge of mean keys (edge: 8 AXI beats a line), whose last line the model takes
one cycle after the last beat, as with equal widths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ContextCounts", "context_states", "command_phases", "session_counts", "model_parameters",
           "kvmu_wait_bound", "phase_of", "EXACT_PHASES", "BOUNDED_PHASES"]

EXACT_PHASES = ("exits", "hash", "cluster", "score", "records")
BOUNDED_PHASES = ("select", "kvmu")


def phase_of(state: str):
    """Phase of a sequencer state (None: context load / store, the response)."""
    from vrex.hdl.core.phases import STATE_PHASES
    from vrex.hdl.core.sequencer import PHASES

    k = max((p for p in STATE_PHASES if state.startswith(p)), key=len, default=None)
    return None if k is None else PHASES[STATE_PHASES[k]]


@dataclass
class ContextCounts:
    """What one context's step does (the counts the cycles depend on)."""

    exits: int                    # tokens leaving the recent window
    tokens: int                   # of the step
    list_read: int                # open-list entries read (the list written by the previous step)
    list_kept: int                # of them, with their newest member in the window
    # per HCU job: {"tokens": n, "assign": ["new" | "join" | "spill" | "full", …], "hcu": [HCU cycles per token]}
    chunks: list = field(default_factory=list)
    list_written: int = 0         # open-list entries written back
    clusters: int = 0             # clusters of the context after the step (entries the candidate scan reads)
    offloaded: bool = False       # the step retrieves (S phases run)
    candidate_cids: list = field(default_factory=list)   # cluster id of each candidate, ascending
    selected: list = field(default_factory=list)         # per candidate: selected by the group mask
    wtu_row_cycles: list = field(default_factory=list)   # per row: the WTU's cycles (its own model)
    overflow: bool = False        # more candidates than a WTU row holds
    kvmu: dict = field(default_factory=dict)             # the KVMU's work on the context's job (its golden model's
    #                                                      counts: table accesses, bursts, AXI beats)
    resident_fixed: int = 0       # resv.threshold_mass = row: the sinks and window keys every row attends (records)


@dataclass(frozen=True)
class Params:
    B: int            # DPE beats (SRAM lines) per head vector
    T: int            # DPE trees = VPE lanes
    J: int            # VPE beats per head vector
    L: int            # WTU lanes
    group: int
    passes: int
    hash_bits: int
    capacity: int
    fill_preload: bool
    frame_tokens: int
    fifo_depth: int
    lpp: int          # SRAM lines per score pass
    line_bits: int
    Bs: int           # HC-table beats of an FP32 key sum
    Bm: int           # … of a BF16 mean key
    Br: int           # … of a K|V record
    row_capacity: int
    dpe_latency: int
    vpe_stages: int
    table_clusters: int
    resident_latency: int = 0     # resv.threshold_mass = row: the resident-mass unit's latency (0: no resident pass)
    sinks: int = 0
    window: int = 0


def model_parameters(cfg) -> Params:
    from vrex.hdl.core.geometry import CoreGeometry
    from vrex.hdl.lxe.dpe import dpe_latency

    from vrex.hdl.core.resident_mass import resident_mass_latency

    g = CoreGeometry.from_config(cfg)
    x = cfg.lxe
    return Params(g.beats, g.trees, g.vec_beats, g.wtu_lanes, g.group, g.passes, g.hash_bits, g.capacity,
                  g.fill_preload, g.frame_tokens, g.fifo_depth, g.lines_per_pass, g.line_bits,
                  4 * g.head_dim // g.beat_bytes, 2 * g.head_dim // g.beat_bytes, 4 * g.head_dim // g.beat_bytes,
                  g.row_capacity, dpe_latency(x.mac_cuts, x.mac_norm_stages, x.dpe_read_stages), x.vpe_stages,
                  g.table_clusters, resident_mass_latency(g.resident) if g.resident is not None else 0, g.sinks,
                  g.window)


def _rd(n):
    return n + 4 if n else 2


def _wr(n):
    return n + 5 if n else 2


# ---- the score passes: reads, the FIFO's credit, the score writes -----------------------------------------------

def _score_passes(p: Params, groups: int, rows: int, wl_cycles: list) -> tuple[list[int], int, list[int]]:
    """Cycles of each group's S_ST, of S_DRAIN and of each group's weight loads. ``wl_cycles[g]``: the weight loads
    before group g, cycles without SRAM use, or a list of ``("fixed", n)`` (n cycles without SRAM use) and
    ``("read", n)`` (n SRAM line reads, each in a cycle the score writes leave free).
    A pass's scores are in the FIFO ``lat`` cycles after its last read was issued; its ``lpp`` lines are written
    one per cycle, before any read (the SRAM port's priority), the FIFO's next word readable the cycle after a pop;
    a pass's first read waits for a FIFO credit (``fifo_depth`` passes in flight)."""
    lat = p.dpe_latency + p.vpe_stages + 3
    ready: list[int] = []       # cycle each pass's result is in the FIFO, in order
    head, sub, next_ok = 0, 0, 0
    inflight = 0
    t = 0
    st, wl = [], []

    def write_slot(now):
        """Does a score write take the port at cycle ``now``? (advances the FIFO head)"""
        nonlocal head, sub, next_ok, inflight
        if head < len(ready) and ready[head] <= now and next_ok <= now:
            sub += 1
            if sub == p.lpp:
                sub, head = 0, head + 1
                inflight -= 1
                next_ok = now + 1
            return True
        return False

    for g in range(groups):
        ops = wl_cycles[g] if isinstance(wl_cycles[g], list) else [("fixed", wl_cycles[g])]
        loads = t
        for kind, n in ops:
            b = 0
            while b < n:
                if write_slot(t) and kind == "read":
                    t += 1
                    continue
                b += 1
                t += 1
        wl.append(t - loads)
        start = t
        for r in range(rows):
            b = 0
            while b < p.B:
                if write_slot(t):
                    t += 1
                    continue
                if b == 0 and inflight >= p.fifo_depth:
                    t += 1
                    continue
                if b == 0:
                    inflight += 1
                b += 1
                if b == p.B:
                    ready.append(t + lat)
                t += 1
        st.append(t - start)
    start = t
    while head < len(ready):
        write_slot(t)
        t += 1
    return st, t - start + 1, wl


# ---- the VPE's add and mul of one head vector -------------------------------------------------------------------

def _add_cycles(p: Params) -> int:
    """A_ADD: the key's B lines through the line-to-chunk converter (a register unless the widths are equal; a merge
    waits for all B lines) into J VPE ``add`` beats; done the cycle after the last result."""
    chunk = 16 * p.T
    last_in = (p.B if chunk > p.line_bits else p.J) + (chunk != p.line_bits)
    return last_in + p.vpe_stages + 2


def _mul_cycles(p: Params) -> int:
    """A_MUL: J VPE ``mul`` beats from its second cycle, their BF16 chunks through the chunk-to-beat converter into
    the mean's Bm-beat write (beats from the fourth cycle, one per cycle; done 3 cycles after the last)."""
    chunk, beat = 16 * p.T, 16 * p.J * p.T // p.Bm       # BF16 chunk and AXI beat bits (Bm beats per vector)
    first_out = 1 + p.vpe_stages                  # the first result's cycle
    w = 2
    for m in range(p.Bm):
        if chunk == beat:
            avail = first_out + m
        elif chunk < beat:                        # merge: k chunks per beat, registered
            k = beat // chunk
            avail = first_out + (m + 1) * k
        else:                                     # split: the held chunk's parts, one per cycle
            avail = first_out + 1 + m
        w = max(avail, w + 1, 3 + m)
    return w + 3


# ---- one context -------------------------------------------------------------------------------------------------

def context_states(p: Params, c: ContextCounts) -> list[tuple[str, int]]:
    """The sequencer's states for one context's step and their cycles, in the order the RTL visits them."""
    out: list[tuple[str, int]] = []
    clock = [0]                               # the cycle the next state starts (from the context's first state)

    def add(state, n):
        out.append((state, n))
        clock[0] += n
    # X
    for _ in range(c.exits):
        add("X_CHECK", 1), add("X_MAP", _rd(1)), add("X_ENT", _rd(1)), add("X_WR", _wr(1))
    add("X_CHECK", 1)
    # H
    add("H_START", 1)
    for _ in range(p.passes):
        add("H_LOAD", p.T * p.B + 2)           # hyperplane lines, then zero weights for trees beyond the bits
        add("H_STREAM", c.tokens * p.B)
    add("H_DRAIN", p.dpe_latency + p.vpe_stages + 2)
    # C
    add("C_START", 1)
    add("C_LREAD", _rd(c.list_read))
    k_open = c.list_kept
    vk = k_open
    for j, ch in enumerate(c.chunks):
        limit = p.capacity if p.fill_preload else (0 if ch["tokens"] > p.capacity else p.capacity - ch["tokens"])
        while vk > limit:
            add("C_CLOSE", 1), add("C_SCAN", k_open + 2)
            vk -= 1
        add("C_CLOSE", 1)
        pre_start, n_pre = clock[0], vk
        add("C_PRELOAD", k_open + 2)
        k_open = vk
        tok_start = clock[0]
        add("C_TOKENS", ch["tokens"] + 2)
        # the HCU (docs/formats.md §HCU): an item reaches its engine 2 cycles after its handshake, a preload takes
        # 1 cycle, token k ch["hcu"][k] cycles (its exact model); a decision waits for the output register, which
        # the sequencer empties in C_ASSIGN
        free = pre_start + 1 + 2 + n_pre if n_pre else tok_start + 3
        taken = None
        for k, kind in enumerate(ch["assign"]):
            hcu = ch.get("hcu")
            if hcu is None:
                add("C_ASSIGN", 1)
            else:
                start = max(free, tok_start + 1 + k + 2)
                emit = start + hcu[k] - 1 if taken is None else max(start + hcu[k] - 1, taken)
                valid = emit + 1
                taken = max(clock[0], valid)
                free = emit + 1
                add("C_ASSIGN", taken - clock[0] + 1)
            if kind in ("new", "spill", "full"):
                add("A_NEW", 2)
                if kind == "full":
                    add("A_KV", 1)
                    continue
                if kind == "new":
                    k_open, vk = k_open + 1, vk + 1
            else:
                add("A_JOIN", 2), add("A_EREAD", _rd(1))
            add("A_EWRITE", _wr(1))
            if kind == "join":
                add("A_SREAD", _rd(p.Bs)), add("A_SREAD_END", 1)
            add("A_ADD", _add_cycles(p))
            add("A_SWRITE", _wr(p.Bs))
            add("A_MUL", _mul_cycles(p))
            add("A_MAP", _wr(1))
            add("A_KV", 1)
    add("C_LWRITE", _wr(c.list_written))
    if c.offloaded:
        add("S_SCAN", _rd(c.clusters))
        add("S_SCAN_END", 1)
        n_c = 0 if c.overflow else len(c.candidate_cids)
        if n_c:
            W = -(-n_c // p.L)
            add("S_COUNTS", W)
            groups = -(-n_c // p.T)
            rows = c.tokens * p.group
            wl = []
            for g in range(groups):
                real = min(p.T, n_c - g * p.T)
                wl.append(real * (1 + 1 + _rd(p.Bm) + 1) + (p.T - real) * (1 + p.B) + 1)
            st, drain, _ = _score_passes(p, groups, rows, wl)
            for g in range(groups):
                add("S_WL", wl[g]), add("S_ST", st[g])
            add("S_DRAIN", drain)
            if p.resident_latency:
                _resident_states(p, c, rows, add)
            add("S_ROWS", sum(c.wtu_row_cycles[:-1]) + W + 1)
            add("S_SEL", c.wtu_row_cycles[-1] - W + 2)
        out.extend(_mask_states(p, c, n_c))
    add("K_WAIT", 1)
    add("R_WRITE", c.tokens * _wr(p.Br))
    return out


def _resident_states(p: Params, c: ContextCounts, rows: int, add) -> None:
    """The resident pass (``resv.threshold_mass = row``, hdl/core/resident_pass.py): per group of T resident keys
    the weight loads (a sink or window key: ``1 + R(Bm) + 1``, a step key: 1 + its B SRAM reads + 1, a zero tree:
    ``1 + B``; then 1), the rows' score passes as S_ST, the drain; then every row's resident lines through the
    resident-mass unit, one beat per cycle from the second cycle, the last row's pair ``resident_latency`` cycles
    after its last beat (rows of at least ⌈latency / 3⌉ beats stream back to back, the unit's own limit)."""
    n_fix, n_res = c.resident_fixed, c.resident_fixed + c.tokens
    groups = -(-n_res // p.T)
    wl = []
    for g in range(groups):
        ops = []
        for k in range(g * p.T, (g + 1) * p.T):
            if k < n_fix:
                ops.append(("fixed", 1 + _rd(p.Bm) + 1))
            elif k < n_res:
                ops += [("fixed", 1), ("read", p.B), ("fixed", 1)]
            else:
                ops.append(("fixed", 1 + p.B))
        wl.append(ops + [("fixed", 1)])
    st, drain, loads = _score_passes(p, groups, rows, wl)
    add("S_RES_START", 1)
    for g in range(groups):
        add("S_RES_W", loads[g]), add("S_ST", st[g])
    add("S_RES_DRAIN", drain)
    beats = groups * p.T // p.L
    add("S_RES_ROWS", 1 + rows * max(beats, -(-p.resident_latency // 3)) + p.resident_latency + 1)


def _mask_states(p: Params, c: ContextCounts, n_c: int) -> list[tuple[str, int]]:
    """S_MASK_USE / S_MASK_SEND as the FSM runs them (the KVMU taking every mask beat at once)."""
    L = p.L
    q_beats = 1 if c.clusters == 0 else -(-c.clusters // L)
    out = []
    mj, head_valid, head_cid = 0, False, 0
    for q in range(q_beats):
        n = 0
        while True:
            n += 1
            match = head_valid and head_cid // L == q
            leave = not match and (head_valid or mj >= n_c)      # the registered values of this cycle
            if (not head_valid or match) and mj < n_c:
                head_valid, head_cid = True, c.candidate_cids[mj]
                mj += 1
            elif match:
                head_valid = False
            if leave:
                break
        out.append(("S_MASK_USE", n))
        out.append(("S_MASK_SEND", 1))
    return out


def kvmu_wait_bound(c: ContextCounts) -> int:
    """At most this many cycles of S select and K beyond the model's (the sequencer waiting on the KVMU's mask
    port and response): 6 per HC-table access of the KVMU (a device-memory round trip), 2 per AXI beat and 4 per
    burst it moves, 8 for the response. A bound, not a model: the KVMU's table accesses of the job's arrivals
    mostly overlap the C phase (docs/formats.md §Core)."""
    k = c.kvmu or {}
    return 6 * k.get("table_accesses", 0) + 2 * k.get("beats", 0) + 4 * k.get("bursts", 0) + 8


def command_phases(cfg, counts: list[ContextCounts], *, params: Params | None = None) -> dict:
    """Cycles per phase of one command (its contexts' sums)."""
    from vrex.hdl.core.sequencer import PHASES

    p = params or model_parameters(cfg)
    tot = dict.fromkeys(PHASES, 0)
    for c in counts:
        for state, n in context_states(p, c):
            ph = phase_of(state)
            if ph is not None:
                tot[ph] += n
    return tot


# ---- counts from the golden session ------------------------------------------------------------------------------

def session_counts(cfg, steps, trace=None, layer: int = 0) -> list[list[ContextCounts]]:
    """Per command (a :func:`vrex.golden.core.core_session` step) the counts of each of its contexts; with the
    session's ``trace`` also the KVMU's work per job (its golden model replaying the jobs as the bench does)."""
    from vrex.golden.core import record_bytes
    from vrex.golden.dre.hcu.reference import hcu_cycles_for
    from vrex.golden.dre.kvmu import KVMUModel
    from vrex.golden.dre.wtu.linear import wtu_row_cycles
    from vrex.sim.dre.wtu.bench import bench_params

    kvmu = KVMUModel(cfg) if trace is not None else None
    beat = cfg.dre.kvmu.axi_data_bits // 8

    p = model_parameters(cfg)
    timing = bench_params(cfg).timing
    sinks = cfg.kvmu_map.sink_tokens
    frontier: dict[int, int] = {}
    written: dict[int, int] = {}
    prev: dict[int, object] = {}
    out = []
    for st in steps:
        ws = st.window_start
        cmd = []
        for c in st.contexts:
            f = frontier.get(c.context, sinks)
            exits = max(0, ws - f)
            frontier[c.context] = max(f, ws)
            before = prev.get(c.context)
            kept = 0 if before is None else sum(1 for _, newest, _ in before.open_list if newest >= ws)
            chunks = []
            for job, res in zip(c.hcu_jobs, c.assignments, strict=True):
                kinds = ["join" if not a.new else ("spill" if a.cluster == p.capacity else "new")
                         for a in res.assignments]
                hcu = [t.cycles for t in hcu_cycles_for(cfg, job.open_codes, job.token_codes).tokens]
                chunks.append({"tokens": len(res.assignments), "assign": kinds, "hcu": hcu})
            # the list written back: the kept entries after the closes, then the new (not spilled) clusters
            k_open = kept
            for ch in chunks:
                limit = p.capacity if p.fill_preload else (0 if ch["tokens"] > p.capacity
                                                           else p.capacity - ch["tokens"])
                k_open = min(k_open, limit) + ch["assign"].count("new")
            offl = ws > sinks
            rows = []
            cids = list(c.candidates or [])
            if c.wtu_job is not None:
                res = c.wtu_job.resident or [None] * len(c.wtu_job.rows)
                rows = [wtu_row_cycles(r, c.wtu_job.counts, lanes=p.L, **timing, resident=m).cycles
                        for r, m in zip(c.wtu_job.rows, res, strict=True)]
            sel = [bool(c.group_mask >> j & 1) for j in range(len(cids))] if c.group_mask is not None else []
            cmd.append(ContextCounts(exits, st.tokens, written.get(c.context, 0), kept, chunks, k_open,
                                     len(c.table.counts), offl, cids, sel, rows, len(cids) > p.row_capacity,
                                     resident_fixed=sinks + st.start - ws if p.resident_latency else 0))
            if kvmu is not None:
                before = dict(kvmu.stats)
                kvmu.run_job(c.kvmu_job)
                kvmu.write_tokens(c.context, st.start, [record_bytes(trace, layer, c.head, t)
                                                        for t in range(st.start, st.start + st.tokens)])
                d = {k: kvmu.stats[k] - before[k] for k in ("stalls", "bursts", "bytes_moved")}
                cmd[-1].kvmu = {"table_accesses": d["stalls"], "bursts": d["bursts"],
                                "beats": -(-d["bytes_moved"] // beat)}
            written[c.context] = k_open
            prev[c.context] = c.table
        out.append(cmd)
    return out


# ---- the system model's use: a context's phases from a step's mean counts ----------------------------------------

def params_record(cfg) -> dict:
    """The model's parameters for a figures record (:func:`vrex.sim.core.cycles.measure_cycles`)."""
    from dataclasses import asdict

    return asdict(model_parameters(cfg))


def step_phases(params: dict, *, tokens: int, exits: int, n_open: int, tokens_per_cluster: float, clusters: int,
                rows: int, wtu_row_cycles: float, hcu_token_cycles: float) -> dict:
    """One context's cycles per phase for a step of ``tokens`` tokens in the system model's steady state: ``exits``
    tokens leave the window, ``n_open`` open clusters are read, kept and written back, one token in
    ``tokens_per_cluster`` opens a cluster (the others join), ``clusters`` clusters hold offloaded members (all of
    them candidates; at most a WTU row), ``rows`` score rows of ``wtu_row_cycles`` each (the WTU's figures), the HCU
    taking ``hcu_token_cycles`` per token. KVMU waits are not in it (the KVMU's own time is modelled apart)."""
    from vrex.hdl.core.sequencer import PHASES

    p = Params(**params)
    cand = min(clusters, p.row_capacity)

    def phases(new: int) -> dict:
        chunks, left, k = [], tokens, 0
        while left > 0:
            n = min(left, p.frame_tokens)
            chunks.append({"tokens": n, "assign": ["new" if k + j < new else "join" for j in range(n)],
                           "hcu": [hcu_token_cycles] * n})
            left, k = left - n, k + n
        c = ContextCounts(exits, tokens, n_open, n_open, chunks, n_open, cand + n_open, cand > 0,
                          list(range(cand)), [False] * cand, [wtu_row_cycles] * rows if cand else [],
                          resident_fixed=p.sinks + p.window)
        tot = dict.fromkeys(PHASES, 0)
        for state, n in context_states(p, c):
            ph = phase_of(state)
            if ph is not None:
                tot[ph] += n
        return tot

    # the expected number of new clusters is fractional: interpolate between its two neighbours
    mean_new = min(float(tokens), tokens / max(1.0, tokens_per_cluster))
    lo = int(mean_new)
    frac = mean_new - lo
    a = phases(lo)
    if not frac:
        return a
    b = phases(min(tokens, lo + 1))
    return {k: (1 - frac) * a[k] + frac * b[k] for k in a}
