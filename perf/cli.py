"""Sub-command ``vrex perf``: the system performance and energy comparison with the paper's numbers."""

from __future__ import annotations

import json
from pathlib import Path

from vrex.cli import add_config_option, add_set_option, load_config_arg, parse_override
from vrex.errors import UsageError, output_file, output_folder

__all__ = ["register"]


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values:
        raise UsageError(f"{option} {text!r}: give comma-separated integers, e.g. {option} 1,4,8,16.")
    return values


def _command(args) -> str:
    """The command line that made the view (for the markdown), without machine paths."""
    parts = ["vrex perf", f"-c {args.config}" if getattr(args, "config", None) else ""]
    if args.cycle_records:
        parts.append("--cycle-records")
    if args.figures:
        parts.append("--figures " + " ".join(Path(f).name for f in args.figures))
    parts.append("--layer-timeline" + (f" {args.layer_timeline}" if args.layer_timeline else ""))
    return " ".join(p for p in parts if p)


def _ratio_groups(args, measured):
    """The golden reports grouped by model (:mod:`.per_model`): the shipped extracts with ``--shipped-ratios``,
    else ``--golden-json``'s reports; None when neither is given."""
    from .per_model import SHIPPED_GOLDEN, group_by_model, read_shipped

    if args.shipped_ratios:
        return read_shipped(SHIPPED_GOLDEN)
    return group_by_model(measured) if measured is not None else None


