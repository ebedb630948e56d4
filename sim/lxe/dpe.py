"""Stimulus and golden expectations for the DPE (hdl/lxe/dpe.py): passes of one broadcast vector against one
weight vector per tree, each tree's result from ``vrex.golden.lxe.mac_tree.dot_beats``."""

from __future__ import annotations

import random

from vrex.golden.lxe.mac_tree import split_beats
from vrex.hdl.lxe.dpe import dpe_input_layout, dpe_output_layout

from ..bench import StreamBench, leaf_fields, pack
from .mac_tree import reference_dot, trace_stimulus
from .operands import random_dot

__all__ = ["JOB_KIND", "make_bench", "passes_from_dots", "measure_cycles", "trace_stimulus"]

JOB_KIND = "lxe"


def passes_from_dots(dots, trees):
    """Group dot products into DPE passes: the first vector of each group is broadcast (its own ``a``), the trees
    take the ``b`` vectors of the group (padded with the first pair's ``b``)."""
    out = []
    for i in range(0, len(dots), trees):
        group = dots[i:i + trees]
        x = group[0][0]
        ws = [b[:len(x)] + [0] * (len(x) - len(b)) for _, b in group] + [group[0][1]] * (trees - len(group))
        out.append((x, ws))
    return out


def random_passes(cfg, count, rng, max_beats):
    n, T = cfg.lxe.dpe_inputs, cfg.lxe.dpe_trees
    kinds = ("corners", "cancel", "spread", "clean", "tiny")
    out = []
    for p in range(count):
        length = rng.randint(1, max_beats) * n - (rng.randrange(n) if rng.random() < 0.3 else 0)
        x, _ = random_dot(rng, max(1, length), kinds[p % len(kinds)])
        out.append((x, [random_dot(rng, len(x), kinds[(p + t) % len(kinds)])[1] for t in range(T)]))
    return out


def make_bench(cfg, *, n: int = 100, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               reference=reference_dot, name: str = "dpe", max_beats: int = 3) -> StreamBench:
    x = cfg.lxe
    N, T = x.dpe_inputs, x.dpe_trees
    rng = random.Random(seed)
    passes = passes_from_dots(list(jobs), T) if jobs is not None else \
        random_passes(cfg, max(1, n // ((max_beats + 1) // 2 + 1)), rng, max_beats)
    lin, lout = dpe_input_layout(T, N), dpe_output_layout(T)
    beats, expected = [], []
    for vec, ws in passes:
        xb = split_beats(vec, N)
        wb = [split_beats(w, N) for w in ws]
        for i in range(len(xb)):
            beats.append({"x": xb[i], "w": [w[i] for w in wb], "first": int(i == 0), "last": int(i == len(xb) - 1)})
        res = [reference(xb, w, x.guard_bits) for w in wb]
        expected.append({"fp32": [r[0] for r in res], "bf16": [r[1] for r in res]})
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in beats]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


def measure_cycles(cfg) -> dict:
    """The DPE's timing is its trees' (lockstep): the MAC tree's measurement and the layer utilisation."""
    from .mac_tree import measure_cycles as tree_cycles

    out = tree_cycles(cfg)
    out.update(component="dpe", macs_per_cycle=out["beats_per_cycle"] * cfg.lxe.macs_per_cycle)
    return out
