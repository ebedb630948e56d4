"""``vrex report``: Verilog and figures of every registered component for one config."""

from __future__ import annotations

import json
from pathlib import Path

from vrex.paths import build_dir, git_revision
from vrex.tools import tool_versions

from .generic import generic_figures
from .lint import verilator_lint
from .verilog import emit

__all__ = ["write_report"]


def write_report(cfg, out_dir: Path | None = None) -> Path:
    from vrex.hdl.registry import component_names, get_component

    out = Path(out_dir) if out_dir else build_dir("report")
    out.mkdir(parents=True, exist_ok=True)
    records = {}
    for name in component_names():
        e = emit(name, cfg)
        lint = verilator_lint(e)
        records[name] = {"top": e.top, "verilog": str(e.verilog), "lint_clean": lint.clean,
                         "generic": generic_figures(e), "description": get_component(name).description}
    meta = {"config": cfg.name, "config_hash": cfg.hash(), "git": git_revision(), "tools": tool_versions()}
    (out / "figures.json").write_text(json.dumps({"meta": meta, "components": records}, indent=2) + "\n")
    lines = [f"# vrex report — config `{cfg.name}` (hash `{cfg.hash()}`)", "",
             f"git `{meta['git']}`; Yosys: {meta['tools'].get('yosys')}; Verilator: {meta['tools'].get('verilator')}",
             "", "## Generic figures (Yosys internal cells, no library)", "",
             "| component | generic cells | flip-flop bits | CMOS transistors | logic depth (gates) | lint |",
             "|---|---:|---:|---:|---:|---|"]
    for name, r in records.items():
        g = r["generic"]
        lines.append(f"| {name} | {g['cells']} | {g['flops']} | {g['transistors']} | {g['logic_depth']} | "
                     f"{'clean' if r['lint_clean'] else 'WARNINGS'} |")
    lines += ["", "Verilog: " + ", ".join(f"`{r['verilog']}`" for r in records.values()), ""]
    (out / "report.md").write_text("\n".join(lines))
    return out / "report.md"
