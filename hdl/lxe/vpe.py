"""VPE: ``lxe.vpe_units x lxe.vpe_lanes`` vector lanes in lockstep (docs/formats.md §LXE "VPE", golden
``vrex.golden.lxe.vpe``): add, multiply, max, sign (hash-bit binarisation), a running sum with its count (cluster
mean keys), conversion to the WTU's fixed-point scores, and 2^x (the exponential path of score weights)."""

from amaranth import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.hdl import Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .float_units import Normalized, decode_bf16, decode_fp32, normalize, round_float
from ..arith import named
from .mac_tree import _register, _saturate
from .parts import Part, part, part_members

__all__ = ["VPE", "VpeLane", "VpeOp", "vpe_input_layout", "vpe_output_layout", "lane_input_layout",
           "lane_output_layout", "vpe_count_bits", "TERM_BIAS", "EXP2_FRAC_BITS", "exp2_table", "LANE_CUTS",
           "lane_cuts"]

TERM_BIAS = 284          # a lane term P with exponent e has the value P * 2^(e - 284)
EXP2_FRAC_BITS = 7


def exp2_table():
    """2^(f/128) rounded to 8-bit significands (the contract's table; the golden model builds the same)."""
    scale = 1 << EXP2_FRAC_BITS
    return [int(2.0 ** (f / scale) * scale + 0.5) for f in range(scale)]


class VpeOp(enum.Enum, shape=3):
    ADD = 0
    MUL = 1
    MAX = 2
    SIGN = 3
    ACC = 4
    FIXED = 5
    EXP2 = 6


def lane_input_layout():
    return data.StructLayout({"op": VpeOp, "a": 32, "b": 16, "first": 1})


def lane_output_layout():
    return data.StructLayout({"value": 32, "bf16": 16, "flag": 1})


def vpe_input_layout(lanes):
    return data.StructLayout({
        "op": VpeOp,
        "a": data.ArrayLayout(32, lanes),     # FP32 bits (BF16 data widened: bits << 16)
        "b": data.ArrayLayout(16, lanes),     # BF16 bits (a scalar is sent in every lane)
        "first": 1,                           # acc: load instead of add
        "last": 1,                            # passed through with the result (framing for the consumer)
    })


def vpe_count_bits(headroom_bits):
    """Width of the running count: up to 2^headroom_bits accumulated beats."""
    return headroom_bits + 1


def vpe_output_layout(lanes, count_bits):
    return data.StructLayout({
        "value": data.ArrayLayout(32, lanes),
        "bf16": data.ArrayLayout(16, lanes),
        "flags": lanes,                       # sign: bit l = lane l's a > 0 (a packed hash code)
        "count": count_bits,                  # acc: beats accumulated since `first` (the running count)
        "last": 1,
    })


# The optional registers of a lane, in the order ``stages`` beyond 4 adds them (docs/formats.md §LXE "VPE"):
# between the rounding and the conversion to fixed point / 2^x, after the decode and multiply, inside the normaliser.
LANE_CUTS = ("convert", "decode", "normalise")
LANE_MIN_STAGES = 4


def lane_cuts(stages):
    """The optional registers a lane of ``stages`` stages has."""
    if not LANE_MIN_STAGES <= stages <= LANE_MIN_STAGES + len(LANE_CUTS):
        raise ValueError(f"a VPE lane has {LANE_MIN_STAGES} to {LANE_MIN_STAGES + len(LANE_CUTS)} stages, not {stages}")
    return LANE_CUTS[:stages - LANE_MIN_STAGES]


