"""The vectorised WTU twins equal the bit-exact references row for row, and the WiCSum properties hold."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vrex.golden.dre.wtu.linear import quantize_scores, select_exact, select_row, signed_range
from vrex.golden.dre.wtu.linear_tensor import quantize_counted, quantize_tensor, select_rows, select_rows_float_exact


@st.composite
def jobs(draw):
    score_bits = draw(st.integers(4, 16))
    count_bits = draw(st.integers(1, 16))
    ratio_bits = draw(st.integers(4, 24))
    n = draw(st.integers(0, 40))
    rows = draw(st.integers(1, 4))
    lo, hi = signed_range(score_bits)
    score = st.one_of(st.integers(lo, hi), st.integers(-2, 2), st.sampled_from([lo, hi]))
    scores = draw(st.lists(st.lists(score, min_size=n, max_size=n), min_size=rows, max_size=rows))
    counts = draw(st.lists(st.integers(0, (1 << count_bits) - 1), min_size=n, max_size=n))
    ratio_q = draw(st.one_of(st.integers(0, 1 << ratio_bits), st.sampled_from([0, 1 << ratio_bits])))
    return dict(scores=scores, counts=counts, ratio_q=ratio_q, ratio_bits=ratio_bits,
                buckets=draw(st.integers(2, 32)), k=draw(st.integers(1, 12)))


MODES = [("early_exit", "bucketed", "shift_min"), ("histogram", "bucketed", "relu"),
         ("early_exit", "exact", "shift_min"), ("early_exit", "exact", "relu"), ("topk", "bucketed", "shift_min")]


@settings(max_examples=60, deadline=None)
@given(jobs())
def test_select_rows_equals_reference_row_by_row(job):
    sc = torch.tensor(job["scores"], dtype=torch.int64).reshape(len(job["scores"]), len(job["counts"]))
    cn = torch.tensor(job["counts"], dtype=torch.int64)
    for mode, rule, transform in MODES:
        kw = dict(mode=mode, ratio_q=job["ratio_q"], ratio_bits=job["ratio_bits"], buckets=job["buckets"],
                  k=job["k"], transform=transform, rule=rule)
        got = select_rows(sc, cn, **kw)
        for i, row in enumerate(job["scores"]):
            assert got.row(i) == select_row(row, job["counts"], **kw), (mode, rule, transform, i)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=50), st.integers(4, 24),
       st.integers(0, 12))
def test_quantize_tensor_equals_reference(values, bits, frac):
    frac = min(frac, bits - 1)
    t = torch.tensor(values, dtype=torch.float32)
    assert quantize_tensor(t, bits, frac).tolist() == quantize_scores(t.tolist(), bits, frac)


def test_quantize_rounds_half_to_even_and_saturates():
    t = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1e9, -1e9, math.inf, -math.inf]) / 16
    assert quantize_tensor(t, 8, 4).tolist() == [0, 2, 2, 0, -2, 127, -128, 127, -128]
    q, saturated = quantize_counted(t, 8, 4)
    assert q.tolist() == quantize_tensor(t, 8, 4).tolist() and saturated == 4
    assert quantize_counted(torch.tensor([127.49, -128.0, 127.5, -128.5]) / 16, 8, 4)[1] == 1     # 127.5 → 128


@settings(max_examples=40, deadline=None)
@given(jobs())
def test_wicsum_properties(job):
    """exact ⊆ bucketed; ratio 1.0 selects all; selections grow with the ratio."""
    sc = torch.tensor(job["scores"], dtype=torch.int64).reshape(len(job["scores"]), len(job["counts"]))
    cn = torch.tensor(job["counts"], dtype=torch.int64)
    n, rb = len(job["counts"]), job["ratio_bits"]
    kw = dict(mode="early_exit", ratio_bits=rb, buckets=job["buckets"], k=1)
    exact = select_rows(sc, cn, ratio_q=job["ratio_q"], rule="exact", **kw).masks
    bucket = select_rows(sc, cn, ratio_q=job["ratio_q"], rule="bucketed", **kw).masks
    assert not (exact & ~bucket).any()
    for rule in ("exact", "bucketed"):
        assert select_rows(sc, cn, ratio_q=1 << rb, rule=rule, **kw).masks.all()
        prev = torch.zeros_like(exact)
        for q in sorted({0, job["ratio_q"] // 2, job["ratio_q"], (job["ratio_q"] + (1 << rb)) // 2, 1 << rb}):
            cur = select_rows(sc, cn, ratio_q=q, rule=rule, **kw).masks
            assert not (prev & ~cur).any(), (rule, q)
            prev = cur
    assert exact.shape == (len(job["scores"]), n)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=30), st.integers(1, 9), st.integers(0, 1 << 12))
def test_bucketed_equals_exact_with_ties_when_buckets_are_fine(row, count, ratio_q):
    """One distinct value per bucket (buckets > range): bucketed = exact plus the clusters tied at the crossing."""
    counts = [count] * len(row)
    kw = dict(mode="early_exit", ratio_q=ratio_q, ratio_bits=12, k=1)
    fine = select_rows(torch.tensor([row]), torch.tensor(counts), buckets=64, **kw).masks[0]
    ref = select_exact(row, counts, ratio_q=ratio_q, ratio_bits=12)
    sp = [s - min(row) for s in row]
    chosen = [j for j in range(len(row)) if ref.mask >> j & 1]
    crossing = min(sp[j] for j in chosen)
    expect = [sp[j] >= crossing for j in range(len(row))]
    assert fine.tolist() == expect


def test_float_exact_exp_path():
    vals = torch.tensor([[0.0, 10.0, 9.0, -5.0]])
    mask = select_rows_float_exact(vals, torch.tensor([1, 1, 1, 1]), 0.5)
    assert mask.tolist() == [[False, True, False, False]]          # the top cluster alone holds > 50 % of the mass
    assert select_rows_float_exact(vals, torch.tensor([1, 1, 1, 1]), 1.0).all()
