"""The needle benchmark's grid: haystack lengths × rotations × methods, run locally or on a Dask scheduler, and
its aggregation per method.

A *cell* is one (length, rotation, method): every needle sits at one depth (:func:`.haystack.place_needles`;
``len(depths)`` rotations put every needle at every depth once), one prefill serves all of them. Per length a
reference cell (full attention, the haystack without needles) gives the calibration: an option's score is its
log-likelihood in the method's run minus its log-likelihood in the reference (domain-conditional PMI); the
prediction is the best-scoring option. The reference is method-independent, so calibration cannot favour a
method: it only removes each option's prior given the haystack. ``resv`` runs before the others of its length so
that ``--budget matched`` gives them the fractions ReSV fetched at every layer and step of the same branch.

Cells are independent but for that order; with ``scheduler`` each is a Dask task (a method's task depends on its
length's resv task when budgets are matched), and each worker loads the model once.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from vrex.errors import UsageError

__all__ = ["GridSpec", "run_grid", "aggregate", "QUICK"]


@dataclass(frozen=True)
class GridSpec:
    lengths: tuple[int, ...] = (1024, 2048, 4096, 8192)
    depths: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    needles: tuple[str, ...] = ("chelsea", "coffee", "rocket", "astronaut", "motorcycle_left")
    methods: tuple[str, ...] = ("full", "resv", "rekv", "infinigen", "quest", "oracle_topp")
    rotations: int = 1
    orders: int = 5                                # option orders asked per needle (scores averaged over them)
    model: str = "qwen05"
    clips: tuple[str, ...] = ("bikes", "bigbuckbunny", "carphone_pristine")
    video: str = ""
    fps: float = 5.0
    projector: str = "semantic"
    budget: str | float = "paper"
    top_p: float = 0.85
    layers: tuple[int, ...] | None = None
    engine: str = "tensor"
    seed: int = 0

    def describe(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


QUICK = dict(lengths=(1024,), depths=(0.25, 1.0), needles=("chelsea", "astronaut"), methods=("full", "resv", "rekv"))

_MODELS: dict = {}
CELL_VERSION = 2          # bump when a cell's computation changes (part of the saved cells' key)


def _model(name):
    from vrex.golden.traces.llm.model import load_model

    if name not in _MODELS:
        _MODELS.clear()
        _MODELS[name] = load_model(name)
    return _MODELS[name]


def _settings(spec):
    from vrex.golden.resv.policies import BaselineSettings

    return BaselineSettings(budget=spec.budget, top_p=spec.top_p)


def _haystack(cfg, spec, length):
    from vrex.golden.traces.llm.model import model_shape
    from vrex.golden.traces.video import VideoSpec
    from vrex.golden.evaluation.niah.haystack import build_haystack

    lm = _model(spec.model)
    video = VideoSpec(clips=spec.clips, fps=spec.fps, path=spec.video)
    return lm, build_haystack(cfg, lm, video, length, list(spec.needles),
                              context=model_shape(lm.model.config)["context"], projector=spec.projector,
                              seed=spec.seed)


def cell(cfg, spec: GridSpec, length: int, rotation: int | None, method: str, matched=None) -> dict:
    """One cell (``rotation`` None: the reference, full attention without needles)."""
    from vrex.golden.evaluation.niah.haystack import build_context, place_needles
    from vrex.golden.evaluation.niah.run import run_cell
    from vrex.golden.traces.llm.model import check_shapes, model_shape
    from vrex.golden.traces.trace import QUESTION

    lm, hay = _haystack(cfg, spec, length)
    check_shapes(cfg, model_shape(lm.model.config), lm.source.label)
    depths = None if rotation is None else place_needles(list(spec.needles), list(spec.depths), rotation)
    ctx = build_context(lm, hay, depths, spec.orders)
    if rotation is None:           # the reference needs no retrieval: the haystack in one prefill step (faster)
        ctx.segments = [(QUESTION, ctx.tokens)]
    t0 = time.perf_counter()
    out = run_cell(cfg, lm, ctx, method, _settings(spec), layers=spec.layers, engine=spec.engine,
                   matched=matched.get("fractions") if isinstance(matched, dict) else None)
    out.update({"length": length, "context_tokens": ctx.tokens, "rotation": rotation,
                "haystack_frames": hay.facts["frames"], "seconds_wall": round(time.perf_counter() - t0, 3)})
    if method != "resv":
        out.pop("fractions", None)
    return out


def _jobs(spec):
    """(key, length, rotation, method, needs resv) in run order: per length the reference, resv, then the rest."""
    methods = list(spec.methods)
    matched = spec.budget == "matched"
    if matched and "resv" not in methods:
        raise UsageError("--budget matched gives each method the fractions ReSV fetched: include resv in --methods.")
    order = sorted(methods, key=lambda m: m != "resv")
    jobs = []
    for L in spec.lengths:
        jobs.append(((L, None, "reference"), L, None, "full", None))
        for r in range(spec.rotations):
            for m in order:
                dep = (L, r, "resv") if matched and m != "resv" else None
                jobs.append(((L, r, m), L, r, m, dep))
    return jobs


def _line(done, total, key, seconds, t0):
    L, r, m = key
    eta = (time.perf_counter() - t0) / done * (total - done)
    bar = "#" * (20 * done // total) + "." * (20 - 20 * done // total)
    print(f"\r  [{bar}] {done}/{total} cells; {m} at {L} tokens{'' if r is None else f', rotation {r}'} "
          f"{seconds:.0f} s; ETA {eta / 60:.1f} min   ", end="" if sys.stderr.isatty() else "\n",
          file=sys.stderr, flush=True)


def _cell_file(cell_dir, cfg, spec, key):
    import hashlib
    import json

    L, r, m = key
    what = {"config": cfg.hash(), "spec": {k: v for k, v in spec.describe().items() if k not in ("lengths", "methods")},
            "length": L, "rotation": r, "method": m, "version": CELL_VERSION}
    h = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]
    return cell_dir / f"{L}-{'ref' if r is None else r}-{m}-{h}.json"


def _saved(cell_dir, cfg, spec, key):
    import json

    f = _cell_file(cell_dir, cfg, spec, key)
    try:
        return json.loads(f.read_text()) if f.is_file() else None
    except ValueError:
        return None


def _save(cell_dir, cfg, spec, key, result):
    import json
    import os

    f = _cell_file(cell_dir, cfg, spec, key)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f"{f.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({k: v for k, v in result.items() if k != "fractions"}, default=str))
    os.replace(tmp, f)


def run_grid(cfg, spec: GridSpec, *, scheduler: str | None = None, progress: bool = True, cell_dir=None) -> dict:
    """Every cell of ``spec``; ``{"cells": {key: cell}, "spec": …}`` with keys ``"L/r/method"``. With ``cell_dir``
    (local runs, budgets other than matched) each finished cell is saved there and a rerun of the same config and
    spec reads it instead of running it again: an interrupted grid resumes."""
    jobs = _jobs(spec)
    t0 = time.perf_counter()
    results = {}
    if scheduler is None:
        for i, (key, L, r, m, dep) in enumerate(jobs, 1):
            t = time.perf_counter()
            saved = _saved(cell_dir, cfg, spec, key) if cell_dir is not None and spec.budget != "matched" else None
            results[key] = saved if saved is not None else cell(cfg, spec, L, r, m, results.get(dep))
            if cell_dir is not None and saved is None:
                _save(cell_dir, cfg, spec, key, results[key])
            if progress:
                _line(i, len(jobs), key, time.perf_counter() - t, t0)
    else:
        results = _run_dask(cfg, spec, jobs, scheduler, progress, t0)
    if progress and sys.stderr.isatty():
        print(file=sys.stderr)
    return {"cells": {f"{L}/{'ref' if r is None else r}/{m}": v for (L, r, m), v in results.items()},
            "seconds": round(time.perf_counter() - t0, 1)}


def _run_dask(cfg, spec, jobs, scheduler, progress, t0):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError("--scheduler needs Dask distributed; install it with: pip install distributed.") from None
    local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True) if scheduler == "local" else None
    try:
        client = Client(local) if local is not None else Client(scheduler, timeout=10)
    except OSError as e:
        raise UsageError(f"no Dask scheduler answers at {scheduler!r} ({e}); start one or use --scheduler local.") \
            from None
    try:
        futures, keys = {}, {}
        for key, L, r, m, dep in jobs:
            f = client.submit(cell, cfg, spec, L, r, m, futures.get(dep), key=f"niah-{L}-{r}-{m}-{id(spec)}", pure=False)
            futures[key], keys[f.key] = f, key
        results = {}
        for i, f in enumerate(as_completed(list(futures.values())), 1):
            results[keys[f.key]] = f.result()
            if progress:
                _line(i, len(jobs), keys[f.key], results[keys[f.key]]["seconds"]["total"], t0)
        return results
    finally:
        client.close()
        if local is not None:
            local.close()


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _mean_scores(per_order: list[dict]) -> dict:
    """An option's calibrated score averaged over the option orders asked (each order's own reference)."""
    return {o: sum(d[o] for d in per_order) / len(per_order) for o in per_order[0]}


def aggregate(spec: GridSpec, grid: dict) -> dict:
    """Per method: accuracy (calibrated multiple choice), exact match, the drop against full attention in points,
    the needle hit rate and the frame/text ratios; per (length, depth) cell with the count of questions; the
    needles full attention does not answer (dropped from the scores)."""
    from vrex.golden.evaluation.niah.run import option_scores

    cells = grid["cells"]
    questions = []            # (method, length, depth, needle, correct, exact, hit)
    for key, c in cells.items():
        L, r, m = key.split("/")
        if r == "ref":
            continue
        ref = cells[f"{L}/ref/reference"]["branches"]
        by_needle: dict[str, list] = {}
        for bkey, b in c["branches"].items():
            by_needle.setdefault(b["needle_name"], []).append((bkey, b))
        for needle, asked in by_needle.items():
            scores = _mean_scores([option_scores(b["log_likelihood"], ref[bkey]["log_likelihood"])
                                   for bkey, b in asked])
            truth = asked[0][1]["truth"]
            pred = max(scores, key=scores.get)
            watched = [b["needle"] for _, b in asked if b["needle"]]
            sel = sum(w["selections"] for w in watched)
            hit = sum(w["hits"] for w in watched) / sel if sel else None
            questions.append({"method": m, "length": int(L), "depth": asked[0][1]["depth"], "needle": needle,
                              "correct": pred == truth, "prediction": pred, "orders": len(asked),
                              "exact_match": _mean([float(bool(b["exact_match"])) for _, b in asked]),
                              "hit_rate": hit, "scores": {k: round(v, 4) for k, v in scores.items()}})
    full = [q for q in questions if q["method"] == "full"]
    answered = {n: _mean([float(q["correct"]) for q in full if q["needle"] == n]) for n in spec.needles}
    dropped = sorted(n for n, a in answered.items() if a is not None and a <= 1 / 5 + 1e-9) if full else []
    kept = [q for q in questions if q["needle"] not in dropped]
    methods = {}
    for m in spec.methods:
        qs = [q for q in kept if q["method"] == m]
        per_cell = {}
        for q in qs:
            k = f"{q['length']}/{q['depth']:g}"
            c = per_cell.setdefault(k, {"questions": 0, "correct": 0})
            c["questions"] += 1
            c["correct"] += int(q["correct"])
        for c in per_cell.values():
            c["accuracy"] = c["correct"] / c["questions"]
        mc = [c for c in cells.values() if c["method"] == m and c.get("rotation") is not None]
        methods[m] = {"niah": {
            "accuracy": _mean([float(q["correct"]) for q in qs]), "questions": len(qs),
            "exact_match": _mean([q["exact_match"] for q in qs]),
            "needle_hit_rate": _mean([q["hit_rate"] for q in qs]) if m != "full" else 1.0,
            "ratio": {"frame": _mean([c["frame_ratio"] for c in mc]), "text": _mean([c["text_ratio"] for c in mc])},
            "cells": per_cell}}
    if "full" in methods:
        base = methods["full"]["niah"]["accuracy"]
        for m in methods.values():
            a = m["niah"]["accuracy"]
            m["niah"]["delta_points"] = None if a is None or base is None else round(100 * (a - base), 2)
    return {"methods": methods, "full_attention_per_needle": answered, "dropped_needles": dropped,
            "questions": questions}
