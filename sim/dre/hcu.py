"""Stimulus, golden expectations and cycle measurement for the HCU (hdl/dre/hcu.py).

A bench streams HCU jobs (:class:`vrex.golden.dre.jobs.HCUJob`: preloaded open-cluster codes, then token codes) as
input items and expects the assignments of the golden reference (``vrex.golden.dre.hcu.reference.hcu_assign`` or a given
mutant of it). Jobs are either random (:func:`random_hcu_jobs`, ``n`` ≈ tokens) or replayed (``jobs=``, the
trace-driven path: jobs recorded from a ReSV session or loaded with ``vrex.golden.dre.jobs.load_jobs``).
"""

from __future__ import annotations

import random

from vrex.errors import TraceError
from vrex.golden.dre.hcu.reference import early_exit_saving, hcu_assign, hcu_cycles_for
from vrex.golden.dre.jobs import HCUJob
from vrex.hdl.dre.hcu import hcu_input_layout, hcu_output_layout, hcu_token_bits

from vrex.sim.bench import StreamBench, leaf_fields, pack

__all__ = ["random_hcu_jobs", "corner_jobs", "check_jobs", "job_items", "output_layout", "expected_outputs",
           "make_bench", "token_cycles_from_result", "model_timings", "model_token_cycles", "measurement_jobs", "measure_cycles",
           "CORNERS", "SCENARIOS", "INPUT_LATENCY", "JOB_KIND"]

JOB_KIND = "hcu"      # make_bench(jobs=...) replays recorded HCU jobs (vrex sim --trace)
INPUT_LATENCY = 2     # cycles from an item's input handshake to the engine (current-frame buffer)

SCENARIOS = ("clustered", "copies", "identical", "tie", "fill", "random")


def _flip(code: int, bits: int, n: int, rng: random.Random) -> int:
    for b in rng.sample(range(bits), min(bits, n)):
        code ^= 1 << b
    return code


