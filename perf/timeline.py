"""A task timeline over a few resources, with the critical path that sets the latency.

Tasks are added in program order. Each runs on one resource (``compute``, ``hcu``, ``wtu``, ``offload``), which
executes its tasks one at a time in the order they were added, and starts when its resource is free and every task
it depends on has finished::

    start = max(free[resource], max(dep.end for dep in deps));   end = start + duration

This is exact for the fixed issue order of a layer-by-layer pipeline: which work overlaps is decided entirely by
the dependencies, so an overlap policy is a choice of dependencies (``vrex.perf.model``), not a tuning factor.

Each task remembers which predecessor released it (its dependency or the task before it on the resource). Walking
back from the last task along these links gives the critical path; its task durations add up exactly to the
latency, and grouping them by category gives the latency breakdown (exposed time per category).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["Task", "Timeline"]


@dataclass(eq=False)
class Task:
    name: str
    category: str
    resource: str
    duration: float
    start: float = 0.0
    end: float = 0.0
    released_by: "Task | None" = field(default=None, repr=False)
    meta: dict = field(default_factory=dict, repr=False)     # what the task did (cycles, bytes), for views


class Timeline:
    def __init__(self):
        self.tasks: list[Task] = []
        self._last_on: dict[str, Task] = {}

    def add(self, name: str, category: str, resource: str, duration: float, deps=(), meta=None) -> Task:
        if duration < 0:
            raise ValueError(f"negative duration for {name}")
        task = Task(name, category, resource, duration, meta=dict(meta or {}))
        candidates = [d for d in deps if d is not None]
        prev = self._last_on.get(resource)
        if prev is not None:
            candidates.append(prev)
        if candidates:
            gate = max(candidates, key=lambda d: d.end)
            task.start, task.released_by = gate.end, gate
        task.end = task.start + duration
        self._last_on[resource] = task
        self.tasks.append(task)
        return task

    @property
    def makespan(self) -> float:
        return max((t.end for t in self.tasks), default=0.0)

    def critical_path(self) -> list[Task]:
        if not self.tasks:
            return []
        last = max(self.tasks, key=lambda t: t.end)
        path = []
        while last is not None:
            path.append(last)
            last = last.released_by
        return path[::-1]

    def exposed(self) -> dict[str, float]:
        """Critical-path time per category (sums to the makespan)."""
        out: dict[str, float] = defaultdict(float)
        for t in self.critical_path():
            out[t.category] += t.duration
        return dict(out)

    def busy(self) -> dict[str, float]:
        """Busy time per resource."""
        out: dict[str, float] = defaultdict(float)
        for t in self.tasks:
            out[t.resource] += t.duration
        return dict(out)

    def busy_by_category(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for t in self.tasks:
            out[t.category] += t.duration
        return dict(out)
