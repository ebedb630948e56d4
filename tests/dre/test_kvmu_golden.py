"""KVMU golden model: burst rules, coalescing, the memory image after eviction and prefetch, the session report,
and the config rules of the KVMU's sizes."""

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from conftest import config_error
from vrex.config import load_config
from vrex.golden.dre.kvmu import (EVICT, PREFETCH, Coalescer, Job, KVMUModel, Range, kvmu_report, legalise, mask_beats,
                              random_kvmu_jobs, session_jobs)
from vrex.golden.traces.sources import TraceOptions, make_trace

TINY = load_config("tiny").with_overrides({"dre.kvmu.device_capacity_bytes": 300000})


@settings(max_examples=300, deadline=None)
@given(src=st.integers(0, 1 << 20), dst=st.integers(0, 1 << 20), beats=st.integers(1, 2000),
       beat_log=st.integers(3, 7), burst_log=st.integers(0, 6))
def test_legal_bursts_conserve_bytes_and_never_cross_4k(src, dst, beats, beat_log, burst_log):
    beat = 1 << beat_log
    burst = min(max(64, beat) << burst_log, 256 * beat, 4096)
    src, dst = src * beat, dst * beat
    out = legalise(Range(src, dst, beats * beat), burst, beat)
    assert sum(b.beats for b in out) == beats
    s, d = src, dst
    for b in out:
        n = b.beats * beat
        assert (b.src, b.dst) == (s, d) and 1 <= b.beats <= 256 and n <= burst
        assert b.src // 4096 == (b.src + n - 1) // 4096 and b.dst // 4096 == (b.dst + n - 1) // 4096
        s, d = s + n, d + n


def test_coalescer_gap_rule_and_staging_limit():
    c = Coalescer(gap_bytes=64)
    c.restart(1000, 1000 + 512)
    assert c.push(Range(0, 0, 128, PREFETCH)) == ([], False)
    assert c.push(Range(192, 0, 64, PREFETCH)) == ([], False)            # gap 64 = limit: merged, gap moved
    out, dropped = c.push(Range(320, 0, 64, PREFETCH))                     # gap 64 again
    assert not out and not dropped and c.pending == Range(0, 1000, 384, PREFETCH)
    out, _ = c.push(Range(512, 0, 64, PREFETCH))                           # gap 128: a new range
    assert out == [Range(0, 1000, 384, PREFETCH)] and c.pending.dst == 1384
    assert c.push(Range(4096, 0, 128, PREFETCH)) == ([Range(512, 1384, 64, PREFETCH)], True)   # beyond the limit
    e = Coalescer(gap_bytes=64)
    e.push(Range(0, 100, 64, EVICT))
    assert e.push(Range(64, 164, 64, EVICT)) == ([], False)               # adjacent on both sides
    assert e.push(Range(192, 228, 64, EVICT))[0] == [Range(0, 100, 128, EVICT)]   # evictions never skip a gap


def _evicted_tokens(jobs, model_contexts, ctx):
    toks = [t for j in jobs if j.context == ctx and j.arrivals for t in j.arrivals]
    return toks[:model_contexts[ctx].evict_upto]


