"""The needle benchmark's grid: haystack lengths × methods, every length's haystacks run as one batch, locally or
on a Dask scheduler, and its aggregation per method with intervals and paired tests.

A *haystack* is one (length, rotation): every needle sits in one slot of ``depths`` (:func:`.haystack.place_needles`;
``len(depths)`` rotations put every needle in every slot once), one prefill serves all its questions, and rotation
r asks every question in option order r (a Latin square of option positions over the rotations). Rotations beyond
the first ``D = len(depths)`` run on *haystack variants*: rotation r uses variant ``r // D`` of the length's
haystack, the same frames started at another offset (:meth:`.haystack.Haystack.variant`), so every further block of
D rotations is a new Latin square over new surroundings, with its own reference; a batch never spans two variants. A *cell* is one
(length, method): that length's haystacks run as one batch (:func:`.run.run_cell`). Per length a reference cell
(full attention, the haystack without needles, every option order) gives the calibration: an option's score is its
log-likelihood in the method's run minus its log-likelihood in the reference (domain-conditional PMI); the
prediction is the best-scoring option. The reference is method-independent, so calibration cannot favour a method:
it only removes each option's prior given the haystack. ``resv`` runs before the others of its length so that
``--budget matched`` gives them the fractions ReSV fetched at every layer and step of the same branch.

Cells are independent but for that order; with ``scheduler`` each is a Dask task (a method's task depends on its
length's resv task when budgets are matched), and each worker loads the model once. Finished cells are saved by
config, spec and cell; a rerun reads them (an interrupted grid resumes).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from vrex.errors import UsageError

__all__ = ["GridSpec", "run_grid", "aggregate", "QUICK", "slot_key", "family", "variant_of", "reference_name"]

DEPTHS = ("start", 0.1, 0.3, 0.5, 0.7, 0.9, "window")


@dataclass(frozen=True)
class GridSpec:
    lengths: tuple[int, ...] = (1024, 2048, 4096, 8192)
    depths: tuple = DEPTHS                         # slots: depths over the offloaded span, and the controls
    needles: tuple[str, ...] = ("chelsea", "coffee", "rocket", "astronaut", "motorcycle_left", "tripod",
                                "grace_hopper", "page")
    methods: tuple[str, ...] = ("full", "resv", "rekv", "infinigen", "quest", "oracle_topp")
    rotations: int = 7                             # len(DEPTHS): every needle visits every slot once; more run on
                                                   # haystack variants (a new Latin square per variant)
    orders: int = 1                                # option orders asked per question and haystack
    kinds: tuple[str, ...] = ("what", "when", "first")
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
    dtype: str = "bfloat16"                        # the LLM's weights and activations (its trained precision)
    batch: int = 5                                 # haystacks per batch (0: all rotations of a length at once);
                                                   # a batch is the unit a grid saves and resumes

    def describe(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


QUICK = dict(lengths=(1024,), depths=(0.5, "window"), needles=("chelsea", "astronaut"), rotations=2,
             kinds=("what",), methods=("full", "resv", "rekv"))

_MODELS: dict = {}
_HAYSTACKS: dict = {}
CELL_VERSION = 4          # bump when a cell's computation changes (part of the saved cells' key)


def _model(name, dtype: str = "float32"):
    import torch

    from vrex.golden.traces.llm.model import load_model

    if (name, dtype) not in _MODELS:
        _MODELS.clear()
        _HAYSTACKS.clear()
        lm = load_model(name)
        if dtype != "float32":
            lm.model.to(getattr(torch, dtype))
        _flat_output_head(lm.model)
        _MODELS[(name, dtype)] = lm
    return _MODELS[(name, dtype)]


def _flat_output_head(model) -> None:
    """Run the output head as one 2-D float32 matrix product over the tokens it keeps.

    With ``logits_to_keep=1`` the head gets a ``(B, 1, hidden)`` slice, which torch's bfloat16 ``linear`` on the
    CPU sends through a batched product that first copies the whole transposed vocabulary matrix (Qwen's 151 936 ×
    896: 0.9 s per step, 4× the rest of the model); flattened to ``(B × T, hidden)`` it is an ordinary GEMM.

    The product is float32 (a float32 copy of a bfloat16 head's weights, the hidden states widened): a bfloat16 logit
    has a resolution of 1/16 to 1/8 at the magnitudes of Qwen's (8 to 32), which quantised the calibrated option
    scores, differences of sums of such log-probabilities (at 1K a quarter of the questions had a margin within
    ±1/16 and 8 % exactly 0, a tie; docs/decisions.md N10). A float32 model's head keeps its own weights, so its
    logits are the head's bit for bit."""
    import torch
    import torch.nn.functional as F

    head = model.get_output_embeddings()
    if head is None or getattr(head, "_vrex_flat", False):
        return
    weight = head.weight if head.weight.dtype == torch.float32 else head.weight.detach().float()
    bias = None if head.bias is None else head.bias.detach().float()

    def forward(x):
        y = F.linear(x.reshape(-1, x.shape[-1]).float().contiguous(), weight, bias)
        return y.reshape(*x.shape[:-1], y.shape[-1])

    head.forward = forward
    head._vrex_flat = True


def _settings(spec):
    from vrex.golden.resv.policies import BaselineSettings

    return BaselineSettings(budget=spec.budget, top_p=spec.top_p)


def _haystack(cfg, spec, length):
    from vrex.golden.traces.llm.model import model_shape
    from vrex.golden.traces.video import VideoSpec
    from vrex.golden.evaluation.niah.haystack import build_haystack

    lm = _model(spec.model, spec.dtype)
    key = (cfg.hash(), spec.clips, spec.video, spec.fps, spec.projector, spec.seed, spec.needles, length)
    if key not in _HAYSTACKS:
        video = VideoSpec(clips=spec.clips, fps=spec.fps, path=spec.video)
        _HAYSTACKS[key] = build_haystack(cfg, lm, video, length, list(spec.needles),
                                         context=model_shape(lm.model.config)["context"], projector=spec.projector,
                                         seed=spec.seed)
    return lm, _HAYSTACKS[key]


def variant_of(spec, rotation: int) -> int:
    """The haystack variant rotation ``rotation`` runs on: one per block of ``len(spec.depths)`` rotations."""
    return rotation // len(spec.depths)


def reference_name(variant: int) -> str:
    """The reference cell's method name of a haystack variant (``reference``, ``reference-1``, …)."""
    return "reference" if variant == 0 else f"reference-{variant}"


def _reference_variant(name: str) -> int:
    return 0 if name == "reference" else int(name.rpartition("-")[2])


def _rotation_batches(spec) -> list[list[int]]:
    """The rotations in batches of ``spec.batch`` (all of a variant when 0), each within one haystack variant, so
    that the batches of fewer rotations are the first batches of more."""
    D = len(spec.depths)
    out = []
    for start in range(0, spec.rotations, D):
        rs = list(range(start, min(start + D, spec.rotations)))
        b = spec.batch or len(rs)
        out.extend(rs[i:i + b] for i in range(0, len(rs), b))
    return out


def cell(cfg, spec: GridSpec, length: int, method: str | None, matched=None, cell_dir=None, variant: int = 0) -> dict:
    """One cell: ``method`` on every haystack of ``length`` (``{"rotations": [result per rotation]}``); ``method``
    None: the reference of haystack variant ``variant`` (full attention without needles, every option order). With ``cell_dir`` (budgets other than
    matched) each batch of haystacks is saved there as it finishes and a batch already saved is read, not run: a
    killed cell resumes at its next batch, and more rotations reuse the batches of fewer. The reference is saved
    there too; the grid reads a saved one before it calls this (:func:`_saved_cell`)."""
    from vrex.golden.evaluation.niah.haystack import build_context, place_needles
    from vrex.golden.evaluation.niah.run import run_cell
    from vrex.golden.traces.llm.model import check_shapes, model_shape
    from vrex.golden.traces.trace import QUESTION

    lm, hay = _haystack(cfg, spec, length)
    check_shapes(cfg, model_shape(lm.model.config), lm.source.label)
    window = cfg.resv.recent_window_tokens
    t0 = time.perf_counter()
    if method is None:             # the reference needs no retrieval: the haystack in one prefill step (faster)
        ctx = build_context(lm, hay.variant(variant), None, None, spec.kinds, window)
        ctx.segments = [(QUESTION, ctx.tokens)]
        out = run_cell(cfg, lm, ctx, "full", _settings(spec), layers=spec.layers, engine=spec.engine)
        out.update({"length": length, "context_tokens": ctx.tokens, "haystack_frames": hay.facts["frames"],
                    "seconds_wall": round(time.perf_counter() - t0, 3), "haystack_variant": variant})
        if cell_dir is not None:
            _save(cell_dir, cfg, spec, (length, reference_name(variant)), out)
        return out
    rotations, seconds = [], 0.0
    keep = cell_dir is not None and spec.budget != "matched"
    for batch in _rotation_batches(spec):
        saved = _saved(cell_dir, cfg, spec, (length, method), batch) if keep else None
        if saved is not None:
            rotations.extend(saved["rotations"])
            seconds += saved.get("seconds_wall") or 0.0
            continue
        t1 = time.perf_counter()
        v = variant_of(spec, batch[0])
        ctxs = [build_context(lm, hay.variant(v), place_needles(list(spec.needles), list(spec.depths), r),
                              spec.orders, spec.kinds, window, order_offset=r) for r in batch]
        fr = [m["fractions"] for m in matched["rotations"][batch[0]:batch[-1] + 1]] if isinstance(matched, dict) \
            else None
        outs = run_cell(cfg, lm, ctxs, method, _settings(spec), layers=spec.layers, engine=spec.engine, matched=fr)
        for r, c, o in zip(batch, ctxs, outs):
            o.update({"length": length, "context_tokens": c.tokens, "rotation": r,
                      "haystack_frames": hay.facts["frames"], "haystack_variant": v})
            if method != "resv":
                o.pop("fractions", None)
        rotations.extend(outs)
        seconds += time.perf_counter() - t1
        if keep:
            _save(cell_dir, cfg, spec, (length, method),
                  {"rotations": outs, "seconds_wall": round(time.perf_counter() - t1, 3)}, batch)
    return {"method": method, "length": length, "rotations": rotations, "seconds_wall": round(seconds, 3)}


def _jobs(spec):
    """(key, length, method or None, needs resv) in run order: per length the reference, resv, then the rest."""
    methods = list(spec.methods)
    matched = spec.budget == "matched"
    if matched and "resv" not in methods:
        raise UsageError("--budget matched gives each method the fractions ReSV fetched: include resv in --methods.")
    order = sorted(methods, key=lambda m: m != "resv")
    jobs = []
    variants = range(variant_of(spec, spec.rotations - 1) + 1)
    for L in spec.lengths:
        jobs.extend(((L, reference_name(v)), L, None, None) for v in variants)
        for m in order:
            jobs.append(((L, m), L, m, (L, "resv") if matched and m != "resv" else None))
    return jobs


def _bar(total: int, enabled: bool):
    """The grid's progress bar (tqdm: rate and ETA; a line per cell when stderr is not a terminal)."""
    from tqdm import tqdm

    return tqdm(total=total, unit="cell", desc="niah", disable=not enabled, file=sys.stderr, dynamic_ncols=True,
                mininterval=0 if not sys.stderr.isatty() else 0.1)


def _cell_file(cell_dir, cfg, spec, key, batch=None):
    """The file of one saved unit: the reference of a length, or one batch of a (length, method) cell, keyed by the
    config, the spec (but for the lengths, methods, rotation count and batch size, which only choose the units) and
    the batch's haystacks."""
    import hashlib
    import json

    L, m = key
    what = {"config": cfg.hash(), "spec": {k: v for k, v in spec.describe().items()
                                           if k not in ("lengths", "methods", "rotations", "batch")},
            "length": L, "method": m, "haystacks": list(batch) if batch is not None else None,
            "version": CELL_VERSION}
    h = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]
    span = f"-r{batch[0]}-{batch[-1]}" if batch is not None else ""
    return cell_dir / f"{L}-{m.replace('@', '_at_').replace(':', '_')}{span}-{h}.json"


