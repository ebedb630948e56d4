"""The device-memory tier of the performance model: capacity boundary, sharing by the batch, monotonicity, and the
conservation of selected bytes and of energy over the step's parts."""

import dataclasses

import pytest

import mutants
from vrex.config import load_config
from vrex.perf.dre_timing import dre_timing
from vrex.perf.energy import VREX_PARTS
from vrex.perf.memory import DeviceTier, vrex_tier
from vrex.perf.model import simulate_step, vrex_system
from vrex.perf.policies import policies
from vrex.perf.sweep import evaluate, session_totals
from vrex.perf.workload import decode_step, frame_step

KV = 20480


def _edge(**over):
    return load_config("edge").with_overrides({"perf.kv_sizes": [KV], "perf.batches": [1, 4], **over})


def _frame(cfg, batch=1, kv=KV, tier=None, step=frame_step):
    system = vrex_system(cfg, policies(cfg))
    if tier is not None:
        system = dataclasses.replace(system, tier=tier)
    return simulate_step(cfg, system, step(cfg, kv, batch), dre_timing(cfg))


def _fit_bytes(cfg, batch, kv):
    """The least capacity that holds ``batch`` streams of ``kv`` tokens: their KV plus the staging area."""
    return int(batch * kv * cfg.model.kv_bytes_per_token + cfg.kv_staging_bytes(batch, kv))


def _boundary_law(cfg, tier_of):
    """At the capacity that holds the KV nothing crosses the link; one token's bytes less and something does."""
    fits = _fit_bytes(cfg, 1, KV)
    cap = dataclasses.replace(tier_of(), explicit_bytes=float(fits))
    less = dataclasses.replace(tier_of(), explicit_bytes=float(fits - cfg.model.kv_bytes_per_token))
    at, below = _frame(cfg, tier=cap), _frame(cfg, tier=less)
    return (at.geometry.host == 0 and at.counters.read.payload == 0 and at.counters.write.payload == 0
            and below.geometry.host > 0 and below.counters.read.payload > 0)


def test_a_kv_that_fits_sends_nothing_over_the_link():
    cfg = _edge()
    assert _boundary_law(cfg, lambda: vrex_tier(cfg))
    fits = _fit_bytes(cfg, 1, KV)
    r = _frame(cfg.with_overrides({"dre.kvmu.device_capacity_bytes": fits}))
    assert r.energy["link"] == 0 and r.energy["offload"] == 0 and r.exposed.get("retrieval", 0) == 0
    assert r.latency == pytest.approx(_frame(cfg).latency)             # the auto tier holds it too: same step
    for step in (frame_step, decode_step):
        s = _frame(cfg.with_overrides({"dre.kvmu.device_capacity_bytes": fits}), step=step)
        assert s.counters.read.moved == 0 and s.counters.write.moved == 0
    # the mutant that forgets the staging area keeps the token that should have left
    assert not _boundary_law(cfg, mutants.tier_without_staging)


def test_the_batch_shares_the_capacity():
    cfg = _edge()
    cap = float(_fit_bytes(cfg, 1, KV) * 2)       # one stream fits with room; four do not

    def law(tier):
        hosts = [_frame(cfg, batch=b, tier=tier).geometry.host for b in (1, 2, 4)]
        return hosts[0] == 0 and hosts[2] > hosts[1] >= 0 and hosts[2] > 0

    assert law(DeviceTier("capacity", cap))
    assert not law(dataclasses.replace(mutants.tier_per_stream(), explicit_bytes=cap))


def test_latency_and_link_traffic_never_rise_with_capacity():
    cfg = _edge()
    least = _fit_bytes(cfg, 1, 0) + cfg.resv.recent_window_tokens * cfg.model.kv_bytes_per_token
    caps = [least, 1e9, 1.5e9, 2e9, 2.5e9, 3e9, _fit_bytes(cfg, 1, KV)]
    rs = [_frame(cfg, tier=DeviceTier("capacity", float(c))) for c in caps]
    lat = [r.latency for r in rs]
    moved = [r.counters.read.moved + r.counters.write.moved for r in rs]
    assert lat == sorted(lat, reverse=True) and moved == sorted(moved, reverse=True)
    assert lat[0] > 1.5 * lat[-1] and moved[-1] == 0