class VpeLane(wiring.Component):
    """One VPE lane, ``stages`` pipeline stages from the input to the output register (``latency`` = ``stages``):
    decode, multiply and alignment; add or accumulate; normalise; round and convert, with the optional registers
    of :data:`LANE_CUTS`. The ``acc`` state is kept across other ops; its running maximum exponent and shift amounts
    are computed at the alignment, so the accumulator's loop is one shift and one add. Back-pressure stalls the
    lane (``i.ready = ~o.valid | o.ready``)."""

    def __init__(self, *, guard_bits=8, headroom_bits=8, fixed_bits=16, fixed_frac=8, stages=LANE_MIN_STAGES):
        self.guard_bits, self.headroom_bits = guard_bits, headroom_bits
        self.fixed_bits, self.fixed_frac = fixed_bits, fixed_frac
        self.width = 33 + guard_bits + headroom_bits
        self.conv_bits = max(fixed_bits, 16)
        if self.conv_bits + 1 >= self.width:
            # the conversion relies on a normalised non-zero value being ≥ 2^(width-1), beyond any fixed result
            raise ValueError(f"a {self.conv_bits}-bit fixed-point result needs a lane wider than {self.width} bits")
        self.cuts = lane_cuts(stages)
        self.stages = self.latency = stages
        super().__init__(self.make_signature())

    @staticmethod
    def make_signature(**_):
        return wiring.Signature({"i": In(stream.Signature(lane_input_layout())),
                                 "o": Out(stream.Signature(lane_output_layout()))})

    @classmethod
    def from_config(cls, cfg):
        return cls(guard_bits=cfg.lxe.guard_bits, headroom_bits=cfg.lxe.acc_headroom_bits,
                   fixed_bits=cfg.dre.wtu.score_bits, fixed_frac=cfg.dre.wtu.score_frac_bits,
                   stages=cfg.lxe.vpe_stages)

    def elaborate(self, platform):
        m = Module()
        G, W = self.guard_bits, self.width
        advance = self.i.ready
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)

        def register(state, name):
            return _register(m, state, advance, name)

        p = self.i.payload
        op = p.op.as_value()
        fa, fb = decode_fp32(p.a), decode_bf16(p.b)

        # ---- decode: the op's two terms as magnitude, sign and exponent (value ±mag * 2^(e - 284), e = 0 for
        # zeros), the exact product, the special flags, the block exponent and both alignment shifts ------------
        ma = named(m, Mux(fa.normal, fa.mant, 0), "ta_mag")
        mb = named(m, Mux(fb.normal, Cat(Const(0, 16), fb.mant), 0), "tb_mag")
        ea = named(m, Mux(fa.normal, fa.exp + 134, 0), "ta_e")
        eb = named(m, Mux(fb.normal, fb.exp + 134, 0), "tb_e")
        pnormal = fa.normal & fb.normal
        mp = named(m, Mux(pnormal, fa.mant * fb.mant, 0), "tp_mag")
        ep = named(m, Mux(pnormal, fa.exp + fb.exp, 0), "tp_e")
        psign = fa.sign ^ fb.sign
        p_nan = fa.nan | fb.nan | (fa.inf & fb.zero) | (fb.inf & fa.zero)
        p_inf = (fa.inf | fb.inf) & ~p_nan
        p_zero = (fa.zero | fb.zero) & ~p_nan & ~p_inf

        # max: compare DAZ'd bit patterns as a total order key (-0 < +0); ties keep a
        def key(sign, zero, bits31):
            mag = Mux(zero, 0, bits31)
            return Mux(sign, 0x7FFFFFFF - mag, Cat(mag, Const(1, 1)))

        take_b = named(m, key(fb.sign, fb.zero, Cat(Const(0, 16), p.b[:15])) > key(fa.sign, fa.zero, p.a[:31]),
                       "max_take_b")

        m1, s1, e1 = Signal(32, name="m1"), Signal(name="sg1"), Signal(9, name="e1")
        m2, s2, e2 = Signal(24, name="m2"), Signal(name="sg2"), Signal(9, name="e2")
        nan, pinf, ninf, negzero = Signal(), Signal(), Signal(), Signal()
        a_neg0, b_neg0 = fa.zero & fa.sign, fb.zero & fb.sign
        with m.Switch(op):
            with m.Case(VpeOp.ADD):
                m.d.comb += [m1.eq(ma), s1.eq(fa.sign), e1.eq(ea), m2.eq(mb), s2.eq(fb.sign), e2.eq(eb),
                             nan.eq(fa.nan | fb.nan | (fa.inf & fb.inf & (fa.sign ^ fb.sign))),
                             pinf.eq(fa.inf & ~fa.sign | fb.inf & ~fb.sign),
                             ninf.eq(fa.inf & fa.sign | fb.inf & fb.sign), negzero.eq(a_neg0 & b_neg0)]
            with m.Case(VpeOp.MUL, VpeOp.FIXED, VpeOp.EXP2):
                m.d.comb += [m1.eq(mp), s1.eq(psign), e1.eq(ep), nan.eq(p_nan), pinf.eq(p_inf & ~psign),
                             ninf.eq(p_inf & psign), negzero.eq(p_zero & psign)]
            with m.Case(VpeOp.MAX):
                with m.If(take_b):
                    m.d.comb += [m1.eq(mb), s1.eq(fb.sign), e1.eq(eb), pinf.eq(fb.inf & ~fb.sign),
                                 ninf.eq(fb.inf & fb.sign), negzero.eq(b_neg0)]
                with m.Else():
                    m.d.comb += [m1.eq(ma), s1.eq(fa.sign), e1.eq(ea), pinf.eq(fa.inf & ~fa.sign),
                                 ninf.eq(fa.inf & fa.sign), negzero.eq(a_neg0)]
                m.d.comb += nan.eq(fa.nan | fb.nan)
            with m.Default():        # SIGN, ACC: the term of a
                m.d.comb += [m1.eq(ma), s1.eq(fa.sign), e1.eq(ea), nan.eq(fa.nan), pinf.eq(fa.inf & ~fa.sign),
                             ninf.eq(fa.inf & fa.sign), negzero.eq(a_neg0)]
        emax = named(m, Mux(e1 > e2, e1, e2), "emax")
        T_bits = 33 + G                         # a term P << G, P signed 33 bits
        st = {"valid": self.i.valid, "op": op, "first": p.first, "m1": m1, "s1": s1, "m2": m2, "s2": s2, "e": emax,
              "d1": _saturate(m, emax - e1, T_bits - 1, "d1"), "d2": _saturate(m, emax - e2, T_bits - 1, "d2"),
              "nan": nan, "pinf": pinf, "ninf": ninf, "negzero": negzero}
        if "decode" in self.cuts:
            st = register(st, "s0")

        # ---- alignment: the signed terms (P << G) >> d (floor), and the accumulator's exponent a beat ahead ------
        T1 = (Mux(st["s1"], -st["m1"], st["m1"]) << G) >> st["d1"]
        T2 = (Mux(st["s2"], -st["m2"], st["m2"]) << G) >> st["d2"]
        is_acc = st["op"] == VpeOp.ACC.value
        run_e = Signal(9, name="run_e")
        prev_e = Mux(st["first"], 0, run_e)
        up = named(m, (Cat(st["e"], Const(0, 1)) - prev_e)[:10], "run_up")          # e_b - e
        down = named(m, (prev_e - st["e"])[:9], "run_down")                              # e - e_b when e > e_b
        later = up[9]
        new_e = named(m, Mux(later, prev_e, st["e"]), "run_e_next")
        with m.If(advance & st["valid"] & is_acc):
            m.d.sync += run_e.eq(new_e)
        s1r = register({"valid": st["valid"], "op": st["op"], "first": st["first"], "T1": T1, "T2": T2,
                        "e": Mux(is_acc, new_e, st["e"]),
                        "d_acc": _saturate(m, Mux(is_acc & ~later, up[:9], 0), W - 1, "acc_shift"),
                        "d_beat": _saturate(m, Mux(is_acc & later, down, 0), T_bits - 1, "beat_shift"),
                        "nan": st["nan"], "pinf": st["pinf"], "ninf": st["ninf"], "negzero": st["negzero"]}, "s1")

        # ---- add the two terms, or accumulate: S' = (S >> (e' - e)) + (T >> (e' - e_b)); one adder for both (the
        # shift amounts are 0 for the other ops) ------------------------------------------------------------------
        acc_S = Signal(signed(W))
        acc_nan, acc_pinf, acc_ninf, acc_negzero = Signal(), Signal(), Signal(), Signal()
        op1 = s1r["op"]
        is_acc = op1 == VpeOp.ACC.value
        first = s1r["first"]
        other = Mux(is_acc & ~first, acc_S, Mux(is_acc, 0, s1r["T2"]))
        total = named(m, (other >> s1r["d_acc"]) + (s1r["T1"] >> s1r["d_beat"]), "lane_sum")
        n_nan = Mux(first, 0, acc_nan) | s1r["nan"]
        n_pinf = Mux(first, 0, acc_pinf) | s1r["pinf"]
        n_ninf = Mux(first, 0, acc_ninf) | s1r["ninf"]
        n_negzero = Mux(first, 1, acc_negzero) & s1r["negzero"]
        with m.If(advance & s1r["valid"] & is_acc):
            m.d.sync += [acc_S.eq(total), acc_nan.eq(n_nan), acc_pinf.eq(n_pinf), acc_ninf.eq(n_ninf),
                         acc_negzero.eq(n_negzero)]
        # the fixed-point conversion's right shift less one is lz - (e - 284 - G + frac) - 1 = lz + ~(e - bias)
        is_exp = op1 == VpeOp.EXP2.value
        conv_e = named(m, Cat(s1r["e"], Const(0, 1)).as_signed() - (TERM_BIAS + G)
                       + Mux(is_exp, EXP2_FRAC_BITS, self.fixed_frac), "conv_e")
        s2r = register({"valid": s1r["valid"], "op": op1, "S": total, "e": s1r["e"], "conv_ne": ~conv_e,
                        "nan": Mux(is_acc, n_nan, s1r["nan"]), "pinf": Mux(is_acc, n_pinf, s1r["pinf"]),
                        "ninf": Mux(is_acc, n_ninf, s1r["ninf"]),
                        "negzero": Mux(is_acc, n_negzero, s1r["negzero"])}, "s2")

        # ---- normalise (one or two cycles) ---------------------------------------------------------------------
        r, c = normalize(m, s2r["S"], s2r["e"], "norm", stages=2 if "normalise" in self.cuts else 1,
                         carry={k: v for k, v in s2r.items() if k not in ("S", "e")}, register=register)
        Wm = len(r.mant)
        # signed, < 0 when the value is shifted left; the normaliser's overshoot is taken back last
        rsh1 = named(m, r.lz_count + c["conv_ne"] - r.overshoot, "conv_rsh1")
        s3r = register({"n": r.fields(), "rsh1": _saturate(m, Mux(rsh1[-1], 0, rsh1[:-1]), Wm, "conv_rsh1_sat"),
                        "left": rsh1[-1], **{k: v for k, v in c.items() if k != "conv_ne"}}, "s3")
        r = Normalized(*s3r["n"])
        op3 = s3r["op"]

        # ---- round to FP32 / BF16; the fixed-point magnitude's shift and rounding bits ---------------------------
        offset = len(r.mant) - 1 - TERM_BIAS - G + 127
        kw = dict(exp_offset=offset, negzero=s3r["negzero"], nan=s3r["nan"], pinf=s3r["pinf"], ninf=s3r["ninf"])
        fp32 = round_float(m, r, fmt="fp32", name="fp32", **kw)
        bf16 = round_float(m, r, fmt="bf16", name="bf16", **kw)
        qb = self.conv_bits + 1
        x = named(m, r.mant >> s3r["rsh1"], "conv_x")                     # q and the guard bit
        mask = Cat(*(s3r["rsh1"] > j for j in range(Wm)))                   # the bits below the guard bit
        sticky = (r.mant & mask).any()
        q = x[1:]
        # a left shift (or a right one of fewer than W - qb bits) of a normalised non-zero value is beyond any
        # fixed-point result: saturated
        st = {"valid": s3r["valid"], "op": op3, "fp32": fp32, "bf16": bf16,
              "mag": named(m, q[:qb] + (x[0] & (sticky | q[0])), "conv_mag"), "big": s3r["left"] | q[qb:].any(),
              "sign": r.sign, "zero": r.zero, "nan": s3r["nan"], "pinf": s3r["pinf"], "ninf": s3r["ninf"]}
        if "convert" in self.cuts:
            st = register(st, "s4")

        # ---- fixed point (RNE, saturating) and 2^x; output register ---------------------------------------------
        op4 = st["op"]
        is_exp = op4 == VpeOp.EXP2.value
        fbits, conv_bits = self.fixed_bits, self.conv_bits
        mag = st["mag"]
        # the largest magnitude of the result's sign: 2^(k-1) - 1 positive, 2^(k-1) negative (k = 16 or fbits)
        lim_exp, lim_fix = (1 << 15) - 1 + st["sign"], (1 << (fbits - 1)) - 1 + st["sign"]
        lim = Mux(is_exp, lim_exp, lim_fix)
        sat_mag = Mux(st["big"] | (mag > lim), lim, mag)
        fixed = Signal(signed(conv_bits))
        special_nan = st["nan"] | (st["pinf"] & st["ninf"])
        with m.If(special_nan):
            m.d.comb += fixed.eq(0)
        with m.Elif(st["pinf"]):
            m.d.comb += fixed.eq(Mux(is_exp, (1 << 15) - 1, (1 << (fbits - 1)) - 1))
        with m.Elif(st["ninf"]):
            m.d.comb += fixed.eq(Mux(is_exp, -(1 << 15), -(1 << (fbits - 1))))
        with m.Elif(st["zero"]):
            m.d.comb += fixed.eq(0)
        with m.Else():
            m.d.comb += fixed.eq(Mux(st["sign"], -sat_mag, sat_mag))
        # 2^t, t = fixed(x, 16 bits, 7 fraction bits): exponent t >> 7, significand from the table
        table = Signal(7)                   # the significand's fraction bits (the hidden bit is always 1)
        frac_idx = fixed[:EXP2_FRAC_BITS]
        with m.Switch(frac_idx):
            for f, v in enumerate(exp2_table()):
                with m.Case(f):
                    m.d.comb += table.eq(v - 128)
        E = named(m, (fixed >> EXP2_FRAC_BITS) + 127, "exp2_E")
        exp2 = Signal(32)
        with m.If(special_nan):
            m.d.comb += exp2.eq(0x7FC00000)
        with m.Elif(st["pinf"]):
            m.d.comb += exp2.eq(0x7F800000)
        with m.Elif(st["ninf"] | (E < 1)):
            m.d.comb += exp2.eq(0)
        with m.Elif(E >= 255):
            m.d.comb += exp2.eq(0x7F800000)
        with m.Else():
            m.d.comb += exp2.eq(Cat(Const(0, 16), table, E[:8], Const(0, 1)))
        value, half = Signal(32), Signal(16)
        with m.Switch(op4):
            with m.Case(VpeOp.FIXED):
                m.d.comb += [value.eq(fixed.as_signed()), half.eq(st["bf16"])]
            with m.Case(VpeOp.EXP2):
                m.d.comb += [value.eq(exp2), half.eq(exp2[16:])]
            with m.Default():
                m.d.comb += [value.eq(st["fp32"]), half.eq(st["bf16"])]
        special = st["nan"] | st["pinf"] | st["ninf"]
        flag = (op4 == VpeOp.SIGN.value) & ~special & ~st["zero"] & ~st["sign"]
        with m.If(advance):
            m.d.sync += [self.o.valid.eq(st["valid"]), self.o.payload.value.eq(value), self.o.payload.bf16.eq(half),
                         self.o.payload.flag.eq(flag)]
        return m


