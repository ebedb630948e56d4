import os

import pytest

from vrex.paths import build_dir, safe_name
from vrex.tools import setup_environment

setup_environment()


def params(cases):
    """pytest.param per Case of a parametrization table, with the case id."""
    return [pytest.param(c, id=c.id) for c in cases]


@pytest.fixture
def work_dir(request):
    """A fresh per-test folder under build/tests/ (never the source tree)."""
    d = build_dir("tests", safe_name(request.node.nodeid))
    for p in sorted(d.rglob("*"), reverse=True):
        if p.is_file():
            p.unlink()
    return d


def simulators():
    """Simulators for cocotb tests: $SIMS (comma-separated) or both."""
    return [s for s in os.environ.get("SIMS", "verilator,icarus").split(",") if s]
