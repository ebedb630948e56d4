"""Physics of the performance model (vrex.perf), not its calibration.

Every test states a law the model must obey whatever its efficiency factors: latency never beats the weight,
compute or link floors; more KV or a higher retrieval ratio never makes a step faster; batching raises throughput
without making a step faster; energy is the sum of independently scaled parts; every layer's KV is fetched once.
"""

import math

import pytest

from vrex.config import load_config
from vrex.perf import evaluate, simulate_step
from vrex.perf.dre_timing import dre_timing
from vrex.perf.energy import GPU_PARTS, VREX_PARTS
from vrex.perf.memory import vrex_tier
from vrex.perf.model import gpu_system, vrex_system
from vrex.perf.policies import BASELINES, policies
from vrex.perf.timeline import Timeline
from vrex.perf.workload import KVGeometry, decode_step, frame_step, question_step

STEPS = {"frame": frame_step, "question": question_step, "decode": decode_step}


def small_capacity(cfg) -> int:
    """5% more than the least valid explicit capacity: the largest batch's sinks, windows and staging area."""
    return int(1.05 * cfg.min_device_capacity_bytes())


def offloading(base: str, **over):
    """``base`` (and ``over``) with a device tier that holds little more than the windows and staging area, so large
    caches cross the link."""
    cfg = load_config(base).with_overrides(over)
    return cfg.with_overrides({"dre.kvmu.device_capacity_bytes": small_capacity(cfg)})


@pytest.fixture(scope="module", params=["edge", "server", "edge-small-tier"])
def ev(request):
    if request.param == "edge-small-tier":
        return evaluate(offloading("edge"))
    return evaluate(load_config(request.param))


def _results(ev):
    for pt in ev.points:
        for kind in STEPS:
            yield from getattr(pt, kind).items()
    for key, _, r in ev.ablation:
        yield key, r


def _systems(cfg):
    pols = policies(cfg)
    out = {"vrex": vrex_system(cfg, pols),
           "vrex_token_order": vrex_system(cfg, pols, layout="token_scattered", key="vrex_token_order")}
    for name in BASELINES + ("resv",):
        s = gpu_system(cfg, pols, name)
        out[s.key] = s
    return out


def _sweep(cfg, kinds=STEPS):
    """latency and energy per (system, batch, kind) along cfg.perf.kv_sizes."""
    dre = dre_timing(cfg)
    out = {}
    for key, s in _systems(cfg).items():
        for b in cfg.perf.batches:
            for kind in kinds:
                out[key, b, kind] = [simulate_step(cfg, s, STEPS[kind](cfg, kv, b), dre) for kv in cfg.perf.kv_sizes]
    return out


def _non_decreasing(values):
    return all(b >= a * (1 - 1e-12) for a, b in zip(values, values[1:]))


# ---- floors -------------------------------------------------------------------------------------------------------


def test_latency_never_beats_the_weight_compute_or_link_floor(ev):
    n = 0
    for key, r in _results(ev):
        assert r.weight_floor > 0 and r.compute_floor > 0
        assert r.latency >= r.weight_floor, (key, r.step)
        assert r.latency >= r.compute_floor, (key, r.step)
        assert r.latency >= r.link_floor, (key, r.step)
        assert r.latency >= r.dram_floor * (1 - 1e-12), (key, r.step)
        assert r.dram_floor >= r.weight_floor
        n += 1
    assert n > 100


def test_weight_floor_streams_exactly_the_model_weights(ev):
    m = ev.cfg.model
    decoder_and_head = m.layers * m.layer_params + m.lm_head_params
    assert decoder_and_head == 7_504_658_432       # Llama-3-8B: 8.03 B minus embedding and norm weights
    for pt in ev.points:
        for key in ("vrex", "gpu:flexgen", "gpu:rekv"):
            assert pt.frame[key].counters.work.weight_bytes == pytest.approx(m.weight_bytes_total)
            assert pt.decode[key].counters.work.weight_bytes == pytest.approx(decoder_and_head * m.weight_bytes)
            floor = pt.frame[key].weight_floor
            assert floor == pytest.approx(m.weight_bytes_total / (ev.systems[key].platform.dram_bw))


