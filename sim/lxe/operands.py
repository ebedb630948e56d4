"""Operand generators for the LXE benches: BF16 / FP32 bit patterns weighted toward the numerics' corners, and
real operand streams from a golden ReSV session (keys x hyperplanes, queries x cluster mean keys)."""

from __future__ import annotations

import random

from vrex.golden.lxe.numerics import BF16, FP32, from_float

__all__ = ["corner_bf16", "corner_fp32", "random_dot", "random_dots", "session_dots", "CORNER_BF16"]

# +0, -0, subnormals (DAZ), smallest / largest normals, ±Inf, NaNs, ±1
CORNER_BF16 = (0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1,
               0x3F80, 0xBF80)


def corner_bf16(rng: random.Random, *, specials: float = 0.1, spread: float = 0.2) -> int:
    """One BF16 operand: a corner value with probability ``specials``, an extreme exponent with ``spread``,
    else a value with an exponent near 1.0."""
    r = rng.random()
    if r < specials:
        return rng.choice(CORNER_BF16)
    sign = rng.getrandbits(1) << 15
    if r < specials + spread:
        return sign | (rng.choice([1, 2, 3, 60, 200, 252, 253, 254]) << 7) | rng.getrandbits(7)
    return sign | (rng.randint(118, 136) << 7) | rng.getrandbits(7)


def corner_fp32(rng: random.Random, *, specials: float = 0.1, spread: float = 0.2) -> int:
    r = rng.random()
    if r < specials:
        return rng.choice(CORNER_BF16) << 16 | rng.choice([0, 0, 1, 0x7FFF, 0x8000, 0xFFFF])
    sign = rng.getrandbits(1) << 31
    if r < specials + spread:
        return sign | (rng.choice([1, 2, 60, 200, 253, 254]) << 23) | rng.getrandbits(23)
    return sign | (rng.randint(118, 136) << 23) | rng.getrandbits(23)


def random_dot(rng: random.Random, length: int, kind: str) -> tuple[list[int], list[int]]:
    """Two BF16 vectors of ``length``: ``corners`` (weighted corners), ``cancel`` (pairs of products that cancel
    exactly or nearly), ``spread`` (exponents over the whole range), ``tiny`` (results around the smallest normal,
    where FTZ decides), ``clean`` (no specials), ``powers`` (products ±2^k, and pairs that cancel beside a far
    smaller negative product, whose floored term is −1: sums that are negative powers of two or −1, the
    normaliser's overshoot)."""
    if kind == "cancel":
        a, b = [], []
        for _ in range(0, length, 2):
            x, y = corner_bf16(rng, specials=0.0, spread=0.1), corner_bf16(rng, specials=0.0, spread=0.1)
            a += [x, x]
            b += [y, y ^ 0x8000 ^ (rng.random() < 0.3)]      # exact cancellation, or off by one ulp
        return a[:length], b[:length]
    if kind == "spread":
        return ([corner_bf16(rng, specials=0.0, spread=0.9) for _ in range(length)],
                [corner_bf16(rng, specials=0.0, spread=0.9) for _ in range(length)])
    if kind == "tiny":                # results near the bottom of the normal range: FTZ after rounding decides
        return ([(rng.getrandbits(1) << 15) | (rng.randint(1, 4) << 7) | rng.getrandbits(7) for _ in range(length)],
                [(rng.getrandbits(1) << 15) | (rng.randint(100, 122) << 7) | rng.getrandbits(7) for _ in range(length)])
    if kind == "powers":
        a, b = [], []
        for _ in range(0, length, 3):
            x = (rng.getrandbits(1) << 15) | (rng.randint(120, 134) << 7)       # ±2^k
            y = (rng.randint(120, 134) << 7) | (rng.getrandbits(7) if rng.random() < 0.5 else 0)
            tiny = 0x8000 | (rng.randint(60, 100) << 7) | rng.getrandbits(7)     # far below: floors to -1
            a += [x, x, tiny]
            b += [y, y ^ 0x8000 if rng.random() < 0.5 else y, 0x3F80]
        return a[:length], b[:length]
    if kind == "clean":
        return ([corner_bf16(rng, specials=0.0, spread=0.0) for _ in range(length)],
                [corner_bf16(rng, specials=0.0, spread=0.0) for _ in range(length)])
    specials = 0.02 if rng.random() < 0.7 else 0.2
    return ([corner_bf16(rng, specials=specials) for _ in range(length)],
            [corner_bf16(rng, specials=specials) for _ in range(length)])


def random_dots(rng: random.Random, n_inputs: int, count: int, *, max_beats: int = 4):
    """``count`` dot products of 1..max_beats beats (the last one sometimes partly zero-padded)."""
    kinds = ("corners", "cancel", "spread", "clean", "tiny", "powers")
    out = []
    for i in range(count):
        beats = rng.randint(1, max_beats)
        length = beats * n_inputs - (rng.randrange(n_inputs) if rng.random() < 0.3 else 0)
        out.append(random_dot(rng, max(1, length), kinds[i % len(kinds)]))
    return out


def session_dots(cfg, *, limit: int = 200, seed: int = 0):
    """Real operand streams of the retrieval path, from a golden ReSV session on the synthetic trace: each key of
    layer 0 against each hyperplane of its context (hash bits), and each query row against the mean keys of the
    clusters (scores), all in BF16 as the LXE receives them. Returns at most ``limit`` dot products."""
    from vrex.golden.resv.hashing import hash_contexts
    from vrex.golden.traces.sources import TraceOptions, make_trace

    trace = make_trace(cfg, "synthetic", layers=[0], options=TraceOptions(frames=4, seed=seed))
    data = trace.layers[trace.layer_ids[0]]
    dots = []
    for _, keys, planes in hash_contexts(cfg, trace.layer_ids[0], data, list(range(trace.kv_heads))):
        kb = [[from_float(float(x), BF16) for x in k] for k in keys[:8].tolist()]
        wb = [[from_float(float(x), BF16) for x in col] for col in planes.T.tolist()]
        dots += [(k, w) for k in kb for w in wb]
    q = data.q[: cfg.model.tokens_per_frame].reshape(-1, cfg.model.head_dim)
    means = data.k[: 4 * cfg.model.tokens_per_frame].reshape(-1, 4, cfg.model.kv_heads, cfg.model.head_dim).mean(1)
    means = means.reshape(-1, cfg.model.head_dim)
    for row in q[:8].tolist():
        for mk in means[:8].tolist():
            dots.append(([from_float(float(x), BF16) for x in row], [from_float(float(x), BF16) for x in mk]))
    rng = random.Random(seed)
    rng.shuffle(dots)
    return dots[:limit]
