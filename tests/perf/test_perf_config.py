"""Config of the performance model: the built-in systems, and impossible combinations rejected in one sentence."""

import pytest

from conftest import config_error

from vrex.config import load_config
from vrex.perf.platforms import vrex_platform


def test_builtin_systems_are_the_papers_table_i():
    edge, server = load_config("edge"), load_config("server")
    g = edge.perf.gpu
    assert (g.name, g.tensor_tflops, g.dram_gbs, g.dram_capacity_gb, g.link_gbs, g.power_w) == \
        ("Jetson AGX Orin", 54.0, 204.8, 32.0, 4.0, 40.0)
    g = server.perf.gpu
    assert (g.name, g.tensor_tflops, g.dram_gbs, g.dram_capacity_gb, g.link_gbs, g.power_w) == \
        ("A100", 312.0, 1935.0, 80.0, 32.0, 300.0)
    # V-Rex peaks of Table I: (4096 DPE MACs + 64 VPE lanes) x 2 x 0.8 GHz x cores
    for cfg, tflops in ((edge, 53.3), (server, 319.5)):
        assert vrex_platform(cfg).peak_flops / 1e12 == pytest.approx(tflops, abs=0.06)
    # Table II ratios
    p = edge.perf
    assert (p.frame_ratio, p.text_ratio, p.infinigen.frame_ratio, p.infinigen.text_ratio, p.infinigenp.frame_ratio,
            p.rekv.frame_ratio, p.rekv.text_ratio) == (0.327, 0.025, 1.0, 0.068, 0.508, 0.584, 0.312)
    assert server.system.storage.kind == "host_dram" and server.perf.energy.dram_pj_per_bit == 3.9
    assert load_config("tiny").perf.kv_sizes == (256, 1024)


_err = config_error


def test_weights_larger_than_device_memory(tmp_path):
    assert _err(tmp_path, "system:\n  dram:\n    capacity_gb: 8\n") == (
        "bad.yaml, line 3: system.dram.capacity_gb = 8.0: must hold the model weights (15.9 GB: decoder layers, "
        "LM head, vision tower); use a larger memory or a smaller model.")
    assert _err(tmp_path, "perf:\n  gpu:\n    dram_capacity_gb: 12\n").startswith(
        "bad.yaml, line 3: perf.gpu.dram_capacity_gb = 12.0: must hold the model weights (15.9 GB")


def test_batch_that_does_not_fit_in_device_memory(tmp_path):
    msg = _err(tmp_path, "perf:\n  batches: [1, 64]\n")
    assert msg.startswith("bad.yaml: system.dram.capacity_gb = 32.0: is too small for batch 64 at KV size 40960: "
                          "weights 15.9 GB + resident window 8.6 GB + two layers of fetched KV 20.9 GB = 45.4 GB")
    assert msg.endswith("reduce perf.batches, perf.kv_sizes or resv.recent_window_tokens.")


def test_kv_cache_that_fits_nowhere(tmp_path):
    assert _err(tmp_path, "system:\n  storage:\n    capacity_gb: 10\n") == (
        "bad.yaml: perf.kv_sizes = [1024, 5120, 10240, 20480, 40960]: the KV cache of batch 4 at 40960 tokens "
        "(21.5 GB) does not fit in the offload tier (system.storage.capacity_gb = 10.0 GB); reduce the sizes or the "
        "batch.")


def test_rows_longer_than_the_wtu_are_tiled_not_rejected():
    cfg = load_config("edge").with_overrides({"perf.kv_sizes": [1024, 200000]})
    assert max(cfg.perf.kv_sizes) / cfg.perf.tokens_per_cluster > cfg.dre.wtu.row_capacity


def test_gpu_power_must_cover_idle_and_memory(tmp_path):
    assert _err(tmp_path, "perf:\n  gpu:\n    idle_w: 50\n") == (
        "bad.yaml, line 3: perf.gpu.idle_w = 50.0: must be below perf.gpu.power_w (40.0 W).")
    assert _err(tmp_path, "perf:\n  gpu:\n    power_w: 12\n").startswith(
        "bad.yaml, line 3: perf.gpu.power_w = 12.0: must exceed perf.gpu.idle_w (8.0 W) plus the memory power at "
        "peak bandwidth (6.6 W")


def test_bounds_and_choices(tmp_path):
    assert _err(tmp_path, "perf:\n  vrex:\n    dram_efficiency: 0\n") == (
        "bad.yaml, line 3: perf.vrex.dram_efficiency = 0.0: must be ≥ 0.001.")
    assert _err(tmp_path, "perf:\n  overlap: parallel\n") == (
        "bad.yaml, line 2: perf.overlap = 'parallel': must be one of 'prefetch', 'serial'.")
    assert _err(tmp_path, "perf:\n  rekv:\n    frame_ratio: 1.2\n") == (
        "bad.yaml, line 3: perf.rekv.frame_ratio = 1.2: must be ≤ 1.")
