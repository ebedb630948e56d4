"""VPE: ``lxe.vpe_units x lxe.vpe_lanes`` vector lanes in lockstep (docs/formats.md §LXE "VPE", golden
``vrex.golden.lxe.vpe``): add, multiply, max, sign (hash-bit binarisation), a running sum with its count (cluster
mean keys), conversion to the WTU's fixed-point scores, and 2^x (the exponential path of score weights)."""

from amaranth import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.hdl import Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .float_units import Normalized, decode_bf16, decode_fp32, normalize, round_fixed, round_float
from ..arith import named
from .mac_tree import _register
from .parts import Part, part, part_members

__all__ = ["VPE", "VpeLane", "VpeOp", "vpe_input_layout", "vpe_output_layout", "lane_input_layout",
           "lane_output_layout", "vpe_count_bits", "TERM_BIAS", "EXP2_FRAC_BITS", "exp2_table"]

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


class VpeLane(wiring.Component):
    """One VPE lane: 4 pipeline stages (decode + multiply + align; add / accumulate; normalise; round) and the
    output register, ``latency`` = 4. The ``acc`` state is kept across other ops. Back-pressure stalls the lane
    (``i.ready = ~o.valid | o.ready``)."""

    LATENCY = 4

    def __init__(self, *, guard_bits=8, headroom_bits=8, fixed_bits=16, fixed_frac=8):
        self.guard_bits, self.headroom_bits = guard_bits, headroom_bits
        self.fixed_bits, self.fixed_frac = fixed_bits, fixed_frac
        self.width = 33 + guard_bits + headroom_bits
        self.latency = self.LATENCY
        super().__init__(self.make_signature())

    @staticmethod
    def make_signature(**_):
        return wiring.Signature({"i": In(stream.Signature(lane_input_layout())),
                                 "o": Out(stream.Signature(lane_output_layout()))})

    @classmethod
    def from_config(cls, cfg):
        return cls(guard_bits=cfg.lxe.guard_bits, headroom_bits=cfg.lxe.acc_headroom_bits,
                   fixed_bits=cfg.dre.wtu.score_bits, fixed_frac=cfg.dre.wtu.score_frac_bits)

    def elaborate(self, platform):
        m = Module()
        G, W = self.guard_bits, self.width
        advance = self.i.ready
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        p = self.i.payload
        op = p.op
        fa, fb = decode_fp32(p.a), decode_bf16(p.b)

        # ---- stage 1: terms (P signed 33 bits, e 9 bits: value P * 2^(e - 284)) and alignment ----------------
        def term(name, normal, sign, mag, exp):
            mag = Value.cast(mag)
            return (named(m, Mux(normal, Mux(sign, -mag, mag), 0), f"{name}_P"),
                    named(m, Mux(normal, exp, 0), f"{name}_e"))

        Pa, ea = term("ta", fa.normal, fa.sign, fa.mant, fa.exp + 134)
        Pb, eb = term("tb", fb.normal, fb.sign, Cat(Const(0, 16), fb.mant), fb.exp + 134)
        prod = named(m, fa.mant * fb.mant, "prod")
        psign = fa.sign ^ fb.sign
        Pp, ep = term("tp", fa.normal & fb.normal, psign, prod, fa.exp + fb.exp)
        p_nan = fa.nan | fb.nan | (fa.inf & fb.zero) | (fb.inf & fa.zero)
        p_inf = (fa.inf | fb.inf) & ~p_nan
        p_zero = (fa.zero | fb.zero) & ~p_nan & ~p_inf

        # max: compare DAZ'd bit patterns as a total order key (-0 < +0); ties keep a
        def key(sign, zero, bits31):
            mag = Mux(zero, 0, bits31)
            return Mux(sign, 0x7FFFFFFF - mag, Cat(mag, Const(1, 1)))

        take_b = named(m, key(fb.sign, fb.zero, Cat(Const(0, 16), p.b[:15])) > key(fa.sign, fa.zero, p.a[:31]),
                       "max_take_b")

        P1, e1, P2, e2 = (Signal(signed(33), name="P1"), Signal(9, name="e1"), Signal(signed(33), name="P2"),
                          Signal(9, name="e2"))
        nan, pinf, ninf, negzero = Signal(), Signal(), Signal(), Signal()
        a_neg0, b_neg0 = fa.zero & fa.sign, fb.zero & fb.sign
        with m.Switch(op):
            with m.Case(VpeOp.ADD):
                m.d.comb += [P1.eq(Pa), e1.eq(ea), P2.eq(Pb), e2.eq(eb), nan.eq(fa.nan | fb.nan | (fa.inf & fb.inf &
                             (fa.sign ^ fb.sign))), pinf.eq(fa.inf & ~fa.sign | fb.inf & ~fb.sign),
                             ninf.eq(fa.inf & fa.sign | fb.inf & fb.sign), negzero.eq(a_neg0 & b_neg0)]
            with m.Case(VpeOp.MUL, VpeOp.FIXED, VpeOp.EXP2):
                m.d.comb += [P1.eq(Pp), e1.eq(ep), nan.eq(p_nan), pinf.eq(p_inf & ~psign), ninf.eq(p_inf & psign),
                             negzero.eq(p_zero & psign)]
            with m.Case(VpeOp.MAX):
                with m.If(take_b):
                    m.d.comb += [P1.eq(Pb), e1.eq(eb), pinf.eq(fb.inf & ~fb.sign), ninf.eq(fb.inf & fb.sign),
                                 negzero.eq(b_neg0)]
                with m.Else():
                    m.d.comb += [P1.eq(Pa), e1.eq(ea), pinf.eq(fa.inf & ~fa.sign), ninf.eq(fa.inf & fa.sign),
                                 negzero.eq(a_neg0)]
                m.d.comb += nan.eq(fa.nan | fb.nan)
            with m.Default():        # SIGN, ACC: the term of a
                m.d.comb += [P1.eq(Pa), e1.eq(ea), nan.eq(fa.nan), pinf.eq(fa.inf & ~fa.sign),
                             ninf.eq(fa.inf & fa.sign), negzero.eq(a_neg0)]
        emax = named(m, Mux(e1 > e2, e1, e2), "emax")
        T1, T2 = (P1 << G) >> (emax - e1)[:9], (P2 << G) >> (emax - e2)[:9]
        s1 = _register(m, {"valid": self.i.valid, "op": op.as_value(), "first": p.first, "T1": T1, "T2": T2,
                           "e": emax, "nan": nan, "pinf": pinf, "ninf": ninf, "negzero": negzero}, advance, "s1")

        # ---- stage 2: the sum of the two terms, or the accumulator (running max exponent, floor shifts) -------
        acc_S, acc_e = Signal(signed(W)), Signal(9)
        acc_nan, acc_pinf, acc_ninf, acc_negzero = Signal(), Signal(), Signal(), Signal()
        is_acc = s1["op"] == VpeOp.ACC.value
        first = s1["first"]
        base_S, base_e = Mux(first, 0, acc_S), Mux(first, 0, acc_e)
        beat = s1["T1"]
        d = named(m, Cat(s1["e"], Const(0, 1)).as_signed() - base_e, "acc_d")
        later = d[-1]
        back = (base_e - s1["e"])[:10]
        acc_new = named(m, (base_S >> Mux(later, 0, d[:10])) + (beat >> Mux(later, back, 0)), "acc_sum")
        new_e = Mux(later, base_e, s1["e"])
        n_nan = Mux(first, 0, acc_nan) | s1["nan"]
        n_pinf = Mux(first, 0, acc_pinf) | s1["pinf"]
        n_ninf = Mux(first, 0, acc_ninf) | s1["ninf"]
        n_negzero = Mux(first, 1, acc_negzero) & s1["negzero"]
        with m.If(advance & s1["valid"] & is_acc):
            m.d.sync += [acc_S.eq(acc_new), acc_e.eq(new_e), acc_nan.eq(n_nan), acc_pinf.eq(n_pinf),
                         acc_ninf.eq(n_ninf), acc_negzero.eq(n_negzero)]
        total = Mux(is_acc, acc_new, s1["T1"] + s1["T2"])
        s2 = _register(m, {"valid": s1["valid"], "op": s1["op"], "S": total, "e": Mux(is_acc, new_e, s1["e"]),
                           "nan": Mux(is_acc, n_nan, s1["nan"]), "pinf": Mux(is_acc, n_pinf, s1["pinf"]),
                           "ninf": Mux(is_acc, n_ninf, s1["ninf"]),
                           "negzero": Mux(is_acc, n_negzero, s1["negzero"])}, advance, "s2")

        # ---- stage 3: normalise ----------------------------------------------------------------------------
        norm = normalize(m, s2["S"], s2["e"], "norm")
        s3 = _register(m, {"valid": s2["valid"], "op": s2["op"], "n": norm.fields(), "nan": s2["nan"],
                           "pinf": s2["pinf"], "ninf": s2["ninf"], "negzero": s2["negzero"]}, advance, "s3")
        r = Normalized(*s3["n"])
        op3 = s3["op"]

        # ---- stage 4: round to FP32 / BF16, fixed point, 2^x; output register ------------------------------
        offset = len(norm.mant) - 1 - TERM_BIAS - G + 127
        kw = dict(exp_offset=offset, negzero=s3["negzero"], nan=s3["nan"], pinf=s3["pinf"], ninf=s3["ninf"])
        fp32 = round_float(m, r, fmt="fp32", name="fp32", **kw)
        bf16 = round_float(m, r, fmt="bf16", name="bf16", **kw)
        is_exp = op3 == VpeOp.EXP2.value
        fbits, ffrac = self.fixed_bits, self.fixed_frac
        conv_bits = max(fbits, 16)
        shift = named(m, r.exp - (TERM_BIAS + G) + Mux(is_exp, EXP2_FRAC_BITS, ffrac), "conv_shift")
        qmag = round_fixed(m, r.mant, shift, bits=conv_bits + 1, name="conv")
        signed_q = Mux(r.sign, -qmag, qmag)
        lo = Mux(is_exp, -(1 << 15), -(1 << (fbits - 1)))
        hi = Mux(is_exp, (1 << 15) - 1, (1 << (fbits - 1)) - 1)
        fixed = Signal(signed(conv_bits))
        with m.If(s3["nan"] | (s3["pinf"] & s3["ninf"])):
            m.d.comb += fixed.eq(0)
        with m.Elif(s3["pinf"]):
            m.d.comb += fixed.eq(hi)
        with m.Elif(s3["ninf"]):
            m.d.comb += fixed.eq(lo)
        with m.Elif(r.zero):
            m.d.comb += fixed.eq(0)
        with m.Else():
            m.d.comb += fixed.eq(Mux(signed_q > hi, hi, Mux(signed_q < lo, lo, signed_q)))
        # 2^t, t = fixed(x, 16 bits, 7 fraction bits): exponent t >> 7, significand from the table
        table = Signal(7)                   # the significand's fraction bits (the hidden bit is always 1)
        frac_idx = fixed[:EXP2_FRAC_BITS]
        with m.Switch(frac_idx):
            for f, v in enumerate(exp2_table()):
                with m.Case(f):
                    m.d.comb += table.eq(v - 128)
        E = named(m, (fixed >> EXP2_FRAC_BITS) + 127, "exp2_E")
        exp2 = Signal(32)
        with m.If(s3["nan"] | (s3["pinf"] & s3["ninf"])):
            m.d.comb += exp2.eq(0x7FC00000)
        with m.Elif(s3["pinf"]):
            m.d.comb += exp2.eq(0x7F800000)
        with m.Elif(s3["ninf"] | (E < 1)):
            m.d.comb += exp2.eq(0)
        with m.Elif(E >= 255):
            m.d.comb += exp2.eq(0x7F800000)
        with m.Else():
            m.d.comb += exp2.eq(Cat(Const(0, 16), table, E[:8], Const(0, 1)))
        value, half = Signal(32), Signal(16)
        with m.Switch(op3):
            with m.Case(VpeOp.FIXED):
                m.d.comb += [value.eq(fixed.as_signed()), half.eq(bf16)]
            with m.Case(VpeOp.EXP2):
                m.d.comb += [value.eq(exp2), half.eq(exp2[16:])]
            with m.Default():
                m.d.comb += [value.eq(fp32), half.eq(bf16)]
        special = s3["nan"] | s3["pinf"] | s3["ninf"]
        flag = (op3 == VpeOp.SIGN.value) & ~special & ~r.zero & ~r.sign
        with m.If(advance):
            m.d.sync += [self.o.valid.eq(s3["valid"]), self.o.payload.value.eq(value), self.o.payload.bf16.eq(half),
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

    def __init__(self, *, lanes, guard_bits=8, headroom_bits=8, fixed_bits=16, fixed_frac=8, external=False):
        self.lanes, self.external = lanes, external
        args = dict(guard_bits=guard_bits, headroom_bits=headroom_bits, fixed_bits=fixed_bits, fixed_frac=fixed_frac)
        self._lanes = {f"lane{k}": Part(VpeLane, **args) for k in range(lanes)}
        self.latency = VpeLane.LATENCY
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
                    fixed_bits=cfg.dre.wtu.score_bits, fixed_frac=cfg.dre.wtu.score_frac_bits)

    @classmethod
    def from_config(cls, cfg, *, external=False):
        return cls(**cls.config_args(cfg), external=external)

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