def _cmd_perf(args) -> int:
    from vrex.paths import build_dir

    from .figures_input import cycle_records, read_figures_files
    from .golden_input import read_golden_jsons
    from .inputs import default_figures_path
    from .report import comparison_rows, render_text, to_json
    from .sweep import evaluate

    if args.shipped_ratios and args.golden_json:
        raise UsageError("--shipped-ratios and --golden-json both give the retrieval ratios; give one of them.")
    cfg = load_config_arg(args, with_sets=False)
    json_out = output_file(args.json, "--json") if args.json else None
    plot_dir = output_folder(args.plot, "--plot") if args.plot else None
    overrides = dict(parse_override(t) for t in args.set or [])     # with --batches / --kv-sizes: one check
    if args.batches:
        overrides["perf.batches"] = _int_list(args.batches, "--batches")
    if args.kv_sizes:
        overrides["perf.kv_sizes"] = _int_list(args.kv_sizes, "--kv-sizes")
    if overrides:
        cfg = cfg.with_overrides(overrides, source="command line")
    measured = read_golden_jsons(args.golden_json) if args.golden_json else None
    groups = _ratio_groups(args, measured)
    per_model = groups is not None and (len(groups) > 1 or args.shipped_ratios)
    head = None
    if per_model:       # several models' reports: the headline model's are the run's ratios (decisions.md M1)
        from .per_model import headline

        key, why = headline(cfg, groups)
        head = {"config": key, "model": groups[key].model, "why": why}
        measured = groups[key].measured
    figure_files = [] if args.no_figures else list(args.figures or [])
    if not args.no_figures and not figure_files and default_figures_path():
        figure_files = [default_figures_path()]
    if args.cycle_records:
        found = cycle_records(cfg)
        if not found:
            raise UsageError(f"--cycle-records: no HCU / WTU / KVMU / LXE / core cycle records for config {cfg.name} (hash "
                             f"{cfg.hash()}) under build/figures/cycles; `vrex report` or `vrex synth` writes them.")
        figure_files += found
    figures = read_figures_files(figure_files) if figure_files else None
    if args.sweep:
        from .design_sweep import run_sweep_cli

        return run_sweep_cli(args.sweep, cfg, measured, figures, strict=args.strict,
                             out_dir=Path(args.plot) if args.plot else None, plot=not args.no_plot)
    if args.results:
        from .results import write_results

        path = write_results(args.results, measured=measured, figures=figures, strict=args.strict,
                             groups=groups if per_model else None)
        print(f"wrote {path}")
        return 0

    ev = evaluate(cfg, measured, figures, strict=args.strict)
    rows = comparison_rows(ev)
    print(render_text(ev, rows), end="")
    out_dir = plot_dir or build_dir("perf", f"{cfg.name}-{cfg.hash()}")
    record = to_json(ev, rows)
    if per_model:
        from .per_model import evaluate_per_model, model_entry
        from .report import render_per_model

        others = {k: g for k, g in groups.items() if k != head["config"]}
        evs = {head["config"]: ev, **evaluate_per_model(cfg, others, figures, strict=args.strict)}
        record["headline_model"] = head
        record["per_model"] = {k: model_entry(evs[k], groups[k]) for k in groups}
        print(render_per_model(record["per_model"], head), end="")
    view = None
    if args.layer_timeline is not None:
        from .layer_render import layer_lines, layer_markdown
        from .layer_timeline import LAYER_KV_SIZES, layer_timeline

        sizes = _int_list(args.layer_timeline, "--layer-timeline") if args.layer_timeline else LAYER_KV_SIZES
        view = layer_timeline(cfg, figures, measured, kv_sizes=sizes)
        record["layer_timeline"] = view
        print("\n".join(layer_lines(view)))
    paths = []
    if not args.no_plot:
        from .plots import write_plots

        paths = write_plots(ev, out_dir, rows)
        if view is not None:
            from .layer_render import write_layer_plot

            paths.append(write_layer_plot(view, out_dir))
        print("\nplots: " + ", ".join(str(p) for p in paths))
    if view is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        md = out_dir / "layer_timeline.md"
        md.write_text("\n".join(layer_markdown(view, plot="layer_timeline.png" if not args.no_plot else None,
                                               command=_command(args))) + "\n")
        print(f"layer timeline: {md}")
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=1) + "\n"
    (out_dir / "perf.json").write_text(text)
    if json_out:
        json_out.write_text(text)
    print(f"perf: config {cfg.name} (hash {cfg.hash()}), {len(rows)} comparison rows; JSON {out_dir / 'perf.json'}"
          + (f" and {json_out}" if json_out else "") + (f", {len(paths)} plots in {out_dir}" if paths else ""))
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "perf", help="system performance and energy: V-Rex vs the GPU baselines, beside the paper's numbers",
        description="Model whole streaming sessions (frames, question, answer) layer by layer on the config's V-Rex "
                    "system and its GPU baseline, for every KV size and batch of the config. Prints per-frame "
                    "latency, FPS, TPOT, energy, speedup and energy-efficiency gain vs FlexGen, InfiniGen, "
                    "InfiniGenP and ReKV with the paper's numbers beside them, the hardware ablation (Fig. 16) and "
                    "the roofline (Fig. 18); writes plots and a JSON record (default folder "
                    "build/perf/<config>-<hash>).")
    add_config_option(p)
    p.add_argument("--json", metavar="OUT", help="also write the JSON record to OUT")
    p.add_argument("--plot", metavar="DIR",
                   help="folder for the plots and perf.json (default: build/perf/<config>-<hash>)")
    p.add_argument("--no-plot", action="store_true", help="skip the plots")
    p.add_argument("--golden-json", metavar="F", nargs="+", action="extend",
                   help="golden-model reports (`vrex golden --json`): measured retrieval ratios instead of Table II "
                        "(several session lengths: a fit, perf.ratio_fit), cluster sizes and KVMU traffic; reports "
                        "of several models (their config) are fitted per model, the headline model's in the tables")
    p.add_argument("--shipped-ratios", action="store_true",
                   help="the real-LLM ratio extracts the project ships (perf/data/real_llm: SmolLM2, Qwen2.5-Coder-"
                        "0.5B, Gemma 3 270M), each model fitted alone; the tables use the headline model's "
                        "(docs/decisions.md M1), then FPS, speedup and energy gain per model")
    p.add_argument("--strict", action="store_true",
                   help="refuse a golden or figures JSON made with another config (default: warn and use it)")
    p.add_argument("--sweep", metavar="SPEC",
                   help="design sweep (YAML spec or a built-in name, e.g. perf-edge-40k): FPS, energy and power per "
                        "point, Pareto plot; see docs/perf.md")
    p.add_argument("--results", metavar="OUT.md",
                   help="regenerate the results document (edge, server, closure, validation, sweep) into OUT.md")
    p.add_argument("--figures", "--figures-json", dest="figures", metavar="F", nargs="+", action="extend",
                   help="DRE cycle and power figures: a figures.json (`vrex report`) and/or component records "
                        "(build/figures/<name>-<hash>/*.json, build/figures/cycles/*.json), merged in order; "
                        "default: build/report/figures.json if present")
    p.add_argument("--cycle-records", action="store_true",
                   help="add the config's HCU, WTU, KVMU, LXE and core cycle records from build/figures/cycles (measured by "
                        "the figures flow) to the figures")
    p.add_argument("--layer-timeline", metavar="KV,...", nargs="?", const="",
                   help="per-layer DRE (HCU, WTU, KVMU) vs LXE busy and exposed time at these KV sizes (default "
                        "1K, 2K, 4K, 8K, 16K, 32K, 40K), frame and decode steps, with the options that shorten the "
                        "WTU and their area; printed, in perf.json, layer_timeline.md and layer_timeline.png")
    p.add_argument("--no-figures", action="store_true", help="ignore build/report/figures.json; use the formulas")
    p.add_argument("--batches", metavar="B,...", help="override perf.batches, e.g. 1,4,8,16")
    p.add_argument("--kv-sizes", metavar="N,...", help="override perf.kv_sizes (tokens), e.g. 1024,5120,40960")
    add_set_option(p, "--set perf.reuse_fraction=0.5 --set dre.kvmu.layout=token_order")
    p.set_defaults(func=_cmd_perf)
