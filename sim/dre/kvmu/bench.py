"""The KVMU bench: golden jobs, their expected AXI traffic and memory images, run on cocotb with cocotbext-axi.

The StreamBench machinery drives stream ports from fixed lists; the KVMU also has three AXI4 master ports and a
sequencer protocol (the LXE writes a job's new tokens into the ring after its response), so it has its own bench:

- :func:`make_bench` builds a :class:`KVMUBench`: the jobs (random, or recorded from a ReSV session with
  :func:`vrex.golden.dre.kvmu.session_jobs`) packed with the KVMU's stream layouts, the LXE's record writes after each
  job, and, from the golden model (:class:`vrex.golden.dre.kvmu.KVMUModel`, or a deliberately wrong ``reference``), the
  expected response, AXI bursts per port and memory digests after every job and the full images at the end;
- :mod:`vrex.sim.dre.kvmu.cocotb_test` (the cocotb test) plays the sequencer and the LXE with random valid/ready on the
  streams, serves the ports with cocotbext-axi ``AxiRam`` models (device tier, host tier, and the table port on the
  device memory) under random pause generators on every channel, injects SLVERR windows, optionally resets the
  unit in the middle of a job, and records what it sees;
- :meth:`KVMUBench.report` compares the two (empty when they match).

Memories start filled with a seeded pattern (their *guard bytes*), so the final full-image comparison shows any
stray write. After a mid-traffic reset both memories are refilled with the pattern and the rest of the run is a new
session (the jobs after ``reset_job``), checked like the first part.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vrex.golden.dre.kvmu import Job, KVMUModel, mask_beats, random_kvmu_jobs

__all__ = ["JOB_KIND", "KVMUBench", "make_bench", "activity_bench", "run_bench", "measure_cycles", "digest", "region_diffs",
           "final_diffs", "pack_job", "expected_for", "record_data", "page_checksum", "PAGE_BYTES", "TIER_OF_PORT",
           "AXI_PREFIX", "address_pattern", "pattern_word"]

JOB_KIND = "kvmu"
PORTS = ("device", "host", "table")
AXI_PREFIX = {"device": "dev", "host": "host", "table": "tbl"}        # AXI4 port of the KVMU top per bench port
TIER_OF_PORT = {"device": "device", "host": "host", "table": "device"}   # the table port reads the device memory
PAGE_BYTES = 4096


def page_checksum(data: bytes, beat_bytes: int) -> int:
    """Checksum of one memory page for the Verilog testbench (vrex.sim.dre.kvmu.verilog_bench): over its beats k (little
    endian, as AXI lanes), the 64-bit sum of (low 64 bits XOR the rest folded in 64-bit words) x (2k + 1); a changed
    byte or two swapped beats change it."""
    total = 0
    for k in range(len(data) // beat_bytes):
        beat = int.from_bytes(data[k * beat_bytes:(k + 1) * beat_bytes], "little")
        folded = 0
        while beat:
            folded ^= beat & 0xFFFFFFFFFFFFFFFF
            beat >>= 64
        total = (total + folded * (2 * k + 1)) & 0xFFFFFFFFFFFFFFFF
    return total


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def record_data(seed: int, ctx: int, token: int, n: int) -> bytes:
    """The bytes the LXE writes for a token's record (deterministic per run, context and token)."""
    return random.Random(hash((seed, ctx, token)) & 0xFFFFFFFF).randbytes(n)


_M32 = 0xFFFFFFFF


def pattern_word(seed: int, word_address: int) -> int:
    """The 32-bit word of :func:`address_pattern` at a word address (byte address / 4), a multiply-xorshift hash
    that a Verilog testbench computes too (vrex.sim.dre.kvmu.verilog_bench)."""
    x = (((word_address & _M32) * 0x9E3779B1) & _M32) ^ (seed & _M32)
    x ^= x >> 15
    x = (x * 0x85EBCA77) & _M32
    return x ^ (x >> 13)


