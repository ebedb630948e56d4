"""LXE numerics golden (golden/lxe): rounding, products and dot products against independent oracles.

Oracles: ml-dtypes (numpy bfloat16, RNE conversion from float32) and gmpy2 (MPFR at any precision), on corner
vectors (zeros, subnormals, ±Inf, NaN, ties, huge exponent spread, cancellation) and random operands.
"""

import math
import random

import gmpy2
import ml_dtypes
import numpy as np
import pytest

from vrex.golden.lxe.mac_tree import PRODUCT_BIAS, dot, dot_beats, product
from vrex.golden.lxe.numerics import (BF16, FP32, exp2_table, from_float, nan_bits, round_fixed, round_scaled,
                                      to_float)
from vrex.golden.lxe.vpe import lane_op


def mpfr_round(S: int, scale: int, fmt):
    """MPFR rounding of S * 2^scale to the format's precision (RNE, unbounded exponent), FTZ/overflow applied."""
    if S == 0:
        return 0.0
    with gmpy2.context(precision=fmt.precision, round=gmpy2.RoundToNearest, emax=1 << 20, emin=-(1 << 20)):
        x = gmpy2.mul_2exp(gmpy2.mpfr(S, precision=max(64, abs(S).bit_length() + 2)), scale)
        x = gmpy2.mpfr(x)
        e, _ = gmpy2.frexp(x)          # x = m * 2^e, 0.5 <= |m| < 1
    biased = e - 1 + fmt.bias
    if biased <= 0:
        return math.copysign(0.0, S)
    if biased >= fmt.exp_max:
        return math.copysign(math.inf, S)
    return float(x)


CORNER_SCALED = [(1, 0), (-1, 0), (3, -1), (5, -2), (0x1FFFFFF, -24), (0x1000001, -24), (0x1000003, -24),
                 ((1 << 24) - 1, 104), ((1 << 25) - 1, 103), (1, -126), (1, -127), (3, -128), (-1, -149),
                 (0x17F, -8), (0x180, -8), (0x181, -8), (0x280, -9), (-0x180, -8), (1, 127), (1, 128)]


@pytest.mark.parametrize("fmt", [FP32, BF16], ids=["fp32", "bf16"])
def test_round_scaled_matches_mpfr(fmt):
    rng = random.Random(1)
    cases = CORNER_SCALED + [(rng.choice([-1, 1]) * rng.getrandbits(rng.randint(1, 60)), rng.randint(-200, 140))
                             for _ in range(3000)]
    for S, scale in cases:
        got = to_float(round_scaled(S, scale, fmt), fmt)
        want = mpfr_round(S, scale, fmt)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (S, scale, got, want)


def test_round_scaled_signed_zero_and_ties_to_even():
    assert round_scaled(0, 0, FP32) == 0 and round_scaled(0, 0, FP32, negzero=True) == 0x80000000
    # 1 + 2^-8 is a tie for BF16: rounds to the even 1.0; 1 + 3 * 2^-8 rounds up to 1 + 2^-6
    assert round_scaled(0x101, -8, BF16) == 0x3F80 and round_scaled(0x103, -8, BF16) == 0x3F82
    # FTZ after rounding: just below the smallest normal rounds up to it (not flushed); far below is -0
    assert round_scaled((1 << 25) - 1, -151, FP32) == 0x00800000
    assert round_scaled((1 << 24) - 1, -150, FP32) == 0          # exact, but its exponent is subnormal: FTZ
    assert round_scaled(-1, -140, FP32) == 0x80000000


def test_bf16_rounding_matches_ml_dtypes():
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
    bits = np.concatenate([bits, np.array([0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7FFFFF, 0xFF7F8000,
                                           0x00800000, 0x80800000, 0x3F800001], dtype=np.uint32)])
    with np.errstate(all="ignore"):
        want = bits.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    for x, w in zip(bits.tolist(), want.tolist()):
        e = (x >> 23) & 0xFF
        if e in (0, 255) or (w >> 7) & 0xFF in (0, 255):
            continue                     # DAZ/FTZ and NaN payloads differ from ml-dtypes by design
        d = x & 0x7FFFFF | (1 << 23)
        got = round_scaled(-d if x >> 31 else d, e - 150, BF16)
        assert got == w, hex(x)


