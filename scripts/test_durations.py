#!/usr/bin/env python3
"""Write tests/durations.json from the `--durations` sections of pytest logs (the default and the slow tier).

    .venv/bin/python -m pytest -n 2 --durations=120 > default.log; .venv/bin/python -m pytest -n 2 -m slow \
        --durations=80 > slow.log; scripts/test_durations.py default.log slow.log

The conftest schedules the listed tests first, longest first (tests/conftest.py). Setup and call times of a test
add up; tests under --min seconds (default 5) are left out. Tests already in the file and absent from the logs keep
their seconds (a log of one folder updates that folder's); --replace starts from an empty file.
"""

import argparse
import json
import re
import subprocess
from pathlib import Path

LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--min", type=float, default=5.0, help="leave out tests shorter than this (seconds)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "durations.json")
    ap.add_argument("--replace", action="store_true", help="drop the tests the logs do not list")
    args = ap.parse_args()
    seconds: dict[str, float] = {}
    old = {} if args.replace or not args.out.is_file() else json.loads(args.out.read_text()).get("seconds", {})
    for log in args.logs:
        for line in log.read_text(errors="replace").splitlines():
            m = LINE.match(line)
            if m:
                seconds[m.group(3)] = seconds.get(m.group(3), 0.0) + float(m.group(1))
    merged = {**old, **{k: v for k, v in seconds.items() if v >= args.min}}
    kept = {k: round(v, 1) for k, v in sorted(merged.items(), key=lambda kv: -kv[1])}
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    args.out.write_text(json.dumps({"measured_at": rev or None, "note": "seconds on the 2-core CI machine "
                                    "(scripts/test_durations.py); only the order of the tests depends on them",
                                    "seconds": kept}, indent=1) + "\n")
    print(f"{args.out}: {len(kept)} tests of ≥ {args.min:g} s")


if __name__ == "__main__":
    main()