def _tie_pair(a: int, diff: list[int]) -> tuple[int, int]:
    """``(b, token)``: ``b`` differs from ``a`` in the bits ``diff``, ``token`` in the first half of them, so the
    token is at the same distance ``len(diff) // 2`` from ``a`` and ``b``."""
    b, token = a, a
    for d in diff:
        b ^= 1 << d
    for d in diff[:len(diff) // 2]:
        token ^= 1 << d
    return b, token


def _preload_size(cap: int, rng: random.Random) -> int:
    """Empty, small, cap-1 and full preloads are all common; large random ones are rarer (they are slow)."""
    return rng.choice([0, 0, rng.randint(1, min(cap, 24)), rng.randint(1, min(cap, 24)), rng.randint(1, cap),
                       cap - 1, cap])


def random_hcu_jobs(cfg, n_tokens: int, rng: random.Random, *, threshold: int | None = None,
                    scenarios=SCENARIOS, max_tokens: int | None = None,
                    max_preload: int | None = None) -> list[HCUJob]:
    """Jobs that exercise every rule of the HCU, about ``n_tokens`` tokens in total.

    ``max_tokens`` bounds the tokens of a job (default: the current-frame buffer + 4); ``max_preload`` the
    preloaded codes (default: the capacity; lower it to keep large-capacity simulations short).

    Scenarios: ``clustered`` (tokens near a few centres, distances around the threshold), ``copies`` (tokens
    equal to preloaded codes: distance 0), ``identical`` (one code repeated), ``tie`` (a token equidistant to
    two or more slots, the lower one placed later or earlier), ``fill`` (a nearly full table and far tokens:
    the table fills and the full policy applies), ``random`` (uniform codes).
    """
    bits, cap = cfg.resv.hash_bits, cfg.hcu_capacity
    most = cap if max_preload is None else min(cap, max_preload)
    thr = cfg.resv.hamming_threshold if threshold is None else threshold
    per_job = max_tokens or max(2, min(cfg.hcu_frame_tokens + 4, cfg.resv.recent_window_tokens))
    jobs, total = [], 0
    while total < n_tokens:
        kind = rng.choice(scenarios)
        n_tok = rng.randint(1, min(per_job, max(1, n_tokens - total)))
        centres = [rng.getrandbits(bits) for _ in range(rng.randint(1, 6))]

        def near():
            return _flip(rng.choice(centres), bits, rng.randint(max(0, thr - 2), thr + 2), rng)

        if kind == "clustered":
            pre = [near() for _ in range(_preload_size(most, rng))]
            toks = [near() if rng.random() < 0.8 else rng.getrandbits(bits) for _ in range(n_tok)]
        elif kind == "copies":
            pre = [near() for _ in range(max(1, _preload_size(most, rng)))]
            toks = [rng.choice(pre) if rng.random() < 0.7 else near() for _ in range(n_tok)]
        elif kind == "identical":
            pre = [near() for _ in range(_preload_size(most, rng))]
            toks = [near()] * n_tok
        elif kind == "tie":
            pre, toks = [], []
            for _ in range(n_tok):
                a = rng.getrandbits(bits)
                k = rng.randint(1, max(1, bits // 2))
                diff = rng.sample(range(bits), 2 * k) if 2 * k <= bits else rng.sample(range(bits), bits)
                b_code, token = _tie_pair(a, diff)
                if len(pre) + 2 <= most:
                    pair = [a, b_code] if rng.random() < 0.5 else [b_code, a]
                    pre += [rng.getrandbits(bits) for _ in range(rng.randint(0, 2)) if len(pre) + 3 <= most] + pair
                toks.append(token)
            pre = pre[:most]
        elif kind == "fill":
            pre = [rng.getrandbits(bits) for _ in range(max(0, most - rng.randint(0, 3)))]
            toks = [rng.getrandbits(bits) if rng.random() < 0.8 else rng.choice(pre or [0]) for _ in range(n_tok)]
        else:
            pre = [rng.getrandbits(bits) for _ in range(_preload_size(most, rng))]
            toks = [rng.getrandbits(bits) for _ in range(n_tok)]
        jobs.append(HCUJob(f"{kind}.{len(jobs)}", tuple(pre), tuple(toks)))
        total += n_tok
    return jobs


CORNERS = ("full_table", "threshold_zero", "threshold_max", "empty_preload", "preload_at_capacity",
           "identical_tokens", "equidistant_tie", "back_to_back_tokens", "back_to_back_jobs")


def corner_jobs(cfg, corner: str, seed: int = 0) -> tuple[list[HCUJob], int]:
    """The jobs and the threshold of one named corner case (``CORNERS``) for ``cfg``.

    - ``full_table``: the table fills during the job, later tokens find it full (``full_policy`` applies);
    - ``threshold_zero`` / ``threshold_max``: threshold 0 (nothing joins, even copies) and hash_bits + 1
      (everything joins a non-empty table);
    - ``empty_preload`` / ``preload_at_capacity``: jobs that start with no open cluster, or a full table;
    - ``identical_tokens``: one code repeated (the first opens a cluster, the others join it at distance 0);
    - ``equidistant_tie``: each token is at the same distance (below the threshold) from two slots, in the same or
      in different lane groups, the lower slot preloaded first or second;
    - ``back_to_back_tokens`` / ``back_to_back_jobs``: a long job, and many one-token jobs.
    """
    rng = random.Random(seed)
    bits, cap, lanes = cfg.resv.hash_bits, cfg.hcu_capacity, cfg.dre.hcu.lanes
    thr = cfg.resv.hamming_threshold
    frame = cfg.hcu_frame_tokens
    codes = rng.sample(range(1 << bits), min(1 << bits, cap + 3 * frame))
    far = [c ^ ((1 << bits) - 1) for c in codes]
    if corner == "full_table":
        n = max(0, cap - 2)
        return [HCUJob("full_table", tuple(codes[:n]), tuple(codes[n:n + 10]))], thr
    if corner == "threshold_zero":
        return [HCUJob("thr0", tuple(codes[:3]), tuple(codes[:3] + codes[3:6]))], 0
    if corner == "threshold_max":
        return [HCUJob("thr_max.empty", (), tuple(far[:frame])),
                HCUJob("thr_max", tuple(codes[:min(cap, 5)]), tuple(far[:frame]))], bits + 1
    if corner == "empty_preload":
        return [HCUJob("empty", (), tuple(rng.choice(codes[:3]) for _ in range(frame)))], thr
    if corner == "preload_at_capacity":
        return [HCUJob("at_capacity", tuple(codes[:cap]), tuple(codes[:2] + far[:frame]))], thr
    if corner == "identical_tokens":
        return [HCUJob("identical", tuple(codes[:min(cap, lanes + 1)]), (codes[-1],) * frame)], thr
    if corner == "equidistant_tie":
        if thr < 2:
            raise ValueError("an equidistant tie below the threshold needs resv.hamming_threshold ≥ 2")
        jobs = []
        for j in range(6):
            a = rng.getrandbits(bits)
            half = rng.randint(1, min(thr - 1, bits // 2))
            b_code, token = _tie_pair(a, rng.sample(range(bits), 2 * half))
            gap = [far[k] for k in range(min(cap - 2, rng.choice([0, lanes - 1, lanes, 2 * lanes])))]
            pair = (a, b_code) if j % 2 else (b_code, a)
            jobs.append(HCUJob(f"tie.{j}", (pair[0], *gap, pair[1]), (token, token)))
        return jobs, thr
    if corner == "back_to_back_tokens":
        return [HCUJob("long", tuple(codes[:min(cap, lanes)]),
                       tuple(rng.choice(codes[:2 * frame]) for _ in range(3 * frame)))], thr
    if corner == "back_to_back_jobs":
        return [HCUJob(f"short.{j}", tuple(codes[:j % 3]), (codes[j % 4],)) for j in range(12)], thr
    raise ValueError(f"unknown corner {corner!r}; corners: {', '.join(CORNERS)}")


def check_jobs(cfg, jobs) -> None:
    """Raise TraceError for a job this config's HCU cannot take (too many preloads, codes too wide, empty)."""
    bits, cap = cfg.resv.hash_bits, cfg.hcu_capacity
    for j, job in enumerate(jobs):
        where = f"HCU job {j} ({job.context})"
        if not job.open_codes and not job.token_codes:
            raise TraceError(f"{where} has neither preloaded codes nor tokens; drop it.")
        if len(job.open_codes) > cap:
            raise TraceError(f"{where} preloads {len(job.open_codes)} open clusters but the HCU holds {cap} "
                             f"(dre.hcu.code_memory_bytes); record the jobs with this config.")
        for c in (*job.open_codes, *job.token_codes):
            if not 0 <= c < 1 << bits:
                raise TraceError(f"{where} has code {c:#x}, which does not fit resv.hash_bits = {bits}; record the "
                                 f"jobs with this config.")


def job_items(job: HCUJob) -> list[dict]:
    """Input items of one job: the preloads, then the tokens; the last item carries ``last``."""
    items = [{"code": c, "preload": 1, "last": 0} for c in job.open_codes]
    items += [{"code": c, "preload": 0, "last": 0} for c in job.token_codes]
    items[-1]["last"] = 1
    return items


def output_layout(cfg):
    """Layout of the HCU's ``o`` stream for ``cfg``."""
    return hcu_output_layout(cfg.resv.hash_bits, cfg.hcu_capacity, hcu_token_bits(cfg.resv.recent_window_tokens))


def expected_outputs(cfg, jobs, *, reference=hcu_assign, threshold=None) -> list[dict]:
    """The assignments ``reference`` gives for every token of every job, as output-layout dicts."""
    thr = cfg.resv.hamming_threshold if threshold is None else threshold
    token_mask = (1 << hcu_token_bits(cfg.resv.recent_window_tokens)) - 1
    out = []
    for job in jobs:
        res = reference(list(job.open_codes), list(job.token_codes), code_bits=cfg.resv.hash_bits, threshold=thr,
                        capacity=cfg.hcu_capacity, assignment=cfg.resv.assignment,
                        full_policy=cfg.dre.hcu.full_policy)
        n = len(job.token_codes)
        for k, a in enumerate(res.assignments):
            out.append({"token": a.token & token_mask, "cluster": a.cluster, "distance": a.distance,
                        "new": int(a.new), "full": int(a.full), "first": int(k == 0), "last": int(k == n - 1)})
    return out


def make_bench(cfg, *, n: int = 200, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7,
               reference=hcu_assign, jobs=None, name: str = "hcu", threshold: int | None = None) -> StreamBench:
    """A bench of random jobs (about ``n`` tokens) or of the given ``jobs``, checked against ``reference``.

    ``threshold`` overrides ``resv.hamming_threshold`` (the static ``threshold`` input). Traffic: the input
    offers with probability ``p_valid`` per cycle, the output is ready with probability ``p_ready``.
    """
    thr = cfg.resv.hamming_threshold if threshold is None else threshold
    if jobs is None:
        jobs = random_hcu_jobs(cfg, n, random.Random(seed), threshold=thr)
    jobs = list(jobs)
    check_jobs(cfg, jobs)
    lin, lout = hcu_input_layout(cfg.resv.hash_bits), output_layout(cfg)
    items = [it for job in jobs for it in job_items(job)]
    expected = expected_outputs(cfg, jobs, reference=reference, threshold=thr)
    worst = sum(hcu_cycles_for(cfg, j.open_codes, j.token_codes, threshold=thr).worst_total for j in jobs)
    slowest = max(0.02, min(p_valid, p_ready))
    budget = int(2 * (worst + len(items) + len(expected)) / slowest) + 1000
    return StreamBench(name=name, inputs={"i": [pack(lin, it) for it in items]},
                       expected={"o": [pack(lout, e) for e in expected]}, fields={"o": leaf_fields(lout)},
                       statics={"threshold": thr}, p_valid=p_valid, p_ready=p_ready, seed=seed, max_cycles=budget)


def token_cycles_from_result(jobs, result) -> list[int]:
    """Per-token cycles of a no-stall run, from the output handshake cycles.

    Under no back-pressure the engine takes an item every time it is free, so the output handshake of a token
    comes ``INPUT_LATENCY`` cycles plus the cycles of every earlier item (one per preload) after the start.
    """
    outs = result.handshake_cycles["o"]
    cycles, prev, k = [], INPUT_LATENCY, 0
    for job in jobs:
        prev += len(job.open_codes)
        for _ in job.token_codes:
            cycles.append(outs[k] - prev)
            prev = outs[k]
            k += 1
    return cycles


def model_timings(cfg, jobs) -> list:
    """Per-token :class:`~vrex.golden.dre.hcu.reference.HCUTokenTiming` of the jobs under no back-pressure (``hcu_cycles_for``)."""
    return [t for j in jobs for t in hcu_cycles_for(cfg, j.open_codes, j.token_codes).tokens]


def model_token_cycles(cfg, jobs) -> list[int]:
    """Per-token cycles of the jobs under no back-pressure, from the cycle model."""
    return [t.cycles for t in model_timings(cfg, jobs)]


def measurement_jobs(cfg, *, n: int = 40, seed: int = 11) -> list[HCUJob]:
    """The cycle-measurement workload: frame-sized jobs (``model.tokens_per_frame`` tokens) of the ``clustered``,
    ``copies`` and ``random`` kinds, with up to ``8 * lanes`` preloaded open clusters."""
    return random_hcu_jobs(cfg, n, random.Random(seed), scenarios=("clustered", "copies", "random"),
                           max_tokens=cfg.model.tokens_per_frame,
                           max_preload=min(cfg.hcu_capacity, 8 * cfg.dre.hcu.lanes))


def measure_cycles(cfg, *, jobs=None, seed: int = 11, n: int = 40) -> dict:
    """Cycle figures of the HCU for ``cfg``, measured in amaranth.sim with no back-pressure.

    The workload is ``jobs``, or :func:`measurement_jobs` (frames of ``model.tokens_per_frame`` tokens, about
    ``n`` tokens, up to ``8 * lanes`` open clusters, so the edge config simulates in a few seconds). Returns the
    formula's constants, the measured and modelled cycles, and ``early_exit_saving`` =
    comparison cycles early exit saved / comparison cycles of the worst case (0 when early exit is disabled).
    """
    from vrex.hdl.dre.hcu import HCU

    from vrex.sim.amaranth_run import run_checked

    h, bits = cfg.dre.hcu, cfg.resv.hash_bits
    slices, P = bits // h.bits_per_cycle, h.pipeline_stages
    jobs = measurement_jobs(cfg, n=n, seed=seed) if jobs is None else list(jobs)
    bench = make_bench(cfg, jobs=jobs, p_valid=1.0, p_ready=1.0, name="hcu-cycles")
    result = run_checked(HCU.from_config(cfg), bench, "the HCU cycle-measurement run")
    timings = model_timings(cfg, jobs)
    measured, model = token_cycles_from_result(jobs, result), [t.cycles for t in timings]
    total = sum(measured)
    saving, compare = early_exit_saving(timings, total, lanes=h.lanes, slices=slices, early_exit=h.early_exit)
    return {
        "component": "hcu", "config": cfg.name, "config_hash": cfg.hash(),
        "per_token": {"overhead": P, "per_unit": 1,
                      "unit": f"one lane group ({h.lanes} open slots) x one bit slice ({h.bits_per_cycle} bits)",
                      "slices": slices, "lanes": h.lanes, "no_open_slot": 1},
        "per_preload": 1,
        "input_latency": INPUT_LATENCY,
        "formula": (f"worst case per token = {P} + ceil(n_open / {h.lanes}) x {slices} cycles (1 cycle when "
                    f"n_open = 0); 1 cycle per preloaded code; with early exit a token takes sum over the groups "
                    f"before the last one scanned of min({slices}, n(g) + {P - 1}) plus n(last) + {P} cycles, "
                    f"n(g) = bit slices group g ran"),
        "early_exit_saving": saving,
        "measured": {"jobs": len(jobs), "tokens": len(measured), "token_cycles": total,
                     "model_token_cycles": sum(model), "worst_token_cycles": sum(t.worst for t in timings),
                     "comparison_cycles_worst": compare,
                     "mean_open_slots": sum(t.open_slots for t in timings) / max(1, len(timings)),
                     "cycles_per_token": total / max(1, len(measured))},
        "matches_model": measured == model,
    }
