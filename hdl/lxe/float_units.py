"""Pieces shared by the MAC tree and the VPE lanes: BF16/FP32 field decoding, leading-zero count, the (optionally
pipelined) normaliser, and the once-rounding of a block-aligned value ``S · 2^(e − bias)`` to FP32 or BF16 (RNE, FTZ
after rounding, overflow to Inf, canonical NaN); the lane's conversion to fixed point is in vpe.py. The numbers are
those of docs/formats.md §LXE."""

from amaranth import Cat, Const, Mux, Signal
from amaranth.hdl import Value

from ..arith import named

__all__ = ["decode_bf16", "decode_fp32", "leading_zeros", "Normalized", "normalize", "NORM_CUTS", "round_float",
           "FLOAT_FORMATS", "nan_bits", "inf_bits", "tree_reduce"]

# name -> (exponent bits, fraction bits)
FLOAT_FORMATS = {"fp32": (8, 23), "bf16": (8, 7)}


def nan_bits(fmt):
    e, f = FLOAT_FORMATS[fmt]
    return ((1 << e) - 1) << f | 1 << (f - 1)


def inf_bits(fmt):
    e, f = FLOAT_FORMATS[fmt]
    return ((1 << e) - 1) << f


class Fields:
    """Decoded fields of a float under DAZ: sign, exponent field, significand with its hidden bit, class flags."""

    def __init__(self, bits, exp_bits, frac_bits):
        bits = Value.cast(bits)
        self.sign = bits[exp_bits + frac_bits]
        self.exp = bits[frac_bits:frac_bits + exp_bits]
        frac = bits[:frac_bits]
        self.zero = self.exp == 0                         # zero or subnormal (DAZ)
        top = self.exp == (1 << exp_bits) - 1
        self.inf = top & (frac == 0)
        self.nan = top & (frac != 0)
        self.normal = ~self.zero & ~top
        self.mant = Cat(frac, Const(1, 1))                # hidden bit (only meaningful when normal)


def decode_bf16(bits):
    return Fields(bits, 8, 7)


def decode_fp32(bits):
    return Fields(bits, 8, 23)


def leading_zeros(value):
    """(count, all_zero) of an unsigned value: a balanced priority tree of multiplexers (no adders); count = width
    when the value is 0."""
    value = Value.cast(value)
    width = len(value)
    size = 1
    while size < width:
        size *= 2
    padded = Cat(Const(0, size - width), value) if size > width else value

    def rec(v):
        # (count, zero) of v; count (log2 len(v) bits) is only meaningful when v is not all zero
        if len(v) == 1:
            return Const(0, 0), ~v[0]
        half = len(v) // 2
        lo_c, lo_z = rec(v[:half])
        hi_c, hi_z = rec(v[half:])
        return Mux(hi_z, Cat(lo_c, Const(1, 1)), Cat(hi_c, Const(0, 1))), hi_z & lo_z

    count, zero = rec(padded)
    # pad bits are low-order zeros: they only matter when the value is zero (count = width then)
    return Mux(zero, width, count), zero


class Normalized:
    """The result of :func:`normalize`: ``mant`` = |S| shifted so its leading one is at the top bit (0 when S is 0),
    ``exp`` = e − (leading zeros), ``sign``, ``zero``. ``S · 2^(e − B) = ±mant · 2^(exp − B)``."""

    def __init__(self, mant, exp, sign, zero):
        self.mant, self.exp, self.sign, self.zero = mant, exp, sign, zero

    def fields(self):
        return [self.mant, self.exp, self.sign, self.zero]


# The normaliser's steps (|S| beside the leading-zero count of S's ones' complement; the shift) and where
# ``stages`` registers cut them: after the steps listed (1 = after |S| and the ones' complement, 2 = after the count);
# the last step always ends in the caller's register.
NORM_CUTS = {1: (), 2: (2,), 3: (1, 2)}


