"""Stimulus and golden expectations for the Hamming lane array (hdl/dre/hamming_lanes.py)."""

from __future__ import annotations

import random

from vrex.golden.dre.hamming_lanes import hamming_lanes
from vrex.hdl.dre.hamming_lanes import hamming_lanes_input_layout, hamming_lanes_output_layout

from vrex.sim.bench import StreamBench, leaf_fields, pack

__all__ = ["random_transactions", "make_bench"]


def random_transactions(code_bits: int, lanes: int, n: int, rng: random.Random) -> list[dict]:
    """Queries with references that are copies, near misses around every threshold, and random codes.

    Thresholds cover 0 (nothing joins), code_bits + 1 (everything joins) and values in between; validity
    masks include all-valid and none-valid.
    """
    full = (1 << code_bits) - 1
    txns = []
    for t in range(n):
        q = rng.getrandbits(code_bits)
        refs = []
        for _ in range(lanes):
            kind = rng.random()
            if kind < 0.15:
                refs.append(q)
            elif kind < 0.6:
                flips = rng.sample(range(code_bits), rng.randint(1, min(code_bits, 9)))
                refs.append(q ^ sum(1 << b for b in flips))
            elif kind < 0.7:
                refs.append(q ^ full)
            else:
                refs.append(rng.getrandbits(code_bits))
        threshold = [0, code_bits + 1, rng.randint(0, code_bits + 1)][t % 3] if t < 6 else rng.randint(0, code_bits + 1)
        valid = [(1 << lanes) - 1, 0, rng.getrandbits(lanes)][rng.randrange(3)] if t % 5 else (1 << lanes) - 1
        txns.append({"query": q, "refs": refs, "ref_valid": valid, "threshold": threshold})
    return txns


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7,
               reference=hamming_lanes, jobs=None, name: str = "hamming_lanes") -> StreamBench:
    """A bench whose expected outputs come from ``reference`` (the golden function, or a mutant of it).

    The lane array has no block jobs of its own, so ``jobs`` must be None.
    """
    if jobs is not None:
        raise ValueError("the Hamming lane array takes random stimulus only (no recorded jobs)")
    code_bits, lanes = cfg.resv.hash_bits, cfg.dre.hcu.lanes
    lin, lout = hamming_lanes_input_layout(code_bits, lanes), hamming_lanes_output_layout(code_bits, lanes)
    txns = random_transactions(code_bits, lanes, n, random.Random(seed))
    expected = [reference(t["query"], t["refs"], t["ref_valid"], t["threshold"]) for t in txns]
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in txns]},
                       expected={"o": [pack(lout, e) for e in expected]},
                       fields={"o": leaf_fields(lout)}, p_valid=p_valid, p_ready=p_ready, seed=seed)


def measure_cycles(cfg) -> dict:
    """Latency and throughput of the lane array, measured in amaranth.sim without back-pressure."""
    from vrex.hdl.dre.hamming_lanes import HammingLanes

    from vrex.sim.amaranth_run import run_checked

    bench = make_bench(cfg, n=64, seed=5, p_valid=1.0, p_ready=1.0)
    result = run_checked(HammingLanes.from_config(cfg), bench, "the Hamming lane array cycle-measurement run")
    ins, outs = result.handshake_cycles["in:i"], result.handshake_cycles["o"]
    latency = {o - i for i, o in zip(ins, outs)}
    return {"component": "hamming_lanes", "config": cfg.name, "config_hash": cfg.hash(),
            "latency_cycles": max(latency), "transactions": len(ins),
            "cycles_per_transaction": (ins[-1] - ins[0]) / (len(ins) - 1),
            "formula": f"{cfg.dre.hcu.lanes} comparisons per cycle, one transaction per cycle, latency 1"}