@pytest.mark.parametrize("key,values", [
    ("system.dram.bandwidth_gbs", [102.4, 204.8, 409.6, 819.2]),
    ("system.link.bandwidth_gbs", [1.0, 4.0, 16.0, 64.0]),
    ("system.storage.read_gbs", [1.0, 6.0, 24.0]),
])
def test_latency_never_rises_with_bandwidth(key, values):
    cfg = _edge(**{"dre.kvmu.device_capacity_bytes": 2_000_000_000})      # 20K overflows: the link matters
    lat = [_frame(cfg.with_overrides({key: v})).latency for v in values]
    assert lat == sorted(lat, reverse=True) and lat[0] > lat[-1]


def test_selected_bytes_are_conserved_between_the_tiers():
    """A selection of ratio × candidates is read from device DRAM where it is resident and over the link where it
    is not; the two shares add up to the whole selection."""
    cfg = _edge(**{"dre.kvmu.device_capacity_bytes": 2_000_000_000})
    r = _frame(cfg, batch=4)
    g = r.geometry
    ratio, kvb = cfg.perf.frame_ratio, cfg.model.kv_bytes_per_token
    assert g.device_old > 0 and g.host > 0 and g.device_old + g.host == g.candidates
    host_sel = ratio * g.host * 4 * kvb
    device_sel = ratio * g.device_old * 4 * kvb
    assert r.counters.read.payload == pytest.approx(host_sel)
    assert host_sel + device_sel == pytest.approx(ratio * g.candidates * 4 * kvb)


def test_energy_is_conserved_over_parts_steps_and_sessions():
    cfg = _edge(**{"dre.kvmu.device_capacity_bytes": 2_000_000_000})
    ev = evaluate(cfg)
    for pt in ev.points:
        for key in ev.systems:
            for r in (pt.frame[key], pt.question[key], pt.decode[key]):
                assert r.energy_total == pytest.approx(sum(r.energy.values()))
                assert all(v >= 0 for v in r.energy.values())
            lat, en = session_totals(cfg, pt, key)
            frames, answers = cfg.perf.frames_per_session, cfg.model.answer_tokens
            assert en == pytest.approx(frames * pt.frame[key].energy_total + pt.question[key].energy_total
                                       + answers * pt.decode[key].energy_total)
    v = ev.points[-1].frame["vrex"]
    assert set(v.energy) == set(VREX_PARTS) and v.energy["link"] > 0
    # static power times latency is the only part that depends on time
    assert v.energy["static"] == pytest.approx(cfg.perf.energy.static_w * v.latency)


def test_explicit_capacity_rules(tmp_path):
    from conftest import config_error

    assert config_error(tmp_path, "dre:\n  kvmu:\n    device_capacity_bytes: 40000000000\n") == (
        "bad.yaml, line 3: dre.kvmu.device_capacity_bytes = 40000000000: is larger than the device DRAM "
        "(system.dram.capacity_gb = 32.0 GB = 32000000000 B); give at most what it holds beside the weights, or 0 "
        "for auto.")
    assert config_error(tmp_path, "dre:\n  kvmu:\n    device_capacity_bytes: 1000000000\n") == (
        "bad.yaml, line 3: dre.kvmu.device_capacity_bytes = 1000000000: must hold the sinks, the recent window plus one "
        "step (1049 tokens per context) and the staging area of batch 4: at least 1892155392 bytes of device KV "
        "capacity.")
    msg = config_error(tmp_path, "dre:\n  kvmu:\n    device_capacity_bytes: 20000000000\n")
    assert msg.startswith("bad.yaml, line 3: dre.kvmu.device_capacity_bytes = 20000000000: does not fit beside the weights "
                          "(15.9 GB) and activations (0.10 GB) in the 32.0 GB device DRAM")
    load_config("edge").with_overrides({"dre.kvmu.device_capacity_bytes": 2_000_000_000})    # valid