def test_critical_path_accounts_for_the_whole_latency(ev):
    for key, r in _results(ev):
        assert sum(r.exposed.values()) == pytest.approx(r.latency, rel=1e-9)
        assert all(v >= 0 for v in r.exposed.values())
        assert max(r.busy.values()) <= r.latency * (1 + 1e-9)


def test_timeline_respects_dependencies_and_resources():
    tl = Timeline()
    a = tl.add("a", "x", "compute", 3.0)
    b = tl.add("b", "y", "offload", 5.0, [a])
    c = tl.add("c", "x", "compute", 1.0, [a])       # runs while b transfers
    d = tl.add("d", "x", "compute", 2.0, [c, b])
    assert (b.start, c.start, d.start, tl.makespan) == (3.0, 3.0, 8.0, 10.0)
    assert [t.name for t in tl.critical_path()] == ["a", "b", "d"]
    assert tl.exposed() == {"x": 5.0, "y": 5.0}
    with pytest.raises(ValueError):
        tl.add("e", "x", "compute", -1.0)


# ---- monotonicity -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["edge", "server"])
def test_latency_and_energy_are_monotone_in_kv_size(base):
    sizes = [256, 1024, 1500, 3000, 6000, 12000, 24000, 48000, 96000]
    cfg = offloading(base, **{"perf.kv_sizes": sizes})
    sweep = _sweep(cfg)
    for (key, b, kind), rs in sweep.items():
        assert _non_decreasing([r.latency for r in rs]), (key, b, kind)
        assert _non_decreasing([r.energy_total for r in rs]), (key, b, kind)
    # and more KV really costs more once it overflows the device tier
    for key in ("vrex", "gpu:flexgen"):
        rs = sweep[key, 1, "frame"]
        assert rs[-1].counters.read.payload > 0 and rs[-1].latency > 2 * rs[1].latency


@pytest.mark.parametrize("base,overlap", [("edge", "prefetch"), ("edge", "serial"), ("server", "prefetch")])
def test_latency_and_energy_are_monotone_in_retrieval_ratio(base, overlap):
    ratios = [0.0, 0.02, 0.1, 0.25, 0.327, 0.5, 0.75, 1.0]
    out = {}
    for r in ratios:
        cfg = offloading(base, **{
            "perf.kv_sizes": [40960], "perf.batches": [2], "perf.overlap": overlap,
            "perf.frame_ratio": r, "perf.text_ratio": r, "perf.infinigenp.frame_ratio": r,
            "perf.infinigenp.text_ratio": r,
            "perf.infinigen.text_ratio": r, "perf.rekv.frame_ratio": r, "perf.rekv.text_ratio": r})
        for k, rs in _sweep(cfg, kinds=("frame", "decode")).items():
            out.setdefault(k, []).append(rs[0])
    for (key, b, kind), rs in out.items():
        assert _non_decreasing([r.latency for r in rs]), (key, kind)
        assert _non_decreasing([r.energy_total for r in rs]), (key, kind)
        assert _non_decreasing([r.counters.read.moved for r in rs]), (key, kind)
    # the ratio matters for the selective policies
    assert out["vrex", 2, "frame"][-1].latency > 2 * out["vrex", 2, "frame"][1].latency


def test_batching_raises_throughput_without_beating_single_stream_latency():
    """Batching never makes a step faster, and never lowers throughput while every stream keeps the same share of
    device memory (the window-only GPU baselines; V-Rex while the batch's KV fits its tier)."""
    cfg = load_config("edge").with_overrides({"perf.batches": [1, 2, 4, 8, 16], "perf.kv_sizes": [1024, 10240, 40960]})
    sweep = _sweep(cfg)
    for (key, b, kind), rs in sweep.items():
        for r, r1 in zip(rs, sweep[key, 1, kind]):
            assert r.latency >= r1.latency * (1 - 1e-12), (key, b, kind)
            if r.geometry.host == r1.geometry.host:
                assert r.throughput >= r1.throughput * (1 - 1e-9), (key, b, kind)
            assert r.latency >= max(r.weight_floor, r.compute_floor, r.link_floor)
    # where weight streaming dominates, batching is nearly free
    assert sweep["vrex", 16, "decode"][0].throughput > 10 * sweep["vrex", 1, "decode"][0].throughput


