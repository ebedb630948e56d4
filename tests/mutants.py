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


# ---- KVMU golden references (tests/test_kvmu.py): each must make the RTL bench report a mismatch ----------------

from vrex.golden.kvmu import Burst, Coalescer, KVMUModel, legalise as _legalise  # noqa: E402


class KVMUSplitsPastTheBoundary(KVMUModel):
    """KVMU: cuts bursts one beat after the 4 KiB / burst boundary (an off-by-one in the split)."""

    def legalise(self, r):
        out = _legalise(r, self.map.burst_bytes, self.map.beat_bytes)
        if len(out) < 2:
            return out
        a, b = out[0], out[1]
        return [Burst(a.src, a.dst, a.beats + 1), Burst(b.src + self.map.beat_bytes, b.dst + self.map.beat_bytes,
                                                        b.beats - 1)] + out[2:] if b.beats > 1 else out


class KVMUDropsTheLastBeat(KVMUModel):
    """KVMU: a multi-beat transfer loses its last beat."""

    def legalise(self, r):
        out = _legalise(r, self.map.burst_bytes, self.map.beat_bytes)
        last = out[-1]
        return out[:-1] + ([Burst(last.src, last.dst, last.beats - 1)] if last.beats > 1 else [])


class _InvertedGap(Coalescer):
    def mergeable(self, p, r):
        from vrex.golden.kvmu import PREFETCH

        if r.mode != PREFETCH:
            return super().mergeable(p, r)
        g = r.src - (p.src + p.length)
        return p.mode == PREFETCH and g > self.gap and self.cursor + g + r.length <= self.limit


class KVMUInvertsTheGapRule(KVMUModel):
    """KVMU: merges prefetch ranges whose gap is larger than coalesce_gap_bytes instead of at most."""

    def make_coalescer(self, gap_bytes):
        return _InvertedGap(gap_bytes)