def _saved(cell_dir, cfg, spec, key, batch=None):
    import json

    f = _cell_file(cell_dir, cfg, spec, key, batch)
    try:
        return json.loads(f.read_text()) if f.is_file() else None
    except ValueError:
        return None


def _save(cell_dir, cfg, spec, key, result, batch=None):
    import json
    import os

    f = _cell_file(cell_dir, cfg, spec, key, batch)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f"{f.name}.{os.getpid()}.tmp")
    kept = {k: v for k, v in result.items() if k != "fractions"}
    if "rotations" in kept:
        kept["rotations"] = [{k: v for k, v in o.items() if k != "fractions"} for o in kept["rotations"]]
    tmp.write_text(json.dumps(kept, default=str))
    os.replace(tmp, f)


def _saved_cell(cell_dir, cfg, spec, key):
    """A (length, method) cell assembled from its saved units, or None when one is missing."""
    L, m = key
    if m.startswith("reference"):
        return _saved(cell_dir, cfg, spec, key)
    parts = [_saved(cell_dir, cfg, spec, key, b) for b in _rotation_batches(spec)]
    if any(p is None for p in parts):
        return None
    return {"method": m, "length": L, "rotations": [o for p in parts for o in p["rotations"]],
            "seconds_wall": round(sum(p.get("seconds_wall") or 0.0 for p in parts), 3)}


