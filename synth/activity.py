"""Switching activity of real stimulus: run a component's bench on Verilator with ``--trace-saif``.

The stimulus is the component's own bench (``vrex.sim.benches.bench_for``), so the run is also a check: every
output transaction is compared with the golden model, and a mismatch stops the figures (a wrong design has no
meaningful power). Trace-driven stimulus is the block jobs a ReSV session on the synthetic or video trace hands
to the block (``vrex.golden.resv.block_jobs.record_jobs`` on three layers), when the bench replays jobs (``JOB_KIND``);
otherwise the bench's random stimulus is used. The record says which stimulus was used and why.

A stimulus longer than ``technology.activity_max_cycles`` is cut there, which bounds the run time of blocks whose
transactions take many cycles.

A glue (the composite without its parts, hdl/lxe/parts.py) has no bench: its activity is its composite's bench run
on the whole composite, read where the glue's signals are (:func:`glue_activity`).

Traffic is full throughput (valid and ready every cycle, ``p_valid = p_ready = 1``) unless asked otherwise:
power at the block's working rate.
"""

from __future__ import annotations

from pathlib import Path

from vrex.errors import VrexError

from .stopwatch import lap

__all__ = ["StimulusRun", "record_activity", "composite_of", "glue_activity", "glue_activity_refused",
           "part_instances", "alias_part_ports"]


class StimulusRun:
    def __init__(self, saif: Path, stimulus: dict, cycles: int):
        self.saif, self.stimulus, self.cycles = saif, stimulus, cycles


# The recorded session for power stimulus: three layers (first, middle, last), enough frames to fill the resident
# window and then 8 more (retrieval, hence WTU work, starts only once tokens are offloaded), at most this many jobs
# of each kind. Recordings are cached per config hash and trace under build/figures/jobs/.
ACTIVITY_MAX_JOBS = 48


