"""The IP package ``vrex verilog`` writes beside ``<top>.v`` (docs/ip.md): SDC, Verilator waivers, FuseSoC
core, interface description (JSON and markdown) and the smoke testbench of the core's ``sim`` target.

Before anything is written, :func:`check_folder` makes sure the folder holds nothing that would be lost or
confused: a file that is not a folder, the package of another component or config, files vrex did not write, or
another ``.core`` file that declares the same FuseSoC name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from vrex.errors import UsageError

from .fusesoc import core_text, core_vlnv, declared_name
from .interface import describe, interface_markdown
from .sdc import ip_clock_mhz, sdc_text
from .waivers import GENERIC_WAIVERS, waiver_text

__all__ = ["package_files", "package_source_hash", "check_folder", "write_package", "write_atomic"]

# the package generators, and the hierarchical Verilog's (instances.py): a change to one rewrites the package
_GENERATORS = ("package.py", "interface.py", "sdc.py", "waivers.py", "fusesoc.py", "instances.py")
BENCH_TRANSACTIONS = 100   # input transactions of the golden bench replayed by the FuseSoC `sim` target


def testbench_name(top: str) -> str:
    return f"tb_{top}"


def package_files(top: str) -> dict:
    """Role -> file name of every file of a package."""
    return {"verilog": f"{top}.v", "filelist": "files.f", "config": "config.yaml", "manifest": "manifest.json",
            "sdc": f"{top}.sdc", "waivers": f"{top}.vlt", "core": f"{top}.core",
            "interface_json": f"{top}.interface.json", "interface_md": f"{top}.interface.md",
            "testbench": f"{testbench_name(top)}.v"}


@functools.cache
def package_source_hash() -> str:
    """Hash of the package generators (part of the manifest, so a changed generator rewrites the package)."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in _GENERATORS:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    h.update(GENERIC_WAIVERS.read_bytes())
    return h.hexdigest()[:16]


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def check_folder(folder: Path, component: str, top: str, cfg) -> None:
    """Raise :class:`UsageError` (one sentence) if writing the package of ``component`` / ``cfg`` into ``folder``
    would overwrite or clash with something already there."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder; give -o a folder (it will hold {top}.v, files.f, "
                         f"{top}.core and the rest of the package).")
    if not folder.is_dir():
        return
    files = package_files(top)
    manifest = folder / files["manifest"]
    if manifest.is_file():
        try:
            old = json.loads(manifest.read_text())
        except (json.JSONDecodeError, OSError, UnicodeDecodeError):
            old = None
        if not isinstance(old, dict) or "component" not in old or "config_hash" not in old:
            raise UsageError(f"{manifest} was not written by vrex; choose another folder with -o or remove it.")
        if (old["component"], old["config_hash"]) != (component, cfg.hash()):
            raise UsageError(f"{folder} already holds the package of component {old['component']} (config "
                             f"{old.get('config')}, hash {old['config_hash']}); writing {component} (config "
                             f"{cfg.name}, hash {cfg.hash()}) there would overwrite it: choose another folder with -o "
                             "or remove it first.")
    else:
        taken = [name for name in files.values() if (folder / name).exists()]
        if taken:
            raise UsageError(f"{folder / taken[0]} exists and was not written by vrex (the folder has no "
                             f"manifest.json); choose an empty folder with -o or remove it.")
    vlnv = core_vlnv(component, cfg)
    for other in sorted(folder.glob("*.core")):
        if other.name == files["core"]:
            continue
        try:
            name = declared_name(other.read_text(), str(other))
        except (OSError, UnicodeDecodeError):
            continue
        if name == vlnv:
            raise UsageError(f"{other} already declares the FuseSoC core {vlnv}, the name of the core vrex writes "
                             f"here ({files['core']}); FuseSoC would use only one of them: remove it, choose another "
                             "folder with -o, or change ip.vendor / ip.library.")


def write_package(folder: Path, component: str, spec, dut, verilog_text: str, cfg) -> dict:
    """Write SDC, waivers, interface (JSON and markdown), smoke testbench and core; returns the interface record."""
    files = package_files(spec.top)
    interface = describe(component, spec, dut, verilog_text, cfg, vlnv=core_vlnv(component, cfg))
    write_atomic(folder / files["interface_json"], json.dumps(interface, indent=1) + "\n")
    write_atomic(folder / files["interface_md"], interface_markdown(interface))
    write_atomic(folder / files["sdc"], sdc_text(interface, cfg))
    write_atomic(folder / files["waivers"], waiver_text(verilog_text, files["verilog"]))
    write_atomic(folder / files["testbench"], _testbench(component, interface, cfg))
    write_atomic(folder / files["core"], core_text(interface, files))
    return interface


def _testbench(component: str, interface: dict, cfg) -> str:
    """The ``sim`` target's testbench: the component's golden bench (random stimulus, seed 1) replayed in Verilog
    (a bench with AXI4 memories, the KVMU's, with the testbench's own AXI slaves: vrex.sim.dre.kvmu.verilog_bench), or
    the idle test when it has no bench that a plain Verilog testbench can replay."""
    from vrex.sim.bench import StreamBench
    from vrex.sim.benches import BENCH_MODULES, bench_for, runs_itself
    from vrex.sim.verilog_bench import STALL_PROBABILITY, usable_bench, verilog_testbench

    p = 1 - STALL_PROBABILITY
    bench, why = None, f"no golden bench is registered for {component} (sim/benches.py)"
    origin = (f"Vectors: the {component} bench of vrex.sim ({BENCH_TRANSACTIONS} random input transactions, seed "
              "1), expected outputs from the golden model.")
    if component == "kvmu":
        from vrex.sim.dre.kvmu.verilog_bench import kvmu_testbench, usable_kvmu_bench

        bench = bench_for(component)(cfg, n=BENCH_TRANSACTIONS, seed=1, p_valid=p, p_ready=p, fill=False, pages=True,
                                     address_records=True)
        why = usable_kvmu_bench(bench, interface["ports"])
        if why is None:
            origin = (f"Vectors: the {component} bench of vrex.sim (a random session of {len(bench.jobs)} jobs, seed 1); "
                      "responses, AXI bursts, counters and memory pages expected from the golden model.")
            return kvmu_testbench(bench, interface, name=testbench_name(interface["top"]),
                                  clock_mhz=ip_clock_mhz(cfg), origin=origin)
    elif component in BENCH_MODULES and runs_itself(component):
        why = f"the {component} bench serves AXI memories (its cocotb test), which a plain Verilog testbench cannot"
    elif component in BENCH_MODULES:
        bench = bench_for(component)(cfg, n=BENCH_TRANSACTIONS, seed=1, p_valid=p, p_ready=p)
        why = usable_bench(bench, interface["ports"])
    if why is not None:
        outputs = {st["ports"]["payload"].removesuffix("__payload"): [] for st in interface["streams"]
                   if st["direction"] == "output" and st["ports"]["payload"] and st["ports"]["ready"]}
        bench = StreamBench(name=f"{component}-idle", inputs={}, expected=outputs, drain_cycles=32)
        origin = f"Idle test only: {why}."
    return verilog_testbench(bench, interface, name=testbench_name(interface["top"]),
                             clock_mhz=ip_clock_mhz(cfg), origin=origin)