def run_grid(cfg, spec: GridSpec, *, scheduler: str | None = None, progress: bool = True, cell_dir=None) -> dict:
    """Every cell of ``spec``; ``{"cells": {key: cell}, …}`` with keys ``"L/r/method"`` per haystack (``"L/ref/
    reference"`` the reference). With ``cell_dir`` (budgets other than matched) each finished cell is saved there and
    a rerun of the same config and spec reads it instead of running it again: an interrupted grid resumes."""
    jobs = _jobs(spec)
    t0 = time.perf_counter()
    results = {}
    keep = cell_dir is not None and spec.budget != "matched"
    if scheduler is None:
        with _bar(len(jobs), progress) as bar:
            for key, L, m, dep in jobs:
                bar.set_postfix_str(f"{key[1]} at {L} tokens")
                saved = _saved_cell(cell_dir, cfg, spec, key) if keep else None
                results[key] = saved if saved is not None else cell(
                    cfg, spec, L, m, results.get(dep), cell_dir=cell_dir if keep else None,
                    variant=_reference_variant(key[1]) if m is None else 0)
                bar.update()
    else:
        results = _run_dask(cfg, spec, jobs, scheduler, progress, cell_dir)
    cells = {}
    for (L, m), v in results.items():
        if m.startswith("reference"):
            cells[f"{L}/ref/{m}"] = v
        else:
            for o in v["rotations"]:
                cells[f"{L}/{o['rotation']}/{m}"] = o
    return {"cells": cells, "seconds": round(time.perf_counter() - t0, 1),
            "cell_seconds": {f"{L}/{m}": v.get("seconds_wall") for (L, m), v in results.items()}}


