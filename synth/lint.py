"""Plain ``verilator --lint-only -Wall <top>.vlt <top>.v`` on generated Verilog, with the waiver file shipped beside it.

The lint sees exactly what a user's flow sees: the emitted Verilog and its waiver file (:mod:`vrex.synth.waivers`,
docs/lint.md), no filtering of Verilator's output.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from vrex.errors import ToolFailedError
from vrex.tools import failure_message, require, run_tool

from .stopwatch import lap

__all__ = ["LintResult", "verilator_lint", "lint_command", "lint_clean"]


@dataclass(frozen=True)
class LintResult:
    warnings: tuple[str, ...]   # one line per warning/error Verilator printed
    log: Path

    @property
    def clean(self) -> bool:
        return not self.warnings


def lint_command(emitted, verilator: str = "verilator", *, testbench: bool = False) -> list[str]:
    """The lint command, run in the emitted folder (file names relative to it); with ``testbench`` the whole
    package: the design and its testbench ``tb_<top>.v`` (the top module), with the same waivers."""
    if testbench:
        tb = emitted.file("testbench")
        return [verilator, "--lint-only", "-Wall", emitted.waivers.name, emitted.verilog.name, tb.name,
                "--top-module", tb.stem]
    return [verilator, "--lint-only", "-Wall", emitted.waivers.name, emitted.verilog.name, "--top-module", emitted.top]


def verilator_lint(emitted, *, testbench: bool = False) -> LintResult:
    """Lint the emitted Verilog (with ``testbench``: and its testbench) with its shipped waivers; a Verilator crash
    raises, warnings are returned."""
    v = require("verilator")
    log = emitted.directory / ("lint_tb.log" if testbench else "lint.log")
    what = f"verilator lint of {emitted.verilog}"
    with lap("lint"):
        proc = run_tool("verilator", lint_command(emitted, v.path, testbench=testbench), cwd=emitted.directory,
                        what=what, timeout=600, log=log)
    log.write_text(proc.stdout + proc.stderr)
    found = [line for line in (proc.stdout + proc.stderr).splitlines() if re.match(r"%(Warning|Error)", line)]
    if proc.returncode and not found:
        raise ToolFailedError(failure_message(what, proc, log, log_text=proc.stdout))
    return LintResult(tuple(found), log)


def lint_clean(emitted) -> bool:
    """Whether the design lints clean (:func:`verilator_lint`), read back from ``lint.json`` in the emitted folder
    when the Verilog, its waivers and Verilator are those it was run on (the report lints each leaf once, and a
    rerun not at all)."""
    h = hashlib.sha256(require("verilator").version.encode())
    for f in (emitted.verilog, emitted.waivers):
        h.update(f.read_bytes())
    stamp = emitted.directory / "lint.json"
    try:
        saved = json.loads(stamp.read_text())
        if saved["key"] == h.hexdigest():
            return saved["clean"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    result = verilator_lint(emitted)
    stamp.write_text(json.dumps({"key": h.hexdigest(), "clean": result.clean, "warnings": list(result.warnings)}))
    return result.clean