def test_from_float_is_round_scaled():
    for x in (1.0, -2.5, 3.14159, 1e-30, -1e30, 6.5e-39, 1e39):
        with np.errstate(all="ignore"):
            f = np.float32(x)
        if np.isfinite(f) and f != 0 and abs(f) >= np.finfo(np.float32).tiny:
            assert from_float(x, FP32) == int(np.array([x], np.float32).view(np.uint32)[0])


def bf16_values(rng, n):
    """BF16 bit patterns weighted toward corners: zeros, subnormals, ±Inf, NaN, extreme and mid exponents."""
    corners = [0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0080, 0x7F7F, 0xFF7F, 0x3F80,
               0xBF80]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.15:
            out.append(rng.choice(corners))
        elif r < 0.3:
            out.append((rng.getrandbits(1) << 15) | (rng.choice([1, 2, 253, 254]) << 7) | rng.getrandbits(7))
        else:
            out.append((rng.getrandbits(1) << 15) | (rng.randint(100, 154) << 7) | rng.getrandbits(7))
    return out


def test_products_are_exact_against_numpy_float32():
    rng = random.Random(3)
    for a, b in zip(bf16_values(rng, 5000), bf16_values(rng, 5000)):
        p = product(a, b)
        fa = np.uint32(a << 16).view(np.float32) if (a >> 7) & 0xFF else np.float32(0)
        fb = np.uint32(b << 16).view(np.float32) if (b >> 7) & 0xFF else np.float32(0)
        with np.errstate(all="ignore"):
            want = float(np.float64(fa) * np.float64(fb))      # exact: 16-bit significands
        if p.kind == "nan":
            assert math.isnan(want)
        elif p.kind == "inf":
            assert math.isinf(want) and (want < 0) == bool(p.sign)
        else:
            assert p.P * 2.0 ** (p.e - PRODUCT_BIAS) == want, (hex(a), hex(b))


def test_dot_is_the_correctly_rounded_sum_when_nothing_is_floored():
    """With every exponent of a beat within the guard bits of the largest, the aligned sum is exact, so the tree
    must equal MPFR's correctly rounded sum of the exact products."""
    rng = random.Random(4)
    G = 8
    for _ in range(400):
        n = rng.choice([4, 8, 16])
        base = rng.randint(110, 140)
        a = [(rng.getrandbits(1) << 15) | (base << 7) | rng.getrandbits(7) for _ in range(n)]
        b = [(rng.getrandbits(1) << 15) | (rng.randint(126, 129) << 7) | rng.getrandbits(7) for _ in range(n)]
        es = [product(x, y).e for x, y in zip(a, b)]
        if max(es) - min(es) > G:
            continue
        lo = min(es)
        exact = sum(product(x, y).P << (product(x, y).e - lo) for x, y in zip(a, b))
        fp32, bf16 = dot(a, b, n, G)
        assert to_float(fp32, FP32) == mpfr_round(exact, lo - PRODUCT_BIAS, FP32)
        assert to_float(bf16, BF16) == mpfr_round(exact, lo - PRODUCT_BIAS, BF16)