def _run_dask(cfg, spec, jobs, scheduler, progress, cell_dir):
    try:
        from distributed import Client, as_completed

        from vrex.golden.dask_local import local_cluster
    except ImportError:
        raise UsageError("--scheduler needs Dask distributed; install it with: pip install distributed.") from None
    results = {}
    keep = cell_dir is not None and spec.budget != "matched"
    if keep:
        for key, *_ in jobs:
            saved = _saved_cell(cell_dir, cfg, spec, key)
            if saved is not None:
                results[key] = saved
    todo = [j for j in jobs if j[0] not in results]
    if not todo:
        return results
    local = local_cluster(2) if scheduler == "local" else None
    try:
        client = Client(local) if local is not None else Client(scheduler, timeout=10)
    except OSError as e:
        raise UsageError(f"no Dask scheduler answers at {scheduler!r} ({e}); start one or use --scheduler local.") \
            from None
    try:
        futures, keys = {}, {}
        for key, L, m, dep in todo:
            f = client.submit(cell, cfg, spec, L, m, futures.get(dep, results.get(dep)),
                              cell_dir=cell_dir if keep else None,
                              variant=_reference_variant(key[1]) if m is None else 0,
                              key=f"niah-{L}-{key[1]}-{id(spec)}", pure=False)
            futures[key], keys[f.key] = f, key
        with _bar(len(jobs), progress) as bar:
            bar.update(len(jobs) - len(todo))
            for f in as_completed(list(futures.values())):
                key = keys[f.key]
                results[key] = f.result()
                bar.set_postfix_str(f"{key[1]} at {key[0]} tokens")
                bar.update()
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


