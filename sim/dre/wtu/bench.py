"""Stimulus, golden expectations and cycle measurement for the WTU (hdl/dre/wtu/linear.py).

A bench is a list of WTU jobs (vrex.golden.dre.jobs.WTUJob: the counts of N clusters and R score rows) packed into
beats of the ``counts`` and ``scores`` ports; the expected ``row`` and ``group`` beats come from the golden
reference (``vrex.golden.dre.wtu.linear.select_row`` per row, OR per job). Jobs the unit rejects (N = 0 or N > capacity)
expect the flagged beats documented in hdl/dre/wtu/linear.py.

Stimulus is random (:func:`random_wtu_jobs`), named corner cases (:func:`corner_jobs`) or recorded jobs
(``jobs=``, the trace-driven path). Fields the unit must ignore (``clusters`` after a job's first count beat,
``last`` before a row's final beat, lanes beyond N, the resident input after a row's first beat) carry random
values, so the bench checks that too.

With ``resv.threshold_mass = row`` every row also has its resident input ``(res_max, res_sum)`` (``WTUJob.resident``;
a job recorded without one replays as ``(0, 0)`` per row, the offloaded rule): random jobs and corner cases get
resident inputs of every relation to the row (:func:`random_resident`), packed on each row's first score beat.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from vrex.errors import TraceError
from vrex.golden.dre.jobs import WTUJob
from vrex.golden.dre.wtu.exp import ExpParams, resident_mass
from vrex.golden.dre.wtu.linear import (PASS_OVERHEAD, ROW_OVERHEAD, exp2_latencies, select_row, wtu_job, wtu_row_cycles,
                             wtu_schedule)
from vrex.hdl.dre.wtu.layouts import (WTUGeometry, wtu_counts_layout, wtu_group_layout, wtu_row_layout,
                                  wtu_scores_layout)

from vrex.sim.bench import StreamBench, leaf_fields, pack, unpack

__all__ = ["WTUBenchParams", "bench_params", "random_row", "peaked_job", "random_wtu_jobs", "corner_jobs",
           "random_resident", "job_resident", "make_bench", "job_beats", "model_schedule", "no_stall_cycles",
           "measured_rows", "measure_cycles"]

JOB_KIND = "wtu"      # make_bench(jobs=...) replays recorded WTU jobs (vrex sim --trace, power stimulus)


@dataclass(frozen=True)
class WTUBenchParams:
    """Everything the golden reference and the cycle model need besides the jobs."""

    geometry: WTUGeometry
    ratio_q: int
    k: int

    @property
    def golden(self) -> dict:
        g = self.geometry
        out = {"mode": g.mode, "ratio_q": self.ratio_q, "ratio_bits": g.ratio_bits, "buckets": g.buckets,
               "k": self.k, "transform": g.transform}
        if g.exp2:
            out["exp"] = ExpParams(g.frac_bits, g.buckets, g.bucket_octaves, g.lut_entries, g.mantissa_bits,
                                   g.refine_passes, g.refine_bins, g.fill)
        return out

    @property
    def timing(self) -> dict:
        """``golden`` plus what only the cycle model needs (the exp2 datapath's pipeline depth)."""
        out = self.golden
        if self.geometry.exp2:
            out["pipeline_stages"] = self.geometry.pipeline_stages
        return out

    @property
    def statics(self) -> dict:
        return {"k": self.k} if self.geometry.mode == "topk" else {"ratio": self.ratio_q}


def bench_params(cfg, *, ratio_q=None, k=None) -> WTUBenchParams:
    """Geometry from ``cfg``; ratio and k default to the config's (``resv.wicsum_ratio``, ``dre.wtu.topk_k``)."""
    g = WTUGeometry.from_config(cfg)
    ratio_q = cfg.ratio_fixed if ratio_q is None else ratio_q
    k = cfg.dre.wtu.topk_k if k is None else k
    if not 0 <= ratio_q < 1 << (g.ratio_bits + 1):
        raise ValueError(f"ratio_q {ratio_q} does not fit the {g.ratio_bits + 1}-bit ratio input")
    if not 0 <= k < 1 << g.clusters_bits:
        raise ValueError(f"k {k} does not fit the {g.clusters_bits}-bit k input")
    return WTUBenchParams(g, ratio_q, k)


# ---- stimulus ------------------------------------------------------------------------------------------------


ROW_SHAPES = ("peaked", "uniform", "narrow", "equal", "negative", "ties", "extremes")


def random_row(g: WTUGeometry, n: int, shape: str, rng: random.Random) -> tuple:
    """``n`` signed scores of the geometry's format, of one of the ``ROW_SHAPES``."""
    lo, hi = g.score_range

    def clip(x):
        return min(hi, max(lo, int(x)))

    if shape == "peaked":      # the ReSV picture: a noisy floor and a few dominant clusters
        floor = rng.randint(lo // 4, hi // 8)
        row = [clip(floor + rng.gauss(0, hi / 32)) for _ in range(n)]
        for j in rng.sample(range(n), min(n, rng.randint(1, 6))):
            row[j] = rng.randint(hi // 2, hi)
    elif shape == "uniform":
        row = [rng.randint(lo, hi) for _ in range(n)]
    elif shape == "narrow":    # range below the bucket count: one value per bucket
        c, w = rng.randint(lo, hi), rng.randint(1, 2 * g.buckets)
        row = [clip(c + rng.randint(0, w)) for _ in range(n)]
    elif shape == "equal":
        row = [rng.randint(lo, hi)] * n
    elif shape == "negative":
        row = [rng.randint(lo, -1) for _ in range(n)]
    elif shape == "ties":
        values = [rng.randint(lo, hi) for _ in range(3)]
        row = [rng.choice(values) for _ in range(n)]
    else:                      # extremes of the format
        row = [rng.choice([lo, hi, lo + 1, hi - 1, 0]) for _ in range(n)]
    return tuple(row)


def peaked_job(g: WTUGeometry, n: int, rows: int, rng: random.Random, name: str) -> WTUJob:
    """A job of ``n`` clusters with random token counts (1 .. 64) and ``rows`` peaked score rows."""
    counts = tuple(rng.randint(1, min(64, (1 << g.count_bits) - 1)) for _ in range(n))
    return WTUJob(name, counts, tuple(random_row(g, n, "peaked", rng) for _ in range(rows)))


RESIDENT_KINDS = ("session", "sink_above", "same_bin", "far_below", "above_window", "random", "saturated",
                  "zero_sum", "tiny_sum")


def random_resident(g: WTUGeometry, row, rng: random.Random, kind: str | None = None) -> tuple[int, int]:
    """A resident input ``(res_max, res_sum)`` for a score row (``threshold_mass = row``), of one of the
    ``RESIDENT_KINDS``: ``session`` is :func:`~vrex.golden.dre.wtu.exp.resident_mass` of a few resident scores around
    the row's (what a session hands over); the others place ``res_max`` above the row's top bin (a sink), in its
    bin, far below it, beyond the window above it, anywhere, with a saturated, zero or tiny ``res_sum``."""
    lo, hi = g.score_range
    kind = kind or rng.choice(RESIDENT_KINDS)
    z_max = (1 << g.resident_sum_bits) - 1
    top = max(row) if row else 0
    S = g.bin_shift

    def clip(x):
        return min(hi, max(lo, int(x)))

    def log_sum():
        return min(z_max, max(1, int(2 ** rng.uniform(0, g.resident_sum_bits))))

    if kind == "session":
        n = rng.randint(1, 12)
        scores = [clip(top + rng.randint(-3 << S, 2 << S)) for _ in range(n)]
        if rng.random() < 0.5:                                    # a sink above the body
            scores.append(clip(top + rng.randint(0, 4 << S)))
        p = ExpParams(g.frac_bits, g.buckets, g.bucket_octaves, g.lut_entries, g.mantissa_bits, g.refine_passes,
                      g.refine_bins, g.fill)
        return tuple(resident_mass(scores, p, g.resident_sum_bits))
    if kind == "sink_above":
        return clip(top + rng.randint(1, 3 << S)), log_sum()
    if kind == "same_bin":
        return clip(((top >> S) << S) + rng.randrange(1 << S)), log_sum()
    if kind == "far_below":
        return clip(top - rng.randint(2 << S, (g.buckets + 4) << S)), log_sum()
    if kind == "above_window":
        return clip(top + ((g.buckets + rng.randint(0, 2)) << S)), log_sum()
    if kind == "random":
        return rng.randint(lo, hi), log_sum()
    if kind == "saturated":
        return rng.randint(lo, hi), z_max
    if kind == "zero_sum":                                       # no resident mass: the offloaded rule
        return rng.randint(lo, hi), 0
    return clip(top + rng.randint(-(1 << S), 1 << S)), rng.randint(1, 3)   # tiny_sum


def with_resident(g: WTUGeometry, job: WTUJob, rng: random.Random) -> WTUJob:
    """``job`` with a random resident input per row when the geometry runs the row rule (and it has none)."""
    if not g.row_mass or job.resident or not job.rows:
        return job
    return WTUJob(job.context, job.counts, job.rows, tuple(random_resident(g, row, rng) for row in job.rows))


def job_resident(g: WTUGeometry, job: WTUJob):
    """The per-row resident inputs the WTU gets for ``job``: None for the offloaded rule; with the row rule the
    recorded ones, or ``(0, 0)`` per row (the offloaded rule) for a job recorded without them."""
    if not g.row_mass:
        return None
    if job.resident and len(job.resident) != len(job.rows):
        raise TraceError(f"job {job.context!r} has {len(job.rows)} rows but {len(job.resident)} resident inputs")
    return tuple(job.resident) or ((0, 0),) * len(job.rows)


def _counts(g: WTUGeometry, n: int, rng: random.Random) -> tuple:
    top = (1 << g.count_bits) - 1
    kind = rng.random()
    if kind < 0.05:
        return (0,) * n
    if kind < 0.1:
        return tuple(rng.choice([0, top]) for _ in range(n))
    return tuple(0 if rng.random() < 0.1 else min(top, rng.randint(1, 64)) for _ in range(n))


def random_wtu_jobs(cfg, beats: int, seed: int = 0, *, max_rows: int | None = None) -> list[WTUJob]:
    """Random jobs whose input beats (counts + scores) add up to about ``beats`` (at least one job).

    Cluster counts N: 1, a few beats, uniform up to the capacity, or the full capacity; rows per job 1 to
    ``max_rows`` (default: max(2, query heads per KV head)); each row of a job gets its own score shape.
    """
    g = WTUGeometry.from_config(cfg)
    rng = random.Random(seed)
    max_rows = max_rows or max(2, cfg.model.group_size)
    jobs, used = [], 0
    while not jobs or used < beats:
        budget = max(1, beats - used)
        n = rng.choices([1, rng.randint(2, 3 * g.lanes), rng.randint(1, g.capacity), g.capacity],
                        weights=[1, 4, 4, 1])[0]
        n = min(n, g.capacity)
        r = rng.randint(1, max_rows)
        w = -(-n // g.lanes)
        while (r + 1) * w > 2 * budget and (n > 1 or r > 1):      # keep the total near the budget
            if r > 1:
                r -= 1
            else:
                n = max(1, n // 2)
                w = -(-n // g.lanes)
        counts = _counts(g, n, rng)
        rows = tuple(random_row(g, n, rng.choice(ROW_SHAPES), rng) for _ in range(r))
        jobs.append(with_resident(g, WTUJob(f"random.{len(jobs)}", counts, rows), rng))
        used += (r + 1) * w
    return jobs


def corner_jobs(cfg) -> dict[str, WTUJob]:
    """Named corner cases, each a valid job of the config's geometry."""
    g = WTUGeometry.from_config(cfg)
    lo, hi = g.score_range
    cap, L = g.capacity, g.lanes
    n = min(cap, 3 * L + 1)
    rng = random.Random(17)
    ones = (1,) * n
    k = cfg.dre.wtu.topk_k
    bin_shift = min(g.bin_shift if g.exp2 else 5, g.score_bits - 2)
    tie_n = min(cap, max(k + 4, 2 * L))
    ties = [rng.randint(lo, 0) for _ in range(tie_n)]
    for j in rng.sample(range(tie_n), min(tie_n, k + 3)):   # k + 3 clusters share the largest value
        ties[j] = hi // 3
    corners = {
        "all_equal": WTUJob("all_equal", ones, ((hi // 5,) * n, (lo,) * n)),
        "one_dominant": WTUJob("one_dominant", ones, (tuple(hi if j == n // 2 else 0 for j in range(n)),)),
        "negative": WTUJob("negative", tuple(range(1, n + 1)), (tuple(lo + 3 * j for j in range(n)),)),
        "one_cluster": WTUJob("one_cluster", (5,), ((hi,), (lo,), (0,))),
        "full_row": WTUJob("full_row", tuple(1 + j % 7 for j in range(cap)),
                           (tuple(rng.randint(lo, hi) for _ in range(cap)),)),
        "zero_counts": WTUJob("zero_counts", (0,) * n, (tuple(rng.randint(lo, hi) for _ in range(n)),)),
        "some_zero_counts": WTUJob("some_zero_counts", tuple(j % 2 for j in range(n)),
                                   (tuple(rng.randint(lo, hi) for _ in range(n)),)),
        "ties_at_k": WTUJob("ties_at_k", (1,) * tie_n, (tuple(ties),)),
        "k_at_least_n": WTUJob("k_at_least_n", (1,) * min(cap, max(1, k)),
                               (tuple(rng.randint(lo, hi) for _ in range(min(cap, max(1, k)))),)),
        "format_extremes": WTUJob("format_extremes", ((1 << g.count_bits) - 1,) * n,
                                  (tuple(hi if j % 2 else lo for j in range(n)),)),
        "many_rows": WTUJob("many_rows", ones, tuple(random_row(g, n, s, rng) for s in ROW_SHAPES)),
        # the top and the bottom of one exp2 bin (2^S score units): which one carries the threshold depends on the
        # LUT's values at both ends of the fraction range (at ratio 0.3: the top one alone)
        "exp2_lut_order": WTUJob("exp2_lut_order", (1, 3), (((1 << bin_shift) - 1, 0),)),
    }
    if g.row_mass:
        corners.update(_row_mass_corners(g, n, rng))
        corners = {name: with_resident(g, job, rng) for name, job in corners.items()}
    return corners


def _row_mass_corners(g: WTUGeometry, n: int, rng: random.Random) -> dict[str, WTUJob]:
    """Corner jobs of the row rule (threshold_mass = row): one row per resident kind over the same offloaded row,
    a resident mass that holds the row (nothing fetched), one just too small for that, the resident maximum in
    the offloaded maximum's bin, above the whole window, and a saturated input."""
    lo, hi = g.score_range
    S = g.bin_shift
    z_max = (1 << g.resident_sum_bits) - 1
    row = tuple(min(hi, max(lo, (hi // 4) - (j * (1 << S)) // 3)) for j in range(n))
    kinds = tuple(RESIDENT_KINDS)
    out = {"resident_kinds": WTUJob("resident_kinds", (1,) * n, (row,) * len(kinds),
                                    tuple(random_resident(g, row, rng, k) for k in kinds))}
    top = max(row)
    out["resident_holds_row"] = WTUJob("resident_holds_row", (1,) * n, (row, row),
                                       ((top, z_max), (min(hi, top + (1 << S)), z_max)))
    out["resident_small"] = WTUJob("resident_small", (1,) * n, (row, row), ((top, 1), (lo, z_max)))
    out["resident_above_window"] = WTUJob("resident_above_window", (2,) * n, (row,),
                                          ((min(hi, top + (g.buckets << S)), 1 << (g.resident_sum_bits - 1)),))
    return out


# ---- packing -------------------------------------------------------------------------------------------------


def _beat(values, j0, lanes, fill):
    return [values[j0 + lane] if j0 + lane < len(values) else fill() for lane in range(lanes)]


def job_beats(g: WTUGeometry, job: WTUJob, rng: random.Random) -> tuple[list[dict], list[dict]]:
    """Count beats and score beats of a job (don't-care fields randomised)."""
    n, lanes = len(job.counts), g.lanes
    if n >= 1 << g.clusters_bits:
        raise TraceError(f"job {job.context!r} has {n} clusters, more than the {g.clusters_bits}-bit clusters "
                         f"field can carry (row capacity {g.capacity})")
    w = max(1, -(-n // lanes))
    lo, hi = g.score_range
    cmax = (1 << g.count_bits) - 1
    for c in job.counts:
        if not 0 <= c <= cmax:
            raise TraceError(f"job {job.context!r}: count {c} is outside the unsigned {g.count_bits}-bit format")
    counts = [{"counts": _beat(job.counts, i * lanes, lanes, lambda: rng.randint(0, cmax)),
               "clusters": n if i == 0 else rng.randrange(1 << g.clusters_bits)} for i in range(w)]
    resident = job_resident(g, job)
    if resident is not None:
        zmax = (1 << g.resident_sum_bits) - 1
        for res_max, res_sum in resident:
            if not (lo <= res_max <= hi and 0 <= res_sum <= zmax):
                raise TraceError(f"job {job.context!r}: resident input ({res_max}, {res_sum}) is outside the signed "
                                 f"{g.score_bits}-bit score / unsigned {g.resident_sum_bits}-bit sum format")
    scores = []
    for r, row in enumerate(job.rows):
        if len(row) != n:
            raise TraceError(f"job {job.context!r}: row {r} has {len(row)} scores but the job has {n} counts")
        for s in row:
            if not lo <= s <= hi:
                raise TraceError(f"job {job.context!r}: score {s} is outside the signed {g.score_bits}-bit format")
        for i in range(w):
            final = i == w - 1
            beat = {"scores": _beat(row, i * lanes, lanes, lambda: rng.randint(lo, hi)),
                    "last": int(r == len(job.rows) - 1) if final else rng.randrange(2)}
            if resident is not None:        # the row's first beat carries it; later beats carry don't-cares
                beat["res_max"], beat["res_sum"] = (resident[r] if i == 0 else
                                                    (rng.randint(lo, hi), rng.randrange(1 << g.resident_sum_bits)))
            scores.append(beat)
    return counts, scores


def _expected(g: WTUGeometry, job: WTUJob, params: WTUBenchParams, reference) -> tuple[list[dict], list[dict]]:
    n, lanes = len(job.counts), g.lanes
    nrows = len(job.rows)
    if n == 0 or n > g.capacity:   # rejected job: one flagged beat per row and one per group
        rows = [{"mask": 0, "last": 1, "job_last": int(r == nrows - 1), "error": 1, "selected": 0,
                 "exit_bucket": 0, "buckets_walked": 0} for r in range(nrows)]
        return rows, [{"mask": 0, "last": 1, "error": 1}]
    sel = wtu_job(job.counts, job.rows, capacity=g.capacity, reference=reference, resident=job_resident(g, job),
                  **params.golden)
    w = -(-n // lanes)
    word = (1 << lanes) - 1
    rows = []
    for r, rs in enumerate(sel.rows):
        for i in range(w):
            rows.append({"mask": (rs.mask >> (i * lanes)) & word, "last": int(i == w - 1),
                         "job_last": int(r == nrows - 1), "error": 0,
                         "selected": (rs.mask & ((1 << min(n, (i + 1) * lanes)) - 1)).bit_count(),
                         "exit_bucket": rs.exit_bucket, "buckets_walked": rs.buckets_walked})
    group = [{"mask": (sel.group_mask >> (i * lanes)) & word, "last": int(i == w - 1), "error": 0}
             for i in range(w)]
    return rows, group


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7,
               reference=select_row, jobs=None, name: str = "wtu", ratio_q: int | None = None,
               k: int | None = None) -> StreamBench:
    """A WTU bench: ``jobs`` (recorded WTUJobs, replayed in order) or random jobs of about ``n`` input beats.

    ``reference`` is the per-row golden function (``select_row`` or a deliberately wrong variant with its
    signature); ``ratio_q`` / ``k`` override the control inputs (default: the config's).
    """
    params = bench_params(cfg, ratio_q=ratio_q, k=k)
    g = params.geometry
    jobs = list(jobs) if jobs is not None else random_wtu_jobs(cfg, n, seed)
    if not jobs:
        raise TraceError("the WTU bench got an empty list of jobs")
    rng = random.Random(seed)
    lc, ls, lr, lg = wtu_counts_layout(g), wtu_scores_layout(g), wtu_row_layout(g), wtu_group_layout(g)
    inputs = {"counts": [], "scores": []}
    expected = {"row": [], "group": []}
    for job in jobs:
        counts, scores = job_beats(g, job, rng)
        rows, group = _expected(g, job, params, reference)
        inputs["counts"] += [pack(lc, b) for b in counts]
        inputs["scores"] += [pack(ls, b) for b in scores]
        expected["row"] += [pack(lr, b) for b in rows]
        expected["group"] += [pack(lg, b) for b in group]
    ideal = no_stall_cycles(params, jobs)
    return StreamBench(name=name, inputs=inputs, expected=expected,
                       fields={"row": leaf_fields(lr), "group": leaf_fields(lg)}, statics=params.statics,
                       p_valid=p_valid, p_ready=p_ready, seed=seed,
                       max_cycles=1000 + int(3 * ideal / max(0.05, min(p_valid, p_ready))))


def model_schedule(params: WTUBenchParams, jobs) -> dict[str, list[int]]:
    """The cycle model's handshake cycles of every port under no back-pressure, from the first count beat."""
    g = params.geometry
    return wtu_schedule([(j.counts, j.rows, job_resident(g, j)) for j in jobs], capacity=g.capacity,
                        lanes=g.lanes, **params.timing)


def no_stall_cycles(params: WTUBenchParams, jobs) -> int:
    """Cycles the jobs take without back-pressure (the cycle model), from the first count beat."""
    sched = model_schedule(params, jobs)
    return max(sched["row"] + sched["group"]) + 1


# ---- cycle measurement ---------------------------------------------------------------------------------------


def measured_rows(bench: StreamBench, result, params: WTUBenchParams, jobs) -> list[dict]:
    """Per valid row of a no-stall run: measured cycles, the model's, and the row's status fields.

    A row's cycles run from its first score beat to the handshake of its last mask beat, which under no
    back-pressure is exactly the cycle the next row's (or job's) first beat is accepted.
    """
    g = params.geometry
    lr = wtu_row_layout(g)
    score_cycles = iter(result.handshake_cycles["in:scores"])
    row_beats = iter(zip(result.handshake_cycles["row"], result.observed["row"]))
    out = []
    for job in jobs:
        n = len(job.counts)
        w = max(1, -(-n // g.lanes))
        resident = job_resident(g, job) or [None] * len(job.rows)
        for row, res in zip(job.rows, resident):
            start = [next(score_cycles) for _ in range(w)][0]
            beats = [next(row_beats) for _ in range(1 if n == 0 or n > g.capacity else w)]
            if n == 0 or n > g.capacity:
                continue
            end, last = beats[-1]
            status = unpack(lr, last)
            model = wtu_row_cycles(row, job.counts, lanes=g.lanes, resident=res, **params.timing)
            out.append({"n": n, "words": w, "measured": end - start, "model": model.cycles,
                        "selection_passes": model.selection_passes, "walk_cycles": model.walk_cycles,
                        "selected": status["selected"], "buckets_walked": status["buckets_walked"]})
    return out


def measure_cycles(cfg) -> dict:
    """Cycles per row measured in amaranth.sim without back-pressure, with the formula they follow.

    Workload: peaked score rows (a noisy floor and a few dominant clusters, as ReSV produces) with random
    token counts, two rows at N = capacity / 4 and one at N = capacity, run back to back. Nothing is fitted:
    ``overhead``, ``per_unit`` and ``per_pass_overhead`` are the constants of the cycle model
    (``vrex.golden.dre.wtu.linear.wtu_row_cycles``) and ``model_matches`` says whether every measured row equals it.
    """
    from vrex.hdl.dre.wtu.linear import wtu_for

    from vrex.sim.amaranth_run import run_checked

    params = bench_params(cfg)
    g = params.geometry
    rng = random.Random(5)
    jobs = [with_resident(g, peaked_job(g, n, rows, rng, f"measure.{n}"), rng)
            for n, rows in ((max(1, g.capacity // 4), 2), (g.capacity, 1))]
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0, name="wtu-measure")
    result = run_checked(wtu_for(g), bench, "the WTU cycle-measurement run")
    rows = measured_rows(bench, result, params, jobs)
    mean = lambda xs: sum(xs) / len(xs)   # noqa: E731
    if g.exp2:
        lat = exp2_latencies(params.golden["exp"], g.pipeline_stages, g.ratio_bits)
        per_row = {"overhead": lat["fin_state"] + lat["mask_tail"], "per_unit": 1,
                   "per_pass_overhead": lat["walk_state"], "latencies": lat,
                   "unit": "one word of one pass over the row; a pass reads ceil(N / lanes) words, one per cycle",
                   "formula": "cycles/row = overhead + (2 + P)·per_unit·ceil(N/lanes) + P·per_pass_overhead "
                              "(P refinement passes run)"}
    else:
        per_row = {"overhead": ROW_OVERHEAD, "per_unit": 1, "per_pass_overhead": PASS_OVERHEAD[g.mode],
                   "unit": "one word of one pass over the row; a pass reads ceil(N / lanes) words, one per cycle",
                   "formula": "cycles/row = overhead + (2 + P)·per_unit·ceil(N/lanes) + P·per_pass_overhead + walk"}
    out = {
        "component": "wtu", "mode": g.mode, "transform": g.transform, "lanes": g.lanes, "buckets": g.buckets,
        "config": cfg.name, "config_hash": cfg.hash(), "simulator": "amaranth.sim",
        "workload": "peaked rows: two at N = capacity / 4, one at N = capacity",
        "per_row": per_row,
        "per_job": "ceil(N / lanes) count beats + Σ rows",
        "mean_passes": mean([r["selection_passes"] + 2 for r in rows]),
        "mean_selection_passes": mean([r["selection_passes"] for r in rows]),
        "mean_walk_cycles": mean([r["walk_cycles"] for r in rows]),
        "mean_cycles_per_row": {str(n): mean([r["measured"] for r in rows if r["n"] == n])
                                for n in sorted({r["n"] for r in rows})},
        "model_matches": all(r["measured"] == r["model"] for r in rows),
        "formula": FORMULAS["exp2" if g.exp2 else g.mode],
        "rows": rows,
    }
    if g.mode == "topk":
        out["topk"] = {"k": params.k, "mean_refinement_passes": out["mean_selection_passes"],
                       "mean_bins_walked": out["mean_walk_cycles"]}
    else:
        out["early_exit"] = {
            "mean_buckets_walked": mean([r["buckets_walked"] for r in rows]),
            "mean_fraction_of_scores_to_threshold": mean([r["selected"] / r["n"] for r in rows]),
        }
    return out


FORMULAS = {
    "early_exit": "per row 2W + 6 + P·(W + 3), W = ceil(N/lanes), P = bucket passes = min(walked, top) "
                  "(0 when top = 0 or T ≥ total); per job + W",
    "histogram": "per row 2W + 6 + (W + 2 + walked) (the last term is 0 when top = 0 or T ≥ total); per job + W",
    "topk": "per row 2W + 6 + Σ_passes (W + 2 + bins walked), passes = 1 + ceil(sh0 / D) "
            "(none when k = 0 or k ≥ N); per job + W",
    "exp2": "per row W (load and bin) + fin_state + P·(W + walk_state) + W + mask_tail, P = refinement passes run "
            "(vrex.golden.dre.wtu.linear.exp2_latencies); per job + W",
}
