"""Run figure jobs in worker processes with a progress display (used by ``vrex report`` and ``vrex sweep``).

Each job is ``(key, component, config, options)``; a worker returns ``(key, record, error)``. An error that the
user can act on (:class:`vrex.errors.VrexError`) is returned as text, so one bad job never stops the others.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from vrex.errors import VrexError

__all__ = ["run_jobs", "Progress"]


class Progress:
    """A one-line progress bar on a terminal, one line per finished job otherwise."""

    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.time()

    def step(self, what: str) -> None:
        self.done += 1
        width = 24
        filled = int(width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (width - filled)
        msg = f"{self.label} [{bar}] {self.done}/{self.total} {what} ({time.time() - self.t0:.0f} s)"
        if self.tty:
            self.stream.write("\r" + msg[:150].ljust(150) + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()


def _label(key) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _work(job):
    key, component, cfg, options = job
    from .figures import component_figures

    try:
        return key, component_figures(component, cfg, **options), None
    except VrexError as e:
        return key, None, str(e)


def run_jobs(jobs: list, workers: int = 2, label: str = "figures", progress: bool = True):
    """Yield ``(key, record, error)`` as jobs finish; ``workers <= 1`` runs them in this process."""
    bar = Progress(len(jobs), label) if progress and jobs else None
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            out = _work(job)
            if bar:
                bar.step(f"{_label(out[0])}{' FAILED' if out[2] else ''}")
            yield out
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_work, j) for j in jobs]
        for f in as_completed(futures):
            out = f.result()
            if bar:
                bar.step(f"{_label(out[0])}{' FAILED' if out[2] else ''}")
            yield out