def address_pattern(seed: int, addr: int, n: int) -> bytes:
    """``n`` bytes of record data at byte address ``addr`` (both multiples of 4), a function of the address: what the
    LXE writes in a bench made with ``address_records`` (a Verilog testbench generates it instead of storing it)."""
    return b"".join(pattern_word(seed, w).to_bytes(4, "little") for w in range(addr // 4, (addr + n) // 4))


def fill_pattern(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


def region_diffs(expected: dict, got: dict) -> list[str]:
    """The regions (name -> digest) whose digests differ from the golden image's."""
    return [f"region {r} differs from the golden image" for r, d in expected.items() if got.get(r) != d]


def final_diffs(final: dict, result: dict) -> list[str]:
    """The tiers whose final image (digest) differs from the golden one."""
    return [f"final {tier} image differs from the golden image (a stray or missing write)"
            for tier in ("device", "host") if result.get("final", {}).get(tier) != final[tier]]


@dataclass
class KVMUBench:
    name: str
    config: dict
    jobs: list                    # per job: {"ctrl": int, "tokens": [int], "masks": [int], "writes": [[addr, hex]]}
    expected: list                # per job: {"resp": int, "bursts": {port: [[kind, addr, beats]]}, "digests": {...}}
    regions: dict                 # name -> [lo, hi] of the device / host regions digested after every job
    final: dict                   # {"device": digest, "host": digest} of the full images
    fill_seed: int = 7
    faults: list = field(default_factory=list)      # [port, kind, lo, hi]
    reset_job: int | None = None  # index of the job in which the unit is reset (its part is not checked)
    p_valid: float = 0.7
    p_ready: float = 0.7
    p_pause: float = 0.2
    seed: int = 1
    max_cycles: int = 0
    counters: dict = field(default_factory=dict)    # golden counters after the run (None: not checked)
    fill: bool = True             # memories start with the guard pattern and are compared (small maps only)
    prefix: str = ""              # port-name prefix of the KVMU streams and status (the DRE top: "kvmu_")
    page_sums: list = field(default_factory=list)   # [tier, page address, page_checksum] of every page the run
    #                               touches, after the run (make_bench(pages=True), for the Verilog testbench)

    def to_json(self, path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, path) -> "KVMUBench":
        return cls(**json.loads(Path(path).read_text()))

    def cycle_budget(self) -> int:
        beats = sum(b[2] for e in self.expected for bl in e["bursts"].values() for b in bl)
        return self.max_cycles or 20000 + 60 * beats + 400 * len(self.jobs)

    def report(self, result: dict, limit: int = 6) -> str:
        """What differs between the golden expectation and the run (empty: the run matches)."""
        lines = []
        if result.get("timed_out"):
            lines.append(f"timed out after {result['cycles']} cycles at job {len(result['jobs'])} of {len(self.jobs)}")
        lines += [f"protocol: {p}" for p in result.get("protocol", [])[:limit]]
        got = result.get("jobs", [])
        skip = self.reset_job
        bad = 0
        for i, exp in enumerate(self.expected):
            if i == skip:
                continue
            if i >= len(got):
                lines.append(f"job {i}: not completed")
                break
            g = got[i]
            diffs = []
            if g["resp"] != exp["resp"]:
                diffs.append(f"response {g['resp']:#x} != expected {exp['resp']:#x}")
            for port in PORTS:
                eb, gb = exp["bursts"].get(port, []), g["bursts"].get(port, [])
                if eb != gb:
                    k = next((j for j, (x, y) in enumerate(zip(eb, gb)) if x != y), min(len(eb), len(gb)))
                    diffs.append(f"{port} bursts differ at #{k}: expected {eb[k] if k < len(eb) else 'none'}, got "
                                 f"{gb[k] if k < len(gb) else 'none'} ({len(eb)} vs {len(gb)})")
            diffs += region_diffs(exp["digests"], g["digests"])
            if diffs:
                bad += 1
                if bad <= limit:
                    lines.append(f"job {i}: " + "; ".join(diffs))
        if bad > limit:
            lines.append(f"... {bad} jobs differ in all")
        if got and len(got) >= len(self.expected) and self.fill:
            lines += final_diffs(self.final, result)
            for name, value in self.counters.items():
                if value is not None and result.get("counters", {}).get(name) != value:
                    lines.append(f"counter {name}: expected {value}, got {result.get('counters', {}).get(name)}")
        return "\n".join(lines)


def pack_job(g, job: Job) -> dict:
    from vrex.hdl.dre.kvmu.layouts import control_layout, mask_layout, token_layout

    from vrex.sim.bench import pack

    ctrl = pack(control_layout(g), {"context": job.context, "step": job.step & 0xFFFF, "restart": int(job.restart),
                                    "buffer": job.buffer, "arrive": int(job.arrivals is not None),
                                    "prefetch": int(job.mask is not None)})
    arr = job.arrivals or ()
    tokens = [pack(token_layout(g), {"cluster": c, "segment_start": int(s), "last": int(i == len(arr) - 1)})
              for i, (c, s) in enumerate(arr)]
    masks = [pack(mask_layout(g), {"bits": b, "last": int(i == len(job.mask) - 1)})
             for i, b in enumerate(job.mask or ())]
    return {"ctrl": ctrl, "tokens": tokens, "masks": masks}


# Maps up to this size start with the guard pattern and are compared byte for byte; larger ones (the edge config's
# gigabytes) are checked through the responses and the AXI bursts of every port only.
FILL_LIMIT_BYTES = 64 << 20


def fills(cfg) -> bool:
    km = cfg.kvmu_map
    return km.device_bytes + km.host_bytes <= FILL_LIMIT_BYTES


def _regions(cfg) -> dict:
    km = cfg.kvmu_map
    if not fills(cfg):
        return {}
    return {"staging": ["device", km.staging_base, km.staging_base + km.staging_bytes],
            "tables": ["device", km.index_base, km.device_bytes]}


def expected_for(cfg, jobs, *, seed: int, fill_seed: int, faults=(), model_factory=KVMUModel, fill: bool = True,
                 address_records: bool = False):
    """Golden expectation of one session part: per job the response, bursts per port, region digests and LXE writes.

    ``model_factory(cfg, faults=..., record_bursts=True)`` builds the reference (a mutant in the mutation tests);
    ``fill``: memories start with the guard pattern where :func:`fills` allows it (else zeroed, no region digests);
    ``address_records``: the LXE's records are :func:`address_pattern` at their addresses (else :func:`record_data`).
    Returns (per-job list, final model)."""
    from vrex.hdl.dre.kvmu.layouts import KVMUGeometry, response_layout

    from vrex.sim.bench import pack

    km = cfg.kvmu_map
    g = KVMUGeometry.from_config(cfg)
    wins = {}
    for port, kind, lo, hi in faults:
        wins.setdefault((port, kind), []).append((lo, hi))
    model = model_factory(cfg, faults=wins, record_bursts=True)
    fill = fill and fills(cfg)
    if fill:
        model.device.write(0, fill_pattern(fill_seed, km.device_bytes))
        model.host.write(0, fill_pattern(fill_seed + 1, km.host_bytes))
    tokens = [0] * km.contexts
    out = []
    regions = _regions(cfg) if fill else {}
    for job in jobs:
        model.bursts.clear()
        r = model.run_job(job)
        writes = []
        if job.arrivals and job.context < km.contexts:
            first = tokens[job.context]
            n = min(len(job.arrivals), km.context_tokens - first)
            recs = [address_pattern(seed, model.token_address(job.context, first + i), km.record_bytes)
                    if address_records else record_data(seed, job.context, first + i, km.record_bytes)
                    for i in range(n)]
            writes = [[a, d.hex()] for a, d in model.write_tokens(job.context, first, recs)]
            tokens[job.context] += n
        bursts = {p: [] for p in PORTS}
        for port, kind, addr, beats in model.bursts:
            bursts[port].append([kind, addr, beats])
        digests = {name: digest((model.device if tier == "device" else model.host).read(lo, hi - lo))
                   for name, (tier, lo, hi) in regions.items()}
        if regions:
            digests["host_used"] = digest(model.host.read(0, model.next_block * km.block_bytes))
        resp = pack(response_layout(g), {"tag": r.tag & 0xFFFF, "causes": r.causes, "address": r.address,
                                         "errors": min(r.errors, 0xFFFF)})
        out.append({"job": pack_job(g, job), "writes": writes, "expected": {"resp": resp, "bursts": bursts,
                                                                             "digests": digests},
                    "host_used": model.next_block * km.block_bytes})
    return out, model


def make_bench(cfg, *, n: int = 40, seed: int = 1, p_valid: float = 0.7, p_ready: float = 0.7, p_pause: float = 0.2,
               jobs=None, faults=(), reset_job: int | None = None, reference=KVMUModel, fill_seed: int = 7,
               min_tokens: int = 1, name: str = "kvmu", prefix: str = "", fill: bool = True, pages: bool = False,
               address_records: bool = False, **_) -> KVMUBench:
    """A KVMU bench: ``jobs`` (golden :class:`~vrex.golden.dre.kvmu.Job` list) or a random session of about ``n`` jobs
    (``n / contexts`` steps of ``min_tokens`` to one step's tokens per context).

    ``fill=False`` starts the memories zeroed even where :func:`fills` would fill them; ``pages`` records the final
    checksum of every page the run touches (``page_sums``: what a testbench without digests compares);
    ``address_records``: the LXE writes :func:`address_pattern` (what a Verilog testbench can generate).

    With ``reset_job`` the unit is reset during that job; the jobs after it form a new session (refilled memories,
    a fresh reference)."""
    jobs = list(jobs) if jobs is not None else random_kvmu_jobs(cfg, max(1, n // cfg.kvmu_map.contexts), seed=seed,
                                                                min_tokens=min_tokens)
    part1 = jobs if reset_job is None else jobs[:reset_job + 1]
    fill = fill and fills(cfg)
    exp1, model = expected_for(cfg, part1, seed=seed, fill_seed=fill_seed, faults=faults, model_factory=reference,
                               fill=fill, address_records=address_records)
    parts = exp1
    if reset_job is not None:
        exp2, model = expected_for(cfg, jobs[reset_job + 1:], seed=seed, fill_seed=fill_seed, faults=faults,
                                   model_factory=reference, fill=fill, address_records=address_records)
        parts = exp1 + exp2
    km = cfg.kvmu_map
    final = {"device": digest(model.device.read(0, km.device_bytes)), "host": digest(model.host.read(0, km.host_bytes))} \
        if fill else {}
    counters = {k: model.stats[k] & ((1 << cfg.dre.counter_bits) - 1) for k in
                ("jobs", "payload_bytes", "bytes_moved", "bursts", "commands", "stalls", "table_reads",
                 "table_writes", "errors")} if reset_job is None else {}
    page_sums = _page_sums(cfg, parts, model) if pages and reset_job is None else []
    return KVMUBench(name, cfg.to_dict(), [dict(p["job"], writes=p["writes"], host_used=p["host_used"])
                                           for p in parts],
                     [p["expected"] for p in parts], _regions(cfg) if fill else {}, final, fill_seed=fill_seed,
                     faults=[list(f) for f in faults], reset_job=reset_job, p_valid=p_valid, p_ready=p_ready,
                     p_pause=p_pause, seed=seed, counters=counters, fill=fill, prefix=prefix,
                     page_sums=page_sums)


def _page_sums(cfg, parts, model) -> list:
    """[tier, page address, checksum] of the final golden images, for every page a burst or an LXE write touches."""
    beat = cfg.kvmu_map.beat_bytes
    touched = {"device": set(), "host": set()}
    for p in parts:
        for port, bursts in p["expected"]["bursts"].items():
            for _, addr, beats in bursts:
                touched[TIER_OF_PORT[port]].update(range(addr // PAGE_BYTES, (addr + beats * beat - 1) // PAGE_BYTES + 1))
        for addr, data in p["writes"]:
            touched["device"].update(range(addr // PAGE_BYTES, (addr + len(data) // 2 - 1) // PAGE_BYTES + 1))
    images = {"device": model.device, "host": model.host}
    return [[tier, page * PAGE_BYTES, page_checksum(images[tier].read(page * PAGE_BYTES, PAGE_BYTES), beat)]
            for tier in ("device", "host") for page in sorted(touched[tier])]


def activity_bench(cfg, *, transactions: int, seed: int, p_valid: float, p_ready: float):
    """The power stimulus (vrex.synth.activity): a random session of about ``transactions / 8`` jobs with the AXI
    memories never pausing, and what the record says of it. On a map whose resident ring is larger than the
    session (the edge config's auto capacity) nothing is evicted, so the data engines stay idle: ``evicted_bytes``
    says so."""
    bench = make_bench(cfg, n=max(cfg.kvmu_map.contexts, transactions // 8), seed=seed, p_valid=p_valid,
                       p_ready=p_ready, p_pause=0.0, min_tokens=cfg.model.tokens_per_frame, name="kvmu-saif")
    host = sum(b[2] for e in bench.expected for b in e["bursts"]["host"] if b[0] == "AW")
    return bench, {"kind": "random", "evicted_bytes": host * cfg.kvmu_map.beat_bytes,
                   "reason": "KVMU jobs (random session; recorded sessions are replayed by its tests)"}


def run_bench(emitted, bench: KVMUBench, simulator: str, work_dir, *, waves: bool = False, build_args=(),
              build_tag: str = "") -> dict:
    """Run the bench on cocotb; returns the result dict (``report`` of the bench says whether it matches)."""
    from vrex.sim.runner import run_json_bench

    return run_json_bench(emitted, bench, "vrex.sim.dre.kvmu.cocotb_test", simulator, work_dir, waves=waves,
                          build_args=build_args, build_tag=build_tag)


def measurement_config(cfg):
    """``cfg`` with a device capacity of just the recent window plus one step and small tables (the datapath,
    bus, bursts, records and blocks unchanged), so that a short run reaches steady-state eviction."""
    km = cfg.kvmu_map
    ring = cfg.resv.recent_window_tokens + km.max_step_tokens
    bt = km.block_tokens
    ctx_tokens = ring + 8 * bt + 16 * cfg.model.tokens_per_frame
    staging = 2 * 8 * bt * km.record_bytes
    capacity = km.batch * (staging + km.contexts * (cfg.resv.sink_tokens + ring) * km.record_bytes)
    return cfg.with_overrides({"dre.kvmu.device_capacity_bytes": capacity, "dre.kvmu.context_tokens": ctx_tokens,
                               "dre.kvmu.table_clusters": 64, "dre.kvmu.staging_bytes": staging},
                              source="KVMU cycle measurement")


def measurement_jobs(cfg, frames: int = 8, seed: int = 0) -> tuple[list, dict]:
    """Context 0: fill the ring with one cluster, evict 4 blocks of it in one job, prefetch them (the streaming
    figures), then ``frames`` steady-state frames (a frame arrives, a frame is evicted, a third of the clusters is
    prefetched). Returns the jobs and the index of each measured job."""
    km = cfg.kvmu_map
    bt, tpf, lanes = km.block_tokens, cfg.model.tokens_per_frame, cfg.dre.wtu.lanes
    fill = [(0, i == 0) for i in range(km.ring_tokens)]
    evict = [(0, i == 0) for i in range(4 * bt)]
    jobs = [Job(0, 0, restart=True, arrivals=tuple(fill)), Job(0, 1, arrivals=tuple(evict)),
            Job(0, 2, restart=True, mask=mask_beats([0], 1, lanes))]
    rng = random.Random(seed)
    n = 1
    for f in range(frames):
        arr = []
        for i in range(tpf):
            c = n if rng.random() < 0.2 and n < km.table_clusters else rng.randrange(n)
            n += c == n
            arr.append((c, i == 0))
        chosen = [c for c in range(n) if rng.random() < 1 / 3]
        jobs.append(Job(0, 3 + f, restart=True, arrivals=tuple(arr), mask=mask_beats(chosen, n, lanes)))
    return jobs, {"fill": 0, "evict": 1, "prefetch": 2, "frames": list(range(3, 3 + frames))}


def measure_cycles(cfg, *, emit) -> dict:
    """Cycles and bus use of the KVMU RTL (Verilator, no back-pressure, memories without pauses), checked against
    the golden model on the way: streaming rates of a 4-block eviction and of its prefetch, and steady-state frames
    of one context (``per_frame``: cycles and bytes of one context's frame job; ``per_frame_all_contexts``: the
    frame of every context on one KVMU). Run on :func:`measurement_config` (the edge geometry with a small map).
    ``emit(component, cfg)`` writes the Verilog it simulates (:func:`vrex.synth.verilog.emit`; handed in by the flow
    that asks for the figures, because vrex.sim never imports vrex.synth)."""
    from vrex.paths import build_dir, safe_name

    mcfg = measurement_config(cfg)
    jobs, which = measurement_jobs(mcfg)
    bench = make_bench(mcfg, jobs=jobs, seed=1, p_valid=1.0, p_ready=1.0, p_pause=0.0, name="kvmu-cycles")
    work = build_dir("tests", safe_name(f"kvmu-cycles-{mcfg.hash()}"))
    result = run_bench(emit("kvmu", mcfg), bench, "verilator", work)
    report = bench.report(result)
    if report:
        raise AssertionError(f"the KVMU cycle run does not match the golden model:\n{report}")
    km = mcfg.kvmu_map
    beat = km.beat_bytes
    model = KVMUModel(mcfg, data=False)
    moved = []
    for job in jobs:
        before = model.stats["bytes_moved"]
        model.run_job(job)
        moved.append(model.stats["bytes_moved"] - before)

    def rate(i, port):
        j = result["jobs"][i]
        return j["beats"][port] * beat / j["cycles"]

    ev, pf = rate(which["evict"], "host"), rate(which["prefetch"], "device")
    frames = [result["jobs"][i] for i in which["frames"]]
    f_cycles = sum(j["cycles"] for j in frames) / len(frames)
    f_bytes = sum(moved[i] for i in which["frames"]) / len(frames)
    fill = result["jobs"][which["fill"]]
    return {"component": "kvmu", "config": cfg.name, "config_hash": cfg.hash(), "measured_on": mcfg.hash(),
            "bytes_per_cycle": pf, "bus_utilisation": pf / beat,
            "evict_bytes_per_cycle": ev, "evict_bus_utilisation": ev / beat,
            "prefetch_bytes_per_cycle": pf, "prefetch_bus_utilisation": pf / beat,
            "arrival_cycles_per_token": fill["cycles"] / km.ring_tokens,
            "per_frame": {"cycles": f_cycles, "bytes_moved": f_bytes, "tokens": mcfg.model.tokens_per_frame},
            "per_frame_all_contexts": {"cycles": f_cycles * cfg.kvmu_map.contexts,
                                       "bytes_moved": f_bytes * cfg.kvmu_map.contexts},
            "sim_cycles_per_second": result["cycles"] / max(result["sim_seconds"], 1e-9),
            "formula": "streaming: W beats x beat bytes / job cycles (table accesses and drains included); per frame: "
                       "mean cycles of a steady-state frame job of one context (arrive, evict, prefetch)"}
