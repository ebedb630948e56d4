"""Deliberately wrong golden references: every RTL test suite must catch them (a test that cannot fail is a defect)."""

import dataclasses

import vrex.golden.dre.wtu.linear as gw
from vrex.golden.dre.hamming_lanes import hamming_lanes
from vrex.golden.dre.hcu.reference import HCUResult, hcu_assign


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
    from vrex.golden.dre.wtu.exp import exp_lut, select_exp2
    exp = kw["exp"]
    lut = tuple(reversed(exp_lut(exp.lut_entries, exp.mantissa_bits)))
    return select_exp2(list(scores), list(counts), ratio_q=kw["ratio_q"], ratio_bits=kw["ratio_bits"], params=exp,
                       lut=lut)


def wtu_row_mass_no_rescale(scores, counts, **kw):
    """WTU row mass: the resident total is not shifted to the joint anchor (the resident maximum is taken to sit in
    the offloaded maximum's bin whenever it is lower)."""
    from vrex.golden.dre.wtu.exp import ResidentMass
    res = kw.pop("resident", None)
    if res is not None and res.total and scores:
        res = ResidentMass(max(res.max_score, max(scores)), res.total)
    return gw.select_row(scores, counts, **kw, **({"resident": res} if res is not None else {}))


def wtu_row_mass_threshold_without_r(scores, counts, **kw):
    """WTU row mass: the threshold is ``((r + total) · p) >> R`` without the ``- r`` (the resident mass counted in
    the target but not in the sum that must reach it)."""
    import vrex.golden.dre.wtu.exp as ge
    right = ge.row_threshold
    ge.row_threshold = lambda total, resident, ratio_q, ratio_bits: ((resident + total) * ratio_q) >> ratio_bits
    try:
        return gw.select_row(scores, counts, **kw)
    finally:
        ge.row_threshold = right


# ---- performance model: deliberately wrong device tiers (tests/perf/test_perf_tier.py must catch them) ----------------


def resident_mass_without_floor_per_bin(scores, params, sum_bits, lut=None):
    """Resident mass: the bin masses summed in the lowest window bin's units and floored once (instead of one floor
    per bin in the top bin's units)."""
    from vrex.golden.dre.wtu.exp import ResidentMass, exp_term
    if not scores:
        return ResidentMass(0, 0)
    p, S = params, params.bin_shift
    top, low = max(scores) >> S, (params.buckets - 1) * params.bucket_octaves
    fine = sum(exp_term(s - ((s >> S) << S), 1, p, lut) << (low - (top - (s >> S)) * p.bucket_octaves)
               for s in scores if top - (s >> S) < p.buckets)
    return ResidentMass(max(scores), min(fine >> low, (1 << sum_bits) - 1))


def _perf_tier():
    from vrex.perf.memory import DeviceTier

    return DeviceTier


def tier_per_stream():
    """Device tier whose capacity every stream gets whole (not shared by the batch)."""
    DeviceTier = _perf_tier()

    class PerStream(DeviceTier):
        def device_tokens(self, cfg, batch, kv_tokens):
            return super().device_tokens(cfg, 1, kv_tokens)

    return PerStream("capacity")


