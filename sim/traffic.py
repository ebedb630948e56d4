"""The cycle-by-cycle stream traffic engine shared by the amaranth.sim and cocotb benches.

It also checks the stream protocol on every output: once a payload is offered (valid) and not taken (ready low),
valid must stay high and the payload unchanged until the transfer (``BenchResult.protocol_errors``).

Both simulators call :meth:`Traffic.before_edge` once per cycle (to get the values to drive) and
:meth:`Traffic.at_edge` with the sampled handshake signals (to record completed transfers). Keeping this
logic in one place means the two simulators see the same random valid/ready sequences for the same seed.
"""

from __future__ import annotations

import random

from .bench import BenchResult, StreamBench

__all__ = ["Traffic"]


class Traffic:
    def __init__(self, bench: StreamBench, simulator: str):
        self.bench, self.simulator = bench, simulator
        self.rng = random.Random(bench.seed)
        self.next_index = {p: 0 for p in bench.inputs}
        self.offering = {p: False for p in bench.inputs}
        self.observed = {p: [] for p in bench.expected}
        self.in_cycles = {p: [] for p in bench.inputs}
        self.out_cycles = {p: [] for p in bench.expected}
        self.cycle = 0
        self.quiet_after_done = 0
        self.stalled = {p: None for p in bench.expected}   # payload offered but not accepted last cycle
        self.protocol_errors = []

    # ---- per cycle -------------------------------------------------------------------------------------------

    def before_edge(self) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
        """Values to drive this cycle: ``{in_port: (valid, payload)}``, ``{out_port: ready}``.

        An offered transaction stays offered (valid held, payload stable) until it is accepted, as the stream
        protocol requires.
        """
        drive = {}
        for p, txns in self.bench.inputs.items():
            i = self.next_index[p]
            if i < len(txns) and not self.offering[p] and self.rng.random() < self.bench.p_valid:
                self.offering[p] = True
            drive[p] = (1, txns[i]) if self.offering[p] else (0, 0)
        ready = {p: int(self.rng.random() < self.bench.p_ready) for p in self.bench.expected}
        return drive, ready

    def at_edge(self, in_ready: dict[str, int], out_valid: dict[str, int], out_payload: dict[str, int],
                out_ready: dict[str, int]) -> None:
        """Record the handshakes completing at this clock edge (signals sampled just before it)."""
        for p in self.bench.inputs:
            if self.offering[p] and in_ready[p]:
                self.in_cycles[p].append(self.cycle)
                self.next_index[p] += 1
                self.offering[p] = False
        for p in self.bench.expected:
            held = self.stalled[p]
            if held is not None and (not out_valid[p] or out_payload[p] != held) and len(self.protocol_errors) < 20:
                self.protocol_errors.append(f"{p} cycle {self.cycle}: " + (
                    "valid dropped before the transfer" if not out_valid[p] else
                    f"payload changed while stalled ({held:#x} -> {out_payload[p]:#x})"))
            self.stalled[p] = out_payload[p] if out_valid[p] and not out_ready[p] else None
            if out_valid[p] and out_ready[p]:
                self.observed[p].append(out_payload[p])
                self.out_cycles[p].append(self.cycle)
        self.cycle += 1
        if self.all_expected_seen():
            self.quiet_after_done += 1

    # ---- termination -----------------------------------------------------------------------------------------

    def all_expected_seen(self) -> bool:
        return (all(len(self.observed[p]) >= len(e) for p, e in self.bench.expected.items())
                and all(self.next_index[p] >= len(t) for p, t in self.bench.inputs.items()))

    def finished(self) -> bool:
        return self.quiet_after_done > self.bench.drain_cycles or self.cycle >= self.bench.cycle_budget()

    def result(self, extra=None) -> BenchResult:
        handshakes = dict(self.out_cycles)
        handshakes.update({f"in:{p}": c for p, c in self.in_cycles.items()})
        return BenchResult(self.simulator, self.observed, handshakes, self.cycle,
                           timed_out=not self.all_expected_seen(), extra=extra or {},
                           protocol_errors=list(self.protocol_errors))
