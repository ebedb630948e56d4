"""The KVMU's burst legaliser alone in amaranth.sim against the golden burst rule, under random back-pressure:
transfers at every alignment of source and destination, of one beat to many bursts, on every burst geometry of the
KVMU case table (1- to 256-beat bursts)."""

import random

import pytest

from vrex.golden.dre.kvmu import Range, legalise
from vrex.hdl.dre.kvmu.layouts import KVMUGeometry, burst_layout, command_layout
from vrex.hdl.dre.kvmu.legaliser import Legaliser
from vrex.sim.amaranth_run import run_amaranth
from vrex.sim.bench import StreamBench, leaf_fields, pack
from vrex.sim.cases import KVMU_CASES

GEOMETRIES = {c.id: c for c in KVMU_CASES}
ONE_BEAT = GEOMETRIES["kvmu-512b-wide-token-sinks"].config().with_overrides({"dre.kvmu.dma_burst_bytes": 64})


def transfers(g, n, rng):
    """Transfers at random beat alignments (and at the last beat before a boundary), 1 beat to 5 bursts long."""
    beat, bb = g.beat_bytes, g.burst_bytes
    top = 1 << (g.addr_bits - 1)
    out = []
    for _ in range(n):
        src, dst = rng.randrange(0, top, beat), rng.randrange(0, top, beat)
        if rng.random() < 0.3:
            src = (src // bb + 1) * bb - beat
        if rng.random() < 0.3:
            dst = dst // bb * bb + (src % bb if rng.random() < 0.5 else 0)
        length = beat * rng.choice([1, 2, rng.randrange(1, 5 * bb // beat + 2)])
        out.append(Range(src, dst, length, rng.randrange(2)))
    return out


def bench_for(g, ranges, *, seed, p_valid, p_ready, reference=legalise):
    cmd, burst = command_layout(g), burst_layout(g)
    sh = g.beat_shift
    inputs = [pack(cmd, {"src": r.src, "dst": r.dst, "length": r.length, "prefetch": r.mode}) for r in ranges]
    expected = [pack(burst, {"src": b.src >> sh, "dst": b.dst >> sh, "beats": b.beats, "prefetch": r.mode})
                for r in ranges for b in reference(r, g.burst_bytes, g.beat_bytes)]
    return StreamBench("legaliser", {"i": inputs}, {"o": expected}, {"o": leaf_fields(burst)}, p_valid=p_valid,
                       p_ready=p_ready, seed=seed)


@pytest.mark.parametrize("cfg", [c.config() for c in KVMU_CASES] + [ONE_BEAT],
                         ids=[c.id for c in KVMU_CASES] + ["kvmu-one-beat-bursts"])
@pytest.mark.parametrize("traffic", [(1.0, 1.0), (0.6, 0.5)], ids=["no-stall", "random"])
def test_legaliser_cuts_like_the_golden_rule(cfg, traffic):
    g = KVMUGeometry.from_config(cfg)
    bench = bench_for(g, transfers(g, 60, random.Random(g.burst_bytes)), seed=3, p_valid=traffic[0],
                      p_ready=traffic[1])
    result = run_amaranth(Legaliser(g), bench)
    assert not result.report(bench), result.report(bench)
    if traffic == (1.0, 1.0):       # a burst every cycle while the transfer lasts, one cycle to take the next
        cycles = result.handshake_cycles["o"]
        assert sum(b - a == 1 for a, b in zip(cycles, cycles[1:])) >= len(cycles) - 2 * 60


def test_a_wrong_legaliser_reference_is_caught():
    def past_the_boundary(r, burst_bytes, beat_bytes):
        return legalise(r, burst_bytes + beat_bytes, beat_bytes)

    g = KVMUGeometry.from_config(KVMU_CASES[0].config())
    bench = bench_for(g, transfers(g, 30, random.Random(1)), seed=1, p_valid=1.0, p_ready=1.0,
                      reference=past_the_boundary)
    assert "mismatch" in run_amaranth(Legaliser(g), bench).report(bench)
