"""Run a :class:`~.bench.CoreBench` on the core in amaranth.sim (no Verilog, no build).

The host and the memories are the cocotb test's (:mod:`.cocotb_test`) in Python: the step's SRAM writes and the
command under random valid, the forwarded streams and the response under random ready, and the four AXI ports
served by :class:`vrex.sim.axi_model.AxiSlave` (device tier shared by ``kvmu_dev``, ``kvmu_tbl`` and ``hct``; host
tier on ``kvmu_host``) with random pauses on every channel. The result has the layout of the cocotb test's, so
:meth:`CoreBench.report` compares both.
"""

from __future__ import annotations

import random
import time

from amaranth.hdl import Value
from amaranth.sim import Simulator

from ..axi_model import AxiSlave
from vrex.sim.dre.kvmu.bench import digest, fill_pattern
from .bench import COUNTERS, STREAMS

__all__ = ["run_amaranth"]



def run_amaranth(core, bench, cfg, *, trace_states: bool = False, probes: dict | None = None) -> dict:
    """Simulate ``core`` (a :class:`vrex.hdl.core.Core`) with the bench; returns the result dict (per command also
    the sequencer's counters at its response; on a timeout ``state``, the sequencer's state). For debugging:
    ``trace_states`` adds ``states``, the sequencer's state changes as ``[cycle, state]``, and ``probes`` (name ->
    signal) adds ``probes``, ``[cycle, {name: value}]`` whenever a value changes."""
    km, cm = cfg.kvmu_map, cfg.core_map
    rng = random.Random(bench.seed)
    device = bytearray(fill_pattern(bench.fill_seed, cm.end))
    host = bytearray(fill_pattern(bench.fill_seed + 1, km.host_bytes))
    beat = cfg.dre.kvmu.axi_data_bits // 8
    slaves = [AxiSlave(getattr(core, port), mem, beat_bytes=beat, rng=random.Random(rng.getrandbits(32)),
                       p_pause=bench.p_pause)
              for port, mem in (("kvmu_dev", device), ("kvmu_host", host), ("kvmu_tbl", device), ("hct", device))]
    ins = {name: getattr(core, name) for name in ("sram_cmd", "cmd")}
    outs = {name: getattr(core, name) for name in (*STREAMS, "resp")}
    result = {"jobs": [], "cycles": 0, "timed_out": False, "protocol": []}

    async def testbench(ctx):
        for name, value in bench.statics.items():
            ctx.set(getattr(core, name), value)
        ctx.set(core.sram_rdata.ready, 1)
        sampled = [x for s in slaves for x in s.signals()]
        sampled += [ins[p].ready for p in ins] + [x for p in outs for x in (outs[p].valid, Value.cast(outs[p].payload))]
        states = list(core.sequencer_states().items()) if trace_states else []
        sampled += [sig for _, sig in states]
        result["states"], last_state = [], None
        probes_ = list((probes or {}).items())
        sampled += [sig for _, sig in probes_]
        result["probes"], last_probe = [], None
        cycle, budget = 0, bench.cycle_budget()
        stalled = {p: None for p in outs}
        for i, job in enumerate(bench.jobs):
            queues = {"sram_cmd": list(bench.setup if i == 0 else []) + list(job["sram"]), "cmd": []}
            offering = {p: False for p in ins}
            got = {p: [] for p in STREAMS}
            resp, start = None, cycle
            while resp is None:
                if not queues["sram_cmd"] and not offering["sram_cmd"] and not queues["cmd"] and not offering["cmd"]:
                    queues["cmd"] = [job["cmd"]]
                for p, port in ins.items():
                    if queues[p] and not offering[p] and rng.random() < bench.p_valid:
                        offering[p] = True
                        ctx.set(Value.cast(port.payload), queues[p][0])
                    ctx.set(port.valid, int(offering[p]))
                ready = {p: int(rng.random() < bench.p_ready) for p in outs}
                for p, r in ready.items():
                    ctx.set(outs[p].ready, r)
                for s in slaves:
                    s.drive(ctx)
                values = (await ctx.tick().sample(*sampled))[2:]
                if probes_:
                    now = dict(zip((n for n, _ in probes_), values[len(values) - len(probes_):]))
                    if now != last_probe:
                        result["probes"].append([cycle, now])
                        last_probe = now
                    values = values[:len(values) - len(probes_)]
                if states:
                    now = next((n for (n, _), v in zip(states, values[-len(states):]) if v), None)
                    if now != last_state:
                        result["states"].append([cycle, now])
                        last_state = now
                k = 0
                for s in slaves:
                    n = len(s.signals())
                    s.edge(values[k:k + n], cycle)
                    k += n
                for p in ins:
                    if offering[p] and values[k]:
                        queues[p].pop(0)
                        offering[p] = False
                    k += 1
                for p in outs:
                    valid, payload = values[k], values[k + 1]
                    k += 2
                    held = stalled[p]
                    if held is not None and (not valid or payload != held) and len(result["protocol"]) < 10:
                        result["protocol"].append(f"{p} cycle {cycle}: " + (
                            "valid dropped before the transfer" if not valid else "payload changed while stalled"))
                    stalled[p] = payload if valid and not ready[p] else None
                    if valid and ready[p]:
                        if p == "resp":
                            resp = payload
                        else:
                            got[p].append(payload)
                cycle += 1
                if cycle > budget:
                    result["timed_out"] = True
                    break
            if result["timed_out"]:
                break
            digests = {name: digest(bytes(device[lo:hi])) for name, (lo, hi) in bench.regions.items()}
            digests["host_used"] = digest(bytes(host[:job["host_used"]]))
            counters = {name: ctx.get(getattr(core.status.core, name)) for name in COUNTERS}
            result["jobs"].append({"resp": resp, **got, "digests": digests, "cycles": cycle - start,
                                   "counters": counters})
        for p in outs:
            ctx.set(outs[p].ready, 0)
        for _ in range(4):
            await ctx.tick()
        if result["timed_out"]:
            result["state"] = [name for name, sig in core.sequencer_states().items() if ctx.get(sig)]
        result["counters"] = {name: ctx.get(getattr(core.status.core, name)) for name in COUNTERS}
        result["cycles"] = cycle
        result["protocol"] += [e for s in slaves for e in s.protocol]
        result["final"] = {"device": digest(bytes(device)), "host": digest(bytes(host))}

    t0 = time.time()
    sim = Simulator(core)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    result["sim_seconds"] = round(time.time() - t0, 2)
    return result
