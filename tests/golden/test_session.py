"""ReSV session: block jobs replay through the references, the Done-when properties, the table's preload rules."""

import math

import pytest
import torch

from conftest import params
from vrex.config import load_config
from vrex.golden.resv.cluster_table import ClusterTable
from vrex.golden.evaluation.offline import evaluate
from vrex.golden.resv.hashing import hash_codes, hyperplanes
from vrex.golden.dre.hcu.reference import hcu_assign_for
from vrex.golden.dre.jobs import load_jobs, save_jobs
from vrex.golden.resv.block_jobs import record_jobs
from vrex.golden.resv.session import JobRecorder, ReSVPolicy, run_session
from vrex.golden.resv.stream import Stream
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.golden.dre.wtu.linear import select_row, select_row_kwargs, signed_range
from vrex.sim.cases import RESV_SESSION_CASES

TINY = load_config("tiny")


@pytest.fixture(scope="module")
def trace():
    return make_trace(TINY, "synthetic", options=TraceOptions(frames=24))


def _replay_hcu(cfg, hcu_jobs, outcomes):
    seen_by_context = {}
    for job, out in zip(hcu_jobs, outcomes, strict=True):
        parts = job.context.split(".")
        seen = seen_by_context.setdefault(tuple(p for p in parts if p[0] in "LH"), set())   # one id space per context
        assert list(job.open_codes) == out.open_codes and list(job.token_codes) == out.token_codes
        assert len(job.token_codes) <= cfg.hcu_frame_tokens and len(job.open_codes) <= cfg.hcu_capacity
        res = hcu_assign_for(cfg, list(job.open_codes), list(job.token_codes))
        slots = list(out.preload)
        assert out.preload == sorted(out.preload)                        # oldest first
        for a, cid in zip(res.assignments, out.clusters, strict=True):
            if a.cluster == cfg.hcu_capacity:
                assert cid not in seen
            elif a.new:
                assert cid not in seen and len(slots) == a.cluster
                slots.append(cid)
            else:
                assert cid == slots[a.cluster]
            seen.add(cid)


def _replay_wtu(cfg, wtu_jobs, outcomes):
    w, kw = cfg.dre.wtu, select_row_kwargs(cfg)
    lo, hi = signed_range(w.score_bits)
    for job, out in zip(wtu_jobs, outcomes, strict=True):
        assert 0 < len(job.counts) <= w.row_capacity and all(0 < c < 1 << w.count_bits for c in job.counts)
        agg = 0
        for row, mask in zip(job.rows, out.row_masks, strict=True):
            assert len(row) == len(job.counts) and all(lo <= s <= hi for s in row)
            sel = select_row(list(row), list(job.counts), **{**kw, "ratio_q": out.ratio_q})
            assert sel.mask == mask
            agg |= mask
        assert agg == out.mask


@pytest.mark.parametrize("case", params(RESV_SESSION_CASES))
def test_recorded_jobs_replay_through_the_block_references(trace, case):
    cfg = case.config()
    rec = JobRecorder()
    pol = run_session(cfg, trace, recorder=rec)
    assert rec.hcu and rec.wtu
    _replay_hcu(cfg, rec.hcu, rec.hcu_outcomes)
    _replay_wtu(cfg, rec.wtu, rec.wtu_outcomes)
    if cfg.resv.preload == "fill":
        assert sum(c["full_events"] for c in pol.stats()["clusters"]) > 0        # the full memory was exercised
    # WTU rows of a frame step: query tokens × the GQA group's query heads, token-major
    frame_jobs = [j for j in rec.wtu if ".F" in j.context]
    assert all(len(j.rows) == cfg.model.tokens_per_frame * cfg.model.group_size for j in frame_jobs)


def test_cluster_codes_are_the_first_members_hash(trace):
    cfg = TINY
    rec = JobRecorder()
    run_session(cfg, trace, layers=[1], heads=[0], recorder=rec)
    codes = hash_codes(trace.layers[1].k[:, 0], hyperplanes(cfg, 1, 0, cfg.model.head_dim))
    first_code = {}
    token = 0
    for job, out in zip(rec.hcu, rec.hcu_outcomes):
        assert list(job.token_codes) == codes[token:token + len(job.token_codes)]
        for cid, code in zip(out.clusters, job.token_codes):
            first_code.setdefault(cid, code)
        for cid, code in zip(out.preload, job.open_codes):
            assert first_code[cid] == code
        token += len(job.token_codes)
    assert token == trace.tokens


