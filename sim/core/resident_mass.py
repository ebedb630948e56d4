"""Stimulus and golden expectations for the resident-mass unit (hdl/core/resident_mass.py).

A row is a list of resident-key scores in the WTU's score format; it is packed into beats of ``dre.wtu.lanes``
lanes with a random valid mask per beat (keys in any lanes, holes, beats without a key, extra empty beats at the
row's start or end), don't-care lanes filled with random scores. The expected beat of each row is the golden
``vrex.golden.dre.wtu.exp.resident_mass`` (or a mutant of it, ``reference=``).

Rows: random (:func:`random_rows`: the shapes of the WTU bench's rows, sinks above the body), named corners
(:func:`corner_rows`), or given: ``rows=``, or ``jobs=`` from :func:`trace_stimulus` (a row-mode session's
resident-key scores, :func:`session_rows`; ``vrex sim --component resident_mass --trace``).
"""

from __future__ import annotations

import random

from vrex.errors import TraceError
from vrex.golden.dre.wtu.exp import ExpParams, resident_mass
from vrex.hdl.core.resident_mass import ResidentMassGeometry, resident_mass_layout, resident_scores_layout

from vrex.sim.bench import StreamBench, leaf_fields, pack
from vrex.sim.dre.wtu.bench import ROW_SHAPES, random_row

__all__ = ["random_rows", "corner_rows", "row_beats", "expected_row", "session_rows", "trace_stimulus", "make_bench",
           "dense_beats", "measure_cycles"]


class _Shape:
    """The few fields of a WTU geometry :func:`vrex.sim.dre.wtu.bench.random_row` reads."""

    def __init__(self, g: ResidentMassGeometry):
        self.score_range = (-(1 << (g.score_bits - 1)), (1 << (g.score_bits - 1)) - 1)
        self.buckets = g.buckets


def random_rows(g: ResidentMassGeometry, n: int, rng: random.Random) -> list[list[int]]:
    """``n`` rows: a WTU-bench score shape of 1 to 6 beats of keys, sometimes a sink or two far above the body, and
    now and then an empty row."""
    shape = _Shape(g)
    lo, hi = shape.score_range
    rows = []
    for _ in range(n):
        if rng.random() < 0.05:
            rows.append([])
            continue
        keys = rng.choice([1, rng.randint(1, g.lanes), rng.randint(1, 6 * g.lanes)])
        row = list(random_row(shape, keys, rng.choice(ROW_SHAPES), rng))
        if rng.random() < 0.3:                     # sinks: above the body, maybe beyond its window
            for _ in range(rng.randint(1, 2)):
                sink = min(hi, max(row) + rng.randint(0, (g.buckets + 2) << g.bin_shift))
                row.insert(rng.randrange(len(row) + 1), sink)
        rows.append(row)
    return rows


