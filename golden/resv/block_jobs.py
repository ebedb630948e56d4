"""The block jobs a ReSV session hands the HCU and WTU references (:func:`record_jobs`): trace-driven stimulus for
the RTL benches. The job formats are :mod:`vrex.golden.dre.jobs`."""

from __future__ import annotations

from vrex.golden.dre.jobs import HCUJob, WTUJob
from vrex.golden.resv.session import JobRecorder, run_session
from vrex.golden.traces.sources import TraceOptions, make_trace
from vrex.golden.traces.trace import Trace

__all__ = ["record_jobs"]


def record_jobs(cfg, trace, *, frames=None, layers=None, heads=None, seed=0,
                max_jobs=None) -> tuple[list[HCUJob], list[WTUJob]]:
    """The HCU and WTU jobs a ReSV session hands to the block references, in session order.

    ``trace`` is ``"synthetic"``, ``"video"``, a trace file path, or a :class:`vrex.golden.traces.trace.Trace`.
    ``frames`` shortens a generated trace, ``layers`` / ``heads`` (KV heads) restrict the contexts, ``seed`` seeds
    a generated trace, and ``max_jobs`` caps the jobs of each kind (the session stops once both are full).

    HCU jobs carry the preloaded open-cluster codes (oldest first) and the token codes of one frame chunk, in
    order; WTU jobs carry the candidate clusters' token counts saturated to ``dre.wtu.count_bits`` and the
    quantised score rows of one GQA group (row order = query token × query head), one job per tile of
    ``row_capacity`` clusters. Replaying them through :func:`vrex.golden.dre.hcu.reference.hcu_assign` and
    :func:`vrex.golden.dre.wtu.linear.select_row` reproduces the session's clustering and selection (tested).
    """
    if cfg.resv.score_transform == "exp":
        from vrex.errors import UsageError

        raise UsageError("resv.score_transform = exp is golden-only (float); block jobs need exp2, shift_min or relu.")
    layers_req = None if layers is None else sorted(set(layers))
    if not isinstance(trace, Trace):
        trace = make_trace(cfg, str(trace), layers=layers_req,
                           options=TraceOptions(frames=frames, seed=seed))
    rec = JobRecorder(max_jobs=max_jobs, stop_when_full=max_jobs is not None)
    run_session(cfg, trace, layers=layers_req, heads=heads, recorder=rec)
    return rec.hcu, rec.wtu