def test_record_jobs_api_and_file_round_trip(tmp_path):
    hcu, wtu = record_jobs(TINY, "synthetic", frames=20, layers=[0], heads=[1], seed=2, max_jobs=5)
    assert len(hcu) == 5 and len(wtu) == 5
    assert all(j.context.startswith("L0.H1.") for j in hcu + wtu)
    save_jobs(tmp_path / "j.json", hcu, wtu, {"config": "tiny"})
    h2, w2, meta = load_jobs(tmp_path / "j.json")
    assert (h2, w2, meta) == (hcu, wtu, {"config": "tiny"})
    again, _ = record_jobs(TINY, "synthetic", frames=20, layers=[0], heads=[1], seed=2, max_jobs=5)
    assert again == hcu


def test_record_jobs_on_edge_shapes():
    edge = load_config("edge").with_overrides({"resv.recent_window_tokens": 64})
    hcu, wtu = record_jobs(edge, "synthetic", frames=12, layers=[0], heads=[3], max_jobs=40)
    assert len(hcu) == 40 and wtu
    assert all(c < 1 << 32 for j in hcu for c in j.token_codes)
    assert all(len(r) == len(j.counts) and len(j.rows) == 10 * 4 for j in wtu if ".F" in j.context for r in j.rows)


class _Capture(ReSVPolicy):
    def __init__(self, cfg, **kw):
        super().__init__(cfg, **kw)
        self.log = {}

    def select(self, ctx):
        out = super().select(ctx)
        for h, f in zip(ctx.heads, out):
            self.log[(ctx.layer, ctx.step.index, h)] = set(f.tolist())
        return out


def _fetched(cfg, trace):
    pol = _Capture(cfg)
    run_session(cfg, trace, policy=pol)
    return pol.log


def test_selection_is_monotone_in_the_ratio(trace):
    prev = None
    for ratio in (0.0, 0.1, 0.3, 0.6, 0.9, 1.0):
        cur = _fetched(TINY.with_overrides({"resv.wicsum_ratio": ratio, "resv.text_wicsum_ratio": ratio}), trace)
        if prev is not None:
            assert all(prev[k] <= cur[k] for k in cur), ratio
        prev = cur
    stream = Stream(TINY, trace)
    offloaded = {s.index: set(stream.residency(s).offloaded) for s in stream.steps}
    assert all(v == offloaded[k[1]] for k, v in prev.items())            # ratio 1.0: everything offloaded


def test_retrieve_all_equals_full_attention(trace):
    for overrides in ({"resv.wicsum_ratio": 1.0, "resv.text_wicsum_ratio": 1.0}, {"resv.dense_layers": 2}):
        rep = evaluate(TINY.with_overrides(overrides), trace, methods=("full", "resv"))
        for stage in ("frame", "text"):
            m = rep["methods"]["resv"][stage]
            assert m["retrieval_ratio"] == 1.0 and m["output_error"] == 0.0
            assert abs(m["recall"] - 1) < 1e-6
            assert m["bytes_fetched"] == m["offloaded_tokens"] * 2 * 16 * 2.0
            assert rep["methods"]["full"][stage]["bytes_fetched"] == 0


def test_exact_and_bucketed_agree_when_buckets_are_fine(trace):
    """Scores on an integer grid (8-bit, no fraction) and 64 buckets: every bucket holds one value, so the bucketed
    selection is the exact one plus the clusters tied with its last score."""
    fine = {"dre.wtu.score_bits": 8, "dre.wtu.score_frac_bits": 0, "dre.wtu.buckets": 256,
            "dre.wtu.score_memory_bytes": 64}
    out = {}
    for rule in ("exact", "bucketed"):
        rec = JobRecorder()
        run_session(TINY.with_overrides({**fine, "resv.selection": rule}), trace, recorder=rec)
        out[rule] = rec
    assert [j for j in out["exact"].wtu] == [j for j in out["bucketed"].wtu]
    differ = 0
    for job, ex, bu in zip(out["exact"].wtu, out["exact"].wtu_outcomes, out["bucketed"].wtu_outcomes):
        for row, me, mb in zip(job.rows, ex.row_masks, bu.row_masks):
            assert me & ~mb == 0
            sp = [s - min(row) for s in row]
            last = min(sp[j] for j in range(len(row)) if me >> j & 1)
            assert mb == sum(1 << j for j in range(len(row)) if sp[j] >= last)
            differ += me != mb
    assert differ < sum(len(j.rows) for j in out["exact"].wtu)


def test_seeds_make_runs_reproducible():
    runs = [evaluate(TINY, make_trace(TINY, "synthetic", options=TraceOptions(frames=14, seed=s)),
                     methods=("resv", "infinigen", "oracle_topp")) for s in (5, 5, 6)]
    strip = [{k: v for k, v in r.items() if k != "run"} for r in runs]
    assert strip[0] == strip[1] and strip[0]["methods"] != strip[2]["methods"]


