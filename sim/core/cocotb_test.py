"""The core's cocotb test: the host on the streams, cocotbext-axi AxiRam models on the four AXI ports.

Reads the :class:`vrex.sim.core.bench.CoreBench` named by ``$VREX_BENCH``. Before each command the host writes the
step's operand lines into the LXE SRAM (``sram_cmd``, random valid), then sends the command and takes the
forwarded HCU assignments, WTU rows and group masks and the response under random ready; the device tier (with the
KVMU's table port and the core's HC-table port on the same memory) and the host tier are ``AxiRam`` models with
random pauses on every channel. After each command the digests of the bench's regions are recorded; at the end the
full images and the sequencer's counters. ``$VREX_RESULT`` receives it all; :meth:`CoreBench.report` compares.
"""

import json
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus

from vrex.config import Config
from vrex.sim.cocotb_values import value_int as _int
from vrex.sim.core.bench import COUNTERS, STREAMS, CoreBench
from vrex.sim.dre.kvmu.bench import digest, fill_pattern
from vrex.sim.dre.kvmu.cocotb_test import Stream, Tier, quiet_and_pause



class Sink:
    """An output stream port with random ready; collects the payloads it takes."""

    def __init__(self, dut, name, rng, p):
        self.valid, self.payload, self.ready = (getattr(dut, f"{name}__{x}") for x in ("valid", "payload", "ready"))
        self.rng, self.p, self.got = rng, p, []
        self.ready.value = 0
        self.stalled = None
        self.errors = []

    def drive(self):
        self.r = int(self.rng.random() < self.p)
        self.ready.value = self.r

    def sampled(self, name, cycle):
        v = _int(self.valid)
        held = self.stalled
        if held is not None and (not v or _int(self.payload) != held) and len(self.errors) < 10:
            self.errors.append(f"{name} cycle {cycle}: " + ("valid dropped before the transfer" if not v else
                                                             "payload changed while stalled"))
        self.stalled = _int(self.payload) if v and not self.r else None
        if v and self.r:
            self.got.append(_int(self.payload))
            return True
        return False


@cocotb.test()
async def core_bench(dut):
    bench = CoreBench.from_json(os.environ["VREX_BENCH"])
    cfg = Config.from_dict(bench.config)
    km, cm = cfg.kvmu_map, cfg.core_map
    rng = random.Random(bench.seed)
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    for name, value in bench.statics.items():
        getattr(dut, name).value = value
    for name in ("cmd", "sram_cmd"):
        getattr(dut, f"{name}__valid").value = 0
    dut.sram_rdata__ready.value = 1
    sram = Stream(dut, "sram_cmd", rng, bench.p_valid)
    cmd = Stream(dut, "cmd", rng, bench.p_valid)
    sinks = {name: Sink(dut, name, rng, bench.p_ready) for name in (*STREAMS, "resp")}

    def tier(prefix, size, mem=None):
        return Tier(AxiBus.from_prefix(dut, prefix + "_"), dut.clk, dut.rst, size, mem)

    dev = tier("kvmu_dev", cm.end)
    host = tier("kvmu_host", km.host_bytes)
    tiers = [dev, host, tier("kvmu_tbl", cm.end, mem=dev.mem), tier("hct", cm.end, mem=dev.mem)]
    quiet_and_pause(tiers, rng, bench.p_pause)
    dev.write(0, fill_pattern(bench.fill_seed, cm.end))
    host.write(0, fill_pattern(bench.fill_seed + 1, km.host_bytes))
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    results, cycle, budget, timed_out = [], 0, bench.cycle_budget(), False
    t0 = time.time()
    protocol = []
    for i, job in enumerate(bench.jobs):
        sram.queue = list(bench.setup if i == 0 else []) + list(job["sram"])
        start = cycle
        got = {name: [] for name in STREAMS}
        resp = None
        phase = "sram"
        while resp is None:
            if phase == "sram" and not sram.queue and not sram.offering:
                phase = "cmd"
                cmd.queue = [job["cmd"]]
            sram.drive()
            cmd.drive()
            for s in sinks.values():
                s.drive()
            await ReadOnly()
            sram.sampled()
            cmd.sampled()
            for name, s in sinks.items():
                if s.sampled(name, cycle):
                    if name == "resp":
                        resp = s.got[-1]
                    else:
                        got[name].append(s.got[-1])
            await RisingEdge(dut.clk)
            cycle += 1
            if cycle > budget:
                timed_out = True
                break
        if timed_out:
            break
        digests = {name: digest(dev.read(lo, hi - lo)) for name, (lo, hi) in bench.regions.items()}
        digests["host_used"] = digest(host.read(0, job["host_used"]))
        results.append({"resp": resp, **got, "digests": digests, "cycles": cycle - start})
    for s_name, s in sinks.items():
        protocol += s.errors
        s.ready.value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    await ReadOnly()
    counters = {name: _int(getattr(dut, f"status__core__{name}")) for name in COUNTERS}
    result = {"jobs": results, "cycles": cycle, "timed_out": timed_out, "protocol": protocol,
              "counters": counters, "final": {"device": digest(dev.read(0, cm.end)),
                                              "host": digest(host.read(0, km.host_bytes))},
              "sim_seconds": round(time.time() - t0, 2)}
    with open(os.environ["VREX_RESULT"], "w") as f:
        json.dump(result, f)
    report = bench.report(result)
    assert not report, report