def slot_key(depth) -> str:
    """A slot's name in keys and labels: a depth as ``%g`` (``0.5``), a control by its name (``window``)."""
    return depth if isinstance(depth, str) else f"{depth:g}"


def family(method: str) -> str:
    """The sweep a method belongs to: ``rekv@0.3`` → ``rekv``, ``resv_row@0.7`` → ``resv_row``; a per-stage point
    ``resv_row@F:T`` with ``F ≠ T`` sweeps the frame p at a fixed text p: ``resv_row@0.7:0.99`` →
    ``resv_row@*:0.99`` (``resv_row@0.9:0.9`` is ``resv_row``)."""
    base, _, arg = method.partition("@")
    frame, colon, text = arg.partition(":")
    if colon and frame != text and float(frame) != float(text):
        return f"{base}@*:{text}"
    return base


def _questions(cells: dict) -> list[dict]:
    """One record per (method, haystack, question): calibrated scores averaged over the orders asked, the
    prediction, the margin (truth minus best distractor), the needle hit rate."""
    from vrex.golden.evaluation.niah.run import option_scores

    out = []
    for key, c in cells.items():
        L, r, m = key.split("/")
        if r == "ref":
            continue
        ref = cells[f"{L}/ref/{reference_name(c.get('haystack_variant', 0))}"]["branches"]
        by_q: dict[str, list] = {}
        for bkey, b in c["branches"].items():
            by_q.setdefault(b.get("question", b["needle_name"]), []).append((bkey, b))
        for q, asked in by_q.items():
            scores = _mean_scores([option_scores(b["log_likelihood"], ref[bkey]["log_likelihood"])
                                   for bkey, b in asked])
            b0 = asked[0][1]
            truth = b0["truth"]
            pred = max(scores, key=scores.get)
            watched = [b["needle"] for _, b in asked if b["needle"]]
            sel = sum(w["selections"] for w in watched)
            out.append({"method": m, "length": int(L), "rotation": int(r), "question": q,
                        "kind": b0.get("kind", "what"), "subjects": b0.get("subjects") or [b0["needle_name"]],
                        "needle": b0["needle_name"], "depth": b0["depth"], "counted": b0.get("counted", True),
                        "correct": pred == truth, "prediction": pred, "truth": truth,
                        "margin": round(scores[truth] - max(v for o, v in scores.items() if o != truth), 4),
                        "orders": len(asked),
                        "exact_match": _mean([float(bool(b["exact_match"])) for _, b in asked]),
                        "hit_rate": sum(w["hits"] for w in watched) / sel if sel else None,
                        "selections": sel, "missed": _summed([w.get("missed") or {} for w in watched]),
                        "layer_selections": _summed([w.get("layer_selections") or {} for w in watched]),
                        "kv_heads": max([w.get("kv_heads") or 0 for w in watched] or [0]),
                        "scores": {k: round(v, 4) for k, v in scores.items()}})
    return out


def _group(q: dict) -> str:
    """A question's group across haystacks: its kind and subjects (``what:chelsea``, ``first:chelsea+coffee``)."""
    return f"{q['kind']}:{'+'.join(q['subjects'])}"


