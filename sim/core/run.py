"""Run a :class:`~.bench.CoreBench` on cocotb (Verilator or Icarus)."""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["run_bench"]


def run_bench(emitted, bench, simulator: str, work_dir, *, waves: bool = False, build_args=(),
              build_tag: str = "") -> dict:
    """Run the bench; returns the result dict (``bench.report(result)`` says whether it matches)."""
    from ..runner import run_test_module

    work_dir = Path(work_dir).absolute()
    work_dir.mkdir(parents=True, exist_ok=True)
    bench.to_json(work_dir / "bench.json")
    t0 = time.time()
    folder = run_test_module(emitted, "vrex.sim.core.cocotb_test", simulator, work_dir,
                             {"VREX_BENCH": str(work_dir / "bench.json")}, seed=bench.seed, what=bench.name,
                             waves=waves, build_args=build_args, build_tag=build_tag)
    result = json.loads((folder / "result.json").read_text())
    result["wall_seconds"] = round(time.time() - t0, 2)
    result["log"] = str(folder / "sim.log")
    return result
