"""Every component, every config of its parametrisation table: Verilator -Wall lint and Yosys check -assert."""

import pytest

from vrex.sim.cases import CORE_CASES, DPE_CASES, DRE_CASES, HAMMING_LANES_CASES, HCU_CASES, KVMU_CASES, LXE_CASES, \
    RESIDENT_MASS_CASES, WTU_CASES
from vrex.synth.generic import structural_check
from vrex.synth.lint import verilator_lint
from vrex.synth.verilog import emit

_LXE_SMALL = [c for c in LXE_CASES if c.id in ("lxe-tiny", "tree16-cuts-lanes8")]
TABLES = {"hamming_lanes": HAMMING_LANES_CASES, "hcu": HCU_CASES, "wtu": WTU_CASES, "dre": DRE_CASES,
          "kvmu": KVMU_CASES, "mac_tree": LXE_CASES, "dpe": _LXE_SMALL + DPE_CASES, "vpe": _LXE_SMALL,
          "lxe": LXE_CASES[:1], "core": LXE_CASES[:1] + [c for c in CORE_CASES if c.id in ("core-tiny-short-window",
                                                                                             "core-tiny-row")],
          "resident_mass": RESIDENT_MASS_CASES}
# the cases built on the edge config (the paper's widths) are linted and checked in the slow tier: they are the
# longest Verilator and Yosys runs, and the tiny cases of every component keep the default tier's coverage
PARAMS = [pytest.param(component, case, id=f"{component}-{case.id}",
                       marks=[pytest.mark.slow] if case.base == "edge" else [])
          for component, cases in TABLES.items() for case in cases]


def test_every_registered_component_has_a_table():
    from vrex.hdl.registry import component_names

    assert sorted(TABLES) == component_names()


@pytest.mark.parametrize("component, case", PARAMS)
def test_verilator_lint_clean(component, case):
    lint = verilator_lint(emit(component, case.config()))
    assert lint.clean, "\n".join(lint.warnings)


@pytest.mark.parametrize("component, case", PARAMS)
def test_yosys_structural_check(component, case):
    structural_check(emit(component, case.config()))
