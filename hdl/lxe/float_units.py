"""Combinational pieces shared by the MAC tree and the VPE lanes: BF16/FP32 field decoding, leading-zero count,
and the once-rounding of a block-aligned value ``S · 2^(e − bias)`` to FP32, BF16 or fixed point (RNE, FTZ after
rounding, overflow to Inf, canonical NaN). The numbers are those of docs/formats.md §LXE."""

from amaranth import Cat, Const, Mux, Signal
from amaranth.hdl import Value

from ..arith import named

__all__ = ["decode_bf16", "decode_fp32", "leading_zeros", "Normalized", "normalize", "round_float",
           "round_fixed", "FLOAT_FORMATS", "nan_bits", "inf_bits", "tree_reduce"]

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
    """(count, all_zero) of an unsigned value: a balanced priority tree; count = width when the value is 0."""
    value = Value.cast(value)
    width = len(value)
    size = 1
    while size < width:
        size *= 2
    padded = Cat(Const(0, size - width), value) if size > width else value

    def rec(v):
        if len(v) == 1:
            return ~v[0], ~v[0]
        half = len(v) // 2
        lo_c, lo_z = rec(v[:half])
        hi_c, hi_z = rec(v[half:])
        count = Mux(hi_z, Cat(lo_c, Const(0, max(0, len(hi_c) - len(lo_c)))) + half, hi_c)
        return count, hi_z & lo_z

    count, zero = rec(padded)
    # pad bits are low-order zeros: they only matter when the value is zero (count = size then)
    return Mux(zero, width, count), zero


class Normalized:
    """The result of :func:`normalize`: ``mant`` = |S| shifted so its leading one is at the top bit (0 when S is 0),
    ``exp`` = e − (leading zeros), ``sign``, ``zero``. ``S · 2^(e − B) = ±mant · 2^(exp − B)``."""

    def __init__(self, mant, exp, sign, zero):
        self.mant, self.exp, self.sign, self.zero = mant, exp, sign, zero

    def fields(self):
        return [self.mant, self.exp, self.sign, self.zero]


def normalize(m, S, e, name):
    """|S| normalised (combinational); every named signal has its driver's own width (docs/lint.md)."""
    S = Value.cast(S)
    mag = named(m, Mux(S[-1], -S, S).as_unsigned(), f"{name}_mag")
    width = len(mag)
    lz, zero = leading_zeros(mag)
    lz = named(m, lz, f"{name}_lz")
    x = mag
    for k in range(len(lz)):
        if (1 << k) < width:
            x = Mux(lz[k], (x << (1 << k))[:width], x)
    mant = named(m, x, f"{name}_mant")
    exp = named(m, Cat(Value.cast(e), Const(0, 1)).as_signed() - lz, f"{name}_exp")
    return Normalized(mant, exp, S[-1], zero)


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


def round_fixed(m, mag, shift, *, bits, name):
    """RNE of ``mag · 2^shift`` (``mag`` unsigned) to an unsigned integer, saturated at 2^bits − 1; ``shift`` is a
    signed Value (negative: a right shift with rounding). Intermediate values stay expressions (docs/lint.md)."""
    mag = Value.cast(mag)
    W = len(mag)
    neg = shift[-1]
    # shift amounts as narrow unsigned values: a variable left shift widens its result by 2^(amount bits)
    rsh = Mux(neg, Mux(-shift > W + 1, W + 1, -shift), 0).as_unsigned()[:(W + 1).bit_length()]
    lsh = Mux(neg, 0, Mux(shift > bits, bits, shift)).as_unsigned()[:bits.bit_length()]
    q = mag >> rsh
    rem = mag & ((Const(1, W + 2) << rsh) - 1)
    half = Mux(rsh < 1, 0, Const(1, W + 2) << (rsh - 1).as_unsigned()[:len(rsh)])
    up = (rsh > 0) & ((rem > half) | ((rem == half) & q[0]))
    wide = Mux(neg, q + up, mag << lsh)
    limit = (1 << bits) - 1
    return named(m, Mux(wide > limit, limit, wide), f"{name}_fixed")


def tree_reduce(values, op):
    """Balanced pairwise reduction (index 2i with 2i+1 at every level)."""
    values = list(values)
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
    return values[0]
