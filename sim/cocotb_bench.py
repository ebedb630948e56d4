"""The generic cocotb test: runs the StreamBench named by ``$VREX_BENCH`` on the simulated Verilog.

One testbench serves every block: the stimulus, the expected outputs (from the golden model) and the
traffic all come from the bench file; the handshake logic is :class:`vrex.sim.traffic.Traffic`, shared
with amaranth.sim. The observed transactions and their cycles are written to ``$VREX_RESULT``.
"""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from vrex.sim.bench import StreamBench
from vrex.sim.cocotb_values import value_int as _int
from vrex.sim.traffic import Traffic


@cocotb.test()
async def stream_bench(dut):
    bench = StreamBench.from_json(os.environ["VREX_BENCH"])
    traffic = Traffic(bench, os.environ.get("VREX_SIMULATOR", "cocotb"))
    ins = {p: (getattr(dut, f"{p}__valid"), getattr(dut, f"{p}__payload"), getattr(dut, f"{p}__ready"))
           for p in bench.inputs}
    outs = {p: (getattr(dut, f"{p}__valid"), getattr(dut, f"{p}__payload"), getattr(dut, f"{p}__ready"))
            for p in bench.expected}

    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    for name, value in bench.statics.items():
        getattr(dut, name).value = value
    for valid, payload, _ in ins.values():
        valid.value, payload.value = 0, 0
    for _, _, ready in outs.values():
        ready.value = 0
    for _ in range(bench.reset_cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    while not traffic.finished():
        drive, ready = traffic.before_edge()
        for p, (v, pl) in drive.items():
            ins[p][0].value = v
            if v:
                ins[p][1].value = pl
        for p, r in ready.items():
            outs[p][2].value = r
        await ReadOnly()
        traffic.at_edge({p: _int(h[2]) for p, h in ins.items()},
                        {p: _int(h[0]) for p, h in outs.items()},
                        {p: _int(h[1]) for p, h in outs.items()}, ready)
        await RisingEdge(dut.clk)

    await ReadOnly()
    result = traffic.result({"signals": {name: _int(getattr(dut, name)) for name in bench.expected_signals}})
    result.to_json(os.environ["VREX_RESULT"])
    report = result.report(bench)
    assert not report, report