# ---- overlap and layout -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["edge", "server"])
def test_prefetch_never_loses_to_serial(base):
    cfg = offloading(base, **{"perf.kv_sizes": [1024, 10240, 40960], "perf.batches": [1, 4]})
    pre = _sweep(cfg)
    ser = _sweep(cfg.with_overrides({"perf.overlap": "serial"}))
    gain = 0
    for k in pre:
        for a, b in zip(pre[k], ser[k]):
            assert a.latency <= b.latency * (1 + 1e-12), k
            gain = max(gain, b.latency / a.latency)
    assert gain > 1.5       # overlapping the transfer with compute must matter somewhere


@pytest.mark.parametrize("base", ["edge", "server"])
def test_cluster_contiguous_layout_never_moves_more_than_token_order(base):
    cfg = offloading(base)
    sweep = _sweep(cfg.with_overrides({"perf.batches": [1]}), kinds=("frame",))
    for cl, tok in zip(sweep["vrex", 1, "frame"], sweep["vrex_token_order", 1, "frame"]):
        assert cl.counters.read.payload == pytest.approx(tok.counters.read.payload)
        assert cl.exposed.get("retrieval", 0) <= tok.exposed.get("retrieval", 0) * (1 + 1e-12) + \
            tok.exposed.get("eviction", 0)
        assert cl.counters.read.moved >= cl.counters.read.payload
    if base == "edge":      # 4 KiB NVMe blocks vs 256 B head slices: the KVMU layout is what makes ReSV pay off
        assert sweep["vrex_token_order", 1, "frame"][-1].latency > 2 * sweep["vrex", 1, "frame"][-1].latency


def test_every_layer_fetches_its_selection_exactly_once(ev):
    """The link carries the host-tier share of every layer's selection, once: ratio x host tokens x KV bytes."""
    cfg = ev.cfg
    for pt in ev.points:
        for kind in STEPS:
            for key, r in getattr(pt, kind).items():
                system = ev.systems[key]
                geom = KVGeometry.of(cfg, pt.kv, system.tier, pt.batch)
                assert r.geometry == geom
                expect = system.policy.ratio(r.step.stage) * geom.host * cfg.model.kv_bytes_per_token * pt.batch
                assert r.counters.read.payload == pytest.approx(expect), (key, kind, pt.kv)
                assert r.counters.read.moved >= r.counters.read.payload * (1 - 1e-12)


def test_dre_work_runs_on_the_dre_and_gpu_work_on_the_gpu():
    cfg = offloading("edge")
    pols, dre = policies(cfg), dre_timing(cfg)
    v = simulate_step(cfg, vrex_system(cfg, pols), frame_step(cfg, 40960, 1), dre)
    g = simulate_step(cfg, gpu_system(cfg, pols, "resv"), frame_step(cfg, 40960, 1), dre)
    assert v.busy["hcu"] > 0 and v.busy["wtu"] > 0 and v.counters.work.irregular_ops == 0
    assert "hcu" not in g.busy and g.counters.work.irregular_ops > 0
    assert v.counters.hcu_compares > 0 and g.counters.hcu_compares == 0
    # the same selection of candidates; each fetches its own host tier's share of it
    assert v.geometry.candidates == g.geometry.candidates and v.geometry.host < g.geometry.host
    kv_bytes = cfg.model.kv_bytes_per_token
    for r in (v, g):
        assert r.counters.read.payload == pytest.approx(cfg.perf.frame_ratio * r.geometry.host * kv_bytes)


# ---- energy -------------------------------------------------------------------------------------------------------


def test_energy_is_the_sum_of_nonnegative_parts(ev):
    for key, r in _results(ev):
        parts = set(VREX_PARTS) if key.startswith("vrex") else set(GPU_PARTS)
        assert set(r.energy) == parts, key
        assert all(v >= 0 for v in r.energy.values())


