"""A pipelined BF16 MAC tree: n exact products, block alignment, an exact adder tree, a running-max-exponent
accumulator, and one RNE to FP32 and BF16 (numerics: docs/formats.md §LXE, golden ``vrex.golden.lxe.mac_tree``)."""

from amaranth import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.hdl import Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out


from ..arith import named
from .float_units import NORM_CUTS, Normalized, decode_bf16, normalize, round_float

__all__ = ["MacTree", "mac_input_layout", "mac_output_layout", "PRODUCT_BIAS", "front_levels", "mac_latency"]

PRODUCT_BIAS = 268          # a product P with exponent field sum e has the value P * 2^(e - 268)


def mac_input_layout(n):
    return data.StructLayout({
        "a": data.ArrayLayout(unsigned(16), n),     # BF16 bits (the broadcast operand in a DPE)
        "b": data.ArrayLayout(unsigned(16), n),     # BF16 bits (the tree's own operand, e.g. a weight row)
        "first": 1,                                 # first beat of a dot product (clears the accumulator)
        "last": 1,                                  # last beat: the result is emitted
    })


def mac_output_layout():
    return data.StructLayout({"fp32": 32, "bf16": 16})


def mac_latency(cuts, norm_stages):
    """Cycles from a last beat's handshake to its result: the cut registers, the accumulator, the normaliser's
    ``norm_stages`` and the output register."""
    return len(cuts) + 2 + norm_stages


def front_levels(n):
    """Cut positions of an n-input tree, 1..this: before front level c (0 product, 1..K max tree, K+1 alignment,
    K+2..2K+1 adder tree), and 2K+2 before the accumulator."""
    return 2 * (n.bit_length() - 1) + 2


