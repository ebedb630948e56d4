"""Run figure jobs with a progress display (used by ``vrex report`` and ``vrex sweep``), on one of two engines:

- local worker processes (the default; ``workers <= 1`` runs the jobs in this process);
- a Dask distributed cluster (``scheduler``): ``"local"`` starts a ``LocalCluster`` of ``workers`` single-threaded
  worker processes, any other value is the address of a running scheduler (``tcp://host:8786``), reached with
  ``distributed.Client(address)``.

Each job is ``(key, component, config, options)``; it gives ``(key, record, error, cached)``. The record is the ASIC
figures record (:func:`vrex.synth.figures.component_figures`) with the FPGA record under ``"fpga"`` when
``options["fpga"]`` names a family (:func:`vrex.synth.fpga.fpga_figures`). An error the user can act on
(:class:`vrex.errors.VrexError`) comes back as text, so one bad job never stops the others; on a cluster, so does
any exception of a job and a job whose worker died more often than Dask's ``distributed.scheduler.allowed-failures``
(default 3; a job whose worker dies is otherwise rerun on another worker).

Records are cached where they are computed (``build/figures/``). With a cluster, the client looks each job up in
its own cache before submitting it and writes every record a worker returns into its own cache under the worker's
key, so an interrupted sweep resumes from the client's cache whichever engine ran it (when the workers use the
client's tool versions and library files, the keys agree; otherwise the workers' own caches serve the reruns).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from vrex.errors import ToolMissingError, UsageError, VrexError
from vrex.paths import build_root

__all__ = ["run_jobs", "worker_pool", "Progress", "DaskCluster", "figure_record", "CONNECT_TIMEOUT_S"]

CONNECT_TIMEOUT_S = 10


class Progress:
    """The progress bar of a run of jobs (tqdm: one line redrawn on a terminal, every update on a file): jobs done,
    failed and taken from the cache, elapsed time and an ETA from the mean time of the computed jobs (cached ones
    take no time, so tqdm's own rate would promise too much), and the last job's name."""

    def __init__(self, total: int, label: str, stream=None):
        from tqdm import tqdm

        self.total, self.label = total, label
        self.counts = {"done": 0, "failed": 0, "cached": 0}
        stream = stream or sys.stderr
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.t0 = time.time()
        self._bar = tqdm(total=total, desc=label, file=stream, unit="job", dynamic_ncols=tty, ncols=None if tty else 160,
                         mininterval=0 if not tty else 0.1, bar_format="{desc} {bar:24} {n_fmt}/{total_fmt}{postfix}")

    @property
    def finished(self) -> int:
        return sum(self.counts.values())

    def eta(self) -> float | None:
        """Seconds left: the remaining jobs at the mean wall time per computed job so far (None before one)."""
        computed = self.counts["done"] + self.counts["failed"]
        if not computed:
            return None
        return (time.time() - self.t0) / computed * (self.total - self.finished)

    def step(self, what: str, status: str = "done") -> None:
        self.counts[status] += 1
        eta, c = self.eta(), self.counts
        self._bar.set_postfix_str(f"{c['done']} done, {c['failed']} failed, {c['cached']} cached; "
                                  f"{time.time() - self.t0:.0f} s"
                                  + (f", ETA {eta:.0f} s" if eta is not None and self.finished < self.total else "")
                                  + f"  {what}", refresh=False)
        self._bar.update(1)
        if self.finished >= self.total:
            self._bar.close()


def _label(key) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def figure_record(component: str, cfg, options: dict, *, cached_only: bool = False) -> dict | None:
    """The job's record: ASIC figures, plus ``"fpga"`` when ``options["fpga"]`` is set (``{"family", "device",
    "package"}``) and, with ``options["lint"]``, whether a component synthesised whole lints clean (``lint_clean``);
    ``cached_only`` gives None unless every part is in the cache."""
    from .figures import component_figures

    opts = dict(options)
    fpga = opts.pop("fpga", None)
    lint = opts.pop("lint", False)
    record = component_figures(component, cfg, cached_only=cached_only, **opts)
    if record is not None and lint and not record.get("hierarchy"):
        from .lint import lint_clean
        from .verilog import emit

        record = {**record, "lint_clean": lint_clean(emit(component, cfg))}
    if record is None or not fpga:
        return record
    from .fpga import fpga_available, fpga_figures

    hint = fpga_available()
    if hint:
        return {**record, "fpga": {"fits": None, "error": hint}}
    try:
        f = fpga_figures(component, cfg, use_cache=opts.get("use_cache", True), cached_only=cached_only, **fpga)
    except VrexError as e:
        f = {"fits": None, "error": str(e)}
    return None if f is None else {**record, "fpga": f}


def _cached(job):
    """The job's result when its record is in this machine's cache (or the lookup itself fails), else None."""
    key, component, cfg, options = job
    if not options.get("use_cache", True):
        return None
    try:
        record = figure_record(component, cfg, options, cached_only=True)
    except VrexError as e:
        return key, None, str(e), False
    return None if record is None else (key, record, None, True)


def _work(job):
    """The job's ``(key, record, error, cached)`` and what it spent per tool (:mod:`vrex.synth.stopwatch`)."""
    from .stopwatch import job_timing, lap

    key, component, cfg, options = job
    with job_timing() as timing:
        with lap("cache"):
            out = _cached(job)
        if out is None:
            try:
                out = key, figure_record(component, cfg, options), None, False
            except VrexError as e:
                out = key, None, str(e), False
    return (*out, dict(timing, cached=out[3]))


