"""Running external tools (vrex.tools.run_tool): a failure names its exit status or signal with the tails of stderr
and the log, a crash is retried once and recorded, a design error is not retried; first yowasp runs take turns."""

import os
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
