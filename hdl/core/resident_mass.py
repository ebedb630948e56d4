"""ResidentMass — the resident-mass unit beside the VPE: a row's resident-key scores in, the WTU's row-mode resident
input ``(res_max, res_sum)`` out (docs/formats.md §Core, "The resident input", steps 2–3, and §Resident-mass unit).

Semantics: ``vrex.golden.dre.wtu.exp.resident_mass`` bit for bit (the WTU's 2^fraction LUT, per-bin floors, the
``buckets``-bin window below the maximum's bin, saturation to ``2^Z − 1``, ``(0, 0)`` for a row without a key).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from vrex.errors import ConfigError
from vrex.hdl.arith import named, sum_tree
from vrex.hdl.dre.wtu.exp import exp_lut, register_queue
from vrex.hdl.dre.wtu.lanes import clamp, masked_max, reduce_tree, register_cut, rotate

__all__ = ["ResidentMassGeometry", "ResidentMass", "resident_scores_layout", "resident_mass_layout",
           "RESIDENT_CUTS", "SEGMENT_BITS", "ROW_QUEUE", "resident_mass_latency"]

# Optional register boundaries of the lane datapath, in the order ``dre.wtu.pipeline_stages = P`` adds them (the
# first P − 1): after the merge decisions, after the LUT and the beat maximum, after the per-slot sums, in the middle
# of the per-slot adder trees (lane groups of four), after the slot select bits.
RESIDENT_CUTS = ("merge", "lut", "hist", "tree", "sel")
SEGMENT_BITS = 32          # widest carry segment of a bin accumulator (one registered carry between segments)
ROW_QUEUE = 4              # output queue entries = rows in flight between the input and the output


@dataclass(frozen=True)
class ResidentMassGeometry:
    """Widths of the unit, from ``dre.wtu`` (the WTU's exp2 score format and its resident-sum width Z)."""

    lanes: int                 # L = dre.wtu.lanes: scores per beat
    score_bits: int            # B
    frac_bits: int             # F
    buckets: int               # K: window bins below and including the maximum's bin
    bucket_octaves: int        # octaves per bin (power of two)
    lut_entries: int           # E (power of two, ≤ 2^F)
    mantissa_bits: int         # M
    sum_bits: int              # Z = dre.wtu.resident_sum_bits
    pipeline_stages: int = 7   # dre.wtu.pipeline_stages: 1 + optional cuts (RESIDENT_CUTS)

    @classmethod
    def from_config(cls, cfg) -> "ResidentMassGeometry":
        w = cfg.dre.wtu
        g = cls(w.lanes, w.score_bits, w.score_frac_bits, w.buckets, w.bucket_octaves, w.exp_lut_entries,
                w.exp_mantissa_bits, w.resident_sum_bits, w.pipeline_stages)
        if g.lut_entries > 1 << g.frac_bits:
            raise ConfigError("dre.wtu.exp_lut_entries", g.lut_entries,
                              f"must be ≤ 2^dre.wtu.score_frac_bits ({1 << g.frac_bits}) for the resident-mass unit.")
        if g.bin_shift >= g.score_bits:
            raise ConfigError("dre.wtu.bucket_octaves", g.bucket_octaves,
                              f"makes a bin 2^{g.bin_shift} score units wide, which {g.score_bits}-bit scores "
                              "cannot hold (the resident-mass unit needs bin_shift < score_bits).")
        return g

    @property
    def octave_shift(self) -> int:
        return self.bucket_octaves.bit_length() - 1

    @property
    def bin_shift(self) -> int:
        """S: log2 of a bin's width in score units."""
        return self.octave_shift + self.frac_bits

    @property
    def slots(self) -> int:
        """Circular bin accumulators: the next power of two ≥ buckets (slot = bin mod slots)."""
        return 1 << (self.buckets - 1).bit_length()

    @property
    def term_bits(self) -> int:
        """A count-1 term ``LUT[f] << I``: M + bucket_octaves − 1 bits."""
        return self.mantissa_bits + self.bucket_octaves - 1

    @property
    def beat_bits(self) -> int:
        """One beat's sum into one bin: L terms."""
        return self.term_bits + max(1, (self.lanes - 1).bit_length()) if self.lanes > 1 else self.term_bits

    @property
    def acc_bits(self) -> int:
        """W: a bin mass exact below 2^W, sticky-saturated above. With W ≥ Z + (K − 1)·bucket_octaves a saturated
        bin gives ≥ 2^Z at every window index, so the result saturates exactly when the golden's does."""
        return max(self.sum_bits + (self.buckets - 1) * self.bucket_octaves, self.beat_bits)

    @property
    def segments(self) -> list[int]:
        """Widths of an accumulator's carry segments (low first), each at most :data:`SEGMENT_BITS` (the first one
        at least a beat's sum)."""
        w, n = self.acc_bits, -(-self.acc_bits // SEGMENT_BITS)
        first = max(self.beat_bits, -(-w // n))
        rest, out = w - first, [first]
        k = -(-rest // SEGMENT_BITS) if rest else 0
        out += [rest // k + (1 if i < rest % k else 0) for i in range(k)] if k else []
        return out

    @property
    def cuts(self) -> tuple:
        return RESIDENT_CUTS[:self.pipeline_stages - 1]


def resident_scores_layout(g: ResidentMassGeometry) -> data.StructLayout:
    """One input beat: ``lanes`` resident-key scores of a row, which of them are keys, and the row's end."""
    return data.StructLayout({
        "scores": data.ArrayLayout(signed(g.score_bits), g.lanes),   # the WTU's score format
        "mask": g.lanes,                                             # bit l: lane l holds a resident key
        "last": 1,                                                   # the row's final beat
    })


def resident_mass_layout(g: ResidentMassGeometry) -> data.StructLayout:
    """One output beat per row: the WTU's resident input (the two fields of its row-mode score beats)."""
    return data.StructLayout({"res_max": signed(g.score_bits), "res_sum": unsigned(g.sum_bits)})


def resident_mass_latency(g: ResidentMassGeometry) -> int:
    """Cycles from the handshake of a row's last beat to the handshake of its output beat without back-pressure:
    input register, the optional cuts, the accumulate, capture (rotation), one carry-resolve stage per extra
    segment, shift-and-clamp, ⌈log2 K⌉ adder-tree levels, the final saturation into the output queue and the queue's
    entry register (edge: 1 + 5 + 1 + 1 + 1 + 1 + 4 + 1 = 15)."""
    return 1 + len(g.cuts) + 1 + 1 + (len(g.segments) - 1) + 1 + (g.buckets - 1).bit_length() + 1


class ResidentMass(wiring.Component):
    """Resident-mass unit: ``res_max`` and ``res_sum`` of each row of resident-key scores, in one pass.

    Parameters
    ----------
    geometry : ResidentMassGeometry
        ``ResidentMassGeometry.from_config(cfg)``.

    Members
    -------
    scores : In(stream.Signature(resident_scores_layout))
        A row's resident-key scores, ``lanes`` per beat; ``mask`` marks the lanes that hold keys (any pattern, 0
        allowed), ``last`` ends the row. A row of one beat with ``mask = 0`` is a row without a key.
    resident : Out(stream.Signature(resident_mass_layout))
        One beat per row, in row order: ``res_max`` = the row's largest score, ``res_sum`` = the golden
        ``resident_mass`` total (``(0, 0)`` for a row without a key).

    Architecture (one pass, no row buffer). Each beat goes through the WTU load pass's lane datapath for count-1
    clusters: bin ``s >> S``, the LUT mantissa of the fraction ``<<`` the octave in the bin, a masked maximum over the
    beat, per-slot masked adder trees (lane groups of four), then the merge into ``slots`` circular bin accumulators:
    slot ``s`` holds the window bin congruent to ``s`` mod ``slots``, and a rising maximum clears the slots whose bin
    left the window (bins are order-independent, so the result is the golden's whatever the beat order). A bin
    accumulator is W = ``acc_bits`` wide in carry segments of at most 32 bits with a registered carry between them,
    and a sticky saturation bit for a mass ≥ 2^W (exact: such a bin alone saturates the result). The cycle after a
    row's last accumulate, the accumulators (rotated so index i is the window's i-th bin) and the running maximum
    are captured into the finish pipeline while the next row already accumulates: carry resolve, ``q_i = M_i >> (i ·
    bucket_octaves)`` clamped to Z bits, a registered adder tree, the final saturation, and an output queue of
    :data:`ROW_QUEUE` rows.

    Latency and throughput: :func:`resident_mass_latency` cycles from a row's last input beat to its output beat
    (edge: 15). One input beat per cycle while fewer than :data:`ROW_QUEUE` rows are in flight (accepted, not yet
    delivered; ``scores.ready`` is low otherwise, a registered compare): rows of at least ``⌈latency / (ROW_QUEUE −
    1)⌉`` beats (edge: 5) stream back to back without a bubble, shorter rows or a stalled output slow the input.

    Limits: none on a row's length (the accumulators saturate exactly); ties in the maximum are irrelevant (only its
    value is output). ``dre.wtu.pipeline_stages`` chooses the optional register cuts (:data:`RESIDENT_CUTS`).
    """

    def __init__(self, geometry: ResidentMassGeometry):
        self._g = g = geometry
        super().__init__({
            "scores": In(stream.Signature(resident_scores_layout(g))),
            "resident": Out(stream.Signature(resident_mass_layout(g))),
        })

    @classmethod
    def from_config(cls, cfg) -> "ResidentMass":
        return cls(ResidentMassGeometry.from_config(cfg))

    @property
    def geometry(self) -> ResidentMassGeometry:
        return self._g

    def elaborate(self, platform):
        m = Module()
        g = self._g
        L, B, F, K, Z = g.lanes, g.score_bits, g.frac_bits, g.buckets, g.sum_bits
        S, O, M, NACC = g.bin_shift, g.octave_shift, g.mantissa_bits, g.slots
        LB = g.lut_entries.bit_length() - 1
        BBW, TB = B - S, g.term_bits
        IW = max(1, (NACC - 1).bit_length())
        SEGS = g.segments
        cuts = set(g.cuts)

        # ---- input register and row credits ----------------------------------------------------------------
        in_flight = Signal(range(ROW_QUEUE + 1))
        accept = named(m, self.scores.valid & self.scores.ready, "accept")
        pop = named(m, self.resident.valid & self.resident.ready, "pop")
        m.d.comb += self.scores.ready.eq(in_flight < ROW_QUEUE)
        m.d.sync += in_flight.eq(in_flight + (accept & self.scores.payload.last) - pop)
        av, a_last = Signal(), Signal()
        a_s = [Signal(signed(B), name=f"a_s{lane}") for lane in range(L)]
        a_v = Signal(L)
        m.d.sync += av.eq(accept)
        with m.If(accept):
            m.d.sync += [a_last.eq(self.scores.payload.last), a_v.eq(self.scores.payload.mask)]
            m.d.sync += [x.eq(self.scores.payload.scores[lane]) for lane, x in enumerate(a_s)]

        # ---- lanes: bin, LUT term, beat maximum ------------------------------------------------------------
        lut_values = exp_lut(g.lut_entries, M)
        lut = Array(Const(v, M) for v in lut_values)
        valid = [a_v[lane] for lane in range(L)]
        mant = [named(m, lut[x[F - LB:F]], f"mant{lane}", M) if LB else Const(lut_values[0], M)
                for lane, x in enumerate(a_s)]
        terms = [named(m, (mm << x[F:S])[:TB], f"term{lane}", TB) if O else mm for lane, (mm, x) in
                 enumerate(zip(mant, a_s))]
        # the beat's top bin and its maximum score: max trees over lane groups of four here, over the groups after
        # the lut cut
        bins = [x[S:].as_signed() for x in a_s]
        groups = [list(range(i, min(L, i + 4))) for i in range(0, L, 4)]
        stage = {"v": av, "last": a_last, "any": a_v.any(), "bins": bins, "valid": valid, "t": terms,
                 "gtop": [masked_max(m, f"beat_top{gi}", [bins[lane] for lane in grp], [valid[lane] for lane in grp],
                                     BBW) for gi, grp in enumerate(groups)],
                 "gmax": [masked_max(m, f"beat_max{gi}", [a_s[lane] for lane in grp], [valid[lane] for lane in grp], B)
                          for gi, grp in enumerate(groups)]}
        stage = register_cut(m, "lut", stage, cuts)
        top = reduce_tree(m, "beat_top", stage["gtop"], lambda a, b: Mux(b > a, b, a), signed(BBW))
        stage["top"] = top
        stage["max"] = reduce_tree(m, "beat_max", stage["gmax"], lambda a, b: Mux(b > a, b, a), signed(B))
        del stage["gmax"], stage["gtop"]
        rel = [named(m, top - b, f"rel{lane}", signed(BBW + 1)) for lane, b in enumerate(stage["bins"])]
        keep = [named(m, v & (r < K), f"keep{lane}") for lane, (v, r) in enumerate(zip(stage["valid"], rel))]
        stage["sel"] = [named(m, keep[lane] & (stage["bins"][lane][:IW] == b), f"sel{b}_{lane}")
                        for b in range(NACC) for lane in range(L)]
        del stage["bins"], stage["valid"]
        stage = register_cut(m, "sel", stage, cuts)
        stage["ps"] = [named(m, sum_tree([Mux(stage["sel"][b * L + lane], stage["t"][lane], 0) for lane in grp]),
                             f"part{b}_{gi}") for b in range(NACC) for gi, grp in enumerate(groups)]
        del stage["sel"], stage["t"]
        stage = register_cut(m, "tree", stage, cuts)
        ng = len(groups)
        stage["h"] = [named(m, sum_tree(stage["ps"][b * ng:(b + 1) * ng]), f"hist{b}", g.beat_bits)
                      if ng > 1 else stage["ps"][b * ng] for b in range(NACC)]
        del stage["ps"]
        stage = register_cut(m, "hist", stage, cuts)

        # ---- merge: running maximum and anchor; which slots keep their bin, which beat slots are in the window -
        top_run, run_max, have = Signal(signed(BBW)), Signal(signed(B)), Signal()
        v1, any1, top1, max1 = stage["v"], stage["any"], stage["top"], stage["max"]
        first = ~have
        top_new = named(m, Mux(any1 & (first | (top1 > top_run)), top1, top_run), "top_new", signed(BBW))
        max_new = named(m, Mux(any1 & (first | (max1 > run_max)), max1, run_max), "max_new", signed(B))
        d_arr = clamp(m, "d_arr", (top_new - top_run).as_unsigned()[:BBW + 1], K)
        d_beat = clamp(m, "d_beat", (top_new - top1).as_unsigned()[:BBW + 1], K)
        with m.If(v1):
            m.d.sync += [top_run.eq(top_new), run_max.eq(max_new), have.eq(~stage["last"] & (have | any1))]
        win = [named(m, (top1[:IW] - b)[:IW] + d_beat < K, f"win{b}") for b in range(NACC)]
        kept = [named(m, have & ((top_run[:IW] - b)[:IW] + d_arr < K), f"keep_acc{b}") for b in range(NACC)]
        merged = {"v": v1, "last": stage["last"], "top": top_new, "max": max_new, "have": have | any1,
                  "h": [Mux(w, h, 0) for w, h in zip(win, stage["h"])], "k": kept}
        merged = register_cut(m, "merge", merged, cuts)

        # ---- accumulate: segmented bin accumulators with a sticky saturation bit ---------------------------
        segs = [[Signal(w, name=f"acc{b}_s{k}") for k, w in enumerate(SEGS)] for b in range(NACC)]
        carries = [[Signal(name=f"acc{b}_c{k}") for k in range(len(SEGS) - 1)] for b in range(NACC)]
        sats = [Signal(name=f"acc{b}_sat") for b in range(NACC)]
        with m.If(merged["v"]):
            for b in range(NACC):
                kb = merged["k"][b]
                base = [Mux(kb, s, 0) for s in segs[b]]
                cin = [merged["h"][b]] + [c & kb for c in carries[b]]
                outs = [named(m, x + c, f"acc{b}_add{k}", SEGS[k] + 1) for k, (x, c) in enumerate(zip(base, cin))]
                m.d.sync += [s.eq(o[:len(s)]) for s, o in zip(segs[b], outs)]
                m.d.sync += [c.eq(o[-1]) for c, o in zip(carries[b], outs)]
                m.d.sync += sats[b].eq((sats[b] & kb) | outs[-1][-1])
        cap, cap_top, cap_max, cap_have = Signal(), Signal(signed(BBW)), Signal(signed(B)), Signal()
        m.d.sync += [cap.eq(merged["v"] & merged["last"]), cap_top.eq(merged["top"]), cap_max.eq(merged["max"]),
                     cap_have.eq(merged["have"])]

        # ---- finish: capture (window index i = slot (A − i) mod slots), resolve, shift and clamp, tree, saturate -
        packed = [Cat(*segs[b], *carries[b], sats[b]) for b in range(NACC)]
        rot = rotate(m, "rot", [packed[(-i) % NACC] for i in range(NACC)], (-cap_top)[:IW], NACC)
        fv = Signal(name="fin_v")
        fmax, fhave = Signal(signed(B), name="fin_max"), Signal(name="fin_have")
        m.d.sync += [fv.eq(cap), fmax.eq(cap_max), fhave.eq(cap_have)]
        # index i reads bits ≥ shifts[i] only: a segment that takes no more carries is registered from there on (the
        # last carry stage registers one flat value); a segment that still takes a carry is kept whole
        n, shifts = len(SEGS), [i * g.bucket_octaves for i in range(K)]
        offs = [sum(SEGS[:k]) for k in range(n)]
        meta = [fv, fmax, fhave]
        state = []
        for i in range(K):
            sg, cs, sat = _unpack(rot[i], SEGS)
            sg = [_trim(sg[0], shifts[i], offs[0], SEGS[0])] + sg[1:]      # segment 0 takes no carry
            state.append(_flat(m, f"fin{i}", sg[0], sat) if n == 1 else
                         _register_state(m, f"fin{i}", sg, dict(enumerate(cs)), sat))
        for level in range(n - 1):                  # the carries into segments > level, one stage per level
            nxt = []
            for i, (sg, cs, sat) in enumerate(state):
                adds = {k: sg[k] + cs[k - 1] for k in range(level + 1, n)}
                sat = sat | adds[n - 1][SEGS[n - 1]]
                new = [sg[k] if k <= level else adds[k][:SEGS[k]] for k in range(n)]
                new = [_trim(x, shifts[i], offs[k], SEGS[k]) if k <= level + 1 else x for k, x in enumerate(new)]
                if level == n - 2:                  # every carry is in: the value of index i from bit shifts[i]
                    nxt.append(_flat(m, f"res{level}_{i}", Cat(*new), sat))
                else:
                    carries = {k: adds[k][SEGS[k]] for k in range(level + 1, n - 1)}
                    nxt.append(_register_state(m, f"res{level}_{i}", new, carries, sat))
            state, meta = nxt, _delay(m, f"res{level}", meta)
        qz, over = [], []
        for i, (v, sat) in enumerate(state):
            q, o = Signal(Z, name=f"q{i}"), Signal(name=f"over{i}")
            m.d.sync += [q.eq(v[:Z]), o.eq(sat | (v[Z:].any() if len(v) > Z else 0))]
            qz.append(q)
            over.append(o)
        meta = _delay(m, "clamp", meta)
        level = 0
        while len(qz) > 1:                           # registered adder tree over the window, saturation flags ORed
            nq, no = [], []
            for j in range(0, len(qz), 2):
                pair = qz[j:j + 2]
                s = Signal(max(len(x) for x in pair) + (len(pair) > 1), name=f"sum{level}_{j // 2}")
                f = Signal(name=f"sum{level}_{j // 2}_over")
                m.d.sync += [s.eq(sum_tree(pair)), f.eq(Cat(*over[j:j + 2]).any())]
                nq.append(s)
                no.append(f)
            qz, over, level = nq, no, level + 1
            meta = _delay(m, f"sum{level}", meta)
        total, over_any = qz[0], over[0]
        zmax = (1 << Z) - 1
        saturate = over_any | (total[Z:].any() if len(total) > Z else 0)
        res_sum = named(m, Mux(meta[2], Mux(saturate, zmax, total[:Z]), 0), "res_sum", Z)
        res_max = named(m, Mux(meta[2], meta[1], 0), "res_max", signed(B))
        register_queue(m, "rowq", self.resident, meta[0], Cat(res_max, res_sum), ROW_QUEUE, pop)
        return m


def _trim(value, shift, offset, width):
    """Segment ``value`` (absolute offset ``offset``, ``width`` bits when whole, fewer when trimmed already) from the
    absolute bit ``shift`` on (all of it above, nothing below)."""
    dropped = width - len(value)
    return value[min(max(shift - offset, 0), width) - dropped:]


def _register_state(m, name, segs, carries, sat):
    """Segments (zero-width ones stay), carries (segment index → bit) and ``sat`` through registers."""
    out = []
    for k, x in enumerate(segs):
        if len(x):
            r = Signal(len(x), name=f"{name}_s{k}")
            m.d.sync += r.eq(x)
            x = r
        out.append(x)
    cs = {}
    for k, c in carries.items():
        cs[k] = Signal(name=f"{name}_c{k}")
        m.d.sync += cs[k].eq(c)
    r = Signal(name=f"{name}_sat")
    m.d.sync += r.eq(sat)
    return out, cs, r


def _flat(m, name, value, sat):
    """``(value, sat)`` through registers ``{name}_v`` / ``{name}_sat`` (a zero-width value reads as 0)."""
    v = Signal(max(1, len(value)), name=f"{name}_v")
    r = Signal(name=f"{name}_sat")
    m.d.sync += [v.eq(value if len(value) else 0), r.eq(sat)]
    return v, r


def _delay(m, name, values):
    """``values`` one cycle later (registers named ``{name}_meta{i}``)."""
    regs = [Signal(Value.cast(v).shape(), name=f"{name}_meta{i}") for i, v in enumerate(values)]
    m.d.sync += [r.eq(v) for r, v in zip(regs, values)]
    return regs


def _unpack(value, segs):
    """(segments, carries, sat) of a packed accumulator state ``Cat(*segments, *carries, sat)``."""
    out, pos = [], 0
    for w in segs:
        out.append(value[pos:pos + w])
        pos += w
    carries = [value[pos + k] for k in range(len(segs) - 1)]
    return out, carries, value[pos + len(segs) - 1]