def _keep(out, timings):
    """The 4-tuple of a job's result; its timing goes into ``timings`` (a dict keyed by job key) when given."""
    if timings is not None and len(out) > 4:
        timings[out[0]] = out[4]
    return out[:4]


def worker_pool(workers: int) -> ProcessPoolExecutor | None:
    """A pool of ``workers`` spawned worker processes for several :func:`run_jobs` calls (``vrex report``'s
    dependency waves share one, so each worker imports the flows and asks the tools' versions once); None for
    ``workers <= 1``. The caller shuts it down."""
    if workers <= 1:
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def run_jobs(jobs: list, workers: int = 2, label: str = "figures", progress: bool = True, cluster=None,
             timings: dict | None = None, pool: ProcessPoolExecutor | None = None):
    """Yield ``(key, record, error, cached)`` as jobs finish: on ``cluster`` (a :class:`DaskCluster`) when given,
    else in local worker processes (see the module docstring), those of ``pool`` when given (:func:`worker_pool`).
    ``timings``: a dict that receives each job's wall time per tool (``{key: {"wall_s", "tools", "cached"}}``,
    :mod:`vrex.synth.stopwatch`)."""
    if cluster is not None:
        for out in _run_dask(jobs, label, progress, cluster):
            yield _keep(out, timings)
        return
    bar = Progress(len(jobs), label) if progress and jobs else None
    own = None
    if pool is None and workers > 1 and len(jobs) > 1:
        pool = own = worker_pool(workers)
    if pool is not None:
        results = (f.result() for f in as_completed([pool.submit(_work, j) for j in jobs]))
    else:
        results = map(_work, jobs)
    try:
        for out in results:
            out = _keep(out, timings)
            _step(bar, out)
            yield out
    finally:
        if own is not None:
            own.shutdown(cancel_futures=True)


def _step(bar, out) -> None:
    key, _, error, cached = out[:4]
    if bar:
        bar.step(_label(key) + (f" FAILED: {error.splitlines()[0]}" if error else ""),
                 "failed" if error else "cached" if cached else "done")


class DaskCluster:
    """A connection to a Dask cluster for :func:`run_jobs` (a context manager): ``"local"`` starts a
    ``LocalCluster`` of ``workers`` single-threaded worker processes, any other value is a scheduler address. An
    address nobody answers within :data:`CONNECT_TIMEOUT_S` raises :class:`UsageError`."""

    def __init__(self, scheduler: str, workers: int = 2):
        try:
            from distributed import Client

            from vrex.golden.dask_local import local_cluster
        except ImportError:
            raise ToolMissingError("--scheduler needs Dask distributed; install it with: pip install "
                                   "'distributed==2026.8.0'") from None
        self.name, self.local = scheduler, None
        if scheduler == "local":
            self.local = local_cluster(workers)
            self.client = Client(self.local)
            return
        try:
            self.client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise UsageError(f"no Dask scheduler answers at {scheduler!r} within {CONNECT_TIMEOUT_S} s ({reason}); "
                             "start one (`dask scheduler`, then `dask worker ADDRESS` on each machine) or use "
                             "--scheduler local.") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.client.close()
        if self.local is not None:
            self.local.close()


def _store(record: dict) -> None:
    """Write a record a worker returned (and its FPGA part) into this machine's cache, under the worker's key."""
    from .figures import write_json_atomic

    asic = {k: v for k, v in record.items() if k not in ("fpga", "lint_clean")}
    for part in (asic, record.get("fpga")):
        rel = ((part or {}).get("meta") or {}).get("cache")
        if rel and not (build_root() / rel).is_file():
            write_json_atomic(build_root() / rel, part)


def _run_dask(jobs, label, progress, cluster: DaskCluster):
    from distributed import as_completed as dask_completed

    client = cluster.client
    bar = Progress(len(jobs), f"{label} on {cluster.name}") if progress and jobs else None
    futures = {}
    try:
        for job in jobs:
            hit = _cached(job)   # in this machine's cache: not sent to the cluster
            if hit is None:
                futures[client.submit(_work, job, pure=False)] = job[0]
            else:
                _step(bar, hit)
                yield hit
        for future in dask_completed(list(futures)):
            try:
                out = future.result()
            except Exception as e:   # a job that raised, or whose workers kept dying (KilledWorker)
                out = (futures[future], None, f"{type(e).__name__}: {e}", False)
            if out[1] is not None:
                _store(out[1])
            _step(bar, out)
            yield out
    finally:
        for f in futures:
            f.cancel()