def test_preload_keeps_the_most_recent_open_clusters_oldest_first():
    cfg = TINY.with_overrides({"dre.hcu.code_memory_bytes": 16, "dre.hcu.lanes": 4})      # capacity 8
    assert cfg.hcu_capacity == 8
    table = ClusterTable(cfg, 64, 4)
    # clusters 0..11 with newest members 10, 40, 12, 41, 42, 5, 43, 44, 45, 46, 47, 48
    for cid, newest in enumerate([10, 40, 12, 41, 42, 5, 43, 44, 45, 46, 47, 48]):
        table._new_cluster(cid)
        table._add(cid, newest, torch.zeros(4), None)
    staged = table.stage_preload(window_start=11, job_tokens=3)                # reserve: 8 - 3 = 5 slots
    assert staged == [7, 8, 9, 10, 11]                                         # 5 most recent, ascending ids
    assert table.closed[[1, 2, 3, 4, 6]].all() and not table.closed[[0, 5]].any()
    assert table.stage_preload(window_start=11, job_tokens=3) == staged        # closed clusters stay closed
    fill = ClusterTable(cfg.with_overrides({"resv.preload": "fill"}), 64, 4)
    for cid in range(10):
        fill._new_cluster(cid)
        fill._add(cid, 20 + cid, torch.zeros(4), None)
    assert fill.stage_preload(window_start=0, job_tokens=3) == list(range(2, 10))


def test_long_steps_are_clustered_in_chunks_of_the_code_buffer(trace):
    rec = JobRecorder()
    run_session(TINY, trace, layers=[0], heads=[0], recorder=rec)
    q = [j for j in rec.hcu if ".Q0" in j.context]
    assert [len(j.token_codes) for j in q] == [8, 8, 8, 1]                    # 25 question tokens, 8-code buffer
    assert [j.context[-3:] for j in q] == [".c0", ".c1", ".c2", ".c3"]
    # the second chunk's preload contains the clusters the first chunk opened
    opened = {c for c, a in zip(rec.hcu_outcomes[rec.hcu.index(q[0])].clusters,
                                rec.hcu_outcomes[rec.hcu.index(q[0])].result.assignments) if a.new}
    assert opened <= set(rec.hcu_outcomes[rec.hcu.index(q[1])].preload)


def test_row_overflow_error_is_clear(trace):
    cfg = TINY.with_overrides({"resv.row_overflow": "error", "resv.retrieval_scope": "all",
                               "dre.wtu.score_memory_bytes": 6, "dre.wtu.lanes": 4, "dre.wtu.topk_k": 4})
    from vrex.errors import VrexError

    with pytest.raises(VrexError, match=r"has \d+ clusters but the score memory holds 4 .*resv\.row_overflow"):
        run_session(cfg, trace)
    rep = evaluate(TINY.with_overrides({"resv.retrieval_scope": "all", "dre.wtu.score_memory_bytes": 6,
                                        "dre.wtu.lanes": 4, "dre.wtu.topk_k": 4}), trace, methods=("resv",))
    assert math.isfinite(rep["methods"]["resv"]["frame"]["recall"])
    w = rep["resv"]["resv"]["wtu"]["frame"]
    assert w["tiles"] > w["jobs"]                                              # the tile path ran


def test_job_table_update_equals_token_by_token():
    """ClusterTable adds a job's tokens with index_add_; sums, counts, newest and majority ones equal the
    token-by-token update bit for bit (duplicates, float64 order)."""
    import random

    cfg = TINY.with_overrides({"resv.cluster_code": "majority"})
    rng = random.Random(3)
    for _ in range(20):
        a, b = ClusterTable(cfg, 40, 8), ClusterTable(cfg, 40, 8)
        for t in (a, b):
            for _ in range(5):
                t._new_cluster(rng.getrandbits(16))
        tokens = sorted(rng.sample(range(40), 12))
        cids = [rng.randrange(5) for _ in tokens]
        keys = torch.randn(12, 8, generator=torch.Generator().manual_seed(rng.getrandbits(31))) * 100
        bits = keys[:, :16 % 8 or 8] > 0
        bits = torch.cat([bits, bits], 1)
        for i, (c, tok) in enumerate(zip(cids, tokens)):
            a._add(c, tok, keys[i], bits[i])
        b._add_job(cids, tokens, keys, bits)
        for f in ("token_cluster", "sums", "counts", "newest", "ones"):
            assert torch.equal(getattr(a, f), getattr(b, f)), f
