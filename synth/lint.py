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
    found = [line for line in (proc.stdout + proc.stderr).splitlines() if re.match(r"%(Warning|Error)", line)]
    if proc.returncode and not found:
        raise ToolFailedError(f"verilator lint crashed on {emitted.verilog} (log: {log})")
    kept = _drop_submodule_port_aliases(found, emitted.verilog.read_text())
    return LintResult(tuple(kept), log)


_MODULE = re.compile(r"^module\s+(\\?\S+)\s*\(([^)]*)\)", re.M)
_UNUSED = re.compile(r"%Warning-UNUSEDSIGNAL: [^:]+:(\d+):\d+: Signal is not used: '([^']+)'")


def _submodule_port_aliases(text: str) -> list[tuple[int, int, set]]:
    """Per module: (first line, last line, port names of the submodules it instantiates).

    Amaranth's backend declares, in a parent module, one wire per port of each submodule, named after the port
    (with a ``$N`` suffix when the name is taken) and assigned from the net that really connects the port; it
    exists for waveform viewing and is often unused.
    """
    ports = {m.group(1).lstrip("\\"): {p.strip() for p in m.group(2).split(",") if p.strip()}
             for m in _MODULE.finditer(text)}
    out = []
    starts = [(text.count("\n", 0, m.start()) + 1, m.group(1).lstrip("\\")) for m in _MODULE.finditer(text)]
    lines = text.splitlines()
    for k, (first, _) in enumerate(starts):
        last = starts[k + 1][0] - 1 if k + 1 < len(starts) else len(lines)
        body = "\n".join(lines[first - 1:last])
        children = set()
        for name in ports:
            if re.search(r"^\s*\\?" + re.escape(name) + r"\s+\S+\s*\(", body, re.M):
                children |= ports[name]
        out.append((first, last, children))
    return out


_COPY = re.compile(r"^\s*assign\s+(\\?\S+)\s*=\s*\\?[A-Za-z_][\w$.]*\s*(\[\d+(:\d+)?\])?\s*;", re.M)


def _copy_aliases(text: str) -> set:
    """Wires assigned a plain copy of one other net (or a constant slice of it) and nothing else: the backend's
    waveform aliases of re-exported interfaces (a top whose ports are a submodule's own members) and of memory
    port signals of a module with several memories (``rp__addr$16``)."""
    return {m.group(1).lstrip("\\") for m in _COPY.finditer(text)}


def _drop_submodule_port_aliases(warnings: list[str], text: str) -> list[str]:
    """Remove UNUSEDSIGNAL warnings on submodule port aliases and plain copies (docs/lint.md); keep every other
    warning."""
    spans = _submodule_port_aliases(text)
    copies = _copy_aliases(text)
    kept = []
    for w in warnings:
        m = _UNUSED.match(w)
        if m:
            line, name = int(m.group(1)), re.sub(r"\$\d+$", "", m.group(2))
            if any(first <= line <= last and name in children for first, last, children in spans):
                continue
            if m.group(2) in copies:
                continue
        kept.append(w)
    if not any(w.startswith("%Warning") for w in kept):   # only Verilator's summary of the waived ones is left
        kept = [w for w in kept if not re.match(r"%Error: Exiting due to \d+ warning", w)]
    return kept