def test_energy_parts_recomputed_from_the_counters():
    cfg = offloading("edge")
    pols, dre = policies(cfg), dre_timing(cfg)
    e, link = cfg.perf.energy, cfg.system.link
    v = simulate_step(cfg, vrex_system(cfg, pols), frame_step(cfg, 40960, 2), dre)
    c = v.counters
    dram_bytes = c.work.dram_bytes + c.read.payload + c.write.payload
    assert v.energy["dram"] == pytest.approx(dram_bytes * 8 * e.dram_pj_per_bit * 1e-12)
    moved = c.read.moved + c.write.moved
    assert v.energy["link"] == pytest.approx(moved * link.lanes * link.watts_per_lane / (link.bandwidth_gbs * 1e9))
    assert v.energy["static"] == pytest.approx(e.static_w * v.latency)
    assert v.energy["dpe"] == pytest.approx(c.work.matmul_flops / 2 * e.dpe_pj_per_mac * 1e-12)
    g = simulate_step(cfg, gpu_system(cfg, pols, "flexgen"), frame_step(cfg, 40960, 2), dre)
    gp = cfg.perf.gpu
    assert g.energy["static"] == pytest.approx(gp.idle_w * g.latency)
    assert g.energy["compute"] == pytest.approx(
        (gp.power_w - gp.idle_w - gp.dram_gbs * 8 * gp.dram_pj_per_bit * 1e-3) * g.counters.compute_active)


@pytest.mark.parametrize("overrides,part", [
    ({"perf.energy.dpe_pj_per_mac": 1.41}, "dpe"),
    ({"perf.energy.vpe_pj_per_op": 4.76}, "vpe"),
    ({"perf.energy.sram_pj_per_byte": 2.32}, "sram"),
    ({"perf.energy.hcu_pj_per_compare": 0.466}, "hcu"),
    ({"perf.energy.wtu_pj_per_score": 6.1}, "wtu"),
    ({"perf.energy.kvmu_pj_per_byte": 2.34}, "kvmu"),
    ({"perf.energy.dram_pj_per_bit": 8.0}, "dram"),
    ({"system.link.watts_per_lane": 6.0}, "link"),
    ({"perf.energy.offload_read_pj_per_byte": 1500.0, "perf.energy.offload_write_pj_per_byte": 1780.0}, "offload"),
    ({"perf.energy.static_w": 4.0}, "static"),
])
def test_each_energy_part_scales_with_its_own_unit_energy_only(overrides, part):
    cfg = offloading("edge")
    pols, dre = policies(cfg), dre_timing(cfg)
    step = frame_step(cfg, 40960, 1)
    base = simulate_step(cfg, vrex_system(cfg, pols), step, dre)
    cfg2 = cfg.with_overrides(overrides)
    r = simulate_step(cfg2, vrex_system(cfg2, policies(cfg2)), step, dre_timing(cfg2))
    assert r.latency == base.latency
    assert base.energy[part] > 0
    for p in VREX_PARTS:
        expect = 2 * base.energy[p] if p == part else base.energy[p]
        assert r.energy[p] == pytest.approx(expect, rel=1e-9), p
    assert r.energy_total == pytest.approx(base.energy_total + base.energy[part])


# ---- DRE timing ---------------------------------------------------------------------------------------------------


def test_dre_cycle_formulas():
    cfg = load_config("edge")
    d = dre_timing(cfg)
    assert "formula" in d.cycles_source and "Table III" in d.power_source
    # per token: 2 + ceil(32 open / 16 lanes) x 32 bits / 32 bits per cycle
    assert d.hcu_cycles(cfg, 10, 32) == 10 * (2 + 2)
    narrow = cfg.with_overrides({"dre.hcu.bits_per_cycle": 8})
    assert d.hcu_cycles(narrow, 10, 32) == 10 * (2 + 2 * 4)
    # per row: 4 + ceil(1280 / 16) passes x 4
    assert d.wtu_cycles(cfg, 1, 1280) == 4 + 80 * 4
    assert d.wtu_score_visits(cfg, 1, 1280) == 80 * 16 * 4
    assert d.hcu_pj_per_compare == cfg.perf.energy.hcu_pj_per_compare


