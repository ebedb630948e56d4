import os

import pytest

from vrex.paths import build_dir, safe_name
from vrex.tools import setup_environment

setup_environment()

def pdk_folder() -> str:
    """The Liberty folder the library tests use: $VREX_PDK_DIR, else the one embedded in vrex."""
    from vrex.paths import pdk_dir

    return str(pdk_dir())


def pytest_configure(config):
    """A VREX_PDK_DIR that is set but wrong stops the run with one message (unset, the embedded libraries are used)."""
    from vrex.synth.liberty import KNOWN_LIBRARIES

    pdk = os.environ.get("VREX_PDK_DIR")
    if not pdk:
        return
    names = set(os.listdir(pdk)) if os.path.isdir(pdk) else set()
    missing = [f for f in KNOWN_LIBRARIES["sky130"].files if f not in names and f + ".gz" not in names]
    if missing:
        raise pytest.UsageError(
            f"VREX_PDK_DIR={pdk} is not the Liberty folder the tests need: it has no {', '.join(missing)} (nor .gz). "
            "Point it at the folder that holds the sky130 and ASAP7 libraries, or unset it to use the "
            "libraries embedded in vrex")


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
