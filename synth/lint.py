"""Verilator ``--lint-only -Wall`` on generated Verilog, with the waivers of docs/lint.md."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vrex.errors import ToolFailedError
from vrex.tools import require

__all__ = ["LintResult", "verilator_lint", "WAIVER_FILE"]

WAIVER_FILE = Path(__file__).with_name("verilator_waivers.vlt")


@dataclass(frozen=True)
class LintResult:
    warnings: tuple[str, ...]   # one line per warning/error that is not waived
    log: Path

    @property
    def clean(self) -> bool:
        return not self.warnings


def verilator_lint(emitted) -> LintResult:
    """Lint the emitted Verilog; a Verilator crash raises, warnings are returned."""
    v = require("verilator")
    log = emitted.directory / "lint.log"
    proc = subprocess.run([v.path, "--lint-only", "-Wall", str(WAIVER_FILE), emitted.verilog.name,
                           "--top-module", emitted.top], cwd=emitted.directory, capture_output=True, text=True,
                          timeout=600)
    log.write_text(proc.stdout + proc.stderr)
    found = tuple(line for line in (proc.stdout + proc.stderr).splitlines() if re.match(r"%(Warning|Error)", line))
    if proc.returncode and not found:
        raise ToolFailedError(f"verilator lint crashed on {emitted.verilog} (log: {log})")
    return LintResult(found, log)
