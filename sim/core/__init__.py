"""The V-Rex core's bench: a golden ReSV session (LXE numerics) replayed end to end on the core with cocotbext-axi
memories (:mod:`.bench`, :mod:`.cocotb_test`) or in amaranth.sim (:mod:`.amaranth_run`), and its cycle figures
(:mod:`.cycles`)."""

from .bench import CoreBench, make_bench, sram_layout
from .run import run_bench

__all__ = ["CoreBench", "make_bench", "sram_layout", "run_bench", "measure_cycles"]


def measure_cycles(cfg, *, cycles_of=None) -> dict:
    from .cycles import measure_cycles as measure

    return measure(cfg, cycles_of=cycles_of)
