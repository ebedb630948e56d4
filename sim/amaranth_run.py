"""Run a :class:`~vrex.sim.bench.StreamBench` on an Amaranth component in amaranth.sim (no Verilog, no build)."""

from __future__ import annotations

from amaranth.hdl import Value
from amaranth.sim import Simulator

from .bench import BenchResult, StreamBench
from .ports import resolve_port
from .traffic import Traffic

__all__ = ["run_amaranth", "run_checked"]


def run_amaranth(dut, bench: StreamBench, *, vcd_path=None) -> BenchResult:
    """Simulate ``dut`` with the bench's traffic; returns what the output ports delivered and when."""
    ins = {p: resolve_port(dut, p) for p in bench.inputs}
    outs = {p: resolve_port(dut, p) for p in bench.expected}
    traffic = Traffic(bench, "amaranth.sim")
    signals = {}
    sampled = [ins[p].ready for p in ins] + [x for p in outs for x in (outs[p].valid, Value.cast(outs[p].payload))]

    async def testbench(ctx):
        for name, value in bench.statics.items():
            ctx.set(resolve_port(dut, name), value)
        for _ in range(bench.reset_cycles):
            await ctx.tick()
        while not traffic.finished():
            drive, ready = traffic.before_edge()
            for p, (valid, payload) in drive.items():
                ctx.set(ins[p].valid, valid)
                if valid:
                    ctx.set(Value.cast(ins[p].payload), payload)
            for p, r in ready.items():
                ctx.set(outs[p].ready, r)
            values = (await ctx.tick().sample(*sampled))[2:]
            in_ready = dict(zip(ins, values[:len(ins)]))
            rest = values[len(ins):]
            out_valid = {p: rest[2 * k] for k, p in enumerate(outs)}
            out_payload = {p: rest[2 * k + 1] for k, p in enumerate(outs)}
            traffic.at_edge(in_ready, out_valid, out_payload, ready)
        signals.update({name: ctx.get(resolve_port(dut, name)) for name in bench.expected_signals})

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    if vcd_path:
        with sim.write_vcd(str(vcd_path)):
            sim.run()
    else:
        sim.run()
    return traffic.result({"signals": signals})


def run_checked(dut, bench: StreamBench, what: str) -> BenchResult:
    """:func:`run_amaranth` for a run that must match (a measurement): raise AssertionError with the bench's
    report, introduced by ``what`` (the run), when it does not."""
    result = run_amaranth(dut, bench)
    report = result.report(bench)
    if report:
        raise AssertionError(f"{what} does not match the golden model:\n{report}")
    return result