def test_geometry_splits_window_device_and_host():
    cfg = load_config("edge")
    g = KVGeometry.of(cfg, 40960)           # window only: every candidate is in the host tier
    assert (g.window, g.candidates, g.device_old, g.host, g.slice_bytes, g.token_layer_bytes) == \
        (1024, 39936, 0, 39936, 256, 4096)
    assert KVGeometry.of(cfg, 500).candidates == 0 and KVGeometry.of(cfg, 500).host == 0
    assert math.isclose(g.token_layer_bytes * cfg.model.layers, cfg.model.kv_bytes_per_token)
    tier = vrex_tier(cfg)                   # auto: 32 GB - weights - activations, staging carved out of it
    cap = cfg.device_kv_capacity_bytes(4)
    assert cap == pytest.approx(32e9 - cfg.model.weight_bytes_total - cfg.activation_bytes(4)
                                 - 4 * cfg.kvmu_map.table_bytes)
    g4 = KVGeometry.of(cfg, 40960, tier, 4)
    per_stream = int((cap - cfg.kv_staging_bytes(4, 40960)) // (4 * cfg.model.kv_bytes_per_token))
    assert (g4.window + g4.device_old, g4.host) == (per_stream, 40960 - per_stream)
    assert KVGeometry.of(cfg, 40960, tier, 1).host == 0      # one stream's 5.4 GB fits


def test_laws_hold_for_random_systems():
    import random

    rng = random.Random(7)
    for i in range(12):
        base = rng.choice(["edge", "server"])
        cfg = load_config(base).with_overrides({
            "perf.kv_sizes": [rng.choice([2048, 9000, 30000])], "perf.batches": [rng.choice([1, 3, 8])],
            "system.cores": rng.choice([1, 4, 8, 48]), "system.clock_mhz": rng.uniform(200, 1500),
            "system.dram.bandwidth_gbs": rng.uniform(50, 3000), "system.link.bandwidth_gbs": rng.uniform(1, 64),
            "system.storage.page_bytes": rng.choice([64, 512, 4096, 16384]),
            "system.storage.read_iops": rng.uniform(1e4, 1e8), "resv.recent_window_tokens": rng.choice([64, 1024, 4096]),
            "perf.tokens_per_cluster": rng.uniform(8, 64), "perf.cluster_run_tokens": rng.uniform(1, 128),
            "perf.overlap": rng.choice(["prefetch", "serial"]), "perf.reuse_fraction": rng.uniform(0, 0.9),
            "perf.vrex.dram_efficiency": rng.uniform(0.3, 1), "perf.gpu.irregular_efficiency": rng.uniform(0.001, 0.5),
            "resv.dense_layers": rng.choice([0, 2]), "resv.cluster_scope": rng.choice(["kv_head", "layer"]),
            "resv.hyperplane_sharing": "per_layer"})
        if rng.random() < 0.5:
            cfg = cfg.with_overrides({"dre.kvmu.device_capacity_bytes": small_capacity(cfg)})
        sweep = _sweep(cfg)
        for (key, b, kind), (r,) in sweep.items():
            geom = r.geometry
            assert r.latency >= max(r.weight_floor, r.compute_floor, r.link_floor) * (1 - 1e-12), (i, key, kind)
            assert sum(r.exposed.values()) == pytest.approx(r.latency, rel=1e-9)
            assert all(v >= 0 for v in r.energy.values())
            assert r.counters.read.moved >= r.counters.read.payload * (1 - 1e-12)
            if key in ("vrex", "gpu:flexgen"):
                pol = _systems(cfg)[key].policy
                dense = cfg.resv.dense_layers if key == "vrex" else 0
                ratio = pol.ratio(r.step.stage)
                layers = cfg.model.layers
                fetched = (dense + (layers - dense) * ratio) * geom.host * (1 - cfg.perf.reuse_fraction)
                expect = fetched * cfg.model.kv_bytes_per_token / layers * b
                assert r.counters.read.payload == pytest.approx(expect), (i, key, kind)
