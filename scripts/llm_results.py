#!/usr/bin/env python3
"""Render the real-LLM tables of docs/results-golden.md from `vrex golden --json` reports (llm-video traces).

    scripts/llm_results.py build/results/llm-2k-paper.json [more.json ...]
    scripts/llm_results.py offline.json --e2e-from e2e.json    # e2e metrics from another run on the same trace

(``--e2e-from`` takes a ``vrex golden --e2e --json`` report or a ``run_e2e`` result: ``{"methods": {m: e2e}}``.)

Prints, per report: the setup line (tokens, frames, config hash, model file hash, tool versions, run time), one
table with ratio, recall (mean / 5th percentile over rows), output error and the e2e metrics per method, and the
per-layer range of each method's retrieval ratio (the numbers behind the heat maps of `--plot`).
"""

import json
import sys


def pct(x, digits=1):
    return "—" if x is None else f"{100 * x:.{digits}f} %"


def recall(s):
    return "—" if s.get("recall") is None else f"{pct(s['recall'])} / {pct(s.get('recall_p5'))}"


def setup(r):
    t, run = r["trace"], r["run"]
    m = t["model"]
    return (f"{t['tokens']} tokens = {t['frames']} frames × 10 + {t['question_tokens']} question + "
            f"{t['answer_tokens']} answer; video {', '.join(t['video']['clips'])} at {t['video']['fps']:g} fps "
            f"(loops {t['video']['loops']}); {len(r['layers'])} layers × {len(r['heads'])} KV heads; config "
            f"`{r['config']}` ({r['config_hash']}); model {m['file']} sha256 `{m['sha256'][:16]}…`; transformers "
            f"{m['transformers']}, gguf {m['gguf']}, torch {run['torch']}, numpy {run['numpy']}, Python "
            f"{run['python']}; offline evaluation {run['seconds']:.0f} s"
            + (f", e2e {r['e2e']['run']['seconds']:.0f} s" if "e2e" in r else ""))


def table(r):
    head = ("| method | frame ratio | frame recall (mean / p5) | frame out. err | text ratio | text recall (mean / p5) "
            "| text out. err | e2e top-1 | e2e KL | e2e NLL | e2e text ratio |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, m in r["methods"].items():
        f, t, e = m["frame"], m["text"], m.get("e2e")
        e2e = (f"{pct(e['top1_agreement'])} | {e['logit_kl']:.4f} | {e['answer_nll']:.3f} | {pct(e['ratio'])}"
               if e else "— | — | — | —")
        lines.append(f"| {name} | {pct(f['retrieval_ratio'])} | {recall(f)} | {pct(f['output_error'])} | "
                     f"{pct(t['retrieval_ratio'])} | {recall(t)} | {pct(t['output_error'])} | {e2e} |")
    return "\n".join(lines)


def layer_ranges(r):
    out = []
    pl = r["per_layer_head"]["retrieval_ratio"]
    for name, st in pl.items():
        if name in ("full", "flexgen"):
            continue
        parts = []
        for stage in ("frame", "text"):
            vals = [v for row in st[stage] for v in row if v is not None]
            if vals:
                parts.append(f"{stage} {pct(min(vals))}–{pct(max(vals))}")
        out.append(f"{name}: " + ", ".join(parts))
    return "; ".join(out)


def merge_e2e(r, other):
    src = {m: (v["e2e"] if "e2e" in v else v) for m, v in other["methods"].items()
           if "e2e" in v or "top1_agreement" in v}
    if other["trace"]["tokens"] != r["trace"]["tokens"]:
        raise SystemExit("--e2e-from: the two reports are not of the same session")
    for m, e in src.items():
        if m in r["methods"]:
            r["methods"][m]["e2e"] = e
    r["e2e"] = other["e2e"] if "e2e" in other else {k: other[k] for k in ("reference", "retrieval_layers", "steps",
                                                                          "run")}


def main(argv):
    e2e_from = None
    if "--e2e-from" in argv:
        i = argv.index("--e2e-from")
        e2e_from = json.loads(open(argv[i + 1]).read())
        argv = argv[:i] + argv[i + 2:]
    for p in argv:
        r = json.loads(open(p).read())
        if e2e_from is not None:
            merge_e2e(r, e2e_from)
        print(f"### {p}\n\n{setup(r)}\n\n{table(r)}\n\nPer layer and KV head: {layer_ranges(r)}\n")
        if "e2e" in r:
            ref = r["e2e"]["reference"]
            print(f"e2e reference (full attention): answer NLL {ref['answer_nll']:.3f} over {ref['positions']} "
                  f"positions; retrieval layers {len(r['e2e']['retrieval_layers'])}; per-method seconds "
                  + ", ".join(f"{m} {v['seconds']:.0f}" for m, v in r["e2e"]["run"]["per_method"].items()) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