def tier_without_staging():
    """Device tier that forgets to carve the retrieval staging area out of its capacity."""
    DeviceTier = _perf_tier()

    class NoStaging(DeviceTier):
        def device_tokens(self, cfg, batch, kv_tokens):
            window = min(kv_tokens, cfg.resv.recent_window_tokens + cfg.resv.sink_tokens)
            per_stream = int(self.capacity_bytes(cfg, batch) // (batch * cfg.model.kv_bytes_per_token))
            return min(kv_tokens, max(window, per_stream))

    return NoStaging("capacity")
# ---- LXE (golden/lxe) ---------------------------------------------------------------------------------------


def _truncate_scaled(S, scale, fmt, negzero=False):
    """round_scaled with truncation toward zero instead of RNE."""
    from vrex.golden.lxe.numerics import round_scaled

    if S == 0:
        return round_scaled(0, 0, fmt, negzero=negzero)
    sh = max(0, abs(S).bit_length() - fmt.precision)
    q = (abs(S) >> sh) * (-1 if S < 0 else 1)
    return round_scaled(q, scale + sh, fmt)


def mac_truncates(a_beats, b_beats, guard_bits):
    """MAC tree: the result is truncated instead of rounded to nearest even."""
    from vrex.golden.lxe import mac_tree as gm
    from vrex.golden.lxe.numerics import BF16, FP32

    st = gm.AccState()
    for x, y in zip(a_beats, b_beats):
        st = gm.accumulate(st, gm.beat_sum(x, y, guard_bits))
    exact = gm.finish(st, guard_bits)
    if st.nan or st.pinf or st.ninf:
        return exact
    scale = st.e - gm.PRODUCT_BIAS - guard_bits
    return (_truncate_scaled(st.S, scale, FP32, st.negzero), _truncate_scaled(st.S, scale, BF16, st.negzero))


def mac_reversed_beats(a_beats, b_beats, guard_bits):
    """MAC tree: beats accumulated last to first (a wrong accumulation order)."""
    from vrex.golden.lxe.mac_tree import dot_beats

    return dot_beats(a_beats, b_beats, guard_bits, order=list(reversed(range(len(a_beats)))))


def mac_no_ftz(a_beats, b_beats, guard_bits):
    """MAC tree: results below the normal range become subnormals (gradual underflow) instead of zero."""
    from vrex.golden.lxe import mac_tree as gm
    from vrex.golden.lxe.numerics import BF16, FP32, round_fixed

    st = gm.AccState()
    for x, y in zip(a_beats, b_beats):
        st = gm.accumulate(st, gm.beat_sum(x, y, guard_bits))
    out = list(gm.finish(st, guard_bits))
    scale = st.e - gm.PRODUCT_BIAS - guard_bits
    for k, fmt in enumerate((FP32, BF16)):
        if st.S and not (st.nan or st.pinf or st.ninf) and out[k] & ~(1 << (fmt.width - 1)) == 0:
            q = abs(round_fixed(st.S, scale, 2 * fmt.width, fmt.bias - 1 + fmt.frac_bits))
            if 0 < q < 1 << fmt.frac_bits:
                out[k] = (int(st.S < 0) << (fmt.width - 1)) | q
    return tuple(out)


def vpe_add_truncates(beats, lanes, **kw):
    """VPE: add results truncated instead of rounded to nearest even (other ops exact)."""
    import dataclasses

    from vrex.golden.lxe import vpe as gv
    from vrex.golden.lxe.numerics import BF16, FP32

    out = gv.vpe_beats(beats, lanes, **kw)
    G = kw["guard_bits"]
    for beat, (res, _) in zip(beats, out):
        if beat["op"] != "add":
            continue
        for k in range(lanes):
            v = gv._value([gv.term_a(beat["a"][k]), gv.term_b(beat["b"][k])], G)
            if gv._special(v) is None and v.S:
                scale = v.e - gv.TERM_BIAS - G
                res[k] = dataclasses.replace(res[k], value=_truncate_scaled(v.S, scale, FP32),
                                             bf16=_truncate_scaled(v.S, scale, BF16))
    return out
def _dpe_model():
    from vrex.golden.lxe.dpe import DpeModel

    return DpeModel


def dpe_load_ignores_mask(**kw):
    """DPE: a load beat writes every tree of its group, whatever its mask."""
    class Model(_dpe_model()):
        def beat(self, b):
            return super().beat({**b, "mask": (1 << self.load_trees) - 1} if b["load"] else b)
    return Model(**kw)


def dpe_reads_word_zero(**kw):
    """DPE: a compute beat reads word 0 of the weight memories instead of its addr."""
    class Model(_dpe_model()):
        def beat(self, b):
            return super().beat(b if b["load"] else {**b, "addr": 0})
    return Model(**kw)


def dpe_load_to_wrong_group(**kw):
    """DPE: a load beat writes the trees of group 0, whatever its group."""
    class Model(_dpe_model()):
        def beat(self, b):
            return super().beat({**b, "group": 0} if b["load"] else b)
    return Model(**kw)


# ---- KVMU golden references (tests/dre/test_kvmu.py): each must make the RTL bench report a mismatch ----------------

from vrex.golden.dre.kvmu import Burst, Coalescer, KVMUModel, legalise as _legalise  # noqa: E402


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
        from vrex.golden.dre.kvmu import PREFETCH

        if r.mode != PREFETCH:
            return super().mergeable(p, r)
        g = r.src - (p.src + p.length)
        return p.mode == PREFETCH and g > self.gap and self.cursor + g + r.length <= self.limit


class KVMUInvertsTheGapRule(KVMUModel):
    """KVMU: merges prefetch ranges whose gap is larger than coalesce_gap_bytes instead of at most."""

    def make_coalescer(self, gap_bytes):
        return _InvertedGap(gap_bytes)
