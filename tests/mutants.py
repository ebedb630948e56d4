"""Deliberately wrong golden references: every RTL test suite must catch them (a test that cannot fail is a defect)."""

import dataclasses

import vrex.golden.wtu as gw
from vrex.golden.hamming import hamming_lanes
from vrex.golden.hcu import HCUResult, hcu_assign


def lanes_less_equal(query, refs, ref_valid, threshold):
    """Hamming lane array: joins at distance == threshold (<= instead of <)."""
    return hamming_lanes(query, refs, ref_valid, threshold + 1)


def hcu_less_equal(open_codes, token_codes, *, threshold, code_bits, **kw):
    """HCU: joins at distance == threshold (<= instead of <)."""
    return hcu_assign(open_codes, token_codes, threshold=min(threshold + 1, code_bits + 1), code_bits=code_bits, **kw)


def hcu_ties_to_higher_slot(open_codes, token_codes, *, code_bits, threshold, capacity, **kw):
    """HCU: a nearest-distance tie goes to the higher slot."""
    ref = hcu_assign(open_codes, token_codes, code_bits=code_bits, threshold=threshold, capacity=capacity, **kw)
    codes, out = list(open_codes), []
    for a, code in zip(ref.assignments, token_codes):
        if not a.new and not a.full:
            a = type(a)(a.token, max(s for s, c in enumerate(codes) if (c ^ code).bit_count() == a.distance),
                        a.new, a.distance, a.full)
        if a.new and not a.full:
            codes.append(code)
        out.append(a)
    return HCUResult(out, codes)


def wtu_walks_one_bucket_less(scores, counts, **kw):
    """WTU WiCSum: stops one bucket above the real exit bucket."""
    s = gw.select_row(scores, counts, **kw)
    if s.exit_bucket < s.top_bucket:
        sp = gw.transform_scores(scores, kw["transform"])
        b = s.exit_bucket + 1
        mask = sum(1 << j for j, a in enumerate(sp) if (a - s.lo) >> s.shift >= b)
        return dataclasses.replace(s, mask=mask, exit_bucket=b, buckets_walked=s.buckets_walked - 1)
    return s


def wtu_ties_to_higher_index(scores, counts, **kw):
    """WTU top-k: ties at the k-th value go to the higher index."""
    order = sorted(range(len(scores)), key=lambda j: (-scores[j], -j))[:kw["k"]]
    return gw.RowSelection(sum(1 << j for j in order), 0, 0, 0)


def wtu_exp2_skips_refinement(scores, counts, **kw):
    """WTU exp2: takes the whole exit bin (no refinement pass)."""
    exp = kw.pop("exp")
    return gw.select_row(scores, counts, exp=dataclasses.replace(exp, refine_passes=0), **kw)


def wtu_exp2_reversed_lut(scores, counts, **kw):
    """WTU exp2: the 2^fraction LUT read in reverse (fraction index bits inverted)."""
    from vrex.golden.wtu_exp import exp_lut, select_exp2
    exp = kw["exp"]
    lut = tuple(reversed(exp_lut(exp.lut_entries, exp.mantissa_bits)))
    return select_exp2(list(scores), list(counts), ratio_q=kw["ratio_q"], ratio_bits=kw["ratio_bits"], params=exp,
                       lut=lut)
