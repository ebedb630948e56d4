"""The KVMU's cocotb test: the sequencer and the LXE on the streams, cocotbext-axi AxiRam models on the AXI ports.

Reads the :class:`vrex.sim.dre.kvmu.bench.KVMUBench` named by ``$VREX_BENCH``, runs every job (control beat, descriptors,
mask; response; then the LXE's record writes), and writes to ``$VREX_RESULT`` per job the response, the AXI
bursts of each port and the digests of the checked regions, the final image digests and the counters, and the
protocol violations the monitor saw (a burst over 256 beats or across 4 KiB, more than ``max_outstanding`` bursts
in flight, a write without its response at the end of a job). The comparison with the golden model is
:meth:`KVMUBench.report`.
"""

import json
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus
from cocotbext.axi.axi_ram import AxiRamRead, AxiRamWrite
from cocotbext.axi.memory import Memory

from vrex.config import Config
from vrex.sim.cocotb_values import value_int as _int
from vrex.sim.dre.kvmu.bench import AXI_PREFIX as PREFIX
from vrex.sim.dre.kvmu.bench import PORTS, KVMUBench, digest, fill_pattern


class Tier(Memory):
    """An AxiRam whose reads / writes at beat addresses inside fault windows answer SLVERR."""

    def __init__(self, bus, clock, reset, size, mem=None, read_faults=(), write_faults=()):
        super().__init__(size, mem)
        outer = self

        class R(AxiRamRead):
            async def _read(self, address, length):
                if any(lo <= address < hi for lo, hi in read_faults):
                    raise OSError("injected read fault")
                return outer.read(address % outer.size, length)

        class W(AxiRamWrite):
            async def _write(self, address, data):
                if any(lo <= address < hi for lo, hi in write_faults):
                    raise OSError("injected write fault")
                outer.write(address % outer.size, data)

        self.write_if = W(bus.write, clock, reset, mem=self.mem)
        self.read_if = R(bus.read, clock, reset, mem=self.mem)

    def pause(self, gen_factory):
        for ch in (self.write_if.aw_channel, self.write_if.w_channel, self.write_if.b_channel,
                   self.read_if.ar_channel, self.read_if.r_channel):
            ch.set_pause_generator(gen_factory())