def test_host_chains_and_staging_hold_exactly_the_evicted_records():
    """Independent oracle: record bytes are tagged with (context, token); after every prefetch the staging half
    holds the selected clusters' evicted records, cluster by cluster in token order, and nothing else."""
    cfg = TINY
    km = cfg.kvmu_map
    jobs = [j for j in random_kvmu_jobs(cfg, 60, seed=3, bad=0.0)]
    model = KVMUModel(cfg)
    tokens = [0] * km.contexts

    def record(ctx, t):
        return bytes([ctx, t & 0xFF, t >> 8]) * (km.record_bytes // 3) + bytes(km.record_bytes % 3)

    checked = 0
    cursor = {}
    for job in jobs:
        resp = model.run_job(job)
        assert resp.causes == 0, resp
        if job.arrivals:
            model.write_tokens(job.context, tokens[job.context],
                               [record(job.context, tokens[job.context] + i) for i in range(len(job.arrivals))])
            tokens[job.context] += len(job.arrivals)
        if job.restart:
            cursor = {"at": km.staging_base + job.buffer * km.staging_half}
        if job.mask is None:
            continue
        evicted = _evicted_tokens(jobs[:jobs.index(job) + 1], model.contexts, job.context)
        chosen = [k * cfg.dre.wtu.lanes + j for k, b in enumerate(job.mask) for j in range(cfg.dre.wtu.lanes)
                  if b >> j & 1]
        want = b"".join(record(job.context, t) for c in chosen
                        for t, (cl, _) in enumerate(evicted) if cl == c)
        at = cursor.setdefault("at", km.staging_base)
        assert model.device.read(at, len(want)) == want
        cursor["at"] = at + len(want)
        checked += len(want) > 0
    assert checked > 20


def test_unknown_clusters_capacity_and_faults_are_reported():
    cfg = TINY
    m = KVMUModel(cfg)
    r = m.run_job(Job(0, 1, arrivals=((0, True), (2, False), (cfg.kvmu_map.table_clusters, False)), mask=(0b1010,)))
    assert r.causes == 0b11 and r.errors == 4          # id 2 skips id 1; table overflow; mask bits 1 and 3 unknown
    assert r.address == cfg.kvmu_map.table_clusters     # capacity (bit 0) wins the address
    f = KVMUModel(cfg, faults={("host", "read"): [(0, 1 << 30)]})
    fill = Job(0, 0, arrivals=tuple((0, True) for _ in range(cfg.kvmu_map.ring_tokens + 8)))
    f.run_job(fill)
    r = f.run_job(Job(0, 1, mask=(1,)))
    assert r.causes == 1 << 2 and r.address == 0


def test_session_report_counts_both_stages_and_coalescing_bounds_the_bytes():
    trace = make_trace(TINY, "synthetic", options=TraceOptions(frames=40))
    rep = kvmu_report(TINY, trace)
    assert rep["measured"] and rep["config_hash"] == TINY.hash() and rep["capacity_bytes"] == 300000
    for stage in ("frame", "text"):
        s = rep[stage]
        assert s["evict"]["payload_bytes"] > 0 and s["prefetch"]["payload_bytes"] > 0
        assert s["bytes_moved"] == s["payload_bytes"] and s["stalls"] > 0 and s["errors"] == 0
        assert s["commands"] <= s["bursts"]
    gap = TINY.with_overrides({"dre.kvmu.coalesce_gap_bytes": 4 * TINY.kvmu_map.record_bytes})
    rg = kvmu_report(gap, trace)
    for stage in ("frame", "text"):
        assert rg[stage]["payload_bytes"] == rep[stage]["payload_bytes"]
        assert rep[stage]["bytes_moved"] < rg[stage]["bytes_moved"] <= 1.6 * rg[stage]["payload_bytes"]
        assert rg[stage]["commands"] < rep[stage]["commands"]


def test_session_jobs_follow_the_clustering():
    trace = make_trace(TINY, "synthetic", options=TraceOptions(frames=12))
    jobs = session_jobs(TINY, trace)
    per_step = TINY.model.layers * TINY.model.kv_heads
    assert len(jobs) == per_step * len({j.step for j in jobs})
    assert all(j.restart == (i % TINY.model.kv_heads == 0) for i, j in enumerate(jobs))
    first = [j for j in jobs if j.context == 0]
    assert sum(len(j.arrivals) for j in first) == trace.tokens
    assert all(c <= n for n, (c, _) in zip(range(trace.tokens), (a for j in first for a in j.arrivals)))
    assert mask_beats([0, 5], 6, 4) == (1, 2)


@pytest.mark.parametrize("text, message", [
    ("dre:\n  kvmu:\n    dma_burst_bytes: 3000\n",
     "dre.kvmu.dma_burst_bytes = 3000: must be a power of two from 64 to 4096 (AXI4 rules)."),
    ("dre:\n  kvmu:\n    dma_burst_bytes: 8192\n",
     "dre.kvmu.dma_burst_bytes = 8192: must be a power of two from 64 to 4096 (AXI4 rules)."),
    ("dre:\n  kvmu:\n    axi_data_bits: 96\n",
     "dre.kvmu.axi_data_bits = 96: must be a power of two from 32 to 1024 (AXI4 rules)."),
    ("model:\n  head_dim: 2\nlxe:\n  vpe_lanes: 2\ndre:\n  kvmu:\n    axi_data_bits: 128\n",
     "dre.kvmu.axi_data_bits = 128: must divide the KV record of 8 bytes (K and V of one token and context) into "
     "whole beats: the KVMU moves whole records; use at most 64 bits."),
    ("dre:\n  kvmu:\n    block_tokens: 24\n", "dre.kvmu.block_tokens = 24: must be a power of two."),
    ("dre:\n  kvmu:\n    device_capacity_bytes: 1000000\n",
     "dre.kvmu.device_capacity_bytes = 1000000: must hold the sinks, the recent window plus one step (1049 tokens per "
     "context) and the staging area of batch 4: at least 1892155392 bytes of device KV capacity."),
    ("perf:\n  batches: [1]\ndre:\n  kvmu:\n    device_capacity_bytes: 8000000000\n    axi_addr_bits: 32\n",
     "dre.kvmu.device_capacity_bytes = 8000000000: with the staging area and the KVMU tables the device tier needs"),
    ("dre:\n  kvmu:\n    device_capacity_bytes: 2000000000\n    context_tokens: 2000000\n    axi_addr_bits: 36\n",
     "dre.kvmu.axi_addr_bits = 36: must address the host-tier block pool of"),
])
def test_config_rules(tmp_path, text, message):
    assert config_error(tmp_path, text).startswith("bad.yaml, line ") and message in config_error(tmp_path, text)
