"""The V-Rex core's bench: a golden ReSV session (LXE numerics) replayed end to end on the core with cocotbext-axi
memories (:mod:`.bench`, :mod:`.cocotb_test`) or in amaranth.sim (:mod:`.amaranth_run`), and its cycle figures
(:mod:`.cycles`)."""

from .bench import CoreBench, make_bench, sram_layout
from .run import run_bench

__all__ = ["CoreBench", "make_bench", "activity_bench", "sram_layout", "run_bench", "measure_cycles"]

# Frame steps of the power stimulus: past the tiny config's recent window (retrieval runs) to a host eviction.
ACTIVITY_STEPS = 12


def activity_bench(cfg, *, transactions: int, seed: int, p_valid: float, p_ready: float):
    """The power stimulus (vrex.synth.activity; ``transactions`` is not used): the first :data:`ACTIVITY_STEPS`
    frame steps of a synthetic session on layer 0, the AXI memories never pausing, and what the record says."""
    bench = make_bench(cfg, n=ACTIVITY_STEPS, seed=seed, p_valid=p_valid, p_ready=p_ready, p_pause=0.0,
                       name="core-saif")
    return bench, {"kind": "trace:synthetic",
                   "reason": f"core: {ACTIVITY_STEPS} frame steps of a synthetic ReSV session (layer 0)"}


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    from .cycles import measure_cycles as measure

    return measure(cfg, cycles_of=cycles_of)