class MacTree(wiring.Component):
    """One BF16 MAC tree of ``n`` inputs with accumulation over beats.

    Parameters
    ----------
    n : int
        Inputs (a power of two ≥ 2).
    guard_bits : int
        G: fraction bits kept below the largest product when the beat is aligned.
    headroom_bits : int
        H: the accumulator holds 2^H beats without overflow (it wraps beyond).
    cuts : tuple of int
        Pipeline registers: cut c registers the boundary before front level c (1 … 2K+2, see
        :func:`front_levels`; 2K+2 registers the adder-tree root before the accumulator).
    norm_stages : int
        Cycles of the normaliser between the accumulator and the output register (1 to 3: |S|, leading-zero count
        and shift in one cycle, a register after the count, or after |S| too).

    Members
    -------
    i : In(stream.Signature(mac_input_layout(n)))
        One beat per transfer: n BF16 pairs, ``first`` and ``last`` framing a dot product.
    o : Out(stream.Signature(mac_output_layout()))
        One result per dot product (on its ``last`` beat): FP32 and BF16 bits, each rounded once.

    Timing
    ------
    One beat per cycle; ``latency`` = ``len(cuts) + 2 + norm_stages`` cycles from the handshake of a ``last`` beat
    to the result's ``o.valid`` (the cut registers, the accumulator, the normaliser and the output register).
    The accumulator's running maximum exponent and both shift amounts are computed at the alignment level, so its
    loop is one shift and one add.
    Back-pressure stalls the whole pipeline (``i.ready = ~o.valid | o.ready``), so any stall pattern is safe.
    """

    def __init__(self, *, n, guard_bits=8, headroom_bits=8, cuts=(), norm_stages=1):
        if n < 2 or n & (n - 1):
            raise ValueError(f"a MAC tree needs a power-of-two number of inputs ≥ 2, not {n}")
        depth = front_levels(n)
        if any(not 1 <= c <= depth for c in cuts) or list(cuts) != sorted(set(cuts)):
            raise ValueError(f"cuts {tuple(cuts)} must be strictly increasing within 1..{depth} for {n} inputs")
        if norm_stages not in NORM_CUTS:
            raise ValueError(f"a MAC tree's normaliser has 1 to 3 stages, not {norm_stages}")
        self.n, self.guard_bits, self.headroom_bits, self.cuts = n, guard_bits, headroom_bits, tuple(cuts)
        self.norm_stages = norm_stages
        self.levels = n.bit_length() - 1
        self.sum_bits = 17 + guard_bits + self.levels
        self.acc_bits = self.sum_bits + headroom_bits
        self.latency = mac_latency(self.cuts, norm_stages)
        super().__init__(self.make_signature(n=n))

    @staticmethod
    def make_signature(*, n, **_):
        return wiring.Signature({"i": In(stream.Signature(mac_input_layout(n))),
                                 "o": Out(stream.Signature(mac_output_layout()))})

    @classmethod
    def from_config(cls, cfg):
        x = cfg.lxe
        return cls(n=x.dpe_inputs, guard_bits=x.guard_bits, headroom_bits=x.acc_headroom_bits, cuts=x.mac_cuts,
                   norm_stages=x.mac_norm_stages)

    def elaborate(self, platform):
        m = Module()
        n, G, K = self.n, self.guard_bits, self.levels
        advance = self.i.ready
        m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        p = self.i.payload

        # ---- level 0: exact products (signed 17-bit significands) and exponent sums ---------------------------
        P, E, flags = [], [], {"nan": [], "pinf": [], "ninf": [], "negzero": []}
        for k in range(n):
            fa, fb = decode_bf16(p.a[k]), decode_bf16(p.b[k])
            sign = fa.sign ^ fb.sign
            nan = fa.nan | fb.nan | (fa.inf & fb.zero) | (fb.inf & fa.zero)
            inf = (fa.inf | fb.inf) & ~nan
            normal = fa.normal & fb.normal
            mag = named(m, fa.mant * fb.mant, f"prod{k}_mag")
            prod = named(m, Mux(normal, Mux(sign, -mag, mag), 0), f"prod{k}")
            exp = named(m, Mux(normal, fa.exp + fb.exp, 0), f"prod{k}_exp")
            P.append(prod)
            E.append(exp)
            flags["nan"].append(nan)
            flags["pinf"].append(inf & ~sign)
            flags["ninf"].append(inf & sign)
            flags["negzero"].append(~normal & ~nan & ~inf & sign)
        state = {"valid": self.i.valid, "first": p.first, "last": p.last, "P": P, "E": E,
                 "nan": Cat(*flags["nan"]).any(), "pinf": Cat(*flags["pinf"]).any(),
                 "ninf": Cat(*flags["ninf"]).any(), "negzero": Cat(*flags["negzero"]).all(), "emax": list(E)}
        level = 0

        def cut(state, level):
            if level in self.cuts:
                return _register(m, state, advance, f"cut{level}")
            return state

        # ---- levels 1..K: max-exponent tree ----------------------------------------------------------------
        # two levels within one cycle are one level of 4-input maxima (all six comparisons at once)
        k = 0
        while k < K:
            level += 1
            state = cut(state, level)
            vals = state["emax"]
            if k + 1 < K and level + 1 not in self.cuts:
                level, k = level + 1, k + 2
                state = dict(state, emax=[_max4(m, vals[i:i + 4], f"emax{k - 1}_{i // 4}")
                                          for i in range(0, len(vals), 4)])
            else:
                k += 1
                state = dict(state, emax=[_max(m, vals[i], vals[i + 1], f"emax{k - 1}_{i // 2}")
                                          for i in range(0, len(vals), 2)])
        # ---- level K+1: alignment to the beat's maximum exponent (floor shifts) -----------------------------
        level += 1
        state = cut(state, level)
        emax = state["emax"][0]
        terms = [(state["P"][k] << G) >> (emax - state["E"][k])[:9] for k in range(n)]
        # the accumulator's exponent, a beat ahead of its shift + add: the running maximum e' = max(e, e_b) of the
        # dot product and both shift amounts e' - e (the state's) and e' - e_b (the beat's), each saturated where
        # a larger shift gives the same bits (the sign)
        W, SB = self.acc_bits, self.sum_bits
        run_e = Signal(9, name="run_e")
        prev_e = Mux(state["first"], 0, run_e)
        up = named(m, (Cat(emax, Const(0, 1)) - prev_e)[:10], "run_up")            # e_b - e
        down = named(m, (prev_e - emax)[:9], "run_down")                                # e - e_b when e > e_b
        later = up[9]                                                                   # the state's is larger
        new_e = named(m, Mux(later, prev_e, emax), "run_e_next")
        with m.If(advance & state["valid"]):
            m.d.sync += run_e.eq(new_e)
        state = {key: v for key, v in state.items() if key not in ("P", "E", "emax")}
        state.update(terms=terms, e=new_e, d_acc=_saturate(m, Mux(later, 0, up[:9]), W - 1, "acc_shift"),
                     d_beat=_saturate(m, Mux(later, down, 0), SB - 1, "beat_shift"))
        # ---- levels K+2..2K+1: adder tree (exact, any order gives the same sum) ------------------------------
        for k in range(K):
            level += 1
            state = cut(state, level)
            t = state["terms"]
            sums = []
            for i in range(0, len(t), 2):
                sums.append(named(m, t[i] + t[i + 1], f"sum{k}_{i // 2}"))
            state = dict(state, terms=sums)

        level += 1
        state = cut(state, level)
        # ---- accumulator: S' = (S >> (e' - e)) + (S_b >> (e' - e_b)), floor shifts, no rounding in the loop -------
        acc_S = Signal(signed(W))
        acc_e = Signal(9)
        acc_nan, acc_pinf, acc_ninf, acc_negzero = Signal(), Signal(), Signal(), Signal()
        done = Signal()
        first = state["first"]
        base_S = Mux(first, 0, acc_S)
        beat_S = state["terms"][0]
        total = (base_S >> state["d_acc"]) + (beat_S >> state["d_beat"])                # wraps at W bits
        with m.If(advance):
            m.d.sync += done.eq(state["valid"] & state["last"])
            with m.If(state["valid"]):
                m.d.sync += [acc_S.eq(total), acc_e.eq(state["e"]),
                             acc_nan.eq(Mux(first, 0, acc_nan) | state["nan"]),
                             acc_pinf.eq(Mux(first, 0, acc_pinf) | state["pinf"]),
                             acc_ninf.eq(Mux(first, 0, acc_ninf) | state["ninf"]),
                             acc_negzero.eq(Mux(first, 1, acc_negzero) & state["negzero"])]

        # ---- normaliser (norm_stages cycles), then rounding to FP32 and BF16 into the output register ----------
        r, reg = normalize(m, acc_S, acc_e, "norm", stages=self.norm_stages,
                           carry={"valid": done, "nan": acc_nan, "pinf": acc_pinf, "ninf": acc_ninf,
                                  "negzero": acc_negzero},
                           register=lambda st, name: _register(m, st, advance, name))
        reg = _register(m, {"n": r.fields(), **reg}, advance, "normreg")
        r = Normalized(*reg["n"])
        # biased exponent = (width - 1 - lz) + e - 268 - G + 127 = r.exp + (width - 1 - 268 - G + 127)
        offset = len(r.mant) - 1 - PRODUCT_BIAS - G + 127
        kw = dict(exp_offset=offset, negzero=reg["negzero"], nan=reg["nan"], pinf=reg["pinf"], ninf=reg["ninf"])
        fp32 = round_float(m, r, fmt="fp32", name="fp32", **kw)
        bf16 = round_float(m, r, fmt="bf16", name="bf16", **kw)
        with m.If(advance):
            m.d.sync += [self.o.valid.eq(reg["valid"]), self.o.payload.fp32.eq(fp32), self.o.payload.bf16.eq(bf16)]
        return m


