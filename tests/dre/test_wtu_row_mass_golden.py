"""The row-mass rule of the exp2 WTU (resv.threshold_mass = row, golden/dre/wtu/exp.py): tensor twin = reference,
the resident-mass input, the relation to the offloaded rule, a hand-worked row, monotonicity, and the fixed-point
form against the exact float rule within a stated bound."""

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vrex.golden.dre.wtu.exp import (ExpParams, ResidentMass, exp_lut, resident_mass, row_threshold, select_exp2,
                                     select_exp2_exact)
from vrex.golden.dre.wtu.exp_tensor import (resident_mass_rows, select_rows_exp2, select_rows_exp2_exact,
                                            select_rows_mass_float)
from vrex.golden.dre.wtu.linear import WTUJobError, select_row, signed_range, wtu_job


@st.composite
def formats(draw):
    bits = draw(st.integers(6, 16))
    frac = draw(st.integers(2, bits - 2))
    octaves = draw(st.sampled_from([1, 2, 4]))
    S = octaves.bit_length() - 1 + frac
    d = draw(st.integers(1, 4))
    p = ExpParams(frac, draw(st.integers(1, 12)), octaves, 1 << draw(st.integers(0, min(frac, 5))),
                  draw(st.integers(2, 12)), draw(st.integers(0, S // d)), 1 << d,
                  draw(st.sampled_from(["bucket", "greedy"])))
    return bits, p


@st.composite
def row_jobs(draw):
    """A job of 1–4 rows, each with its resident input: none (total 0), from resident scores (saturating widths
    included), or any (max, total) pair, with the resident maximum above, inside or below the offloaded window."""
    bits, p = draw(formats())
    lo, hi = signed_range(bits)
    n = draw(st.integers(1, 30))
    kind = draw(st.sampled_from(["any", "narrow", "ties"]))
    rows, res = [], []
    for _ in range(draw(st.integers(1, 4))):
        if kind == "any":
            row = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
        elif kind == "narrow":
            base = draw(st.integers(lo, hi - 40))
            row = draw(st.lists(st.integers(base, base + 40), min_size=n, max_size=n))
        else:
            vals = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=3))
            row = draw(st.lists(st.sampled_from(vals), min_size=n, max_size=n))
        rows.append(row)
        src = draw(st.sampled_from(["zero", "scores", "any"]))
        if src == "zero":
            res.append(ResidentMass(draw(st.integers(lo, hi)), 0))
        elif src == "scores":
            scores = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=20))
            res.append(resident_mass(scores, p, draw(st.integers(1, 40))))
        else:
            res.append(ResidentMass(draw(st.integers(lo, hi)), draw(st.integers(0, (1 << 30) - 1))))
    counts = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))
    rb = draw(st.integers(4, 16))
    ratio_q = draw(st.sampled_from([0, 1, (1 << rb) // 3, (1 << rb) // 2, (9 << rb) // 10, (1 << rb) - 1, 1 << rb]))
    return p, rows, counts, res, ratio_q, rb


def _tensors(res):
    return torch.tensor([m.max_score for m in res]), torch.tensor([m.total for m in res])


@settings(max_examples=400, deadline=None)
@given(row_jobs())
def test_tensor_twin_equals_reference(job):
    p, rows, counts, res, ratio_q, rb = job
    kw = dict(ratio_q=ratio_q, ratio_bits=rb, params=p)
    got = select_rows_exp2(torch.tensor(rows), torch.tensor(counts), resident=_tensors(res), **kw)
    exact = select_rows_exp2_exact(torch.tensor(rows), torch.tensor(counts), resident=_tensors(res), **kw)
    for i, (row, m) in enumerate(zip(rows, res)):
        assert got.row(i) == select_exp2(row, counts, resident=m, **kw), i
        assert exact.row(i) == select_exp2_exact(row, counts, resident=m, **kw), i


@settings(max_examples=300, deadline=None)
@given(formats(), st.data())
def test_resident_mass_twin_and_definition(fmt, data):
    """The tensor twin equals the reference row by row (attended subsets, rows with none); unsaturated, the input is
    the WTU's own total of a row of the resident scores with count 1; saturated, it is 2^bits - 1."""
    bits, p = fmt
    lo, hi = signed_range(bits)
    n = data.draw(st.integers(0, 25))
    R = data.draw(st.integers(1, 4))
    scores = [data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)) for _ in range(R)]
    valid = [data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) for _ in range(R)]
    sum_bits = data.draw(st.integers(1, 40))
    mx, tot = resident_mass_rows(torch.tensor(scores, dtype=torch.int64).reshape(R, n),
                                 torch.tensor(valid, dtype=torch.bool).reshape(R, n), p, sum_bits)
    for i in range(R):
        kept = [s for s, ok in zip(scores[i], valid[i]) if ok]
        ref = resident_mass(kept, p, sum_bits)
        assert (int(mx[i]), int(tot[i])) == ref
        if kept:
            full = select_exp2(kept, [1] * len(kept), ratio_q=0, ratio_bits=4, params=p).total
            assert ref == (max(kept), min(full, (1 << sum_bits) - 1))
        else:
            assert ref == (0, 0)