class VPE(wiring.Component):
    """``lanes`` :class:`VpeLane` instances in lockstep with a shared op, plus the running count of ``acc``
    beats and the ``last`` tag, delayed to match the lanes' ``latency``.

    Members
    -------
    i : In(stream.Signature(vpe_input_layout(lanes)))
    o : Out(stream.Signature(vpe_output_layout(lanes, count_bits)))
    """

    def __init__(self, *, lanes, guard_bits=8, headroom_bits=8, fixed_bits=16, fixed_frac=8,
                 stages=LANE_MIN_STAGES, external=False):
        self.lanes, self.external = lanes, external
        args = dict(guard_bits=guard_bits, headroom_bits=headroom_bits, fixed_bits=fixed_bits, fixed_frac=fixed_frac,
                    stages=stages)
        lane_cuts(stages)
        self._lanes = {f"lane{k}": Part(VpeLane, **args) for k in range(lanes)}
        self.latency = stages
        self.count_bits = vpe_count_bits(headroom_bits)
        super().__init__({**self.make_signature(lanes=lanes, headroom_bits=headroom_bits).members,
                          **part_members(self._lanes, external)})

    @staticmethod
    def make_signature(*, lanes, headroom_bits=8, **_):
        return wiring.Signature({"i": In(stream.Signature(vpe_input_layout(lanes))),
                                 "o": Out(stream.Signature(vpe_output_layout(lanes, vpe_count_bits(headroom_bits))))})

    @staticmethod
    def config_args(cfg) -> dict:
        return dict(lanes=cfg.lxe.lanes, guard_bits=cfg.lxe.guard_bits, headroom_bits=cfg.lxe.acc_headroom_bits,
                    fixed_bits=cfg.dre.wtu.score_bits, fixed_frac=cfg.dre.wtu.score_frac_bits,
                    stages=cfg.lxe.vpe_stages)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(**cls.config_args(cfg), external=external)

    def hierarchy_parts(self) -> dict:
        return dict(self._lanes)

    def elaborate(self, platform):
        m = Module()
        lanes = [part(m, self, name, sub, self.external) for name, sub in self._lanes.items()]
        p = self.i.payload
        for k, lane in enumerate(lanes):
            m.d.comb += [lane.i.valid.eq(self.i.valid), lane.i.payload.op.eq(p.op), lane.i.payload.a.eq(p.a[k]),
                         lane.i.payload.b.eq(p.b[k]), lane.i.payload.first.eq(p.first), lane.o.ready.eq(self.o.ready),
                         self.o.payload.value[k].eq(lane.o.payload.value), self.o.payload.bf16[k].eq(lane.o.payload.bf16),
                         self.o.payload.flags[k].eq(lane.o.payload.flag)]
        advance = self.i.ready                 # lockstep lanes: every lane's ready and valid are equal
        m.d.comb += [advance.eq(Cat(*(lane.i.ready for lane in lanes)).all()),
                     self.o.valid.eq(Cat(*(lane.o.valid for lane in lanes)).all())]
        count = Signal(self.count_bits)
        is_acc = p.op == VpeOp.ACC
        cur = named(m, Mux(is_acc, Mux(p.first, 1, (count + 1)[:self.count_bits]), count), "count_next")
        with m.If(advance & self.i.valid & is_acc):
            m.d.sync += count.eq(cur)
        tag = {"count": cur, "last": p.last}
        for s in range(self.latency):
            tag = _register(m, tag, advance, f"tag{s}")
        m.d.comb += [self.o.payload.count.eq(tag["count"]), self.o.payload.last.eq(tag["last"])]
        return m
