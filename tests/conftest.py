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


# --- longest tests first -------------------------------------------------------------------------------------------
# pytest-xdist hands tests out in collection order, so a minutes-long test collected last leaves the other worker idle
# at the end of the run. tests/durations.json holds measured seconds of the long tests (scripts/test_durations.py
# writes it from a `pytest --durations` log); they are scheduled first, longest first, and every other test keeps
# its place after them. A test that uses a module-scoped fixture moves with its whole module, so the fixture is set
# up once per worker as before. Unknown or renamed tests simply keep their collection order. Under `--dist worksteal`
# (the Makefile's) the long tests are dealt to the workers' first slices so that every worker starts on its own.
DURATIONS_FILE = os.path.join(os.path.dirname(__file__), "durations.json")


def _known_durations() -> dict:
    import json

    try:
        with open(DURATIONS_FILE) as f:
            return json.load(f)["seconds"]
    except (OSError, ValueError, KeyError):
        return {}


def _block(item) -> str:
    """The unit that moves: the item, or its module when it uses a module-scoped fixture."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if any(d.scope == "module" for d in defs):
            return item.nodeid.split("::")[0]
    return item.nodeid


def _worksteal_workers(config) -> int:
    """The number of pytest-xdist workers when they use ``--dist worksteal``, else 0. Its first hand-out gives worker
    k the k-th of n contiguous slices of the collection (``len // n`` items each, the last ones take the rest); an
    idle worker then steals half of the busiest one's queue from its tail."""
    if getattr(config.option, "dist", "no") != "worksteal":
        return 0
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT") or getattr(config.option, "numprocesses", None)
    try:
        return int(count)
    except (TypeError, ValueError):
        return 0


def pytest_collection_modifyitems(session, config, items):
    seconds = _known_durations()
    if not seconds:
        return
    blocks: dict[str, list] = {}
    for item in items:
        blocks.setdefault(_block(item), []).append(item)
    key = {b: sum(seconds.get(i.nodeid, 0.0) for i in its) for b, its in blocks.items()}
    order = sorted(blocks, key=lambda b: -key[b])        # stable: equal keys (0 = unknown) keep collection order
    workers = _worksteal_workers(config)
    if workers > 1:
        # Longest-processing-time first over the workers' first slices: each slice starts with its share of the long
        # tests, longest first (otherwise the first worker's slice holds all of them and runs them one after the
        # other while the others steal only from its tail), then untimed tests fill the slices to their sizes.
        slices: list[list[str]] = [[] for _ in range(workers)]
        loads, counts = [0.0] * workers, [0] * workers
        sizes, left = [], len(items)
        for k in range(workers):
            sizes.append(left // (workers - k))
            left -= sizes[-1]
        for b in order:
            if key[b] > 0:
                k = loads.index(min(loads))
            else:
                k = next((j for j in range(workers) if counts[j] < sizes[j]), workers - 1)
            slices[k].append(b)
            loads[k] += key[b]
            counts[k] += len(blocks[b])
        order = [b for part in slices for b in part]
    items[:] = [i for b in order for i in blocks[b]]
