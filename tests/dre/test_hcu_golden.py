"""HCU golden reference: the assignment rules at their corners, and the RTL cycle model (vrex.golden.dre.hcu.reference)."""

import itertools
import random

import pytest

from conftest import params
from vrex.golden.dre.hcu.reference import (Assignment, hcu_assign, hcu_assign_for, hcu_cycles, hcu_cycles_for,
                             hcu_worst_token_cycles)
from vrex.sim.cases import HCU_CASES


def assign(pre, toks, **kw):
    kw = {"code_bits": 4, "threshold": 2, "capacity": 4, **kw}
    return hcu_assign(pre, toks, **kw).assignments


# ---- assignment rules ----------------------------------------------------------------------------------------


def test_threshold_zero_nothing_joins():
    out = assign([0b0000], [0b0000, 0b0000, 0b0001], threshold=0, capacity=3)
    assert [(a.cluster, a.new, a.full) for a in out] == [(1, True, False), (2, True, False), (3, True, True)]


def test_threshold_max_everything_joins():
    out = assign([0b0000], [0b1111, 0b0111], threshold=5)
    assert [(a.cluster, a.new, a.distance) for a in out] == [(0, False, 4), (0, False, 3)]


def test_empty_preload_and_identical_tokens():
    out = assign([], [0b1010] * 4)
    assert out[0] == Assignment(0, 0, True, 0, False)
    assert all(a == Assignment(t, 0, False, 0, False) for t, a in enumerate(out) if t)


def test_tie_goes_to_the_lower_slot():
    # 0b0011 is at distance 1 from both 0b0001 (slot 1) and 0b0010 (slot 2)
    assert assign([0b1100, 0b0001, 0b0010], [0b0011])[0] == Assignment(0, 1, False, 1, False)
    assert assign([0b1100, 0b0010, 0b0001], [0b0011])[0] == Assignment(0, 1, False, 1, False)


def test_first_takes_the_lowest_slot_under_the_threshold():
    pre = [0b0011, 0b0001]               # token 0b0000: distance 2 to slot 0, 1 to slot 1
    assert assign(pre, [0b0000], threshold=3, assignment="first")[0] == Assignment(0, 0, False, 2, False)
    assert assign(pre, [0b0000], threshold=3)[0] == Assignment(0, 1, False, 1, False)


def test_full_table_policies():
    pre = [0b0000, 0b1111]
    spill = assign(pre, [0b0011, 0b0001], capacity=2)
    assert spill == [Assignment(0, 2, True, 0, True),              # distance 2 to both: spilled, flagged
                     Assignment(1, 0, False, 1, False)]            # a normal join in a full table
    join = assign(pre, [0b0011], capacity=2, full_policy="join_nearest")
    assert join[0] == Assignment(0, 0, False, 2, True)             # tie 2/2 -> lower slot, flagged full
    near = assign(pre, [0b0001], capacity=2, full_policy="join_nearest")
    assert near[0] == Assignment(0, 0, False, 1, False)            # a normal join is not flagged


def test_full_table_spill_does_not_store():
    out = assign([0b0000, 0b1111], [0b0011, 0b0011], capacity=2)
    assert out == [Assignment(0, 2, True, 0, True), Assignment(1, 2, True, 0, True)]


# ---- cycle model ---------------------------------------------------------------------------------------------


def test_cycle_model_hand_examples():
    # 2 lanes, 4-bit codes, 1 bit per cycle (4 slices), threshold 2.
    kw = {"code_bits": 4, "threshold": 2, "capacity": 2, "lanes": 2, "bits_per_cycle": 1}
    # slot 1 stays below the bound for all 4 slices: 4 slices + 1 decision cycle; joins slot 1 at distance 1
    c = hcu_cycles([0b0000, 0b1111], [0b0111], **kw)
    assert c.assignments == [Assignment(0, 1, False, 1, False)]
    assert (c.tokens[0].cycles, c.tokens[0].worst, c.tokens[0].group_exits) == (5, 5, 0)
    # token 0b1110: slot 0 reaches 2 after slice 2, slot 1 after slice 1 -> the group exits after 3 slices
    c = hcu_cycles([0b0000, 0b0001], [0b1110], **kw)
    assert c.assignments == [Assignment(0, 2, True, 0, True)]
    assert (c.tokens[0].cycles, c.tokens[0].slices, c.tokens[0].group_exits) == (4, 3, 1)
    # 1 lane, 2 pipeline stages: group 0 exits after 1 slice (costs 1 + 1), group 1 runs 4 slices + 2
    c = hcu_cycles([0b1111, 0b0000], [0b0000], code_bits=4, threshold=1, capacity=2, lanes=1, bits_per_cycle=1,
                   pipeline_stages=2)
    assert c.assignments == [Assignment(0, 1, False, 0, False)]
    assert (c.tokens[0].cycles, c.tokens[0].worst) == (8, 10)


