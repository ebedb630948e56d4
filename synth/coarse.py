"""The coarse Yosys pass of an emitted component, run once for both figures flows (decisions X7).

The generic figures (:mod:`vrex.synth.generic`) and the library mapping (:mod:`vrex.synth.mapped`) both start from
``synth -run :fine`` on the same synthesis source; only the mapping adds ``opt_expr -mux_bool -mux_undef`` and an
``opt_clean``. One Yosys run in the emitted folder writes both designs: ``generic_coarse.json`` (after ``synth -run
:fine``) and ``coarse.json`` (after the two extra passes). The pass needs no library, so every library and clock
of a sweep maps from the same ``coarse.json``. The run is stamped (:func:`~vrex.synth.yosys.run_yosys_once`: the
Yosys build, this script and the source), so a second caller only reads the files.

The structural check (no latches after ``proc``, ``check -assert``) is part of the pass: ``synth``'s coarse steps
are written out with its ``check`` asserting (:data:`_COARSE`). On every tiny and edge leaf compared, ``coarse.json`` is
byte-identical (but for the creator line) to the one the mapping's own coarse run wrote before (docs/results-figures.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .yosys import NO_LATCHES, run_yosys_once, synthesis_source

__all__ = ["CoarseDesigns", "coarse_pass", "coarse_script"]


@dataclass(frozen=True)
class CoarseDesigns:
    directory: Path
    generic: Path      # after ``synth -run :fine``: the generic figures' input
    library: Path      # after ``opt_expr -mux_bool -mux_undef; opt_clean``: the library mapping's input


# Yosys 0.70's ``synth -run :fine`` (its ``begin`` and ``coarse`` labels, ``help synth``) written out, so that its
# ``check`` can be the structural ``check -assert``: run before it on its own, the check cost the edge core glue
# 3.5 s and the DPE glue 4.5 s a second time (decisions X9). No latches is asserted right after ``proc``.
_COARSE = f"""\
proc
{NO_LATCHES}opt_expr
check -assert
opt_clean
opt -nodffe -nosdff
fsm
opt
wreduce
peepopt
opt_clean
alumacc
share
opt
memory -nomap
opt_clean
"""


def coarse_script(source: str, top: str) -> str:
    """The Yosys script of the shared coarse pass on ``source`` (a file name in the working folder)."""
    return f"""\
read_verilog -sv {source}
hierarchy -check -top {top}
{_COARSE}write_json generic_coarse.json
opt_expr -mux_bool -mux_undef
opt_clean
write_json coarse.json
"""


def coarse_pass(emitted, memories: str, sram_min_bits: int) -> CoarseDesigns:
    """Run (or reuse) the coarse pass of ``emitted`` under the memory rule ``memories`` / ``sram_min_bits``
    (:func:`~vrex.synth.yosys.synthesis_source`) and return where its two designs are."""
    d = Path(emitted.directory)
    source = synthesis_source(emitted.verilog, d, memories, sram_min_bits)
    run_yosys_once(coarse_script(source, emitted.top), d, "coarse", [source], ["generic_coarse.json", "coarse.json"])
    return CoarseDesigns(d, d / "generic_coarse.json", d / "coarse.json")
