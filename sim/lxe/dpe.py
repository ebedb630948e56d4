"""Stimulus and golden expectations for the DPE (hdl/lxe/dpe.py): passes of one broadcast vector against one
weight vector per tree, as weight loads and compute beats; the results from the golden DPE
(``vrex.golden.lxe.dpe.DpeModel``, each tree's dot product from ``vrex.golden.lxe.mac_tree.dot_beats``)."""

from __future__ import annotations

import math
import random

from vrex.golden.lxe.dpe import DpeModel
from vrex.golden.lxe.mac_tree import split_beats
from vrex.hdl.lxe.dpe import dpe_input_layout, dpe_output_layout

from ..bench import StreamBench, leaf_fields, pack
from .mac_tree import reference_dot, trace_stimulus
from .operands import random_dot

__all__ = ["JOB_KIND", "make_bench", "matmul_bench", "pass_beats", "load_beat", "compute_beat", "bench_of_beats", "passes_from_dots", "measure_cycles", "trace_stimulus"]

JOB_KIND = "lxe"
TIMED_TREES = 2      # trees of the DPE that measure_cycles simulates (see there)


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


def load_beat(group, mask, addr, data):
    return {"load": 1, "group": group, "mask": mask, "addr": addr, "data": data, "first": 0, "last": 0}


def compute_beat(x, addr, first, last, *, n, load_trees):
    """A compute beat: ``x`` in ``data[0]`` (the other words of the load port are 0)."""
    return {"load": 0, "group": 0, "mask": 0, "addr": addr, "data": [x] + [[0] * n] * (load_trees - 1),
            "first": int(first), "last": int(last)}


def bench_of_beats(cfg, beats, model, *, name, p_valid, p_ready, seed) -> StreamBench:
    """The bench of an input beat list: the expected results are ``model``'s (a :class:`DpeModel`) over the beats."""
    x = cfg.lxe
    lin = dpe_input_layout(x.dpe_trees, x.dpe_inputs, x.dpe_weight_words, x.dpe_load_trees)
    lout = dpe_output_layout(x.dpe_trees)
    expected = []
    for b in beats:
        res = model.beat(b)
        if res is not None:
            expected.append({"fp32": [r[0] for r in res], "bf16": [r[1] for r in res]})
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in beats]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


def pass_beats(x, ws, *, n, words, load_trees, rng):
    """Input beats of one pass of ``x`` against the trees' vectors ``ws``: per chunk of at most ``words`` beats, the
    chunk's weights are loaded (``load_trees`` trees per beat, at a random word offset; now and then a group is
    written in two beats of complementary masks) and the chunk's ``x`` beats follow as one dot product."""
    xb, wb = split_beats(x, n), [split_beats(w, n) for w in ws]
    groups, full = len(ws) // load_trees, (1 << load_trees) - 1
    beats = []
    for c0 in range(0, len(xb), words):
        chunk = range(c0, min(c0 + words, len(xb)))
        base = rng.randrange(words)
        for i in chunk:
            addr = (base + i - c0) % words
            for g in range(groups):
                data = [wb[g * load_trees + k][i] for k in range(load_trees)]
                split = rng.getrandbits(load_trees) if load_trees > 1 and rng.random() < 0.25 else full
                for mask in dict.fromkeys((split, full & ~split)):
                    if mask:    # the words a mask leaves out carry noise: they must not be written
                        noisy = [w if mask >> k & 1 else [rng.getrandbits(16) for _ in range(n)]
                                 for k, w in enumerate(data)]
                        beats.append(load_beat(g, mask, addr, noisy))
        beats += [compute_beat(xb[i], (base + i - c0) % words, i == c0, i == chunk[-1], n=n, load_trees=load_trees)
                  for i in chunk]
    return beats


