"""Parametrization tables: one list of named configs per block drives golden, amaranth.sim and cocotb tests.

A :class:`Case` is a built-in base config plus dotted-key overrides; ``case.config()`` validates it like any
user config. Tests turn a table into ``pytest.param``s with readable ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from vrex.config import Config, load_config

__all__ = ["Case", "HAMMING_LANES_CASES"]


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
