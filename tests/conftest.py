import os

import pytest

from vrex.paths import build_dir, safe_name
from vrex.tools import setup_environment

setup_environment()


def pytest_configure(config):
    """A VREX_PDK_DIR that is set but wrong stops the run with one message (unset, the library tests skip)."""
    pdk = os.environ.get("VREX_PDK_DIR")
    if pdk and not (os.path.isdir(pdk) and any(n.startswith("sky130_fd_sc_hd__") for n in os.listdir(pdk))):
        raise pytest.UsageError(
            f"VREX_PDK_DIR={pdk} is not a Liberty folder (it should hold sky130_fd_sc_hd__tt_025C_1v80.lib.gz and "
            "the ASAP7 libraries); point it at the folder, or unset it to skip the library-based tests")


def config_error(tmp_path, text):
    """The one-sentence ConfigError of a YAML text, with the temporary path shown as ``bad.yaml``."""
    from vrex.config import ConfigError, load_config

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(str(path))
    return str(e.value).replace(str(path), "bad.yaml")


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