def test_cycle_model_scan_stops():
    kw = {"code_bits": 8, "capacity": 8, "lanes": 2, "bits_per_cycle": 8}
    pre = [0x00, 0x0F, 0xF0, 0xFF]
    # nearest: an exact copy in group 0 makes the bound 0, the scan stops after group 0
    c = hcu_cycles(pre, [0x0F], threshold=3, **kw)
    assert c.tokens[0].scan_stop and c.tokens[0].groups == 1 and c.tokens[0].cycles == 2
    # first: a hit in group 1 stops the scan there; without early exit every group is scanned
    c = hcu_cycles(pre, [0xF1], threshold=3, assignment="first", **kw)
    assert c.assignments[0].cluster == 2 and c.tokens[0].groups == 2 and c.tokens[0].cycles == 3
    assert hcu_cycles(pre, [0xF1], threshold=3, assignment="first", early_exit=False, **kw).tokens[0].cycles == 3
    # threshold 0: no comparison at all (1 cycle) with early exit; the worst case without
    assert hcu_cycles(pre, [0x0F], threshold=0, **kw).tokens[0].cycles == 1
    assert hcu_cycles(pre, [0x0F], threshold=0, early_exit=False, **kw).tokens[0].cycles == 3


def test_worst_case_formula():
    assert hcu_worst_token_cycles(0, lanes=16, slices=1) == 1
    assert hcu_worst_token_cycles(1, lanes=16, slices=1) == 2
    assert hcu_worst_token_cycles(17, lanes=16, slices=4, pipeline_stages=2) == 2 + 2 * 4


def _random_job(rng, bits, cap, thr):
    centres = [rng.getrandbits(bits) for _ in range(3)]

    def near():
        c = rng.choice(centres)
        for k in rng.sample(range(bits), rng.randint(0, min(bits, thr + 2))):
            c ^= 1 << k
        return c

    return [near() for _ in range(rng.randint(0, cap))], [near() for _ in range(rng.randint(1, 10))]


def test_cycle_model_schedule_gives_the_reference_assignments():
    """Early exit and the lane/slice schedule never change a result, and never cost cycles."""
    rng = random.Random(5)
    for _ in range(400):
        bits = rng.choice([4, 6, 8, 12])
        b = rng.choice([d for d in range(1, bits + 1) if bits % d == 0])
        lanes = rng.choice([1, 2, 3, 4])
        cap = lanes * rng.randint(1, 4)
        thr = rng.randint(0, bits + 1)
        policy = {"assignment": rng.choice(["nearest", "first"]), "full_policy": rng.choice(["spill", "join_nearest"])}
        pre, toks = _random_job(rng, bits, cap, thr)
        ref = hcu_assign(pre, toks, code_bits=bits, threshold=thr, capacity=cap, **policy).assignments
        for ee, stages in itertools.product([True, False], [1, 3]):
            c = hcu_cycles(pre, toks, code_bits=bits, threshold=thr, capacity=cap, lanes=lanes, bits_per_cycle=b,
                           early_exit=ee, pipeline_stages=stages, **policy)
            assert c.assignments == ref
            for t in c.tokens:
                assert t.cycles == t.worst if not ee else 1 <= t.cycles <= t.worst


