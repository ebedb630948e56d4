"""Byte-level golden model of the KVMU (the KV memory-hierarchy manager), bit-exact with ``hdl/dre/kvmu``.

The model executes *jobs* (:class:`vrex.golden.dre.kvmu.jobs.Job`) on the two tiers the config's
:class:`vrex.config.KVMUMap` lays out, in the order the RTL does, and records everything the RTL makes
observable: the table accesses and data bursts on each AXI port, the bytes of both memories, the response of each
job and the counters. docs/formats.md §KVMU is the written contract; this module is its executable form.

Per context (one (layer, KV head), or one layer with ``resv.cluster_scope = layer``) the KVMU keeps the number of
clusters, the next token index, the oldest device-resident token (``evict_upto``) and its ring slot. A job:

1. **Restart** (``job.restart``): the staging cursor goes to the start of half ``job.buffer``.
2. **Arrivals** — one descriptor per new token ``(cluster, segment_start)``, in token order: the token's index entry
   ``{cluster, segment_start, invalid}`` is written (table port), and a cluster id equal to the context's cluster
   count creates the cluster (its 16-byte entry is written as zeros). Errors: token index ≥ ``context_tokens``
   (capacity; dropped, not counted), cluster ≥ ``table_clusters`` (capacity) or > cluster count (unknown cluster):
   the token is stored as *invalid* and will never be copied.
3. **Eviction** — after the arrivals the ring must hold the context's resident tokens: while ``evict_upto`` <
   ``next_token − ring_tokens`` (and, with ``eviction_granularity = frame``, until the next segment start) the
   oldest token is evicted: its index entry is read, its cluster entry ``{count, head, tail}`` read, a new block
   taken from the host pool when ``count`` is a multiple of ``block_tokens`` (chained by a link write), its record
   copied from its ring slot to slot ``count mod block_tokens`` of the tail block, and the entry written back.
   The pool running out is a capacity error (the record is not copied). The phase ends when every write of it is
   acknowledged.
4. **Prefetch** — mask beats of ``dre.wtu.lanes`` bits, bit j of beat k = cluster ``k·lanes + j``: for each set bit
   in ascending order the cluster entry is read (a bit ≥ the cluster count is an unknown-cluster error), and the
   cluster's host blocks are walked through their links (one link read per further block); each block gives one
   range of its used records into the staging area (packed, :mod:`.bursts`).
5. **Response** ``{tag = job.step, causes, address, errors}``: the causes that occurred (bit mask of
   :data:`CAUSES`), the address of the first error of the lowest set cause, and the number of error events.

Every table access is one transaction the front-end waits for (``stalls`` counts them: the system model charges
each with a device-DRAM round trip). AXI error responses are injected with *fault windows* (beat addresses) and
modelled as cocotbext-axi's AxiRam reports them: a faulty read beat returns zeros, a faulty write beat is not
written, and the burst (or table access) counts one error with its start address.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vrex.golden.dre.kvmu.bursts import EVICT, PREFETCH, Burst, Coalescer, Range, legalise

__all__ = ["KVMUModel", "Response", "CAUSES", "PAGE"]

# Error causes: bit index -> name. The response's address is the first error of the lowest set bit.
CAUSES = ("capacity", "unknown_cluster", "read_error", "write_error", "table_error")
CAPACITY, UNKNOWN, READ_ERR, WRITE_ERR, TABLE_ERR = range(5)
PAGE = 4096
INVALID_BIT, SEGMENT_BIT = 31, 30

STAT_KEYS = ("jobs", "payload_bytes", "bytes_moved", "bursts", "commands", "stalls", "table_reads", "table_writes",
             "errors")


@dataclass(frozen=True)
class Response:
    tag: int
    causes: int          # bit mask over CAUSES
    address: int
    errors: int


class SparseMem:
    """Byte memory in 4 KiB pages; absent bytes read as zero (the testbench memories start zeroed)."""

    def __init__(self, size: int):
        self.size, self.pages = size, {}

    def read(self, addr: int, n: int) -> bytes:
        out = bytearray()
        while n:
            page, off = divmod(addr, PAGE)
            k = min(n, PAGE - off)
            p = self.pages.get(page)
            out += p[off:off + k] if p is not None else bytes(k)
            addr, n = addr + k, n - k
        return bytes(out)

    def write(self, addr: int, data: bytes) -> None:
        i = 0
        while i < len(data):
            page, off = divmod(addr + i, PAGE)
            k = min(len(data) - i, PAGE - off)
            p = self.pages.setdefault(page, bytearray(PAGE))
            p[off:off + k] = data[i:i + k]
            i += k


@dataclass
class _Context:
    clusters: int = 0
    next_token: int = 0
    evict_upto: int = 0
    evict_pos: int = 0


@dataclass
class _JobErrors:
    causes: int = 0
    count: int = 0
    first: dict = field(default_factory=dict)

    def add(self, cause: int, address: int, *, late: bool = False) -> None:
        """``late``: a staging overflow found by the coalescer (a front-end capacity error owns the address)."""
        self.causes |= 1 << cause
        self.count += 1
        self.first.setdefault((cause, late), address)

    def response(self, tag: int) -> Response:
        addr = self.first[min(self.first)] if self.first else 0
        return Response(tag, self.causes, addr, self.count)


class KVMUModel:
    """The KVMU's state, both memories and its counters.

    Parameters
    ----------
    cfg : vrex.config.Config
    data : bool
        move record bytes (memory images for the RTL scoreboard); without it only the table bytes are kept and the
        counters, bursts and responses are computed (whole sessions at the edge config).
    faults : dict
        ``{(port, "read"|"write"): [(lo, hi), ...]}`` beat-address windows that answer SLVERR, port one of
        ``"device"``, ``"host"``, ``"table"`` (the table port reaches device memory).
    record_bursts : bool
        keep the list of AXI bursts per port (``self.bursts``: ``(port, "AR"|"AW", address, beats)``).
    """

    def __init__(self, cfg, *, data: bool = True, faults=None, record_bursts: bool = False):
        self.cfg, self.map, self.k = cfg, cfg.kvmu_map, cfg.dre.kvmu
        km = self.map
        self.data = data
        self.device, self.host = SparseMem(km.device_bytes), SparseMem(km.host_bytes)
        self.faults = faults or {}
        self.record_bursts = record_bursts
        self.bursts: list[tuple] = []
        self.mask_bits = cfg.dre.wtu.lanes
        self.reset()

    # ---- state -----------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """What the RTL's reset clears (the per-context state, the pool pointer, the staging cursor); the memories
        keep their bytes."""
        km = self.map
        self.contexts = [_Context(evict_upto=km.sink_tokens) for _ in range(km.contexts)]
        self.next_block = 0
        self.coalescer = self.make_coalescer(self.k.coalesce_gap_bytes)
        self.coalescer.restart(km.staging_base, km.staging_base + km.staging_half)
        self.stats = {k: 0 for k in STAT_KEYS}
        self.by_mode = {m: {"payload_bytes": 0, "bytes_moved": 0, "bursts": 0, "commands": 0} for m in (EVICT, PREFETCH)}

    # ---- the transfer rules (methods, so that the mutation tests can bend them) --------------------------------

    def make_coalescer(self, gap_bytes: int) -> Coalescer:
        return Coalescer(gap_bytes)

    def legalise(self, r: Range) -> list[Burst]:
        return legalise(r, self.map.burst_bytes, self.map.beat_bytes)

    # ---- addresses -------------------------------------------------------------------------------------------

    def token_address(self, ctx: int, token: int) -> int:
        """Device address of a resident token's record (sink region or ring slot)."""
        km = self.map
        if token < km.sink_tokens:
            return km.sink_base + (ctx * km.sink_tokens + token) * km.record_bytes
        return km.ring_base + (ctx * km.ring_tokens + (token - km.sink_tokens) % km.ring_tokens) * km.record_bytes

    def index_address(self, ctx: int, token: int) -> int:
        km = self.map
        return km.index_base + (ctx * km.context_tokens + token) * km.index_entry_bytes

    def entry_address(self, ctx: int, cluster: int) -> int:
        km = self.map
        return km.table_base + (ctx * km.table_clusters + cluster) * km.table_entry_bytes

    def link_address(self, block: int) -> int:
        return self.map.link_base + block * self.map.link_entry_bytes

    def block_address(self, block: int) -> int:
        return block * self.map.block_bytes

    # ---- the table port (one access at a time) ----------------------------------------------------------------

    def _faulty(self, port: str, kind: str, addr: int, n: int) -> list[int]:
        """Beat addresses of ``[addr, addr + n)`` inside a fault window of (port, kind)."""
        wins = self.faults.get((port, kind))
        if not wins:
            return []
        beat = self.map.beat_bytes
        first = addr - addr % beat
        return [a for a in range(first, addr + n, beat) if any(lo <= a < hi for lo, hi in wins)]

    def _table_beats(self, addr: int, n: int) -> tuple[int, int]:
        beat = self.map.beat_bytes
        return (addr - addr % beat, 1) if n < beat else (addr, n // beat)

    def _table_read(self, addr: int, n: int, err: _JobErrors) -> int:
        self.stats["table_reads"] += 1
        self.stats["stalls"] += 1
        if self.record_bursts:
            self.bursts.append(("table", "AR", *self._table_beats(addr, n)))
        raw = bytearray(self.device.read(addr, n))
        bad = self._faulty("table", "read", addr, n)
        if bad:
            err.add(TABLE_ERR, self._table_beats(addr, n)[0])
            beat = self.map.beat_bytes
            for b in bad:
                lo, hi = max(b, addr), min(b + beat, addr + n)
                raw[lo - addr:hi - addr] = bytes(hi - lo)
        return int.from_bytes(raw, "little")

    def _table_write(self, addr: int, n: int, value: int, err: _JobErrors) -> None:
        self.stats["table_writes"] += 1
        self.stats["stalls"] += 1
        if self.record_bursts:
            self.bursts.append(("table", "AW", *self._table_beats(addr, n)))
        data = value.to_bytes(n, "little")
        bad = self._faulty("table", "write", addr, n)
        beat = self.map.beat_bytes
        for b in range(addr - addr % beat, addr + n, beat):
            if b in bad:
                continue
            lo, hi = max(b, addr), min(b + beat, addr + n)
            self.device.write(lo, data[lo - addr:hi - addr])
        if bad:
            err.add(TABLE_ERR, self._table_beats(addr, n)[0])

    # ---- the data path ----------------------------------------------------------------------------------------

    def _transfer(self, r: Range, err: _JobErrors) -> None:
        """One coalesced range: commands, bursts, bytes (in the RTL: legaliser and the two AXI engines)."""
        km = self.map
        self.stats["commands"] += 1
        mode = self.by_mode[r.mode]
        mode["commands"] += 1
        src_port, dst_port = ("device", "host") if r.mode == EVICT else ("host", "device")
        src_mem, dst_mem = (self.device, self.host) if r.mode == EVICT else (self.host, self.device)
        for b in self.legalise(r):
            n = b.beats * km.beat_bytes
            self.stats["bursts"] += 1
            self.stats["bytes_moved"] += n
            mode["bursts"] += 1
            mode["bytes_moved"] += n
            if self.record_bursts:
                self.bursts.append((src_port, "AR", b.src, b.beats))
                self.bursts.append((dst_port, "AW", b.dst, b.beats))
            bad_r = self._faulty(src_port, "read", b.src, n)
            bad_w = self._faulty(dst_port, "write", b.dst, n)
            if bad_r:
                err.add(READ_ERR, b.src)
            if bad_w:
                err.add(WRITE_ERR, b.dst)
            if not self.data:
                continue
            payload = bytearray(src_mem.read(b.src, n))
            for a in bad_r:
                payload[a - b.src:a - b.src + km.beat_bytes] = bytes(km.beat_bytes)
            for off in range(0, n, km.beat_bytes):
                if b.dst + off not in bad_w:
                    dst_mem.write(b.dst + off, bytes(payload[off:off + km.beat_bytes]))

    def _emit(self, r: Range, err: _JobErrors) -> None:
        self.stats["payload_bytes"] += r.length
        self.by_mode[r.mode]["payload_bytes"] += r.length
        out, dropped = self.coalescer.push(r)
        if dropped:
            err.add(CAPACITY, r.src, late=True)
        for x in out:
            self._transfer(x, err)

    def _flush(self, err: _JobErrors) -> None:
        for x in self.coalescer.flush():
            self._transfer(x, err)

    # ---- a job -------------------------------------------------------------------------------------------------

    def run_job(self, job) -> Response:
        km, k = self.map, self.k
        err = _JobErrors()
        if job.restart:
            base = km.staging_base + job.buffer * km.staging_half
            self.coalescer.restart(base, base + km.staging_half)
        if job.context >= km.contexts:               # a bad command: flagged, its descriptors and mask dropped
            err.add(CAPACITY, job.context)
            self.stats["jobs"] += 1
            self.stats["errors"] += err.count
            return err.response(job.step)
        ctx = self.contexts[job.context]
        if job.arrivals is not None:
            self._arrive(job, ctx, err)
            self._evict(job, ctx, err)
            self._flush(err)
        if job.mask is not None:
            self._prefetch(job, ctx, err)
            self._flush(err)
        self.stats["jobs"] += 1
        self.stats["errors"] += err.count
        return err.response(job.step)

    def _arrive(self, job, ctx: _Context, err: _JobErrors) -> None:
        km = self.map
        for cluster, segment_start in job.arrivals:
            if ctx.next_token >= km.context_tokens:
                err.add(CAPACITY, ctx.next_token)
                continue
            invalid = False
            if cluster >= km.table_clusters:
                err.add(CAPACITY, cluster)
                invalid = True
            elif cluster > ctx.clusters:
                err.add(UNKNOWN, cluster)
                invalid = True
            value = (cluster & ((1 << SEGMENT_BIT) - 1)) | (int(bool(segment_start)) << SEGMENT_BIT) \
                | (int(invalid) << INVALID_BIT)
            self._table_write(self.index_address(job.context, ctx.next_token), km.index_entry_bytes, value, err)
            if not invalid and cluster == ctx.clusters:
                self._table_write(self.entry_address(job.context, cluster), km.table_entry_bytes, 0, err)
                ctx.clusters += 1
            ctx.next_token += 1

    def _evict(self, job, ctx: _Context, err: _JobErrors) -> None:
        km = self.map
        need = ctx.next_token - km.ring_tokens
        by_frame = self.k.eviction_granularity == "frame"
        bt = km.block_tokens
        if ctx.evict_upto >= need:
            return
        while ctx.evict_upto < ctx.next_token:
            if ctx.evict_upto >= need and not by_frame:
                break
            entry = self._table_read(self.index_address(job.context, ctx.evict_upto), km.index_entry_bytes, err)
            segment_start, invalid = (entry >> SEGMENT_BIT) & 1, (entry >> INVALID_BIT) & 1
            if ctx.evict_upto >= need and segment_start:
                break
            if not invalid:
                self._evict_token(job, ctx, entry & ((1 << SEGMENT_BIT) - 1), bt, err)
            ctx.evict_upto += 1
            ctx.evict_pos = 0 if ctx.evict_pos + 1 == km.ring_tokens else ctx.evict_pos + 1

    def _evict_token(self, job, ctx: _Context, cluster: int, bt: int, err: _JobErrors) -> None:
        km = self.map
        addr = self.entry_address(job.context, cluster)
        e = self._table_read(addr, km.table_entry_bytes, err)
        count, head, tail = e & 0xFFFFFFFF, (e >> 32) & 0xFFFFFFFF, (e >> 64) & 0xFFFFFFFF
        slot = count & (bt - 1)
        if slot == 0:
            if self.next_block >= km.host_blocks:
                err.add(CAPACITY, ctx.evict_upto)
                return
            block = self.next_block
            self.next_block += 1
            if count:
                self._table_write(self.link_address(tail), km.link_entry_bytes, block, err)
            else:
                head = block
            tail = block
        src = km.ring_base + (job.context * km.ring_tokens + ctx.evict_pos) * km.record_bytes
        self._emit(Range(src, self.block_address(tail) + slot * km.record_bytes, km.record_bytes, EVICT), err)
        count = (count + 1) & 0xFFFFFFFF
        self._table_write(addr, km.table_entry_bytes, count | head << 32 | tail << 64, err)

    def _prefetch(self, job, ctx: _Context, err: _JobErrors) -> None:
        km = self.map
        for k, beat in enumerate(job.mask):
            for j in range(self.mask_bits):
                if not (beat >> j) & 1:
                    continue
                cluster = k * self.mask_bits + j
                if cluster >= ctx.clusters:
                    err.add(UNKNOWN, cluster)
                    continue
                e = self._table_read(self.entry_address(job.context, cluster), km.table_entry_bytes, err)
                left, block = e & 0xFFFFFFFF, (e >> 32) & 0xFFFFFFFF
                while left > 0:
                    if block >= km.host_blocks:          # a corrupted chain (table error): stop, never wander
                        err.add(CAPACITY, block)
                        break
                    used = min(km.block_tokens, left)
                    self._emit(Range(self.block_address(block), 0, used * km.record_bytes, PREFETCH), err)
                    left -= used
                    if left:
                        block = self._table_read(self.link_address(block), km.link_entry_bytes, err)

    # ---- the LXE's side (what the testbench does between jobs) ------------------------------------------------

    def write_tokens(self, ctx: int, first: int, records: list[bytes]) -> list[tuple[int, bytes]]:
        """Store new tokens' records at their device addresses (the LXE writes them after the arrival job);
        returns the (address, bytes) writes so a testbench can apply the same ones."""
        writes = [(self.token_address(ctx, first + i), rec) for i, rec in enumerate(records)]
        if self.data:
            for a, rec in writes:
                self.device.write(a, rec)
        return writes
