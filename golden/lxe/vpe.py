"""Golden model of a VPE lane and of the VPE (docs/formats.md §LXE "VPE").

Every lane takes ``a`` (FP32 bits; BF16 data is widened exactly) and ``b`` (BF16 bits) and an op. Values are
*terms* ``P · 2^(e − 284)`` with a signed significand P and a 9-bit exponent e ≥ 0 (0 only for zeros):

- FP32 ``a``: ``P = ±ma`` (24 bits), ``e = Ea + 134``; BF16 ``b``: ``P = ±mb << 16``, ``e = Eb + 134``;
- product ``a·b``: ``P = ±ma·mb`` (32 bits), ``e = Ea + Eb`` (exact).

Two terms are added as in the MAC tree: aligned to the larger exponent with G = ``lxe.guard_bits`` guard bits and
floor shifts, then rounded once. The accumulator (``acc``) keeps ``(e, S)`` unrounded across beats, exactly like a
MAC tree's. Ops:

=========  ==========================================================================================
``add``    a + b
``mul``    a · b (exact product, one rounding)
``max``    the larger of a and b (−0 < +0; NaN if either is NaN; ties keep a)
``sign``   ``flag`` = a > 0 (hash-bit binarisation; NaN and zeros give 0); result a
``acc``    running sum: ``first`` loads a, later beats add a; ``count`` (VPE-wide) counts the beats
``fixed``  a · b to signed fixed point (``fixed_bits``, ``fixed_frac`` fraction bits), RNE, saturating
``exp2``   2^(a·b): t = fixed(a·b, 16 bits, 7 fraction bits); 2^(t >> 7) · T[t & 127] / 128, T = exp2_table()
=========  ==========================================================================================

Outputs per lane: ``value`` (FP32 bits of the result; for ``fixed`` the fixed-point value in two's complement),
``bf16`` (the result rounded once to BF16; for ``fixed`` the product a·b in BF16) and ``flag``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .numerics import (BF16, EXP2_FRAC_BITS, FP32, decode, exp2_table, inf_bits, nan_bits, round_fixed,
                       round_scaled, to_float, zero_bits)

__all__ = ["OPS", "TERM_BIAS", "Term", "LaneState", "LaneResult", "lane_op", "vpe_beats", "lane_sum_bits",
           "lane_acc_bits"]

OPS = ("add", "mul", "max", "sign", "acc", "fixed", "exp2")
TERM_BIAS = 284        # value = P * 2^(e - 284); FP32 a: e = Ea + 134 so that P = ma (24 bits) at 2^(Ea - 150)
_A_OFFSET = 134


@dataclass(frozen=True)
class Term:
    P: int
    e: int
    kind: str          # zero, normal, inf, nan
    sign: int


def term_a(a: int) -> Term:
    d = decode(a, FP32)
    if d.kind != "normal":
        return Term(0, 0, d.kind, d.sign)
    return Term(-d.mant if d.sign else d.mant, d.exp + _A_OFFSET, "normal", d.sign)


def term_b(b: int) -> Term:
    d = decode(b, BF16)
    if d.kind != "normal":
        return Term(0, 0, d.kind, d.sign)
    m = d.mant << 16
    return Term(-m if d.sign else m, d.exp + _A_OFFSET, "normal", d.sign)


def term_product(a: int, b: int) -> Term:
    da, db = decode(a, FP32), decode(b, BF16)
    sign = da.sign ^ db.sign
    if "nan" in (da.kind, db.kind):
        return Term(0, 0, "nan", sign)
    if "inf" in (da.kind, db.kind):
        return Term(0, 0, "nan" if "zero" in (da.kind, db.kind) else "inf", sign)
    if "zero" in (da.kind, db.kind):
        return Term(0, 0, "zero", sign)
    m = da.mant * db.mant
    return Term(-m if sign else m, da.exp + db.exp, "normal", sign)


@dataclass(frozen=True)
class Value:
    """An unrounded lane value ``S · 2^(e − 284 − G)`` with its special flags."""
    S: int = 0
    e: int = 0
    nan: bool = False
    pinf: bool = False
    ninf: bool = False
    negzero: bool = True


def _value(terms: list[Term], G: int) -> Value:
    e = max(t.e for t in terms)
    S = sum((t.P << G) >> (e - t.e) for t in terms)
    return Value(S, e, any(t.kind == "nan" for t in terms), any(t.kind == "inf" and not t.sign for t in terms),
                 any(t.kind == "inf" and t.sign for t in terms), all(t.kind == "zero" and t.sign for t in terms))


def _acc(v: Value, t: Term, G: int) -> Value:
    a = _value([t], G)
    e = max(v.e, a.e)
    return Value((v.S >> (e - v.e)) + (a.S >> (e - a.e)), e, v.nan or a.nan, v.pinf or a.pinf, v.ninf or a.ninf,
                 v.negzero and a.negzero)


def _special(v: Value):
    if v.nan or (v.pinf and v.ninf):
        return "nan"
    if v.pinf or v.ninf:
        return "ninf" if v.ninf else "pinf"
    return None


def _round_float(v: Value, G: int) -> tuple[int, int]:
    sp = _special(v)
    if sp == "nan":
        return nan_bits(FP32), nan_bits(BF16)
    if sp:
        s = int(sp == "ninf")
        return inf_bits(FP32, s), inf_bits(BF16, s)
    scale = v.e - TERM_BIAS - G
    return round_scaled(v.S, scale, FP32, negzero=v.negzero), round_scaled(v.S, scale, BF16, negzero=v.negzero)


def _fixed(v: Value, G: int, bits: int, frac: int) -> int:
    sp = _special(v)
    if sp == "nan":
        return 0
    if sp:
        return -(1 << (bits - 1)) if sp == "ninf" else (1 << (bits - 1)) - 1
    return round_fixed(v.S, v.e - TERM_BIAS - G, bits, frac)


_EXP2 = exp2_table()


def _exp2(v: Value, G: int) -> int:
    sp = _special(v)
    if sp == "nan":
        return nan_bits(FP32)
    if sp == "pinf":
        return inf_bits(FP32, 0)
    if sp == "ninf":
        return zero_bits(FP32, 0)
    t = round_fixed(v.S, v.e - TERM_BIAS - G, 16, EXP2_FRAC_BITS)
    i, f = t >> EXP2_FRAC_BITS, t & ((1 << EXP2_FRAC_BITS) - 1)
    E = i + FP32.bias
    if E <= 0:
        return zero_bits(FP32, 0)
    if E >= FP32.exp_max:
        return inf_bits(FP32, 0)
    return (E << FP32.frac_bits) | ((_EXP2[f] - 128) << 16)


def _max(a: int, b: int) -> tuple[Term, int]:
    """The chosen term and its FP32 bits (as decoded: DAZ applies)."""
    ta, tb = term_a(a), term_b(b)
    if "nan" in (ta.kind, tb.kind):
        return Term(0, 0, "nan", 0), 1
    xa, xb = to_float(a, FP32), to_float(b << 16, FP32)
    if xb > xa or (xb == xa == 0 and ta.sign and not tb.sign):
        return tb, 0
    return ta, 0


@dataclass
class LaneState:
    acc: Value = None
    count: int = 0


@dataclass(frozen=True)
class LaneResult:
    value: int
    bf16: int
    flag: int


def lane_op(op: str, a: int, b: int, *, first: bool = True, state: LaneState | None = None, guard_bits: int,
            fixed_bits: int = 16, fixed_frac: int = 8) -> LaneResult:
    """One lane, one beat. ``state`` carries the ``acc`` accumulator between beats."""
    G = guard_bits
    if op == "add":
        v = _value([term_a(a), term_b(b)], G)
    elif op in ("mul", "fixed", "exp2"):
        v = _value([term_product(a, b)], G)
    elif op == "max":
        t, _ = _max(a, b)
        v = _value([t], G)
    elif op == "sign":
        v = _value([term_a(a)], G)
    elif op == "acc":
        if state is None:
            raise ValueError("acc needs a LaneState")
        t = term_a(a)
        state.acc = _value([t], G) if first or state.acc is None else _acc(state.acc, t, G)
        v = state.acc
    else:
        raise ValueError(f"unknown VPE op {op!r}; ops: {', '.join(OPS)}")
    fp32, bf16 = _round_float(v, G)
    flag = 0
    if op == "sign":
        flag = int(_special(v) is None and v.S > 0)
    elif op == "fixed":
        fp32 = _fixed(v, G, fixed_bits, fixed_frac) & 0xFFFFFFFF
    elif op == "exp2":
        fp32 = _exp2(v, G)
        bf16 = fp32 >> 16
    return LaneResult(fp32, bf16, flag)


def vpe_beats(beats, lanes: int, *, guard_bits: int, fixed_bits: int = 16, fixed_frac: int = 8):
    """Run VPE beats ``{op, a: [lanes], b: [lanes], first}``; returns per beat (results per lane, count)."""
    states = [LaneState() for _ in range(lanes)]
    count, out = 0, []
    for beat in beats:
        op, first = beat["op"], bool(beat.get("first", True))
        if op == "acc":
            count = 1 if first else count + 1
        res = [lane_op(op, beat["a"][k], beat["b"][k], first=first, state=states[k], guard_bits=guard_bits,
                       fixed_bits=fixed_bits, fixed_frac=fixed_frac) for k in range(lanes)]
        out.append((res, count))
    return out


def lane_sum_bits(guard_bits: int) -> int:
    """Signed width of a two-term lane sum: 33-bit signed products, G guard bits, one carry."""
    return 33 + guard_bits + 1


def lane_acc_bits(guard_bits: int, headroom_bits: int) -> int:
    return 33 + guard_bits + headroom_bits