def corner_rows(g: ResidentMassGeometry) -> dict[str, list[int]]:
    """Named corner rows: empty, one key, all equal, the format's extremes, a maximum rising late (in the last beat,
    after keys that fill the whole window), one key per window bin, a saturating sum and a bin that saturates before
    a rise of the maximum shifts it below saturation."""
    lo, hi = -(1 << (g.score_bits - 1)), (1 << (g.score_bits - 1)) - 1
    S, K, L = g.bin_shift, g.buckets, g.lanes
    sat_keys = -(-(1 << g.sum_bits) // (1 << (g.mantissa_bits - 1))) + 1   # LUT ≥ 2^(M-1): enough for 2^Z
    sat_keys = min(sat_keys, 64 * L)
    rising = [max(lo, -(1 << (S + 2)) - j) for j in range(3 * L)] + [min(hi, (K // 2) << S)]
    rows = {
        "empty": [],
        "single_key": [hi // 3],
        "single_key_min": [lo],
        "single_key_max": [hi],
        "all_equal": [hi // 5] * (2 * L + 1),
        "format_extremes": [lo, hi, lo + 1, hi - 1, 0, -1] * 2,
        "max_rising_late": rising,
        "one_key_per_bin": [max(lo, (hi >> S << S) - (i << S) + (i % (1 << S))) for i in range(K + 2)],
        "saturating": [hi] * sat_keys,
        "saturate_then_rise": [max(lo, hi - ((K - 1) << S))] * sat_keys + [hi >> S << S],
    }
    return rows


def row_beats(g: ResidentMassGeometry, row: list[int], rng: random.Random) -> list[dict]:
    """The beats of one row: keys spread over random lane masks (holes, beats without a key, empty beats at either
    end), random scores in the lanes without a key, ``last`` on the final beat."""
    lo, hi = -(1 << (g.score_bits - 1)), (1 << (g.score_bits - 1)) - 1
    L = g.lanes
    beats, j = [], 0
    if rng.random() < 0.1:
        beats.append(([rng.randint(lo, hi) for _ in range(L)], 0))
    while j < len(row) or not beats:
        dense = rng.random() < 0.5
        lanes = list(range(L)) if dense else sorted(rng.sample(range(L), rng.randint(0, L)))
        lanes = lanes[:len(row) - j]
        scores = [rng.randint(lo, hi) for _ in range(L)]
        for lane in lanes:
            scores[lane] = row[j]
            j += 1
        beats.append((scores, sum(1 << lane for lane in lanes)))
    if rng.random() < 0.1:
        beats.append(([rng.randint(lo, hi) for _ in range(L)], 0))
    return [{"scores": s, "mask": mask, "last": int(i == len(beats) - 1)} for i, (s, mask) in enumerate(beats)]


def expected_row(cfg, row: list[int], reference=resident_mass) -> dict:
    """The golden output beat of a row (``reference``: the golden function or a mutant with its signature)."""
    out = reference(list(row), ExpParams.from_config(cfg), cfg.dre.wtu.resident_sum_bits)
    return {"res_max": out[0], "res_sum": out[1]}


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7,
               reference=resident_mass, jobs=None, rows=None, corners: bool = True,
               name: str = "resident_mass") -> StreamBench:
    """A bench of ``rows`` (lists of scores; ``jobs``: the same, from :func:`trace_stimulus`), else ``n`` random rows
    (plus the corner rows with ``corners``)."""
    rows = rows if rows is not None else (list(jobs)[:n] if jobs is not None else None)
    if rows is not None and not rows:
        raise TraceError("the resident-mass bench got an empty list of rows")
    g = ResidentMassGeometry.from_config(cfg)
    rng = random.Random(seed)
    if rows is None:
        rows = random_rows(g, n, rng) + (list(corner_rows(g).values()) if corners else [])
    lin, lout = resident_scores_layout(g), resident_mass_layout(g)
    beats = [b for row in rows for b in row_beats(g, row, rng)]
    expected = [expected_row(cfg, row, reference) for row in rows]
    return StreamBench(name=name, inputs={"scores": [pack(lin, b) for b in beats]},
                       expected={"resident": [pack(lout, e) for e in expected]},
                       fields={"resident": leaf_fields(lout)}, p_valid=p_valid, p_ready=p_ready, seed=seed,
                       max_cycles=500 + int(4 * (len(beats) + 8 * len(rows)) / max(0.05, min(p_valid, p_ready))))


def session_rows(cfg, trace, *, layer: int = 1, head: int = 1, limit: int = 200) -> list[tuple[list[int], tuple]]:
    """Rows of a ReSV session (``resv.threshold_mass = row``) on ``trace`` (a Trace): for each query row of the WTU
    jobs of one layer and KV head, the quantised scores of the keys it attends anyway (``q · k / √d · log2 e``,
    rounded like the cluster scores; golden ``StepContext.attended_anyway``) and the resident input the session
    recorded for it (``WTUJob.resident``), at most ``limit`` rows."""
    import math

    from vrex.golden.dre.wtu.linear import quantize_scores
    from vrex.golden.resv.policies import StepContext
    from vrex.golden.resv.session import LOG2E, JobRecorder, run_session
    from vrex.golden.resv.stream import Stream

    rec = JobRecorder()
    run_session(cfg, trace, layers=[layer], heads=[head], recorder=rec)
    stream = Stream(cfg, trace)
    steps = {s.label: s for s in stream.steps}
    w, out = cfg.dre.wtu, []
    for job in rec.wtu:
        lay, kv, label = job.context.split(".")[:3]
        if (lay, kv) != (f"L{layer}", f"H{head}"):
            continue
        step = steps[label]
        ctx = StepContext(cfg, layer, trace.layers[layer], None, stream, step, stream.residency(step), [head],
                          trace.segment_ids())
        keys, attended = ctx.attended_anyway()
        queries = ctx.group_queries(head)
        for i, (q, recorded) in enumerate(zip(queries, job.resident)):
            ok = attended[i // ctx.group]
            vals = (q @ trace.layers[layer].k[keys[ok], head].T / math.sqrt(queries.shape[1]) * LOG2E).tolist()
            out.append((quantize_scores(vals, w.score_bits, w.score_frac_bits), tuple(recorded)))
            if len(out) >= limit:
                return out
    return out


def trace_stimulus(cfg, kind: str, *, limit: int = 200) -> list[list[int]]:
    """Rows of resident-key scores of a session on trace ``kind`` (``synthetic``, ``video`` or a trace file) run with
    ``resv.threshold_mass = row`` (the config's widths; :func:`session_rows` on its second layer), at most ``limit``."""
    from vrex.golden.traces.sources import TraceOptions, make_trace

    from vrex.sim.cases import ROW_MASS

    row = cfg if cfg.resv.threshold_mass == "row" else cfg.with_overrides(ROW_MASS, source="row-mass stimulus")
    layer = min(1, row.model.layers - 1)
    resident = row.resv.sink_tokens + row.resv.recent_window_tokens
    frames = max(16, -(-resident // row.model.tokens_per_frame) + 4)     # a few frames retrieve beyond the window
    trace = make_trace(row, kind, layers=[layer], options=TraceOptions(frames=frames))
    rows = [scores for scores, _ in session_rows(row, trace, layer=layer, limit=limit)]
    if not rows:
        raise TraceError(f"the {kind} session of {frames} frames ran no retrieval on layer {layer}: its recent window "
                         f"({resident} tokens) holds every token, so no row has a resident input")
    return rows


def measure_cycles(cfg) -> dict:
    """Latency and throughput of the unit, measured in amaranth.sim without back-pressure."""
    from vrex.hdl.core.resident_mass import ResidentMass, resident_mass_latency

    from vrex.sim.amaranth_run import run_checked

    g = ResidentMassGeometry.from_config(cfg)
    rows = [[(j * 37) % 200 - 100 for j in range(4 * g.lanes)] for _ in range(6)]
    bench = make_bench(cfg, rows=rows, p_valid=1.0, p_ready=1.0, name="resident_mass-measure")
    bench.inputs["scores"] = dense_beats(g, rows)
    result = run_checked(ResidentMass(g), bench, "the resident-mass cycle-measurement run")
    ins, outs = result.handshake_cycles["in:scores"], result.handshake_cycles["resident"]
    lasts = ins[3::4]
    return {"component": "resident_mass", "config": cfg.name, "config_hash": cfg.hash(),
            "latency_cycles": max(o - i for i, o in zip(lasts, outs)), "model_latency": resident_mass_latency(g),
            "cycles_per_beat": (ins[-1] - ins[0]) / (len(ins) - 1),
            "formula": f"{g.lanes} scores per cycle; a row of W beats every max(W, ceil(latency / 4)) cycles"}


def dense_beats(g: ResidentMassGeometry, rows) -> list[int]:
    """Packed beats of rows of whole beats (every lane a key, no empty beat), for cycle counts."""
    L, lin = g.lanes, resident_scores_layout(g)
    return [pack(lin, {"scores": row[i:i + L], "mask": (1 << L) - 1, "last": int(i + L >= len(row))})
            for row in rows for i in range(0, len(row), L)]