@settings(max_examples=300, deadline=None)
@given(row_jobs())
def test_no_resident_mass_is_the_offloaded_rule(job):
    """r = 0 (a total of 0, or one the rescaling shifts out) gives T = ((0 + total) · ratio_q) >> R, the offloaded
    rule's threshold, and the anchor A_off: every field equals the offloaded rule's (resident 0, none False)."""
    p, rows, counts, res, ratio_q, rb = job
    kw = dict(ratio_q=ratio_q, ratio_bits=rb, params=p)
    for row, m in zip(rows, res):
        for fn in (select_exp2, select_exp2_exact):
            plain = fn(row, counts, **kw)
            assert fn(row, counts, resident=ResidentMass(m.max_score, 0), **kw) == plain
            sel = fn(row, counts, resident=m, **kw)
            if sel.resident == 0:
                assert sel == plain


@settings(max_examples=300, deadline=None)
@given(row_jobs())
def test_properties(job):
    """T as stated; nothing selected exactly when T < 0; the selection carries r + acc past (r + total) · p;
    p = 1 selects all; bucket fill grows with p; greedy ⊆ bucket."""
    p, rows, counts, res, ratio_q, rb = job
    row, m = rows[0], res[0]
    kw = dict(ratio_bits=rb, params=p, resident=m)
    sel = select_exp2(row, counts, ratio_q=ratio_q, **kw)
    assert sel.threshold == row_threshold(sel.total, sel.resident, ratio_q, rb)
    assert sel.none_selected == (sel.threshold < 0) and (sel.mask == 0 or not sel.none_selected)
    if not sel.none_selected and not sel.all_selected:
        assert sel.accumulated > sel.threshold
        assert (sel.resident + sel.accumulated) << rb > (sel.resident + sel.total) * ratio_q - (1 << rb)
    assert select_exp2(row, counts, ratio_q=1 << rb, **kw).mask == (1 << len(row)) - 1
    prev = 0
    for q in range(0, (1 << rb) + 1, max(1, (1 << rb) // 7)):
        cur = select_exp2(row, counts, ratio_q=q, **kw)
        if p.fill == "bucket":
            assert cur.mask & prev == prev, q
        prev = cur.mask
    other = ExpParams(**{**p.__dict__, "fill": "greedy" if p.fill == "bucket" else "bucket"})
    a, b = sel.mask, select_exp2(row, counts, ratio_q=ratio_q, ratio_bits=rb, params=other, resident=m).mask
    greedy, bucket = (a, b) if p.fill == "greedy" else (b, a)
    assert greedy & bucket == greedy


P = ExpParams(frac_bits=4, buckets=4, bucket_octaves=2, lut_entries=4, mantissa_bits=6, refine_passes=1,
              refine_bins=4)


def test_row_worked_by_hand():
    """The offloaded row of test_wtu_exp_golden.test_row_worked_by_hand (scores 63, 40, 20, -100, counts 1, 1, 1, 9;
    LUT 35, 41, 49, 59) with one resident token of score 70."""
    scores, counts = [63, 40, 20, -100], [1, 1, 1, 9]
    # resident: 70 is bin 2 (70 >> 5), position 6 = 6/16 octave -> LUT[1] = 41
    res = resident_mass([70], P, 24)
    assert res == (70, 41)
    # joint anchor A = max(1, 2) = 2: window bins 2, 1, 0, -1; offloaded masses 167 in bin 1 (index 1), 82 in bin 0
    # (index 2), -100 flushed: q = 0, 167 >> 2 = 41, 82 >> 4 = 5; total 46; r = 41 >> 0 = 41
    half = select_exp2(scores, counts, ratio_q=128, ratio_bits=8, params=P, resident=res)
    # p 0.5: T = (87 · 128 >> 8) - 41 = 43 - 41 = 2; exit bin index 1 (acc 41 > 2), k = 2; refinement of [32, 64):
    # 63 in sub-bin 3, 118 >> 2 = 29 > 2: window [56, 64)
    assert (half.total, half.resident, half.threshold, half.top_bin, half.exit_bin) == (46, 41, 2, 2, 1)
    assert (half.bound, half.bound_shift, half.refine_walks, half.mask) == (56, 3, (1,), 0b0001)
    # p 0.4: T = (87 · 102 >> 8) - 41 = 34 - 41 = -7 < 0: the resident token holds 41/87 = 47 % ≥ 40 %: nothing
    low = select_exp2(scores, counts, ratio_q=102, ratio_bits=8, params=P, resident=res)
    assert low.none_selected and low.mask == 0 and low.threshold == -7 and low.bins_walked == 0
    # p 0.9: T = (87 · 230 >> 8) - 41 = 78 - 41 = 37; exit bin index 1 (41 > 37); sub-bins from the top: 3 (118 >> 2
    # = 29), 2 (empty), 1 (167 >> 2 = 41 > 37): window [40, 48), clusters 63 and 40; the offloaded rule takes 0b0111
    nine = select_exp2(scores, counts, ratio_q=230, ratio_bits=8, params=P, resident=res)
    assert (nine.threshold, nine.refine_walks, nine.bound, nine.mask) == (37, (3,), 40, 0b0011)
    assert select_exp2(scores, counts, ratio_q=230, ratio_bits=8, params=P).mask == 0b0111
    # a resident maximum below the offloaded one's bin: r = 41 >> ((1 - (-1)) · 2) = 2, anchor A_off = 1
    below = select_exp2(scores, counts, ratio_q=230, ratio_bits=8, params=P, resident=ResidentMass(-20, 41))
    assert (below.top_bin, below.resident, below.total) == (1, 2, 187)


def test_window_holding_p_fetches_nothing():
    """A row whose resident mass is at least p of the row's: nothing, in the fixed-point and the float form."""
    p = ExpParams(frac_bits=8, buckets=16, bucket_octaves=2, lut_entries=16, mantissa_bits=8)
    offloaded, counts = [-3840 + 20 * j for j in range(20)], [3] * 20         # ≥ 13.5 octaves below the resident max
    resident = [0, -100, -300, -256]
    res = resident_mass(resident, p, 24)
    for ratio in (0.5, 0.9, 0.95):
        q = round(ratio * 65536)
        sel = select_exp2(offloaded, counts, ratio_q=q, ratio_bits=16, params=p, resident=res)
        assert sel.none_selected and sel.mask == 0
        assert select_exp2(offloaded, counts, ratio_q=q, ratio_bits=16, params=p).mask     # offloaded rule: some
        masks, none = select_rows_mass_float(torch.tensor([offloaded]) / 256, torch.tensor(counts),
                                             torch.tensor([resident]) / 256, torch.ones(1, 4, dtype=torch.bool), ratio)
        assert bool(none[0]) and not masks.any()
    # and p = 1 still fetches every cluster
    assert select_exp2(offloaded, counts, ratio_q=65536, ratio_bits=16, params=p, resident=res).all_selected


def _lut_error(p: ExpParams) -> float:
    """Largest relative error of a LUT weight against 2^f over its cell [x/E, (x+1)/E]."""
    lut = exp_lut(p.lut_entries, p.mantissa_bits)
    half = 1 << (p.mantissa_bits - 1)
    return max(abs(v / half / 2 ** (f / p.lut_entries) - 1) for x, v in enumerate(lut) for f in (x, x + 1))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fixed_point_against_the_exact_float_rule(data):
    """Stated bound. With e the LUT's largest relative error and units of the hardware sums (2^(1-M) of the joint top
    bin's bottom), the bucket-fill selection F of the fixed-point rule keeps a true (float) share of the row's mass

        (m + Σ_F w) / (m + W)  ≥  p · (1 - e)/(1 + e) · (r + total) / (r + total + 2K + 1 + f)

    where f is the true mass flushed below the 32-octave windows: the walk guarantees r + acc ≥ (r + total)·p, the
    LUT moves each weight by at most e, and the floors lose < 1 unit per bin (K bins of the row, K of the resident
    total, 1 for the rescaling shift). The exact float rule keeps ≥ p by construction."""
    p = ExpParams(frac_bits=8, buckets=data.draw(st.sampled_from([8, 16])), bucket_octaves=2,
                  lut_entries=data.draw(st.sampled_from([4, 16])), mantissa_bits=data.draw(st.sampled_from([8, 12])),
                  refine_passes=data.draw(st.integers(0, 2)), refine_bins=16)
    n = data.draw(st.integers(1, 40))
    spread = data.draw(st.sampled_from([256, 1024, 4096]))
    top = data.draw(st.integers(-2000, 2000))
    scores = [top - data.draw(st.integers(0, spread)) for _ in range(n)]
    counts = data.draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    nres = data.draw(st.integers(1, 30))
    rtop = top + data.draw(st.integers(-1500, 1500))
    resident = [rtop - data.draw(st.integers(0, spread)) for _ in range(nres)]
    ratio = data.draw(st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]))
    rq = round(ratio * 65536)
    res = resident_mass(resident, p, 40)                                        # unsaturated
    sel = select_exp2(scores, counts, ratio_q=rq, ratio_bits=16, params=p, resident=res)
    unit = lambda s: 2.0 ** (s / 256 - sel.top_bin * p.bucket_octaves) * (1 << (p.mantissa_bits - 1))  # noqa: E731
    w = [c * unit(s) for s, c in zip(scores, counts)]
    m = sum(unit(u) for u in resident)
    kept = (m + sum(x for j, x in enumerate(w) if sel.mask >> j & 1)) / (m + sum(w))
    S, K = p.bin_shift, p.buckets
    flushed = sum(x for s, x in zip(scores, w) if (s >> S) <= sel.top_bin - K) + \
        sum(unit(u) for u in resident if (u >> S) <= (res.max_score >> S) - K)
    e = _lut_error(p)
    hw = sel.resident + sel.total
    bound = rq / 65536 * (1 - e) / (1 + e) * hw / (hw + 2 * K + 1 + flushed)
    assert kept >= bound - 1e-12
    # the float rule on the same (quantised) scores: its own share reaches p; nothing iff the window alone exceeds p
    masks, none = select_rows_mass_float(torch.tensor([scores]) / 256, torch.tensor(counts),
                                         torch.tensor([resident]) / 256, torch.ones(1, nres, dtype=torch.bool), ratio)
    fw = torch.tensor(w, dtype=torch.float64)
    fkept = (m + float(fw[masks[0]].sum())) / (m + sum(w))
    assert bool(none[0]) == (m > ratio * (m + sum(w)) * (1 + 1e-12)) or math.isclose(m, ratio * (m + sum(w)))
    assert fkept >= ratio - 1e-9


