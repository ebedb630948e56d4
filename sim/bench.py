"""Simulator-neutral description of a stream test: stimulus, expected outputs, traffic, and its result.

A :class:`StreamBench` lists, per input stream port, the payloads to send (as integers packed with the
port's ``lib.data`` layout) and, per output stream port, the payloads expected in order (computed by the
golden model). The same bench runs under amaranth.sim (:mod:`vrex.sim.amaranth_run`) and under cocotb on
Verilator or Icarus (:mod:`vrex.sim.cocotb_bench`), so every implementation runs the same test body.

Traffic: each input offers a transaction with probability ``p_valid`` per cycle and each output is ready
with probability ``p_ready`` per cycle (independent per port, seeded). ``p_valid = p_ready = 1`` gives the
no-stall run used for cycle counts.

amaranth is imported lazily so the cocotb side stays light.

``expected_signals`` names status outputs (counters, flags) sampled once after the run has drained; a value is
compared like an output transaction, ``None`` records the value without checking it.

``statics`` are plain control inputs (thresholds, ratios, mode registers) driven to a constant for the
whole run, before reset is released.

``idle_inputs`` names inputs the bench leaves at 0 on purpose (a port, or a prefix such as ``kvmu_ctrl`` or ``dev``
for every port of that stream or bus): a unit of the design that the bench does not exercise, kept idle. Every
simulator holds undriven inputs at 0; the list tells a replay (the IP package's Verilog testbench) that this is
intended, not a forgotten static.

Port names are the flattened Verilog prefixes (``i`` for ``i__payload/i__valid/i__ready``; a nested port
``ctrl.tokens`` is ``ctrl__tokens``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["StreamBench", "BenchResult", "pack", "unpack", "leaf_fields", "describe", "Mismatch"]


def pack(layout, value) -> int:
    """Python value (dict/list/int) -> integer with the bit pattern of ``layout``."""
    from amaranth.hdl import Shape
    from amaranth.lib import data
    if isinstance(layout, data.Layout):
        return layout.const(value).as_value().value
    return int(value) & ((1 << Shape.cast(layout).width) - 1)


def unpack(layout, bits: int):
    """Integer -> nested dict/list/int following ``layout`` (inverse of :func:`pack`)."""
    from amaranth.hdl import Shape
    from amaranth.lib import data
    if isinstance(layout, data.StructLayout):
        return {name: unpack(f.shape, (bits >> f.offset) & ((1 << Shape.cast(f.shape).width) - 1))
                for name, f in layout}
    if isinstance(layout, data.ArrayLayout):
        w = Shape.cast(layout.elem_shape).width
        return [unpack(layout.elem_shape, (bits >> (i * w)) & ((1 << w) - 1)) for i in range(layout.length)]
    shape = Shape.cast(layout)
    bits &= (1 << shape.width) - 1
    if shape.signed and bits >> (shape.width - 1):
        bits -= 1 << shape.width
    return bits


def leaf_fields(layout, prefix="") -> list[tuple[str, int, int]]:
    """Flattened ``(name, offset, width)`` of every leaf of a layout, for readable mismatch reports."""
    from amaranth.hdl import Shape
    from amaranth.lib import data
    out = []
    if isinstance(layout, data.StructLayout):
        for name, f in layout:
            out += [(n, f.offset + o, w) for n, o, w in leaf_fields(f.shape, f"{prefix}{name}.")]
    elif isinstance(layout, data.ArrayLayout):
        w = Shape.cast(layout.elem_shape).width
        for i in range(layout.length):
            out += [(n, i * w + o, ww) for n, o, ww in leaf_fields(layout.elem_shape, f"{prefix.rstrip('.')}[{i}].")]
    else:
        out.append((prefix.rstrip(".") or "value", 0, Shape.cast(layout).width))
    return out


def describe(fields, bits: int) -> str:
    return ", ".join(f"{n}={(bits >> o) & ((1 << w) - 1)}" for n, o, w in fields)


@dataclass
class StreamBench:
    """Stimulus and expected outputs of one test, with the traffic that drives it."""

    name: str
    inputs: dict[str, list[int]]
    expected: dict[str, list[int]]
    fields: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)   # per port, for reports
    statics: dict[str, int] = field(default_factory=dict)   # quasi-static control inputs, set before reset
    expected_signals: dict[str, int | None] = field(default_factory=dict)   # status outputs sampled at the end
    idle_inputs: list[str] = field(default_factory=list)   # ports (or port prefixes) the bench holds at 0 on purpose
    p_valid: float = 0.7
    p_ready: float = 0.7
    seed: int = 1
    max_cycles: int = 0          # 0: derived from the transaction count
    drain_cycles: int = 16       # idle cycles after the last expected output that must stay quiet
    reset_cycles: int = 3

    def cycle_budget(self) -> int:
        n = sum(len(v) for v in self.inputs.values()) + sum(len(v) for v in self.expected.values())
        return self.max_cycles or (200 + 40 * n)

    def to_json(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, path: Path) -> "StreamBench":
        d = json.loads(Path(path).read_text())
        d["fields"] = {k: [tuple(x) for x in v] for k, v in d.get("fields", {}).items()}
        return cls(**d)


@dataclass
class Mismatch:
    port: str
    index: int
    expected: int | None
    got: int | None
    cycle: int | None


@dataclass
class BenchResult:
    """What a run observed: per port the payloads and the cycle (after reset) of each handshake."""

    simulator: str
    observed: dict[str, list[int]]
    handshake_cycles: dict[str, list[int]]
    cycles: int
    timed_out: bool = False
    extra: dict = field(default_factory=dict)
    protocol_errors: list = field(default_factory=list)   # output payload changed or valid dropped while stalled

    def mismatches(self, bench: StreamBench) -> list[Mismatch]:
        out = []
        for port, exp in bench.expected.items():
            got = self.observed.get(port, [])
            cyc = self.handshake_cycles.get(port, [])
            for i in range(max(len(exp), len(got))):
                e = exp[i] if i < len(exp) else None
                g = got[i] if i < len(got) else None
                if e != g:
                    out.append(Mismatch(port, i, e, g, cyc[i] if i < len(cyc) else None))
        return out

    def report(self, bench: StreamBench, limit: int = 5) -> str:
        """Human-readable account of the first mismatches (empty when the run matches)."""
        mm = self.mismatches(bench)
        signals = self.extra.get("signals", {})
        wrong = {k: (v, signals.get(k)) for k, v in bench.expected_signals.items()
                 if v is not None and signals.get(k) != v}
        if not mm and not self.timed_out and not self.protocol_errors and not wrong:
            return ""
        lines = [f"{bench.name} on {self.simulator}: {len(mm)} mismatching transaction(s)"
                 + (f", {len(wrong)} status signal(s) wrong" if wrong else "")
                 + (f", timed out after {self.cycles} cycles" if self.timed_out else "")
                 + (f", {len(self.protocol_errors)} stream protocol violation(s)" if self.protocol_errors else "")]
        lines += [f"  protocol: {e}" for e in self.protocol_errors[:limit]]
        for m in mm[:limit]:
            f = bench.fields.get(m.port, [("value", 0, 64)])
            e = "nothing" if m.expected is None else describe(f, m.expected)
            g = "nothing" if m.got is None else describe(f, m.got)
            lines.append(f"  {m.port}[{m.index}] (cycle {m.cycle}): expected {e}; got {g}")
        for port in bench.expected:
            lines.append(f"  {port}: expected {len(bench.expected[port])} transactions, "
                         f"observed {len(self.observed.get(port, []))}")
        for name, (exp, got) in wrong.items():
            lines.append(f"  signal {name} at the end: expected {exp}, got {got}")
        return "\n".join(lines)

    def to_json(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, path: Path) -> "BenchResult":
        return cls(**json.loads(Path(path).read_text()))
