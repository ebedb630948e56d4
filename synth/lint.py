"""Plain ``verilator --lint-only -Wall <top>.vlt <top>.v`` on generated Verilog, with the waiver file shipped beside it.

The lint sees exactly what a user's flow sees: the emitted Verilog and its waiver file (:mod:`vrex.synth.waivers`,
docs/lint.md), no filtering of Verilator's output.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vrex.errors import ToolFailedError
from vrex.tools import require

__all__ = ["LintResult", "verilator_lint", "lint_command"]


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
    proc = subprocess.run(lint_command(emitted, v.path, testbench=testbench), cwd=emitted.directory,
                          capture_output=True, text=True, timeout=600)
    log.write_text(proc.stdout + proc.stderr)
    found = [line for line in (proc.stdout + proc.stderr).splitlines() if re.match(r"%(Warning|Error)", line)]
    if proc.returncode and not found:
        raise ToolFailedError(f"verilator lint crashed on {emitted.verilog} (log: {log})")
    return LintResult(tuple(found), log)