def quiet_and_pause(tiers, rng, p_pause: float) -> None:
    """Quiet cocotb's and the tiers' logs; give every channel of every tier its own random pause generator."""
    import logging

    for name in ("cocotb.dut", "cocotb"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for r in tiers:
        for part in (r.write_if, r.read_if):
            part.log.setLevel(logging.WARNING)
        if p_pause:
            prng = random.Random(rng.getrandbits(32))

            def gen(prng=prng):
                while True:
                    yield prng.random() < p_pause
            r.pause(gen)


class Monitor:
    """AR / AW handshakes per port, outstanding counts, and the AXI rules a burst must obey."""

    def __init__(self, dut, max_outstanding, beat_bytes, prefix=""):
        self.mo, self.beat = max_outstanding, beat_bytes
        self.sig = {}
        for port, pre in PREFIX.items():
            self.sig[port] = {n: getattr(dut, f"{pre}__{n}") for n in (
                "arvalid", "arready", "araddr", "arlen", "rvalid", "rready", "rlast", "awvalid", "awready", "awaddr",
                "awlen", "bvalid", "bready", "wvalid", "wready")}
        self.beats = {p: 0 for p in PORTS}      # W beats per port (bus utilisation)
        self.out_r = {p: 0 for p in PORTS}
        self.out_w = {p: 0 for p in PORTS}
        self.max_seen = {p: 0 for p in PORTS}
        self.bursts = {p: [] for p in PORTS}
        self.protocol = []

    def reset(self):
        self.out_r = {p: 0 for p in PORTS}
        self.out_w = {p: 0 for p in PORTS}

    def sample(self, cycle):
        for port, s in self.sig.items():
            for kind, v, r, addr, ln in (("AR", "arvalid", "arready", "araddr", "arlen"),
                                         ("AW", "awvalid", "awready", "awaddr", "awlen")):
                if _int(s[v]) and _int(s[r]):
                    a, beats = _int(s[addr]), _int(s[ln]) + 1
                    self.bursts[port].append([kind, a, beats])
                    if (a & 0xFFF) + beats * self.beat > 4096 and len(self.protocol) < 20:
                        self.protocol.append(f"cycle {cycle}: {port} {kind} {a:#x} x {beats} beats crosses 4 KiB")
                    if kind == "AR":
                        self.out_r[port] += 1
                    else:
                        self.out_w[port] += 1
            if _int(s["rvalid"]) and _int(s["rready"]) and _int(s["rlast"]):
                self.out_r[port] -= 1
            if _int(s["bvalid"]) and _int(s["bready"]):
                self.out_w[port] -= 1
            if _int(s["wvalid"]) and _int(s["wready"]):
                self.beats[port] += 1
            n = max(self.out_r[port], self.out_w[port])
            self.max_seen[port] = max(self.max_seen[port], n)
            if n > self.mo and len(self.protocol) < 20:
                self.protocol.append(f"cycle {cycle}: {port} has {n} bursts in flight (max_outstanding {self.mo})")


class Stream:
    """A sending stream port with random valid (an offered beat stays until taken)."""

    def __init__(self, dut, name, rng, p):
        self.valid, self.payload, self.ready = (getattr(dut, f"{name}__{x}") for x in ("valid", "payload", "ready"))
        self.rng, self.p = rng, p
        self.queue, self.offering = [], False
        self.valid.value = 0

    def drive(self):
        if self.queue and not self.offering and self.rng.random() < self.p:
            self.offering = True
            self.payload.value = self.queue[0]
        self.valid.value = int(self.offering)

    def sampled(self):
        if self.offering and _int(self.ready):
            self.queue.pop(0)
            self.offering = False

    def clear(self):
        self.queue, self.offering = [], False
        self.valid.value = 0


@cocotb.test()
async def kvmu_bench(dut):
    bench = KVMUBench.from_json(os.environ["VREX_BENCH"])
    cfg = Config.from_dict(bench.config)
    km = cfg.kvmu_map
    rng = random.Random(bench.seed)
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    dut.clear.value = 0
    pre = bench.prefix
    streams = {n: Stream(dut, pre + n, rng, bench.p_valid) for n in ("ctrl", "tokens", "masks")}
    resp_valid, resp_payload, resp_ready = (getattr(dut, f"{pre}resp__{x}") for x in ("valid", "payload", "ready"))
    resp_ready.value = 0
    faults = {}
    for port, kind, lo, hi in bench.faults:
        faults.setdefault((port, kind), []).append((lo, hi))

    def tier(port, size, mem=None):
        return Tier(AxiBus.from_prefix(dut, PREFIX[port] + "_"), dut.clk, dut.rst, size, mem,
                    faults.get((port, "read"), ()), faults.get((port, "write"), ()))

    dev = tier("device", km.device_bytes)
    host = tier("host", km.host_bytes)
    tbl = tier("table", km.device_bytes, mem=dev.mem)
    quiet_and_pause((dev, host, tbl), rng, bench.p_pause)

    def fill():
        if bench.fill:
            dev.write(0, fill_pattern(bench.fill_seed, km.device_bytes))
            host.write(0, fill_pattern(bench.fill_seed + 1, km.host_bytes))

    fill()
    mon = Monitor(dut, cfg.dre.kvmu.max_outstanding, km.beat_bytes)
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    results, cycle, budget = [], 0, bench.cycle_budget()
    t0 = time.time()
    timed_out = False
    for i, job in enumerate(bench.jobs):
        streams["ctrl"].queue = [job["ctrl"]]
        streams["tokens"].queue = list(job["tokens"])
        streams["masks"].queue = list(job["masks"])
        for p in PORTS:
            mon.bursts[p] = []
        start, beats0 = cycle, dict(mon.beats)
        resp = None
        reset_at = cycle + rng.randint(5, 120) if i == bench.reset_job else None
        while resp is None:
            for s in streams.values():
                s.drive()
            ready = int(rng.random() < bench.p_ready)
            resp_ready.value = ready
            await ReadOnly()
            mon.sample(cycle)
            for s in streams.values():
                s.sampled()
            if ready and _int(resp_valid):
                resp = _int(resp_payload)
            await RisingEdge(dut.clk)
            cycle += 1
            if reset_at is not None and cycle >= reset_at:
                dut.rst.value = 1
                for s in streams.values():
                    s.clear()
                for _ in range(5):
                    await RisingEdge(dut.clk)
                    cycle += 1
                fill()
                mon.reset()
                dut.rst.value = 0
                resp = -1
            if cycle > budget:
                timed_out = True
                break
        if timed_out:
            break
        for p in PORTS:
            if mon.out_w[p] or mon.out_r[p]:
                mon.protocol.append(f"job {i}: {p} has {mon.out_w[p]} writes / {mon.out_r[p]} reads in flight at "
                                    "its response")
        if resp != -1:
            for addr, hexdata in job["writes"]:
                dev.write(addr, bytes.fromhex(hexdata))
        digests = {}
        for name, (tier_name, lo, hi) in bench.regions.items():
            digests[name] = digest((dev if tier_name == "device" else host).read(lo, hi - lo))
        if bench.regions:
            digests["host_used"] = digest(host.read(0, job["host_used"]))
        results.append({"resp": resp, "bursts": {p: list(mon.bursts[p]) for p in PORTS}, "digests": digests,
                        "cycles": cycle - start, "beats": {p: mon.beats[p] - beats0[p] for p in PORTS}})
    resp_ready.value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    await ReadOnly()
    counters = {}
    for name in list(bench.counters) + ["busy_cycles", "port_wait_cycles"]:
        counters[name] = _int(getattr(dut, f"status__{pre}{name}"))
    result = {"jobs": results, "cycles": cycle, "timed_out": timed_out, "protocol": mon.protocol,
              "max_outstanding_seen": mon.max_seen, "counters": counters,
              "final": {"device": digest(dev.read(0, km.device_bytes)),
                        "host": digest(host.read(0, km.host_bytes))} if bench.fill else {},
              "sim_seconds": round(time.time() - t0, 2)}
    with open(os.environ["VREX_RESULT"], "w") as f:
        json.dump(result, f)
    report = bench.report(result)
    assert not report, report
