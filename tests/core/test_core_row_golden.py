"""The core's golden session (LXE numerics) with resv.threshold_mass = row: each WTU row's resident input comes from
the LXE's own scores of the keys the row attends anyway (the MAC tree's dot product of the BF16 query and the BF16
key, VPE ``fixed`` with the cluster scores' constant), the recorded jobs replay through the WTU reference, the input
changes what is fetched; the configs the core's resident pass does not cover are refused with the key. The RTL core
against this session: tests/core/test_core.py."""

import pytest

from vrex.errors import ConfigError
from vrex.golden.core import core_session, frame_steps
from vrex.golden.core.numerics import LxeParams, bf16_rows, score
from vrex.golden.dre.wtu.exp import ExpParams, ResidentMass, resident_mass
from vrex.golden.dre.wtu.linear import quantize_scores, select_row, select_row_kwargs
from vrex.golden.resv.policies import StepContext
from vrex.golden.resv.session import LOG2E
from vrex.golden.resv.stream import Stream
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.sim.cases import CORE_CASES

EXP2_CORE = next(c for c in CORE_CASES if c.id == "core-tiny-exp2").config()
ROW = EXP2_CORE.with_overrides({"resv.threshold_mass": "row", "resv.row_mass_p": 0.7,
                                "resv.text_row_mass_p": 0.8}, source="row-mass core golden")
LAYER = 0


@pytest.fixture(scope="module")
def session():
    trace = make_trace(ROW, "synthetic", layers=[LAYER], options=TraceOptions(frames=8, seed=1))
    return trace, core_session(ROW, trace, layer=LAYER, steps=frame_steps(trace))


def _retrieving(steps):
    return [(s, c) for s in steps for c in s.contexts if c.wtu_job is not None]


def test_resident_input_is_the_lxe_scores_of_the_attended_keys(session):
    """Every retrieving row, recomputed from the operands: the attended keys of the step (sinks, window, the step
    causally), BF16 query × BF16 key on the MAC tree, ``fixed`` → ``resident_mass``; and the LXE scores lie within
    one unit of the float scores quantised the float session's way."""
    trace, steps = session
    stream = Stream(ROW, trace)
    by_index = {s.index: s for s in stream.steps}
    p, w, exp = LxeParams(ROW), ROW.dre.wtu, ExpParams.from_config(ROW)
    data = trace.layers[LAYER]
    checked = 0
    for cs, c in _retrieving(steps):
        step = by_index[cs.index]
        ctx = StepContext(ROW, LAYER, data, None, stream, step, stream.residency(step), [c.head], trace.segment_ids())
        keys, attended = ctx.attended_anyway()
        queries = ctx.group_queries(c.head)
        bf_keys = bf16_rows(data.k[keys, c.head])
        assert len(c.wtu_job.resident) == len(queries) == len(c.wtu_job.rows)
        for i, (q, recorded) in enumerate(zip(bf16_rows(queries), c.wtu_job.resident, strict=True)):
            ok = attended[i // ctx.group].tolist()
            lxe = [score(p, q, k) for k, a in zip(bf_keys, ok) if a]
            assert resident_mass(lxe, exp, w.resident_sum_bits) == tuple(recorded)
            flt = quantize_scores((queries[i] @ data.k[keys, c.head].T / queries.shape[1] ** 0.5 * LOG2E)
                                  [attended[i // ctx.group]].tolist(), w.score_bits, w.score_frac_bits)
            assert max(abs(a - b) for a, b in zip(lxe, flt)) <= 1
            checked += 1
    assert checked >= 8


def test_recorded_rows_replay_through_the_wtu_reference(session):
    _, steps = session
    nothing = 0
    for cs, c in _retrieving(steps):
        kw = select_row_kwargs(ROW, "frame")
        for row, res, mask in zip(c.wtu_job.rows, c.wtu_job.resident, c.row_masks, strict=True):
            sel = select_row(list(row), list(c.wtu_job.counts), **kw, resident=ResidentMass(*res))
            assert sel.mask == mask
            nothing += sel.none_selected
        assert c.group_mask == sum(1 << j for j in range(len(c.candidates)) if any(m >> j & 1 for m in c.row_masks))
    assert nothing                       # some rows find p in what they attend anyway


def test_the_resident_input_changes_what_is_fetched(session):
    """The same session with the offloaded rule selects differently on some retrieving step (the input is used)."""
    trace, steps = session
    offloaded = core_session(EXP2_CORE, trace, layer=LAYER, steps=frame_steps(trace))
    row_masks = [c.group_mask for _, c in _retrieving(steps)]
    off_masks = [c.group_mask for _, c in _retrieving(offloaded)]
    assert len(row_masks) == len(off_masks) > 0 and row_masks != off_masks
    assert all(not c.wtu_job.resident for _, c in _retrieving(offloaded))


@pytest.mark.parametrize("override, key", [
    ({"resv.include_current_frame": False}, "resv.include_current_frame"),
    ({"lxe.dpe_trees": 2, "lxe.vpe_lanes": 2}, "lxe.dpe_trees"),
])
def test_row_configs_the_core_does_not_cover_are_rejected_with_the_key(override, key):
    """The resident pass needs a row's resident keys to be a prefix (the step causally) and groups of dpe_trees keys
    that fill whole beats of the resident-mass unit."""
    from vrex.hdl.core import CoreGeometry

    CoreGeometry.from_config(ROW)                     # the row rule itself is covered
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        CoreGeometry.from_config(ROW.with_overrides(override))