def _saturate(m, value, limit, name):
    """An unsigned shift amount in the fewest bits that hold ``limit``: a larger amount becomes all ones (≥ limit),
    which shifts a value of ``limit + 1`` bits as far (to its sign)."""
    value = Value.cast(value)
    bits = max(1, limit.bit_length())
    if len(value) <= bits:
        return named(m, value, name)
    return named(m, Mux(value[bits:].any(), (1 << bits) - 1, value[:bits]), name)


def _max(m, a, b, name):
    return named(m, Mux(a > b, a, b), name)


def _max4(m, v, name):
    """The largest of four values: each wins if it is ≥ the later ones and > the earlier ones (one winner)."""
    ge = {(i, j): v[i] >= v[j] for i in range(4) for j in range(i + 1, 4)}
    win = [Cat(*[ge[i, j] for j in range(i + 1, 4)], *[~ge[j, i] for j in range(i)]).all() for i in range(4)]
    out = Mux(win[0], v[0], 0)
    for i in range(1, 4):
        out = out | Mux(win[i], v[i], 0)
    return named(m, out, name)


def _register(m, state, enable, name):
    """A copy of ``state`` (nested dicts/lists of Values) through registers loaded when ``enable`` is high."""
    from amaranth.hdl import Value

    def reg(v, path):
        if isinstance(v, dict):
            return {k: reg(x, f"{path}_{k}") for k, x in v.items()}
        if isinstance(v, list):
            return [reg(x, f"{path}{i}") for i, x in enumerate(v)]
        v = Value.cast(v)
        s = Signal(v.shape(), name=path)
        with m.If(enable):
            m.d.sync += s.eq(v)
        return s

    return reg(state, name)