def test_float_rule_is_minimal_and_monotone():
    """The exact float rule: dropping its last (lowest-scored) cluster leaves the share at or below p; larger p
    selects supersets; natural-log values with base2=False equal log2 values with base2=True."""
    g = torch.Generator().manual_seed(3)
    v = torch.randn(6, 50, generator=g) * 3
    u = torch.randn(6, 20, generator=g) * 3 + torch.linspace(-6, 6, 6)[:, None]
    valid = torch.rand(6, 20, generator=g) > 0.3
    counts = torch.randint(1, 9, (50,), generator=g)
    prev = torch.zeros(6, 50, dtype=torch.bool)
    for ratio in (0.1, 0.5, 0.8, 0.9, 0.99, 1.0):
        masks, none = select_rows_mass_float(v, counts, u, valid, ratio)
        assert not (prev & ~masks).any()
        prev = masks
        nat, nnone = select_rows_mass_float(v * math.log(2), counts, u * math.log(2), valid, ratio, base2=False)
        assert torch.equal(nat, masks) and torch.equal(nnone, none)
        top = torch.maximum(v.max(1).values, torch.where(valid, u, -math.inf).max(1).values)
        w = 2.0 ** (v.double() - top[:, None].double()) * counts
        m = torch.where(valid, 2.0 ** (u.double() - top[:, None].double()), 0).sum(1)
        for i in range(6):
            if none[i] or masks[i].all():
                continue
            chosen = masks[i].nonzero().flatten()
            last = chosen[v[i, chosen].argmin()]
            assert (m[i] + w[i, masks[i]].sum() - w[i, last]) <= ratio * (m[i] + w[i].sum()) + 1e-9


def test_select_row_and_wtu_job_carry_the_resident_input():
    scores, counts = [63, 40, 20, -100], [1, 1, 1, 9]
    kw = dict(mode="histogram", ratio_q=230, ratio_bits=8, buckets=4, k=1, transform="exp2", exp=P)
    assert select_row(scores, counts, resident=ResidentMass(70, 41), **kw).mask == 0b0011
    job = wtu_job(counts, [scores, scores], resident=[(70, 41), (0, 0)], **kw)
    assert [s.mask for s in job.rows] == [0b0011, 0b0111] and job.group_mask == 0b0111
    with pytest.raises(WTUJobError, match="2 rows but 1 resident"):
        wtu_job(counts, [scores, scores], resident=[(70, 41)], **kw)
    with pytest.raises(ValueError, match="exp2"):
        select_row(scores, counts, **{**kw, "transform": "shift_min"}, resident=ResidentMass(70, 41))


def test_selection_fields_default_to_the_offloaded_rule():
    sel = select_exp2([63, 40], [1, 1], ratio_q=128, ratio_bits=8, params=P)
    assert (sel.resident, sel.none_selected) == (0, False)
    assert dataclasses.replace(sel, resident=0) == sel