def _summed(counts: list[dict]) -> dict:
    out: dict = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _misses(qs: list[dict]) -> dict:
    """Where the wrong answers lost the needle: the needle hit rate of the right and of the wrong answers (a wrong
    answer whose needle was fetched points past the selection: the model, the position, the branch), and per layer
    the share of the wrong answers' selections there (KV heads × question and answer steps) that fetched none of the
    needle's tokens, worst first; per (layer, KV head) the same, the ten worst."""
    def rate(sub):
        sel = sum(q["selections"] for q in sub)
        return round(sum(q["hit_rate"] * q["selections"] for q in sub) / sel, 4) if sel else None

    asked = [q for q in qs if q.get("selections")]
    wrong = [q for q in asked if not q["correct"]]
    missed, per_layer = _summed([q.get("missed") or {} for q in wrong]), _summed([q.get("layer_selections") or {}
                                                                                  for q in wrong])
    heads = max([q.get("kv_heads") or 1 for q in wrong] or [1])
    layer_missed = _summed([{k.split(".")[0]: v} for k, v in missed.items()])
    share = {k: round(layer_missed.get(k, 0) / n, 4) for k, n in per_layer.items() if n}
    head_share = {k: round(v * heads / per_layer[k.split(".")[0]], 4) for k, v in missed.items()
                  if per_layer.get(k.split(".")[0])}
    return {"hit_rate_right": rate([q for q in asked if q["correct"]]), "hit_rate_wrong": rate(wrong),
            "wrong": len(wrong),
            "missed_share_per_layer": dict(sorted(share.items(), key=lambda kv: (-kv[1], int(kv[0])))),
            "worst_heads": dict(sorted(head_share.items(), key=lambda kv: -kv[1])[:10])}


def _paired(qs: list[dict], method: str, other: str) -> tuple[list, list, list]:
    """The outcomes of ``method`` and ``other`` on the questions both were asked, and their haystacks."""
    mine = {(q["length"], q["rotation"], q["question"]): q["correct"] for q in qs if q["method"] == method}
    theirs = {(q["length"], q["rotation"], q["question"]): q["correct"] for q in qs if q["method"] == other}
    keys = sorted(set(mine) & set(theirs))
    return [mine[k] for k in keys], [theirs[k] for k in keys], [(k[0], k[1]) for k in keys]


def _accuracy_block(qs: list[dict]) -> dict:
    from vrex.golden.evaluation.niah.stats import wilson

    n = len(qs)
    k = sum(q["correct"] for q in qs)
    return {"n_questions": n, "accuracy": k / n if n else None,
            "accuracy_ci": list(wilson(k, n)) if n else None,
            "margin": _mean([q["margin"] for q in qs])}


