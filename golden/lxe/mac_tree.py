"""Golden model of a BF16 MAC tree and of the DPE (docs/formats.md §LXE "MAC tree").

A *beat* is ``n`` BF16 pairs ``(a_i, b_i)``; a *dot product* is one or more beats (``first`` … ``last``).

1. **Products** are exact: ``P_i = ±ma_i · mb_i`` (16-bit significands with hidden bits), exponent
   ``e_i = Ea_i + Eb_i`` (biased fields added), value ``P_i · 2^(e_i − 268)``. A zero factor (DAZ) gives a zero
   product with ``e_i = 0`` and sign ``sa ^ sb``. Inf × finite ≠ 0 is ±Inf; Inf × 0 and NaN are NaN.
2. **Block alignment**: ``e_b = max e_i`` over the beat; each term is ``(P_i << G) >> (e_b − e_i)`` with an
   arithmetic shift (floor, rounding toward −∞), G = ``lxe.guard_bits``. ``S_b = Σ terms`` is exact, so the
   order of the adder tree does not matter (any pairing gives the same sum).
3. **Accumulation** over beats, in order: the state ``(e, S)`` starts at ``(0, 0)`` on ``first``;
   ``e' = max(e, e_b)``, ``S' = (S >> (e' − e)) + (S_b >> (e' − e_b))`` (floor shifts). Beat order matters.
4. **Result** on ``last``: ``S · 2^(e − 268 − G)`` rounded once (RNE, FTZ after rounding) to FP32 and, separately,
   to BF16 (no double rounding). NaN if any product was NaN or +Inf and −Inf both occurred; else ±Inf if one did;
   an exact zero is −0 only if every product of every beat was −0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .numerics import BF16, FP32, decode, inf_bits, nan_bits, round_scaled

__all__ = ["PRODUCT_BIAS", "Product", "product", "Beat", "beat_sum", "AccState", "accumulate", "finish",
           "dot", "dot_beats", "split_beats", "dpe_pass", "sum_bits", "acc_bits"]

PRODUCT_BIAS = 2 * (BF16.bias + BF16.frac_bits)     # 268: value of P · 2^(e - 268)


@dataclass(frozen=True)
class Product:
    P: int            # signed exact significand product (0 for zeros and specials)
    e: int            # Ea + Eb (0 for zeros and specials)
    kind: str         # "zero", "normal", "inf", "nan"
    sign: int


def product(a: int, b: int) -> Product:
    da, db = decode(a, BF16), decode(b, BF16)
    sign = da.sign ^ db.sign
    if "nan" in (da.kind, db.kind):
        return Product(0, 0, "nan", sign)
    if "inf" in (da.kind, db.kind):
        return Product(0, 0, "nan" if "zero" in (da.kind, db.kind) else "inf", sign)
    if "zero" in (da.kind, db.kind):
        return Product(0, 0, "zero", sign)
    m = da.mant * db.mant
    return Product(-m if sign else m, da.exp + db.exp, "normal", sign)


@dataclass(frozen=True)
class Beat:
    S: int
    e: int
    nan: bool
    pinf: bool
    ninf: bool
    negzero: bool     # every product of the beat is -0


def beat_sum(a: list[int], b: list[int], guard_bits: int) -> Beat:
    ps = [product(x, y) for x, y in zip(a, b, strict=True)]
    e_b = max(p.e for p in ps)
    S = sum((p.P << guard_bits) >> (e_b - p.e) for p in ps)
    return Beat(S, e_b, any(p.kind == "nan" for p in ps), any(p.kind == "inf" and not p.sign for p in ps),
                any(p.kind == "inf" and p.sign for p in ps), all(p.kind == "zero" and p.sign for p in ps))


@dataclass(frozen=True)
class AccState:
    e: int = 0
    S: int = 0
    nan: bool = False
    pinf: bool = False
    ninf: bool = False
    negzero: bool = True
    beats: int = 0


def accumulate(state: AccState, beat: Beat) -> AccState:
    e = max(state.e, beat.e)
    S = (state.S >> (e - state.e)) + (beat.S >> (e - beat.e))
    return AccState(e, S, state.nan or beat.nan, state.pinf or beat.pinf, state.ninf or beat.ninf,
                    state.negzero and beat.negzero, state.beats + 1)


def finish(state: AccState, guard_bits: int) -> tuple[int, int]:
    """(FP32 bits, BF16 bits) of an accumulated dot product."""
    if state.nan or (state.pinf and state.ninf):
        return nan_bits(FP32), nan_bits(BF16)
    if state.pinf or state.ninf:
        return inf_bits(FP32, int(state.ninf)), inf_bits(BF16, int(state.ninf))
    scale = state.e - PRODUCT_BIAS - guard_bits
    return (round_scaled(state.S, scale, FP32, negzero=state.negzero),
            round_scaled(state.S, scale, BF16, negzero=state.negzero))


def split_beats(x: list[int], n: int) -> list[list[int]]:
    """``x`` in beats of ``n`` elements, the last one padded with +0."""
    out = [list(x[i:i + n]) for i in range(0, max(len(x), 1), n)]
    out[-1] += [0] * (n - len(out[-1]))
    return out


def dot_beats(a_beats, b_beats, guard_bits: int, *, order=None) -> tuple[int, int]:
    """A dot product given as beats; ``order`` permutes the beats (for mutants only)."""
    st = AccState()
    idx = range(len(a_beats)) if order is None else order
    for i in idx:
        st = accumulate(st, beat_sum(a_beats[i], b_beats[i], guard_bits))
    return finish(st, guard_bits)


def dot(a: list[int], b: list[int], n: int, guard_bits: int) -> tuple[int, int]:
    """BF16 dot product of two vectors on an ``n``-input MAC tree (zero-padded to whole beats)."""
    return dot_beats(split_beats(a, n), split_beats(b, n), guard_bits)


def dpe_pass(x: list[int], weights: list[list[int]], n: int, guard_bits: int) -> list[tuple[int, int]]:
    """One DPE pass: the broadcast vector ``x`` against each tree's weight vector."""
    return [dot(x, w, n, guard_bits) for w in weights]


def sum_bits(n: int, guard_bits: int) -> int:
    """Signed width of one beat's sum S_b (17-bit signed products, G guard bits, log2 n carries)."""
    return 17 + guard_bits + (n.bit_length() - 1)


def acc_bits(n: int, guard_bits: int, headroom_bits: int) -> int:
    """Signed width of the accumulator: the beat sum plus 2^headroom beats."""
    return sum_bits(n, guard_bits) + headroom_bits