def test_dot_specials_signed_zero_and_floor_alignment():
    one, inf, ninf, nz = 0x3F80, 0x7F80, 0xFF80, 0x8000
    assert dot([inf, one], [one, one], 2, 8) == (0x7F800000, 0x7F80)
    assert dot([inf, ninf], [one, one], 2, 8) == (nan_bits(FP32), nan_bits(BF16))
    assert dot([inf, 0], [0, one], 2, 8)[0] == nan_bits(FP32)              # Inf x 0
    assert dot([nz, nz], [one, one], 2, 8) == (0x80000000, 0x8000)         # all products -0
    assert dot([nz, 0], [one, one], 2, 8) == (0, 0)                         # -0 + +0 = +0
    assert dot([one, 0xBF80], [one, one], 2, 8) == (0, 0)                   # exact cancellation: +0
    assert dot([0x0001, one], [one, 0], 2, 8) == (0, 0)                     # DAZ: subnormal input is zero
    # huge spread: 2^100 + 1 floors the 1 away; -1 floors to -1 ulp of the window (toward -inf)
    big = from_float(2.0 ** 100, BF16)
    assert to_float(dot([big, one], [one, one], 2, 8)[0], FP32) == 2.0 ** 100
    below = dot([big, 0xBF80], [one, one], 2, 8)[0]
    assert to_float(below, FP32) == 2.0 ** 100 - 2.0 ** (100 - 14 - 8)   # window LSB: 2^14 significand
    # overflow to Inf and FTZ of a tiny result
    assert dot([0x7F7F] * 4, [0x7F7F] * 4, 4, 8)[0] == 0x7F800000
    assert dot([0x0080, 0], [0x0080, 0], 2, 8) == (0, 0)                    # 2^-252 flushes to +0
    assert dot([0x0080, 0], [0x8080, 0], 2, 8) == (0x80000000, 0x8000)      # and keeps its sign


def test_beat_order_matters_and_is_first_to_last():
    """Floor alignment of the accumulator makes the beat order observable (the contract fixes it)."""
    one, half = 0x3F80, 0x3F00
    tiny, mid = from_float(2.0 ** -30, BF16), from_float(2.0 ** -15, BF16)
    # beats 0 and 1 each sum to 2^15 at exponent 223; beat 2 sits 16 above: apart they floor to 0, together to 1
    beats_a = [[tiny, tiny], [tiny, tiny], [mid, mid]]
    beats_b = [[half, half], [half, half], [one, one]]
    fwd = dot_beats(beats_a, beats_b, 0)
    rev = dot_beats(beats_a, beats_b, 0, order=[2, 0, 1])
    assert fwd != rev


def test_exp2_table_has_no_near_ties():
    for f in range(128):
        x = 2.0 ** (f / 128) * 128
        assert abs(x - math.floor(x) - 0.5) > 1e-9
    t = exp2_table()
    assert t[0] == 128 and all(128 <= v <= 255 for v in t) and t == sorted(t)


def test_round_fixed_ties_and_saturation():
    assert round_fixed(3, -1, 16, 0) == 2 and round_fixed(5, -1, 16, 0) == 2 and round_fixed(-3, -1, 16, 0) == -2
    assert round_fixed(1 << 40, 0, 16, 8) == 32767 and round_fixed(-(1 << 40), 0, 16, 8) == -32768


def test_vpe_lane_ops_against_mpfr():
    rng = random.Random(5)
    for _ in range(2000):
        a = (rng.getrandbits(1) << 31) | (rng.randint(110, 145) << 23) | rng.getrandbits(23)
        b = (rng.getrandbits(1) << 15) | (rng.randint(110, 145) << 7) | rng.getrandbits(7)
        fa, fb = to_float(a, FP32), to_float(b << 16, FP32)
        r = lane_op("mul", a, b, guard_bits=8)
        S, k = (fa * fb).as_integer_ratio()
        assert to_float(r.value, FP32) == mpfr_round(S, -(k.bit_length() - 1), FP32)
        r = lane_op("add", a, b, guard_bits=30)          # enough guard bits: exact, so correctly rounded
        S, k = (fa + fb).as_integer_ratio()
        assert to_float(r.value, FP32) == mpfr_round(S, -(k.bit_length() - 1), FP32)
        assert lane_op("sign", a, 0, guard_bits=8).flag == int(fa > 0)
        assert to_float(lane_op("max", a, b, guard_bits=8).value, FP32) == max(fa, fb)