def make_bench(cfg, *, n: int = 100, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               reference=reference_dot, name: str = "dpe", max_beats: int = 3, model=DpeModel) -> StreamBench:
    """Random passes (or the dot products ``jobs``, grouped into passes) as load and compute beats; the expected
    results come from :class:`vrex.golden.lxe.dpe.DpeModel` (``model``: it or a mutant) run over the same beats
    (one result set per chunk of at most ``lxe.dpe_weight_words`` beats)."""
    x = cfg.lxe
    N, T, D, L = x.dpe_inputs, x.dpe_trees, x.dpe_weight_words, x.dpe_load_trees
    rng = random.Random(seed)
    passes = passes_from_dots(list(jobs), T) if jobs is not None else \
        random_passes(cfg, max(1, n // ((max_beats + 1) // 2 + 1)), rng, max_beats)
    beats = [b for vec, ws in passes for b in pass_beats(vec, ws, n=N, words=D, load_trees=L, rng=rng)]
    golden = model(trees=T, n=N, words=D, load_trees=L, guard_bits=x.guard_bits, reference=reference)
    return bench_of_beats(cfg, beats, golden, name=name, p_valid=p_valid, p_ready=p_ready, seed=seed)


def matmul_bench(cfg, rows, columns, *, seed: int = 1, p_valid: float = 1.0, p_ready: float = 1.0,
                 name: str = "dpe_matmul") -> StreamBench:
    """The weight-stationary schedule of a matmul (``rows`` M x K by ``columns`` N x K, BF16 bits): per column tile
    and per chunk of at most ``lxe.dpe_weight_words`` beats, one load of the tile's weights (whole groups of
    ``lxe.dpe_load_trees`` trees, only the groups that hold a column) and every row's compute beats; one result set
    per row, tile and chunk (the partial sums of a long ``K``), from the golden DPE."""
    x = cfg.lxe
    N, T, D, L = x.dpe_inputs, x.dpe_trees, x.dpe_weight_words, x.dpe_load_trees
    xs = [split_beats(r, N) for r in rows]
    beats = []
    for c0 in range(0, len(columns), T):
        tile = [split_beats(c, N) for c in columns[c0:c0 + T]]
        tile += [[[0] * N] * len(xs[0])] * (T - len(tile))
        used = -(-len(columns[c0:c0 + T]) // L)
        for k0 in range(0, len(xs[0]), D):
            chunk = range(k0, min(k0 + D, len(xs[0])))
            beats += [load_beat(g, (1 << L) - 1, i - k0, [tile[g * L + k][i] for k in range(L)])
                      for i in chunk for g in range(used)]
            beats += [compute_beat(xr[i], i - k0, i == k0, i == chunk[-1], n=N, load_trees=L)
                      for xr in xs for i in chunk]
    golden = DpeModel(trees=T, n=N, words=D, load_trees=L, guard_bits=x.guard_bits)
    return bench_of_beats(cfg, beats, golden, name=name, p_valid=p_valid, p_ready=p_ready, seed=seed)


def measure_cycles(cfg) -> dict:
    """Latency and throughput of the DPE, measured in amaranth.sim without back-pressure on random passes (loads and
    compute beats), and its utilisation on a decoder layer's matmuls and the retrieval path (:mod:`.utilisation`).

    The run is on a DPE of at most :data:`TIMED_TREES` trees (one load group) with the config's tree size, pipeline
    cuts and weight depth: the trees are identical and in lockstep behind one operand pipeline, so latency and
    beat rate do not depend on their number (tests/lxe/test_lxe.py measures whole DPEs of the case table), and the
    edge DPE's 64 trees of 64 inputs take minutes and gigabytes to elaborate."""
    from vrex.hdl.lxe.dpe import DPE

    from ..amaranth_run import run_checked
    from ..bench import unpack
    from .utilisation import dpe_utilisation

    full = cfg.lxe
    trees = min(full.dpe_trees, TIMED_TREES)
    timed = cfg if trees == full.dpe_trees else cfg.with_overrides(
        {"lxe.dpe_trees": trees, "lxe.dpe_load_trees": math.gcd(trees, full.dpe_load_trees)})
    bench = make_bench(timed, n=24, seed=5, p_valid=1.0, p_ready=1.0)
    dpe = DPE.from_config(timed)
    result = run_checked(dpe, bench, "the DPE cycle-measurement run")
    t = timed.lxe
    lin = dpe_input_layout(t.dpe_trees, t.dpe_inputs, t.dpe_weight_words, t.dpe_load_trees)
    ins, outs = result.handshake_cycles["in:i"], result.handshake_cycles["o"]
    beats = [unpack(lin, bits) for bits in bench.inputs["i"]]
    last_in = [c for c, b in zip(ins, beats) if b["last"] and not b["load"]]
    latency = {o - i for i, o in zip(last_in, outs)}
    if len(latency) != 1 or latency != {dpe.latency}:
        raise AssertionError(f"DPE latency measured {sorted(latency)}, the generator says {dpe.latency}")
    beats_per_cycle = (len(ins) - 1) / (ins[-1] - ins[0])
    return {"component": "dpe", "config": cfg.name, "config_hash": cfg.hash(), "latency_cycles": dpe.latency,
            "timed_trees": trees, "beats_per_cycle": beats_per_cycle,
            "macs_per_cycle": beats_per_cycle * full.macs_per_cycle,
            **dpe_utilisation(cfg, latency=dpe.latency, beats_per_cycle=beats_per_cycle),
            "formula": f"one load or compute beat per cycle (a compute beat is {full.macs_per_cycle} MACs, a load "
                       f"beat writes {full.dpe_load_trees} trees' weight words); results {dpe.latency} cycles after the last "
                       "beat of a dot product"}
