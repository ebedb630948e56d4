"""Trim a golden report (``vrex golden --json``) to a shipped ratio extract (perf/data/real_llm/).

    python scripts/golden_extract.py REPORT.json OUT.json --command "VREX_TORCH_THREADS=1 vrex golden …" \
        --wall 144 --git 2771df3

The extract keeps the fields vrex.perf reads (vrex.perf.per_model.extract_report) and a "source" sentence with the
exact command, config hash, git revision, date, wall time and the torch / transformers versions the report
records; it is checked as vrex.perf checks a shipped extract before it is written.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from vrex.errors import VrexError
from vrex.perf.inputs import dig, load_json
from vrex.perf.per_model import check_extract, extract_report


def shipped_rule(report: dict) -> str:
    """The selection rule of the built-in config the report names, in words (``row p 0.9 / 0.99``); a report whose
    config hash is not that config's as shipped now is refused: its ratios belong to another rule or model."""
    from vrex.config import load_config
    from vrex.golden.evaluation.targets import rule_label

    name, digest = report.get("config"), report.get("config_hash")
    cfg = load_config(name)
    if cfg.hash() != digest:
        raise VrexError(f"the report was made with config {name} hash {digest}, but {name} ships as {cfg.hash()} now; "
                        f"rerun its vrex golden command on the current config.")
    return rule_label(cfg)


def source_sentence(report: dict, command: str, wall: float, git: str, date: str) -> str:
    trace, run = report.get("trace", {}), report.get("run", {})
    model = dig(trace, "model", "description") or dig(trace, "model", "name") or "?"
    layers = report.get("layers") or []
    total = dig(trace, "model", "shape", "layers")
    layer_text = (f"all {total} layers" if len(layers) == total else
                  f"layers {','.join(str(x) for x in layers)} of {total}")
    tools, kv = trace.get("tools", {}), trace.get("kv_heads")
    return (f"Extract of a golden report of {model} under the shipped rule of config {report.get('config')} "
            f"({shipped_rule(report)}, frame / text): `{command}` ({trace.get('tokens')} "
            f"tokens, {layer_text} x {kv} KV head{'s' if kv != 1 else ''}, offline), config hash "
            f"{report.get('config_hash')}, git {git}, {date}; {wall:.0f} s wall on a shared 2-core machine "
            f"(evaluation {run.get('seconds', 0):.0f} s), torch {tools.get('torch', run.get('torch'))}, transformers "
            f"{tools.get('transformers', '?')}, Python {run.get('python', '?')}. Only the fields vrex.perf reads are "
            "kept (ratios, candidate lengths as offloaded_tokens / layer_head_steps, recall, mean cluster size).")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("out")
    p.add_argument("--command", required=True, help="the vrex golden command that wrote the report")
    p.add_argument("--wall", type=float, required=True, help="wall time of that command in seconds")
    p.add_argument("--git", required=True, help="git revision the report was made at")
    p.add_argument("--date", default=datetime.date.today().isoformat())
    args = p.parse_args(argv)
    try:
        report = load_json(args.report, "golden JSON")
        extract = extract_report(report, source_sentence(report, args.command, args.wall, args.git, args.date),
                                 args.report)
        check_extract(extract, args.out)
    except VrexError as e:
        print(f"golden_extract: error: {e}", file=sys.stderr)
        return 2
    Path(args.out).write_text(json.dumps(extract, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
