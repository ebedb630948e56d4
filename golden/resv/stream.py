"""The streaming session's steps and the device-resident window (what is offloaded when).

**Steps and stages.** A session is processed as a sequence of *steps*; each step's tokens are the queries of one
prefill or decode pass:

- *frame stage* — one step per frame: the frame's ``tokens_per_frame`` tokens are the queries (iterative prefill);
- *text stage* — one step for each question (its tokens prefilled together), then one decode step per answer
  token (the answer is generated token by token).

**Residency.** Before a step starting at token ``s``, the first ``resv.sink_tokens`` tokens (attention sinks) and
the *recent window* ``[r, s)`` are in device memory; everything in between is *offloaded* (host memory / SSD).
With ``dre.kvmu.eviction_granularity = frame`` the window holds the newest whole segments (frames, questions,
answers) that fit in ``resv.recent_window_tokens`` (``r`` = the first segment boundary ≥ ``s - window``); with
``token`` it holds exactly the newest ``window`` tokens (``r = s - window``). The current step's own tokens are
always resident. The *retrieval ratio* of a step is fetched offloaded tokens / offloaded tokens.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from vrex.golden.traces.trace import ANSWER, FRAME, KIND_NAMES, QUESTION, Trace

__all__ = ["Step", "Residency", "Stream", "session_steps", "STAGES"]

STAGES = ("frame", "text")


@dataclass(frozen=True)
class Step:
    index: int        # position in the session's step sequence
    kind: int         # FRAME, QUESTION or ANSWER
    start: int        # first query token
    end: int          # one past the last query token
    label: str        # F<frame>, Q<turn>, A<answer token>: used in job context names

    @property
    def stage(self) -> str:
        return "frame" if self.kind == FRAME else "text"

    @property
    def substage(self) -> str:
        return KIND_NAMES[self.kind]

    @property
    def tokens(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Residency:
    sinks: int            # [0, sinks) resident
    window_start: int     # [window_start, start) resident
    start: int            # first token of the current step

    @property
    def offloaded(self) -> range:
        return range(self.sinks, max(self.sinks, self.window_start))

    @property
    def n_offloaded(self) -> int:
        return len(self.offloaded)


def session_steps(trace: Trace) -> list[Step]:
    steps, frame_no, q_no, a_no = [], 0, 0, 0
    for seg in trace.segments:
        if seg.kind == FRAME:
            steps.append(Step(len(steps), FRAME, seg.start, seg.end, f"F{frame_no}"))
            frame_no += 1
        elif seg.kind == QUESTION:
            steps.append(Step(len(steps), QUESTION, seg.start, seg.end, f"Q{q_no}"))
            q_no += 1
        else:
            for t in range(seg.start, seg.end):
                steps.append(Step(len(steps), ANSWER, t, t + 1, f"A{a_no}"))
                a_no += 1
    return steps


class Stream:
    """Steps of a trace and the residency before each (see the module docstring)."""

    def __init__(self, cfg, trace: Trace):
        self.cfg, self.trace = cfg, trace
        self.steps = session_steps(trace)
        self._starts = [seg.start for seg in trace.segments]

    def residency(self, step: Step) -> Residency:
        r_cfg, s = self.cfg.resv, step.start
        sinks = min(r_cfg.sink_tokens, s)
        lo = s - r_cfg.recent_window_tokens
        if lo <= sinks:
            return Residency(sinks, sinks, s)
        if self.cfg.dre.kvmu.eviction_granularity == "token":
            return Residency(sinks, lo, s)
        i = bisect.bisect_left(self._starts, lo)
        r = self._starts[i] if i < len(self._starts) and self._starts[i] <= s else s
        return Residency(sinks, max(sinks, r), s)
