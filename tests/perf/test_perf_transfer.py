"""Offload-tier transfers: unit granularity, command limits and layouts (vrex.perf.transfer)."""

import pytest

from vrex.perf.transfer import Link, read_transfer, write_transfer

NVME = Link(link_bw=4e9, link_eff=1.0, read_bw=6e9, write_bw=5e9, read_iops=850e3, write_iops=900e3,
            unit_bytes=4096, max_command_bytes=131072)
HOST = Link(link_bw=32e9, link_eff=1.0, read_bw=51.2e9, write_bw=51.2e9, read_iops=1e8, write_iops=1e8,
            unit_bytes=64, max_command_bytes=512)
SLICE = 256
OFF = 40000


def _read(link, layout, r, run=32, regions=16):
    return read_transfer(link, layout, offloaded=OFF, selected=r * OFF, regions=regions, slice_bytes=SLICE,
                         run_tokens=run)


def test_full_fetch_moves_everything_at_link_speed():
    t = _read(NVME, "full", 1.0)
    assert t.moved == pytest.approx(16 * OFF * SLICE, rel=1e-3)
    assert t.seconds == pytest.approx(t.moved / 4e9)
    assert t.commands == 16 * -(-OFF * SLICE // 131072)


def test_scattered_slices_touch_whole_blocks():
    # 16 slices per 4 KiB block; each selected with probability r
    for r in (0.01, 0.1, 0.327):
        t = _read(NVME, "token_scattered", r)
        blocks = 16 * OFF / 16
        touched = blocks * (1 - (1 - r) ** 16)
        if t.moved < 16 * OFF * SLICE:       # not replaced by the full read
            assert t.moved == pytest.approx(touched * 4096)
            assert t.commands == pytest.approx(touched)
        assert t.payload == pytest.approx(r * 16 * OFF * SLICE)
        assert t.seconds <= _read(NVME, "full", 1.0).seconds * (1 + 1e-12)
    # a third of the tokens already touches almost every block: no saving over a full read
    assert _read(NVME, "token_scattered", 0.327).seconds == pytest.approx(_read(NVME, "full", 1.0).seconds, rel=0.01)


def test_fine_grained_tier_moves_only_the_selection():
    t = _read(HOST, "token_scattered", 0.1)
    assert t.moved == pytest.approx(t.payload)
    assert t.commands == pytest.approx(0.1 * OFF * 16)


def test_cluster_runs_beat_scattered_tokens_and_pay_for_partial_blocks():
    r = 0.327
    cl, sc = _read(NVME, "cluster_contiguous", r), _read(NVME, "token_scattered", r)
    assert cl.payload == pytest.approx(sc.payload)
    # aligned run of 32 x 256 B = 2 blocks, plus on average half a block of tail
    runs = 16 * r * OFF / 32
    assert cl.moved == pytest.approx(runs * (2 + 0.5 * (1 - 256 / 4096)) * 4096)
    assert cl.seconds < 0.5 * sc.seconds
    # longer runs waste relatively less
    assert _read(NVME, "cluster_contiguous", r, run=128).moved < cl.moved


def test_command_rate_bounds_small_transfers():
    slow = Link(4e9, 1.0, 6e9, 5e9, 1e4, 1e4, 4096, 4096)
    t = _read(slow, "cluster_contiguous", 0.1)
    assert t.seconds == pytest.approx(t.commands / 1e4)
    assert t.seconds > t.moved / 4e9


def test_transfers_are_monotone_in_the_selection():
    for link in (NVME, HOST):
        for layout in ("token_scattered", "block_contiguous", "cluster_contiguous"):
            times = [_read(link, layout, r, run=80 if layout == "block_contiguous" else 32).seconds
                     for r in (0.0, 0.01, 0.05, 0.2, 0.5, 0.9, 1.0)]
            assert times == sorted(times), (link.unit_bytes, layout)
            assert times[0] == 0.0


def test_writes_by_layout():
    seq = write_transfer(NVME, "token_scattered", tokens=10, regions=16, slice_bytes=SLICE)
    per_cluster = write_transfer(NVME, "cluster_contiguous", tokens=10, regions=16, slice_bytes=SLICE)
    assert seq.payload == per_cluster.payload == 10 * 16 * SLICE
    assert seq.commands == 16 and per_cluster.commands == 160
    assert per_cluster.moved == 160 * 4096 and per_cluster.seconds > seq.seconds
    assert write_transfer(NVME, "full", tokens=0, regions=16, slice_bytes=SLICE).seconds == 0
