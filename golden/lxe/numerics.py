"""The LXE number formats and rounding, in Python integers (docs/formats.md §LXE).

Formats are IEEE-style binary floats: BF16 (8 exponent bits, 7 fraction bits) and FP32 (8, 23). The contract:

- **DAZ**: an input whose exponent field is 0 (zero or subnormal) is a zero of the same sign.
- **Specials**: exponent field 255 is ±Inf (fraction 0) or NaN (fraction ≠ 0). Every NaN result is the canonical
  quiet NaN (BF16 ``0x7FC0``, FP32 ``0x7FC00000``).
- **Rounding**: an exact value ``S · 2^scale`` (S a signed integer) is rounded once, to nearest with ties to even,
  to the format's precision with an unbounded exponent; then **FTZ after rounding**: a biased exponent ≤ 0 gives a
  zero of the value's sign, ≥ 255 gives ±Inf.
- **Signed zero**: an exact zero is −0 only if the caller says every term was −0 (``negzero``), else +0.

Nothing here uses floating-point arithmetic; Python floats appear only in :func:`to_float` (for reports/tests).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Format", "BF16", "FP32", "Decoded", "decode", "round_scaled", "round_fixed", "to_float", "from_float",
           "bf16_to_fp32", "nan_bits", "inf_bits", "zero_bits", "exp2_table", "EXP2_FRAC_BITS"]


@dataclass(frozen=True)
class Format:
    name: str
    exp_bits: int
    frac_bits: int

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.frac_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit."""
        return self.frac_bits + 1

    @property
    def exp_max(self) -> int:
        return (1 << self.exp_bits) - 1


BF16 = Format("bf16", 8, 7)
FP32 = Format("fp32", 8, 23)


@dataclass(frozen=True)
class Decoded:
    kind: str        # "zero", "normal", "inf", "nan"
    sign: int
    exp: int         # biased exponent field (0 for zeros)
    mant: int        # significand with the hidden bit (0 for zeros and specials)


def decode(bits: int, fmt: Format) -> Decoded:
    """Fields of ``bits`` under DAZ (subnormals are signed zeros)."""
    sign = (bits >> (fmt.width - 1)) & 1
    e = (bits >> fmt.frac_bits) & fmt.exp_max
    f = bits & ((1 << fmt.frac_bits) - 1)
    if e == fmt.exp_max:
        return Decoded("nan" if f else "inf", sign, e, 0)
    if e == 0:
        return Decoded("zero", sign, 0, 0)
    return Decoded("normal", sign, e, (1 << fmt.frac_bits) | f)


def nan_bits(fmt: Format) -> int:
    return (fmt.exp_max << fmt.frac_bits) | (1 << (fmt.frac_bits - 1))


def inf_bits(fmt: Format, sign: int) -> int:
    return (sign << (fmt.width - 1)) | (fmt.exp_max << fmt.frac_bits)


def zero_bits(fmt: Format, sign: int) -> int:
    return sign << (fmt.width - 1)


def round_scaled(S: int, scale: int, fmt: Format, *, negzero: bool = False) -> int:
    """Bits of ``S · 2^scale`` rounded to ``fmt``: RNE with an unbounded exponent, then FTZ / overflow to Inf."""
    if S == 0:
        return zero_bits(fmt, int(negzero))
    sign, mag = int(S < 0), abs(S)
    p = fmt.precision
    L = mag.bit_length()
    if L > p:
        sh = L - p
        q, rem = mag >> sh, mag & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
    else:
        q = mag << (p - L)
    E = L - 1 + scale + fmt.bias
    if q >> p:                       # rounding carried into a new leading bit
        q >>= 1
        E += 1
    if E <= 0:
        return zero_bits(fmt, sign)
    if E >= fmt.exp_max:
        return inf_bits(fmt, sign)
    return (sign << (fmt.width - 1)) | (E << fmt.frac_bits) | (q - (1 << (p - 1)))


def round_fixed(S: int, scale: int, bits: int, frac: int) -> int:
    """``S · 2^scale`` as a signed fixed-point integer with ``frac`` fraction bits: RNE, saturated to ``bits``."""
    k = scale + frac
    if k >= 0:
        q = S << k
    else:
        sh = -k
        q, rem = S >> sh, S & ((1 << sh) - 1)       # floor division and its non-negative remainder
        half = 1 << (sh - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return min(hi, max(lo, q))


def bf16_to_fp32(bits: int) -> int:
    """Exact widening: the BF16 bits are the top half of the FP32 word."""
    return (bits & 0xFFFF) << 16


def to_float(bits: int, fmt: Format) -> float:
    """The value of ``bits`` as a Python float (DAZ applied; NaN as float nan). For reports and tests."""
    d = decode(bits, fmt)
    if d.kind == "nan":
        return float("nan")
    if d.kind == "inf":
        return float("-inf") if d.sign else float("inf")
    if d.kind == "zero":
        return -0.0 if d.sign else 0.0
    v = d.mant * 2.0 ** (d.exp - fmt.bias - fmt.frac_bits)
    return -v if d.sign else v


def from_float(x: float, fmt: Format) -> int:
    """A Python float rounded to ``fmt`` by :func:`round_scaled` (NaN canonical, FTZ). Used to make operands."""
    import math

    if math.isnan(x):
        return nan_bits(fmt)
    if math.isinf(x):
        return inf_bits(fmt, int(x < 0))
    if x == 0:
        return zero_bits(fmt, int(math.copysign(1.0, x) < 0))
    m, e = math.frexp(x)                 # x = m * 2^e, 0.5 <= |m| < 1, exact as an integer over 2^53
    return round_scaled(int(m * (1 << 53)), e - 53, fmt)


EXP2_FRAC_BITS = 7


def exp2_table() -> list[int]:
    """Significands (8 bits, hidden bit included) of 2^(f/128) for f = 0..127, rounded to nearest.

    Computed with float64: no entry is within 1e-9 of a rounding tie, which the tests check, so float64 rounds
    every entry as exact arithmetic would. ``hdl/lxe/vpe.py`` builds the same table with the same formula.
    """
    scale = 1 << EXP2_FRAC_BITS
    return [int(2.0 ** (f / scale) * scale + 0.5) for f in range(scale)]