def _jobs(cfg, component: str, kind: str):
    """Recorded jobs for ``component`` from a ``kind`` session, or ``(None, reason)``."""
    import math

    from vrex.paths import build_dir
    from vrex.sim.benches import job_kind, trace_jobs, trace_stimulus_for

    if kind == "random":
        return None, "technology.activity_stimulus is random"
    own = trace_stimulus_for(component)
    if own is not None:
        try:
            return own(cfg, kind), ""
        except (ValueError, VrexError) as e:
            return None, f"no {kind} operand streams for {component}: {e}"
    wanted = job_kind(component)
    if wanted is None:
        return None, f"the {component} bench takes random stimulus only (no recorded block jobs)"
    cache = build_dir("figures", "jobs") / f"{cfg.hash()}-{kind}.json"
    if cache.is_file():
        jobs = trace_jobs(cfg, component, str(cache))
    else:
        layers = sorted({0, cfg.model.layers // 2, cfg.model.layers - 1})
        frames = math.ceil(cfg.resv.recent_window_tokens / cfg.model.tokens_per_frame) + 8
        try:
            jobs = trace_jobs(cfg, component, kind, frames=frames, layers=layers, seed=0,
                              max_jobs=ACTIVITY_MAX_JOBS, save=cache)
        except Exception as e:   # a trace that cannot be recorded here (e.g. no video decoder): fall back, say why
            return None, f"recording a {kind} session failed: {type(e).__name__}: {e}"
    if not (jobs[1] if wanted == "both" else jobs):
        return None, f"the {kind} session produced no {wanted.upper()} jobs"
    return jobs, ""


def record_activity(component: str, cfg, emitted, work: Path, *, transactions: int, seed: int = 1,
                    p_valid: float = 1.0, p_ready: float = 1.0, stimulus: str | None = None) -> StimulusRun:
    """Simulate ``transactions`` inputs on Verilator with SAIF tracing; returns the SAIF and what was run.

    The run stops after ``technology.activity_max_cycles`` cycles even if the stimulus is longer; the
    outputs observed until then must still match the golden model (only missing ones are allowed).
    """
    from vrex.sim.benches import bench_for, runs_itself
    from vrex.sim.runner import run_cocotb

    if runs_itself(component):
        return _own_bench_activity(component, cfg, emitted, Path(work), transactions=transactions, seed=seed,
                                   p_valid=p_valid, p_ready=p_ready)
    make = bench_for(component)
    kind = stimulus or cfg.technology.activity_stimulus
    with lap("stimulus"):
        jobs, why = _jobs(cfg, component, kind)
    if jobs is not None:
        bench = make(cfg, n=transactions, seed=seed, p_valid=p_valid, p_ready=p_ready, jobs=jobs)
        used = {"kind": f"trace:{kind}", "requested": kind, "reason": ""}
    else:
        bench = make(cfg, n=transactions, seed=seed, p_valid=p_valid, p_ready=p_ready)
        used = {"kind": "random", "requested": kind, "reason": why}
    cap = int(cfg.technology.activity_max_cycles)
    truncated = bench.cycle_budget() > cap
    if truncated:
        bench.max_cycles = cap
    used.update({"transactions": transactions, "seed": seed, "p_valid": p_valid, "p_ready": p_ready,
                 "max_cycles": cap})
    work = Path(work)
    saif = work / "dump.saif"
    saif.unlink(missing_ok=True)
    result = run_cocotb(emitted, bench, "verilator", work, waves=True, build_args=["--trace-saif"],
                        build_tag="saif")
    wrong = [m for m in result.mismatches(bench) if m.got is not None]
    hit_cap = truncated and result.timed_out and result.cycles >= cap
    seen = sum(len(v) for v in result.observed.values())
    report = result.report(bench) if (wrong or not hit_cap or not seen) else ""
    used["truncated"] = hit_cap
    if report:
        raise VrexError(f"the power stimulus of {component} does not match the golden model, so no power "
                        f"figure is given:\n{report}")
    if not saif.is_file():
        raise VrexError(f"Verilator wrote no SAIF file for {component} (expected {saif}); Verilator >= 5.042 is "
                        "needed for --trace-saif")
    used["transactions_run"] = sum(len(c) for k, c in result.handshake_cycles.items() if k.startswith("in:"))
    return StimulusRun(saif, used, result.cycles)


def _own_bench_activity(component, cfg, emitted, work: Path, *, transactions, seed, p_valid, p_ready) -> StimulusRun:
    """SAIF of a bench with AXI ports (the KVMU's, the core's): the bench module's ``activity_bench`` (the AXI
    memories never pausing), checked against the golden model like every run."""
    from vrex.sim.benches import _module

    mod = _module(component)
    bench, used = mod.activity_bench(cfg, transactions=transactions, seed=seed, p_valid=p_valid, p_ready=p_ready)
    saif = work / "dump.saif"
    saif.unlink(missing_ok=True)
    result = mod.run_bench(emitted, bench, "verilator", work, waves=True, build_args=["--trace-saif"],
                           build_tag="saif")
    report = bench.report(result)
    if report:
        raise VrexError(f"the power stimulus of {component} does not match the golden model, so no power "
                        f"figure is given:\n{report}")
    if not saif.is_file():
        raise VrexError(f"Verilator wrote no SAIF file for {component} (expected {saif}); Verilator >= 5.042 is "
                        "needed for --trace-saif")
    used = {"requested": cfg.technology.activity_stimulus, "transactions": len(bench.jobs), "seed": seed,
            "p_valid": p_valid, "p_ready": p_ready, "max_cycles": result["cycles"], **used,
            "transactions_run": len(result["jobs"]), "truncated": False}
    return StimulusRun(saif, used, result["cycles"])

def composite_of(component: str) -> str | None:
    """The composite whose glue ``component`` is (``dre_glue`` -> ``dre``), or None."""
    from vrex.hdl.registry import COMPONENTS, get_component

    get_component(component)
    return next((n for n, s in COMPONENTS.items() if s.glue == component), None)


def part_instances(component: str, cfg) -> int:
    """How many synthesised blocks a composite instantiates, down to the leaves (glues not counted)."""
    from vrex.hdl.registry import get_component, parts_of

    parts = parts_of(get_component(component), cfg)
    if parts is None:
        return 1
    return sum(count * part_instances(p, cfg) for p, count in parts.items())


def glue_activity_refused(glue: str, cfg) -> str | None:
    """Why a glue's SAIF run is not made (its composite is too large to simulate whole), or None."""
    composite = composite_of(glue)
    n, limit = part_instances(composite, cfg), cfg.technology.glue_activity_max_parts
    if n <= limit:
        return None
    return (f"the {composite} has {n} part instances, more than technology.glue_activity_max_parts = {limit}, "
            "so its whole-composite SAIF run is not made")


def alias_part_ports(saif) -> int:
    """Give ``saif`` the glue's names of the parts' ports: a part instance ``p``'s port ``x`` (``p.x`` in the
    composite's SAIF) is the glue's port ``p__x`` (hdl/lxe/parts.py flips the part's signature into the glue's).
    Every instance just below the top gets the aliases (a name the SAIF has already keeps its own activity).
    Returns how many names were added."""
    added = 0
    for name, value in list(saif.signals.items()):
        inst, _, port = name.partition(".")
        if port and "." not in port and f"{inst}__{port}" not in saif.signals:
            saif.signals[f"{inst}__{port}"] = value
            added += 1
    return added


def glue_activity(glue: str, cfg, work: Path, *, transactions: int, seed: int = 1, p_valid: float = 1.0,
                  p_ready: float = 1.0, stimulus: str | None = None):
    """``(StimulusRun, Saif)`` of a glue: its composite's own bench on the whole composite (Verilator, SAIF), the
    SAIF read at the composite's top, where the glue's logic and memories have the glue's names, and the parts'
    ports renamed to the glue's (:func:`alias_part_ports`). The glue's activity is what the composite's traffic
    gives it, checked against the composite's golden model like every run."""
    from .saif import read_saif
    from .verilog import emit

    composite = composite_of(glue)
    if composite is None:
        raise VrexError(f"{glue} is not the glue of a registered composite")
    emitted = emit(composite, cfg)
    run = record_activity(composite, cfg, emitted, work, transactions=transactions, seed=seed, p_valid=p_valid,
                          p_ready=p_ready, stimulus=stimulus)
    saif = read_saif(run.saif, emitted.top)
    alias_part_ports(saif)
    run.stimulus = dict(run.stimulus, composite=composite,
                        kind=f"{run.stimulus['kind']} through the {composite} bench")
    return run, saif
