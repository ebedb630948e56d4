"""Run a :class:`~.bench.CoreBench` on cocotb (Verilator or Icarus)."""

from __future__ import annotations

__all__ = ["run_bench"]


def run_bench(emitted, bench, simulator: str, work_dir, *, waves: bool = False, build_args=(),
              build_tag: str = "") -> dict:
    """Run the bench; returns the result dict (``bench.report(result)`` says whether it matches)."""
    from ..runner import run_json_bench

    return run_json_bench(emitted, bench, "vrex.sim.core.cocotb_test", simulator, work_dir, waves=waves,
                          build_args=build_args, build_tag=build_tag)
