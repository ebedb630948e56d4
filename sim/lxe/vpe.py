"""Stimulus and golden expectations for the VPE (hdl/lxe/vpe.py): beats of every op with corner-weighted
operands, ``acc`` runs of several beats between other ops, expected results from ``vrex.golden.lxe.vpe``."""

from __future__ import annotations

import random

from vrex.golden.lxe.numerics import FP32, from_float
from vrex.golden.lxe.vpe import OPS, vpe_beats
from vrex.hdl.lxe.vpe import VPE, vpe_count_bits, vpe_input_layout, vpe_output_layout

from ..bench import StreamBench, leaf_fields, pack
from .operands import corner_bf16, corner_fp32

__all__ = ["make_bench", "random_beats", "rounding_edge_beats", "measure_cycles", "reference_beats"]


def reference_beats(beats, lanes, **kw):
    return vpe_beats(beats, lanes, **kw)


def _rounding_edge(rng: random.Random) -> int:
    """FP32 ±m · 2^-j, m odd and small: ties and near-ties of a conversion with up to 14 fraction bits."""
    m, j = rng.randrange(1, 32, 2), rng.randint(0, 18)
    return from_float(m * 2.0 ** -j * (-1 if rng.random() < 0.5 else 1), FP32)


def rounding_edge_beats() -> list[dict]:
    """One-lane ``fixed`` and ``exp2`` beats of every ±m · 2^-j (m odd < 32, j ≤ 18) scaled by 1.0: every tie and
    near-tie of a conversion with up to 14 fraction bits, the guard bit at every position of the lane's normalised
    value (each beat its own dot product: ``first`` and ``last`` set)."""
    return [{"op": op, "a": [from_float(sign * m * 2.0 ** -j, FP32)], "b": [0x3F80], "first": 1, "last": 1}
            for op in ("fixed", "exp2") for sign in (1, -1) for m in range(1, 32, 2) for j in range(19)]


def random_beats(lanes: int, count: int, rng: random.Random, ops=OPS) -> list[dict]:
    """``count`` beats: runs of ``acc`` (first, then 1-5 more beats) mixed with single beats of the other ops;
    ``a`` as FP32 or widened BF16 operands, ``b`` BF16, both weighted toward corners; some ``fixed`` / ``exp2``
    arguments on rounding ties, some ``acc`` runs x, -x, then a far smaller negative term (a sum of -1 in the
    accumulator's last place)."""
    out = []
    while len(out) < count:
        op = rng.choice(ops)
        run = rng.randint(2, 6) if op == "acc" else 1
        cancel = op == "acc" and rng.random() < 0.3
        x = [corner_fp32(rng, specials=0.0) for _ in range(lanes)]
        for j in range(run):
            a = [corner_fp32(rng) if rng.random() < 0.6 else corner_bf16(rng) << 16 for _ in range(lanes)]
            if cancel and j < 3:
                a = [v ^ (0x80000000 if j == 1 else 0) for v in x] if j < 2 else \
                    [0x80000000 | rng.randint(1, 40) << 23 | rng.getrandbits(23) for _ in x]
            if op == "exp2" and rng.random() < 0.7:          # arguments in the interesting range |x| < 130
                a = [((rng.getrandbits(1) << 8) | rng.randint(110, 133)) << 23 | rng.getrandbits(23) for _ in a]
            if op in ("fixed", "exp2") and rng.random() < 0.3:
                a = [_rounding_edge(rng) for _ in a]
            b = [corner_bf16(rng) for _ in range(lanes)]
            if op in ("fixed", "exp2") and rng.random() < 0.5:
                b = [0x3F80] * lanes                          # a plain conversion (scale 1.0)
            out.append({"op": op, "a": a, "b": b, "first": int(j == 0), "last": int(j == run - 1)})
    return out[:count]


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, jobs=None,
               reference=reference_beats, name: str = "vpe", ops=OPS, lanes: int | None = None) -> StreamBench:
    """A bench of ``n`` beats for the config's VPE (or one of ``lanes`` lanes with the same lane parameters)."""
    if jobs is not None:
        raise ValueError("the VPE bench takes random stimulus only")
    lanes = lanes or cfg.lxe.lanes
    beats = random_beats(lanes, n, random.Random(seed), ops)
    kw = dict(guard_bits=cfg.lxe.guard_bits, fixed_bits=cfg.dre.wtu.score_bits, fixed_frac=cfg.dre.wtu.score_frac_bits)
    results = reference(beats, lanes, **kw)
    lin, lout = vpe_input_layout(lanes), vpe_output_layout(lanes, vpe_count_bits(cfg.lxe.acc_headroom_bits))
    expected = [{"value": [r.value for r in res], "bf16": [r.bf16 for r in res],
                 "flags": sum(r.flag << k for k, r in enumerate(res)), "count": count, "last": beat["last"]}
                for beat, (res, count) in zip(beats, results)]
    ins = [dict(beat, op=OPS.index(beat["op"])) for beat in beats]
    return StreamBench(name=name, inputs={"i": [pack(lin, t) for t in ins]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       p_valid=p_valid, p_ready=p_ready, seed=seed)


def measure_cycles(cfg) -> dict:
    """Lane latency and throughput in amaranth.sim without back-pressure, and the VPE's utilisation on a decoder
    layer's vector work (:mod:`.utilisation`)."""
    from ..amaranth_run import run_checked
    from .utilisation import vpe_utilisation

    # the lanes work in lockstep, so a VPE of at most 4 lanes has the timing of any (and simulates quickly)
    lanes = min(cfg.lxe.lanes, 4)
    bench = make_bench(cfg, n=40, seed=5, p_valid=1.0, p_ready=1.0, lanes=lanes)
    vpe = VPE(**dict(VPE.config_args(cfg), lanes=lanes))
    result = run_checked(vpe, bench, "the VPE cycle-measurement run")
    ins, outs = result.handshake_cycles["in:i"], result.handshake_cycles["o"]
    latency = {o - i for i, o in zip(ins, outs)}
    if latency != {vpe.latency}:
        raise AssertionError(f"VPE latency measured {sorted(latency)}, the generator says {vpe.latency}")
    beats_per_cycle = (len(ins) - 1) / (ins[-1] - ins[0])
    return {"component": "vpe", "config": cfg.name, "config_hash": cfg.hash(), "latency_cycles": vpe.latency,
            "beats_per_cycle": beats_per_cycle, "lane_ops_per_cycle": beats_per_cycle * cfg.lxe.lanes,
            **vpe_utilisation(cfg, latency=vpe.latency, beats_per_cycle=beats_per_cycle),
            "formula": f"{cfg.lxe.lanes} lanes, one beat per cycle, latency {vpe.latency}"}