@pytest.mark.parametrize("case", params(HCU_CASES))
def test_cycle_model_for_config_matches_reference(case):
    from vrex.golden.dre.jobs import random_jobs

    cfg = case.config()
    hcu_jobs, _ = random_jobs(cfg, n_hcu=4, n_wtu=0, seed=2)
    for job in hcu_jobs:
        c = hcu_cycles_for(cfg, job.open_codes, job.token_codes)
        ref = hcu_assign_for(cfg, list(job.open_codes), list(job.token_codes))
        assert c.assignments == ref.assignments
        assert c.total <= c.worst_total


def test_cycle_model_rejects_bad_jobs():
    with pytest.raises(ValueError, match="exceed the capacity"):
        hcu_cycles([0] * 5, [0], code_bits=4, threshold=1, capacity=4, lanes=1, bits_per_cycle=1)
    with pytest.raises(ValueError, match="must divide"):
        hcu_cycles([], [0], code_bits=4, threshold=1, capacity=4, lanes=1, bits_per_cycle=3)
    with pytest.raises(ValueError, match="unknown assignment 'closest'"):
        hcu_cycles([], [0], code_bits=4, threshold=1, capacity=4, lanes=1, bits_per_cycle=1, assignment="closest")
    with pytest.raises(ValueError, match=r"threshold 6 is outside 0..5"):
        hcu_cycles([], [0], code_bits=4, threshold=6, capacity=4, lanes=1, bits_per_cycle=1)


# ---- the session's vectorised twin ---------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vrex.golden.dre.hcu.tensor import hcu_assign_vectorised  # noqa: E402


@st.composite
def hcu_jobs(draw):
    bits = draw(st.sampled_from([1, 4, 7, 16, 32, 63, 64, 65, 96]))
    cap = draw(st.integers(1, 12))
    thr = draw(st.integers(0, bits + 1))
    centres = draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=1, max_size=3))

    def near(c, flips):
        for k in flips:
            c ^= 1 << (k % bits)
        return c

    code = st.builds(near, st.sampled_from(centres), st.lists(st.integers(0, bits - 1), max_size=thr + 2))
    pre = draw(st.lists(code | st.integers(0, (1 << bits) - 1), max_size=cap))
    toks = draw(st.lists(code | st.integers(0, (1 << (bits + 3)) - 1), min_size=1, max_size=14))
    policy = {"assignment": draw(st.sampled_from(["nearest", "first"])),
              "full_policy": draw(st.sampled_from(["spill", "join_nearest"]))}
    return pre, toks, {"code_bits": bits, "threshold": thr, "capacity": cap, **policy}


@settings(max_examples=250, deadline=None)
@given(hcu_jobs())
def test_vectorised_twin_equals_the_reference(job):
    pre, toks, kw = job
    assert hcu_assign_vectorised(pre, toks, **kw) == hcu_assign(pre, toks, **kw)


def test_vectorised_twin_rejects_what_the_reference_rejects():
    for kw in ({"capacity": 1}, {"threshold": 40}, {"assignment": "best"}):
        args = {"code_bits": 8, "threshold": 3, "capacity": 4, "assignment": "nearest", **kw}
        with pytest.raises(ValueError) as ref:
            hcu_assign([1, 2], [3], **args)
        with pytest.raises(ValueError) as twin:
            hcu_assign_vectorised([1, 2], [3], **args)
        assert str(ref.value) == str(twin.value)


def test_a_wrong_twin_is_caught(monkeypatch):
    """Mutant: the twin breaks distance ties towards the highest slot; the equality check must see it."""
    import numpy as np

    from vrex.golden.dre.hcu import tensor as hcu_tensor

    pre, toks, kw = [0b0011, 0b0101], [0b0001], {"code_bits": 4, "threshold": 3, "capacity": 4}
    assert hcu_assign_vectorised(pre, toks, **kw) == hcu_assign(pre, toks, **kw)
    first_min = np.argmin
    monkeypatch.setattr(hcu_tensor.np, "argmin", lambda d: len(d) - 1 - int(first_min(d[::-1])))
    wrong = hcu_assign_vectorised(pre, toks, **kw)
    assert wrong.assignments[0].cluster == 1 and wrong != hcu_assign(pre, toks, **kw)