def normalize(m, S, e, name, *, stages=1, carry=None, register=None):
    """|S| normalised in ``stages`` cycles (1: combinational; 2 or 3: :data:`NORM_CUTS` registers through
    ``register(state, name)``, which also delays the dict ``carry`` of values that travel with it). Returns the
    :class:`Normalized` value (``mant`` as wide as S) and ``carry`` as of its cycle.

    The count is taken of ``S ^ sign`` (S, or |S| − 1 when S < 0) in parallel with the negation, so no adder
    precedes it: it is the count of |S|, or one more when |S| is a power of two. The shift is one bit wider and a
    last multiplexer takes the overshoot back (``Normalized.overshoot``; ``lz_count`` is the count before it).
    Every named signal has its driver's own width (docs/lint.md)."""
    if stages not in NORM_CUTS:
        raise ValueError(f"a normaliser has 1 to 3 stages, not {stages}")
    if stages > 1 and register is None:
        raise ValueError("a pipelined normaliser needs a register function")
    cuts = NORM_CUTS[stages]
    carry = dict(carry or {})
    S = Value.cast(S)
    width = len(S)
    sign = S[-1]
    st = {"mag": named(m, Mux(sign, -S, S)[:width], f"{name}_mag"),
          "ones": named(m, S[:-1] ^ sign.replicate(width - 1), f"{name}_ones"), "sign": sign, "e": e,
          "carry": carry}
    if 1 in cuts:
        st = register(st, f"{name}_r1")
    lz, zero = leading_zeros(Cat(st["ones"], Const(0, 1)))
    st = {key: v for key, v in st.items() if key != "ones"}
    st.update(lz=named(m, lz, f"{name}_lz"), zero=zero & ~st["sign"])      # S = -1 has a zero ones' complement
    if 2 in cuts:
        st = register(st, f"{name}_r2")
    lz = st["lz"]
    x = Cat(st["mag"], Const(0, 1))
    for k in reversed(range(len(lz))):         # the count's top bits settle first
        if (1 << k) <= width:
            x = Mux(lz[k], (x << (1 << k))[:width + 1], x)
    x = named(m, x, f"{name}_shifted")
    over = x[width]
    mant = named(m, Mux(over, x[1:], x[:width]), f"{name}_mant")
    exp = named(m, Cat(Value.cast(st["e"]), Const(0, 1)).as_signed() - lz + over, f"{name}_exp")
    out = Normalized(mant, exp, st["sign"], st["zero"])
    out.lz_count, out.overshoot = lz, over      # the count is lz_count - overshoot
    return out, st["carry"]


def round_float(m, n, *, fmt, exp_offset, negzero, nan, pinf, ninf, name):
    """Bits of the normalised value ``n`` in ``fmt``: RNE at the format's precision, FTZ after rounding, Inf on
    overflow. ``exp_offset`` is the constant with biased exponent = n.exp + exp_offset (+1 on a rounding carry)."""
    e_bits, f_bits = FLOAT_FORMATS[fmt]
    p, W = f_bits + 1, len(n.mant)
    q = n.mant[W - p:]
    guard = n.mant[W - p - 1]
    sticky = n.mant[:W - p - 1].any() if W - p - 1 > 0 else Const(0, 1)
    q1 = q + (guard & (sticky | q[0]))
    carry = q1[p]
    E = named(m, n.exp + exp_offset + carry, f"{name}_E")
    frac = Mux(carry, 0, q1[:f_bits])
    top = (1 << e_bits) - 1
    out = Signal(1 + e_bits + f_bits, name=f"{name}_bits")
    with m.If(nan | (pinf & ninf)):
        m.d.comb += out.eq(nan_bits(fmt))
    with m.Elif(pinf | ninf):
        m.d.comb += out.eq(Cat(Const(inf_bits(fmt), e_bits + f_bits), ninf))
    with m.Elif(n.zero):
        m.d.comb += out.eq(Cat(Const(0, e_bits + f_bits), negzero))
    with m.Elif(E < 1):
        m.d.comb += out.eq(Cat(Const(0, e_bits + f_bits), n.sign))
    with m.Elif(E >= top):
        m.d.comb += out.eq(Cat(Const(inf_bits(fmt), e_bits + f_bits), n.sign))
    with m.Else():
        m.d.comb += out.eq(Cat(frac, E[:e_bits], n.sign))
    return out


def tree_reduce(values, op):
    """Balanced pairwise reduction (index 2i with 2i+1 at every level)."""
    values = list(values)
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
    return values[0]
