"""The exp2 rule (golden/dre/wtu/exp.py): tensor twin = reference, hand-worked rows, named corner rows, properties."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vrex.golden.dre.wtu.linear import signed_range
from vrex.golden.dre.wtu.exp import ExpParams, exp2_weight, exp_lut, exp_term, select_exp2
from vrex.golden.dre.wtu.exp_tensor import select_rows_exp2


@st.composite
def jobs(draw):
    bits = draw(st.integers(6, 16))
    frac = draw(st.integers(2, bits - 2))
    lut_bits = draw(st.integers(0, min(frac, 5)))
    octaves = draw(st.sampled_from([1, 2, 4]))
    S = octaves.bit_length() - 1 + frac
    d = draw(st.integers(1, 4))
    passes = draw(st.integers(0, S // d))
    p = ExpParams(frac, draw(st.integers(1, 12)), octaves, 1 << lut_bits, draw(st.integers(2, 12)), passes, 1 << d,
                  draw(st.sampled_from(["bucket", "greedy"])))
    lo, hi = signed_range(bits)
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["any", "narrow", "ties", "extremes"]))
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        if kind == "any":
            row = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
        elif kind == "narrow":
            base = draw(st.integers(lo, hi - 40))
            row = draw(st.lists(st.integers(base, base + 40), min_size=n, max_size=n))
        elif kind == "ties":
            vals = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=3))
            row = draw(st.lists(st.sampled_from(vals), min_size=n, max_size=n))
        else:
            row = draw(st.lists(st.sampled_from([lo, lo + 1, 0, hi - 1, hi]), min_size=n, max_size=n))
        rows.append(row)
    counts = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))
    rb = draw(st.integers(4, 16))
    ratio_q = draw(st.sampled_from([0, 1, (1 << rb) // 3, (1 << rb) // 2, (9 << rb) // 10, 1 << rb]))
    return p, rows, counts, ratio_q, rb


@settings(max_examples=400, deadline=None)
@given(jobs())
def test_tensor_twin_equals_reference(job):
    p, rows, counts, ratio_q, rb = job
    got = select_rows_exp2(torch.tensor(rows), torch.tensor(counts), ratio_q=ratio_q, ratio_bits=rb, params=p)
    for i, row in enumerate(rows):
        assert got.row(i) == select_exp2(row, counts, ratio_q=ratio_q, ratio_bits=rb, params=p), i


@settings(max_examples=200, deadline=None)
@given(jobs())
def test_selection_properties(job):
    """Ratio 1.0 selects all; the selection carries the sum past T; bucket fill keeps the maximum and grows with the
    ratio; greedy ⊆ bucket."""
    p, rows, counts, ratio_q, rb = job
    row = rows[0]
    kw = dict(ratio_bits=rb, params=p)
    assert select_exp2(row, counts, ratio_q=1 << rb, **kw).mask == (1 << len(row)) - 1
    sel = select_exp2(row, counts, ratio_q=ratio_q, **kw)
    if not sel.all_selected:
        assert sel.accumulated > sel.threshold
        if p.fill == "bucket":      # the maximum is always selected (greedy fills its final bin in index order)
            assert sel.mask & (1 << row.index(max(row)))
    prev = 0
    for q in range(0, (1 << rb) + 1, max(1, (1 << rb) // 7)):
        cur = select_exp2(row, counts, ratio_q=q, **kw)
        if p.fill == "bucket":
            assert cur.mask & prev == prev
        prev = cur.mask
    other = ExpParams(**{**p.__dict__, "fill": "greedy" if p.fill == "bucket" else "bucket"})
    a, b = sel.mask, select_exp2(row, counts, ratio_q=ratio_q, ratio_bits=rb, params=other).mask
    greedy, bucket = (a, b) if p.fill == "greedy" else (b, a)
    assert greedy & bucket == greedy


P = ExpParams(frac_bits=4, buckets=4, bucket_octaves=2, lut_entries=4, mantissa_bits=6, refine_passes=1,
              refine_bins=4)


def test_lut_and_terms_worked_by_hand():
    # LUT[x] = round(32 · 2^((x + ½)/4)): 34.9, 41.498, 49.4, 58.7
    assert exp_lut(4, 6) == (35, 41, 49, 59)
    # S = 1 + 4 = 5: bins of 32 score units (2 octaves); position 21 = 1 octave + 5/16 -> LUT[1] << 1
    assert exp_term(21, 3, P) == (3 * 41) << 1
    assert exp2_weight(21, P) == pytest.approx(82 / 32)


def test_row_worked_by_hand():
    """Scores 63 (bin 1, position 31), 40 (bin 1, p 8), 20 (bin 0, p 20), -100 (bin -4: below the 4-bin window)."""
    scores, counts = [63, 40, 20, -100], [1, 1, 1, 9]
    # terms: 63 -> p 31 = 1 oct + 15/16 -> LUT[3] << 1 = 118; 40 -> p 8 = 8/16 -> LUT[2] = 49;
    # 20 -> p 20 = 1 oct + 4/16 -> LUT[1] << 1 = 82; -100 flushed. Bin masses M0 = 167, M1 = 82; q1 = 82 >> 2 = 20
    sel = select_exp2(scores, counts, ratio_q=128, ratio_bits=8, params=P)      # ratio 0.5: T = 187 >> 1 = 93
    assert (sel.total, sel.threshold, sel.top_bin, sel.exit_bin, sel.bins_walked) == (187, 93, 1, 0, 1)
    # refinement of bin 1 ([32, 64), 4 sub-bins of 8): 63 in sub-bin 3 (118 > 93: exit), window [56, 64)
    assert sel.refine_walks == (1,) and (sel.bound, sel.bound_shift) == (56, 3) and sel.mask == 0b0001
    bucket0 = select_exp2(scores, counts, ratio_q=128, ratio_bits=8,
                          params=ExpParams(**{**P.__dict__, "refine_passes": 0}))
    assert bucket0.mask == 0b0011                       # without refinement the whole top bin
    # ratio 0.9: T = 168 > M0 = 167, exit in bin 1 (acc 187), which holds one cluster (20): no refinement pass
    nine = select_exp2(scores, counts, ratio_q=230, ratio_bits=8, params=P)
    assert (nine.exit_bin, nine.bound, nine.refine_walks, nine.mask) == (1, 0, (), 0b0111)


@pytest.mark.parametrize("fill", ["bucket", "greedy"])
def test_named_corner_rows(fill):
    p = ExpParams(**{**P.__dict__, "fill": fill})
    kw = dict(ratio_q=77, ratio_bits=8, params=p)
    lo, hi = signed_range(10)
    n = 9
    # all-equal scores: one bin, one sub-bin; bucket fill takes all, greedy the first clusters that carry 30 %
    equal = select_exp2([100] * n, [1] * n, **kw)
    assert equal.mask == ((1 << n) - 1 if fill == "bucket" else 0b111)
    # a single cluster of weight far above the rest: only it
    single = select_exp2([hi] + [lo] * (n - 1), [5] * n, **kw)
    assert single.mask == 1 and single.exit_bin == 0
    # saturated scores at both ends of the format: the bottom ones are flushed (weight 0)
    sat = select_exp2([hi, lo, hi, lo], [1, 100, 1, 100], **kw)
    assert sat.total == 2 * exp_term(hi - ((hi >> 5) << 5), 1, p) and sat.mask & 0b1010 == 0
    # empty row
    assert select_exp2([], [], **kw).mask == 0
    # every count 0: total 0, T = 0 ≥ total, everything selected
    assert select_exp2([1, 2, 3], [0, 0, 0], **kw).all_selected


def test_exp2_weight_error_against_float():
    """16-entry centre LUT: relative error of the weight ≤ 2.2 % (anchors: 2.2 % max, 1.1 % mean)."""
    p = ExpParams(frac_bits=8, buckets=8, bucket_octaves=2, lut_entries=16, mantissa_bits=12)
    errs = [abs(exp2_weight(s, p) / 2.0 ** ((s % 512) / 256) - 1) for s in range(-2048, 2048)]
    assert max(errs) < 0.0222 and 0.009 < sum(errs) / len(errs) < 0.0115
    assert math.isclose(exp2_weight(0, p), 2 ** (0.5 / 16), rel_tol=1e-3)
