"""Stimulus and golden expectations for one MAC tree (hdl/lxe/mac_tree.py).

A bench streams dot products as beats of ``lxe.dpe_inputs`` BF16 pairs (``first`` / ``last`` framing) and expects
one ``{fp32, bf16}`` result per dot product from ``vrex.golden.lxe.mac_tree.dot_beats`` (or a mutant of it).
Random operands are weighted toward the numerics' corners (:mod:`.operands`); ``jobs`` replays real operand
streams of a golden session (:func:`.operands.session_dots`), the stimulus of the SAIF power run.
"""

from __future__ import annotations

import random

from vrex.golden.lxe.mac_tree import dot_beats, split_beats
from vrex.hdl.lxe.mac_tree import mac_input_layout, mac_output_layout

from ..bench import StreamBench, leaf_fields, pack
from .operands import random_dots, session_dots

__all__ = ["JOB_KIND", "make_bench", "beats_of", "trace_stimulus", "measure_cycles", "reference_dot"]

JOB_KIND = "lxe"      # make_bench(jobs=...) replays operand streams (list of (a, b) vectors)


def reference_dot(a_beats, b_beats, guard_bits):
    return dot_beats(a_beats, b_beats, guard_bits)


def beats_of(a, b, n):
    """Input beats (dicts of the input layout) and the beat lists of one dot product."""
    ab, bb = split_beats(a, n), split_beats(b, n)
    return [{"a": x, "b": y, "first": int(i == 0), "last": int(i == len(ab) - 1)}
            for i, (x, y) in enumerate(zip(ab, bb))], ab, bb


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               reference=reference_dot, name: str = "mac_tree", max_beats: int = 4) -> StreamBench:
    """About ``n`` input beats of random dot products (or the dot products ``jobs``) on one tree."""
    x = cfg.lxe
    inputs = x.dpe_inputs
    rng = random.Random(seed)
    dots = list(jobs) if jobs is not None else random_dots(rng, inputs, max(1, n // ((max_beats + 1) // 2 + 1)),
                                                           max_beats=max_beats)
    lin, lout = mac_input_layout(inputs), mac_output_layout()
    beats, expected = [], []
    for a, b in dots:
        bs, ab, bb = beats_of(a, b, inputs)
        beats += bs
        fp32, bf16 = reference(ab, bb, x.guard_bits)
        expected.append({"fp32": fp32, "bf16": bf16})
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in beats]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


def trace_stimulus(cfg, kind: str, *, limit: int = 200):
    """Operand streams for the power run: dot products of a golden session (kind ``synthetic``)."""
    if kind != "synthetic":
        raise ValueError(f"LXE operand streams come from the synthetic session only, not {kind!r}")
    return session_dots(cfg, limit=limit)


def measure_cycles(cfg) -> dict:
    """Latency and throughput of one tree, measured in amaranth.sim without back-pressure (the DPE's utilisation on a
    decoder layer is the DPE's record, :func:`vrex.sim.lxe.dpe.measure_cycles`)."""
    from vrex.hdl.lxe.mac_tree import MacTree

    from ..amaranth_run import run_checked

    bench = make_bench(cfg, n=48, seed=5, p_valid=1.0, p_ready=1.0, max_beats=3)
    tree = MacTree.from_config(cfg)
    result = run_checked(tree, bench, "the MAC-tree cycle-measurement run")
    ins, outs = result.handshake_cycles["in:i"], result.handshake_cycles["o"]
    last_in = [c for c, bits in zip(ins, bench.inputs["i"]) if (bits >> (32 * cfg.lxe.dpe_inputs + 1)) & 1]
    latency = {o - i for i, o in zip(last_in, outs)}
    if len(latency) != 1 or latency != {tree.latency}:
        raise AssertionError(f"MAC tree latency measured {sorted(latency)}, the generator says {tree.latency}")
    beats_per_cycle = (len(ins) - 1) / (ins[-1] - ins[0])
    return {"component": "mac_tree", "config": cfg.name, "config_hash": cfg.hash(), "latency_cycles": tree.latency,
            "beats_per_cycle": beats_per_cycle, "macs_per_cycle": beats_per_cycle * cfg.lxe.dpe_inputs,
            "formula": f"one beat of {cfg.lxe.dpe_inputs} MACs per cycle; result {tree.latency} cycles after the "
                       "last beat; dot products back to back"}