def aggregate(spec: GridSpec, grid: dict) -> dict:
    """Per method: accuracy with its Wilson interval over the counted questions, the mean margin, Δ against full
    (points) with its paired cluster-bootstrap interval, McNemar's exact p against full and against ReKV, per kind
    and per (length, slot) cell, the controls apart, the needle hit rate and the frame/text ratios; per sweep family
    the traffic at iso-accuracy per stage; the needles and kinds full attention does not answer (dropped, with the
    counts)."""
    from vrex.golden.evaluation.niah.needles import KINDS
    from vrex.golden.evaluation.niah.stats import distinguishable, iso_accuracy_traffic, mcnemar_exact, \
        paired_bootstrap_delta

    cells = grid["cells"]
    questions = _questions(cells)
    full = [q for q in questions if q["method"] == "full" and q["kind"] == "what"]
    answered = {n: _mean([float(q["correct"]) for q in full if q["needle"] == n]) for n in spec.needles}
    # The questions full attention cannot answer: per question group (kind and subjects: "what" of chelsea, "when"
    # of rocket, "first" of chelsea + coffee) over every haystack and length, at chance or below: dropped from every
    # method's score (full's answers pick the groups, never a method's).
    groups: dict[str, list[float]] = {}
    for q in questions:
        if q["method"] == "full" and q["counted"]:
            groups.setdefault(_group(q), []).append(float(q["correct"]))
    ceiling = {g: sum(v) / len(v) for g, v in groups.items()}
    dropped_groups = sorted(g for g, a in ceiling.items() if a <= KINDS[g.split(":")[0]] + 1e-9)
    dropped = sorted(n for n in spec.needles if all(f"{k}:{n}" in dropped_groups for k in spec.kinds
                                                    if k != "first" and f"{k}:{n}" in ceiling)
                     and any(f"{k}:{n}" in ceiling for k in spec.kinds if k != "first"))
    kept = [q for q in questions if _group(q) not in dropped_groups]
    full_kind = {k: _mean([float(q["correct"]) for q in questions if q["method"] == "full" and q["kind"] == k
                           and q["counted"]]) for k in spec.kinds}
    dropped_kinds = sorted(k for k in spec.kinds if any(g.startswith(k + ":") for g in ceiling)
                           and all(g in dropped_groups for g in ceiling if g.startswith(k + ":")))
    counted = [q for q in kept if q["counted"]]
    methods = {}
    for m in spec.methods:
        qs = [q for q in counted if q["method"] == m]
        per_cell = {}             # the heat map: "what" questions per (length, slot), the controls included
        for q in (q for q in kept if q["method"] == m and q["kind"] == "what"):
            c = per_cell.setdefault(f"{q['length']}/{slot_key(q['depth'])}", {"questions": 0, "correct": 0})
            c["questions"] += 1
            c["correct"] += int(q["correct"])
        for c in per_cell.values():
            c["accuracy"] = c["correct"] / c["questions"]
        mc = [c for k, c in cells.items() if k.endswith(f"/{m}") and "/ref/" not in k]
        block = {**_accuracy_block(qs), "questions": len(qs),
                 "exact_match": _mean([q["exact_match"] for q in qs]),
                 "needle_hit_rate": _mean([q["hit_rate"] for q in qs]) if m != "full" else 1.0,
                 "ratio": {"frame": _mean([c["frame_ratio"] for c in mc]), "text": _mean([c["text_ratio"] for c in mc])},
                 "per_kind": {k: _accuracy_block([q for q in qs if q["kind"] == k]) for k in spec.kinds},
                 "per_length": {str(L): _accuracy_block([q for q in qs if q["length"] == L]) for L in spec.lengths},
                 "controls": _accuracy_block([q for q in kept if q["method"] == m and not q["counted"]]),
                 "misses": _misses(qs) if m != "full" else None,
                 "cells": per_cell}
        for other, tag in (("full", "full"), ("rekv", "rekv")):
            a, b, cl = _paired(counted, m, other) if other in spec.methods else ([], [], [])
            block[f"mcnemar_p_vs_{tag}"] = mcnemar_exact(a, b) if a and m != other else None
            if tag == "full":
                if a and m != other:
                    d = paired_bootstrap_delta(a, b, cl)
                    block["delta_points"] = round(100 * d["delta"], 2)
                    block["delta_ci"] = [round(100 * x, 2) for x in d["ci"]]
                    block["distinguishable"] = distinguishable(d["ci"])
                else:
                    block["delta_points"] = 0.0 if m == other and qs else None
                    block["delta_ci"], block["distinguishable"] = None, None
        methods[m] = {"niah": block}
    iso, single = {}, {}
    families: dict[str, list[str]] = {}
    for m in spec.methods:
        if m not in ("full", "needle_oracle", "full_minus_needle"):
            families.setdefault(family(m), []).append(m)
    if "full" in spec.methods:
        for fam, members in families.items():
            if len(members) < 2:
                if "@" in members[0]:
                    single[fam] = members[0]
                continue
            iso[fam] = {}
            for stage in ("frame", "text"):
                points, ref, cl = [], None, None
                for m in members:
                    a, b, c = _paired(counted, m, "full")
                    if not a or methods[m]["niah"]["ratio"][stage] is None:
                        continue
                    if ref is not None and c != cl:
                        continue
                    ref, cl = b, c
                    points.append((min(1.0, max(0.0, methods[m]["niah"]["ratio"][stage])), a))
                if len(points) >= 2:
                    r = iso_accuracy_traffic(points, ref, cl)
                    r["methods"] = members
                    iso[fam][stage] = r
    return {"methods": methods, "iso_accuracy": iso, "single_point_sweeps": single, "full_attention_per_needle": answered,
            "dropped_needles": dropped, "full_attention_per_kind": full_kind, "dropped_kinds": dropped_kinds,
            "full_attention_per_group": {g: round(a, 4) for g, a in sorted(ceiling.items())},
            "dropped_groups": dropped_groups,
            "chance": {k: KINDS[k] for k in spec.kinds}, "questions": questions}
