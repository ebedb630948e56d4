"""Parametrization tables: one list of named configs per block drives golden, amaranth.sim and cocotb tests.

A :class:`Case` is a built-in base config plus dotted-key overrides; ``case.config()`` validates it like any
user config. Tests turn a table into ``pytest.param``s with readable ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from vrex.config import Config, load_config

__all__ = ["Case", "HAMMING_LANES_CASES", "HCU_CASES"]


@dataclass(frozen=True)
class Case:
    id: str
    base: str
    overrides: dict = field(default_factory=dict, hash=False)

    @cached_property
    def cfg(self) -> Config:
        return load_config(self.base).with_overrides(self.overrides, source=f"case {self.id}")

    def config(self) -> Config:
        return self.cfg


HAMMING_LANES_CASES = [
    Case("tiny-16b-4lanes", "tiny"),
    Case("edge-32b-16lanes", "edge"),
    Case("narrow-8b-1lane", "tiny", {"resv.hash_bits": 8, "dre.hcu.lanes": 1, "dre.hcu.bits_per_cycle": 8}),
    Case("wide-64b-8lanes", "tiny", {"resv.hash_bits": 64, "dre.hcu.lanes": 8, "dre.hcu.bits_per_cycle": 64,
                                     "dre.hcu.code_memory_bytes": 512}),
]

# HCU: parallel edge, bit-serial, 4-bit slices with and without early exit (and a 2-stage pipeline), `first` with
# `join_nearest`, one lane with a table that fills often, and odd sizes (3 lanes, 12-bit codes, 3-stage pipeline).
HCU_CASES = [
    Case("edge-parallel-16x32", "edge"),
    Case("bitserial-1b", "tiny", {"dre.hcu.bits_per_cycle": 1}),
    Case("slice4-early-exit-p2", "tiny", {"dre.hcu.bits_per_cycle": 4, "dre.hcu.pipeline_stages": 2}),
    Case("slice4-no-early-exit", "tiny", {"dre.hcu.bits_per_cycle": 4, "dre.hcu.early_exit": False}),
    Case("first-join-nearest-s8", "tiny", {"resv.assignment": "first", "dre.hcu.full_policy": "join_nearest",
                                           "dre.hcu.bits_per_cycle": 8, "dre.hcu.code_memory_bytes": 24}),
    Case("lanes1-cap8-join-nearest", "tiny", {"dre.hcu.lanes": 1, "dre.hcu.code_memory_bytes": 16,
                                              "dre.hcu.bits_per_cycle": 2, "dre.hcu.full_policy": "join_nearest"}),
    Case("lanes3-12b-cap6-p3", "tiny", {"resv.hash_bits": 12, "dre.hcu.lanes": 3, "dre.hcu.code_memory_bytes": 9,
                                        "dre.hcu.bits_per_cycle": 3, "dre.hcu.pipeline_stages": 3}),
]
