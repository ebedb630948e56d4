"""Where the time of a figures run goes: wall time per tool, per job (``vrex report`` prints it at the end and
records it in figures.json under ``meta.timing``).

The flows wrap each tool call in ``with lap("yosys"):``. Time is *exclusive*: while a nested lap runs, its
parent's clock stops, so a SAIF run that emits Verilog counts the emission under ``verilog`` and the rest under
``saif sim``, and the tools of one job add up to its wall time (what no lap covers is ``python``: records, file
reading, elaboration outside the emitter). One stopwatch per process: a worker process runs one job at a time,
:func:`job_timing` starts it afresh and returns what the job spent.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

__all__ = ["lap", "job_timing", "TOOLS", "timing_summary", "timing_table"]

# The columns of the table, in this order (a tool not listed still appears, after these).
TOOLS = ("verilog", "yosys", "sta", "saif sim", "saif annotation", "stimulus", "cycles sim", "lint", "cache",
         "python")

_totals: dict[str, float] = {}
_stack: list[list] = []          # [tool, start of its current stretch]


@contextmanager
def lap(tool: str):
    """Count the wall time of the ``with`` body under ``tool`` (exclusive of nested laps)."""
    now = time.perf_counter()
    if _stack:
        parent = _stack[-1]
        _totals[parent[0]] = _totals.get(parent[0], 0.0) + now - parent[1]
    _stack.append([tool, now])
    try:
        yield
    finally:
        end = time.perf_counter()
        name, start = _stack.pop()
        _totals[name] = _totals.get(name, 0.0) + end - start
        if _stack:
            _stack[-1][1] = end


@contextmanager
def job_timing():
    """Time one job: yields a dict that holds, once the ``with`` ends, ``{"wall_s": s, "tools": {tool: s}}``
    (time outside any lap is ``python``)."""
    _totals.clear()
    _stack.clear()
    out: dict = {}
    t0 = time.perf_counter()
    try:
        with lap("python"):
            yield out
    finally:
        out["wall_s"] = round(time.perf_counter() - t0, 2)
        out["tools"] = {k: round(v, 2) for k, v in _totals.items() if v >= 0.005}
        _totals.clear()


def _order(tools) -> list[str]:
    return [t for t in TOOLS if t in tools] + sorted(t for t in tools if t not in TOOLS)


def timing_summary(parts: dict, wall_s: float, workers: int) -> dict:
    """``meta.timing`` of figures.json: the run's wall time, each part's (job's) time by tool, and the tools'
    totals over all parts (their sum exceeds the wall time when parts run side by side)."""
    tools: dict[str, float] = {}
    for p in parts.values():
        for t, s in p["tools"].items():
            tools[t] = round(tools.get(t, 0.0) + s, 2)
    return {"wall_s": round(wall_s, 1), "workers": workers, "parts": parts,
            "tools": {t: tools[t] for t in _order(tools)},
            "cached_parts": sorted(n for n, p in parts.items() if p.get("cached"))}


def timing_table(timing: dict) -> str:
    """The table ``vrex report`` prints at the end of the run: one row per part (slowest first), one column per
    tool, seconds; a last row of totals."""
    parts = timing["parts"]
    cols = _order(timing["tools"])
    head = ["part", "wall s", *cols]
    rows = [[name + (" (cached)" if p.get("cached") else ""), f"{p['wall_s']:.1f}",
             *(f"{p['tools'][c]:.1f}" if p["tools"].get(c) else "" for c in cols)]
            for name, p in sorted(parts.items(), key=lambda kv: -kv[1]["wall_s"])]
    rows.append(["all parts", f"{sum(p['wall_s'] for p in parts.values()):.1f}",
                 *(f"{timing['tools'][c]:.1f}" for c in cols)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([f"Where the time went: {timing['wall_s']:.0f} s wall, {len(parts)} parts on "
                      f"{timing['workers']} worker{'s' if timing['workers'] != 1 else ''} (seconds per part and tool; "
                      "tools' time is exclusive of the tools they call)", line(head), *map(line, rows)])
