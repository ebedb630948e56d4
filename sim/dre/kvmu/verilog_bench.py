"""A :class:`~vrex.sim.dre.kvmu.bench.KVMUBench` as one self-checking Verilog-2005 testbench: the KVMU's FuseSoC ``sim`` target.

The cocotb bench (:mod:`vrex.sim.dre.kvmu.cocotb_test`) serves the KVMU's AXI4 masters with cocotbext-axi memories; a plain
Verilog testbench has no such library, so this one carries its own minimal AXI4 slave per port, on paged memories:

- **memories**: the device tier (ports ``dev`` and ``tbl``) and the host tier (``host``) hold only the 4 KiB pages
  the golden run touches (bursts and LXE writes), zeroed at the start (the bench is made with ``fill=False``); an
  access to any other page fails the run;
- **AXI slave per port**: AR and AW accepted with random ready into a queue, R beats of the head burst offered with
  random valid from the edge after its AR (RID = ARID, RLAST on the last beat, OKAY), W beats (strobes applied)
  accepted with random ready while a write burst is open, one B per burst with random valid from the edge after its
  last W beat; every AR / AW is compared in order with the
  golden model's bursts of that port and channel (address and beats), must be an INCR burst of full beats inside
  one 4 KiB page, and no more than ``dre.kvmu.max_outstanding`` bursts may be in flight per channel;
- **sequencer and LXE**: job by job, the control beat, the descriptors and the mask beats are offered with random
  valid; the response (random ready) must equal the golden one, arrive with every burst of the job done and the
  job's burst counts complete; then the LXE's record writes of the job go into the device memory (backdoor: the
  records are :func:`vrex.sim.dre.kvmu.bench.address_pattern`, which the testbench computes from the address, so only their
  addresses and lengths are stored; the bench is made with ``address_records=True``), and the next job starts;
- **after the run**: the status counters equal the golden model's, and every touched page's checksum
  (:func:`vrex.sim.dre.kvmu.bench.page_checksum`) equals the golden image's (a stray, missing or wrong write).

Random valid / ready use one 32-bit LFSR per stream and per AXI port, each handshake signal stalling with
probability :data:`vrex.sim.verilog_bench.STALL_PROBABILITY`. The clocked block assigns all of the testbench's
state with ``<=`` (queues, memories, counters, the design's inputs), through working copies ``<name>_n`` of the
counters it reads again within the edge, so the package lints clean (docs/ip.md).
"""

from __future__ import annotations

from vrex.config import Config

from vrex.sim.dre.kvmu.bench import AXI_PREFIX, PAGE_BYTES, PORTS, TIER_OF_PORT, KVMUBench, address_pattern
from vrex.sim.verilog_bench import (const_table, hex_literal, lfsr_seed, output_checks, preamble, reg_decl,
                                    release_reset, signal_checks)

__all__ = ["kvmu_testbench", "usable_kvmu_bench"]

QUEUE = 64                 # burst queue depth per channel (beyond any max_outstanding the config allows)
STREAMS = ("ctrl", "tokens", "masks")
TIERS = ("device", "host")


def usable_kvmu_bench(bench: KVMUBench, ports: list[dict]) -> str | None:
    """None if ``bench`` can be replayed by :func:`kvmu_testbench` on a design with these ports, else why not."""
    names = {p["name"] for p in ports}
    if bench.faults or bench.reset_job is not None:
        return "its bench injects faults or a reset (the cocotb bench covers those)"
    if bench.fill or not bench.page_sums:
        return "its bench was not made with fill=False, pages=True"
    beat = Config.from_dict(bench.config).kvmu_map.beat_bytes
    for j in bench.jobs:
        for addr, hexdata in j["writes"]:
            data = bytes.fromhex(hexdata)
            if addr % beat or len(data) % beat or data != address_pattern(bench.seed, addr, len(data)):
                return "its LXE writes are not whole beats of the address pattern (make it with address_records=True)"
    for n in [f"{bench.prefix}{s}__valid" for s in (*STREAMS, "resp")] + [f"{a}__arvalid" for a in AXI_PREFIX.values()]:
        if n not in names:
            return f"the design has no port {n}"
    return None


def _cumulative(counts) -> list[int]:
    out, total = [], 0
    for c in counts:
        total += c
        out.append(total)
    return out


def kvmu_testbench(bench: KVMUBench, interface: dict, *, name: str, clock_mhz: float, origin: str) -> str:
    """Verilog text of module ``name`` running ``bench`` (made with ``fill=False, pages=True``) on the KVMU top
    described by ``interface``."""
    cfg = Config.from_dict(bench.config)
    beat, mo = cfg.kvmu_map.beat_bytes, cfg.dre.kvmu.max_outstanding
    ports = {p["name"]: p for p in interface["ports"]}
    pre = bench.prefix
    addr_w, data_w = ports["dev__araddr"]["width"], ports["dev__rdata"]["width"]
    id_w = ports["dev__arid"]["width"]
    size = beat.bit_length() - 1
    per_page = PAGE_BYTES // beat
    jobs, n_jobs = bench.jobs, len(bench.jobs)
    clock = interface["clock"]["port"]
    reset = interface["reset"]["port"]
    driven = {f"{pre}{s}__{f}" for s in STREAMS for f in ("payload", "valid")} | {f"{pre}resp__ready"}
    for a in AXI_PREFIX.values():
        driven |= {f"{a}__{f}" for f in ("arready", "rid", "rdata", "rresp", "rlast", "rvalid", "awready", "wready",
                                        "bid", "bresp", "bvalid")}
    lines = preamble(interface, name=name, clock_mhz=clock_mhz, origin=origin, driven=driven, statics={})
    lines += ["  integer job = 0;   // the job in progress (index of its expected response)",
              "  // the initial block's loops over the memories (the clocked block has its own temporaries)",
              "  integer page_i, beat_i, fold_i;", f"  reg [{data_w - 1}:0] page_word;", "  reg [63:0] sum, folded;"]

    # ---- paged memories
    slots = {t: [page for tier, page, _ in bench.page_sums if tier == t] for t in TIERS}
    sums = {t: [s for tier, _, s in bench.page_sums if tier == t] for t in TIERS}
    mem = {"device": "dev_mem", "host": "host_mem"}
    for t in TIERS:
        n = max(1, len(slots[t]))
        lines += [f"  // {t} tier: {len(slots[t])} pages of {per_page} beats (the pages the golden run touches)",
                  f"  reg [{data_w - 1}:0] {mem[t]} [0:{n * per_page - 1}];",
                  f"  function integer {t}_index;   // beat index of an address, -1 outside the pages or not "
                  "beat-aligned",
                  f"    input [{addr_w - 1}:0] addr;", "    integer slot;", "    begin",
                  f"      case (addr[{addr_w - 1}:12])"]
        lines += [f"        {addr_w - 12}'h{page >> 12:x}: slot = {k};" for k, page in enumerate(slots[t])]
        lines += ["        default: slot = -1;", "      endcase",
                  f"      {t}_index = slot < 0 || addr[{size - 1}:0] != {size}'d0 ? -1 : slot * {per_page} + "
                  f"addr[11:{size}];", "    end", "  endfunction",
                  *const_table(f"{t}_page", addr_w, slots[t] or [0]), *const_table(f"{t}_sum", 64, sums[t] or [0])]

    # ---- the sequencer's streams and the expected responses
    counts = {"ctrl": [1] * n_jobs, "tokens": [len(j["tokens"]) for j in jobs], "masks": [len(j["masks"]) for j in jobs]}
    beats = {"ctrl": [j["ctrl"] for j in jobs], "tokens": [t for j in jobs for t in j["tokens"]],
             "masks": [m for j in jobs for m in j["masks"]]}
    limit0 = {s: (1 if s == "ctrl" else counts[s][0]) if jobs else 0 for s in STREAMS}   # the first job's beats
    for k, s in enumerate(STREAMS):
        p, w = f"{pre}{s}", ports[f"{pre}{s}__payload"]["width"]
        lines += [f"  // input stream {s}: {len(beats[s])} beats over {n_jobs} jobs",
                  *const_table(f"{s}_beat", w, beats[s] or [0]), *const_table(f"{s}_end", 32, _cumulative(counts[s])),
                  f"  integer {s}_sent = 0, {s}_limit = {limit0[s]};",
                  f"  reg [31:0] {s}_lfsr = {hex_literal(32, lfsr_seed(bench.seed, k))};"]
    rw = ports[f"{pre}resp__payload"]["width"]
    lines += [*const_table("resp_expected", rw, [e["resp"] for e in bench.expected]),
              f"  reg [31:0] resp_lfsr = {hex_literal(32, lfsr_seed(bench.seed, 100))};",
              "  reg resp_stalled = 1'b0;", reg_decl(rw, "resp_held")]
    flat = [(addr, len(hexdata) // 2 // beat) for j in jobs for addr, hexdata in j["writes"]]
    lines += ["  // the LXE's record writes after each job's response: address and beats; the data is the address",
              "  // pattern (vrex.sim.dre.kvmu.bench.pattern_word of each 32-bit word address)",
              *const_table("lxe_addr", addr_w, [x[0] for x in flat] or [0]),
              *const_table("lxe_beats", 16, [x[1] for x in flat] or [0]),
              *const_table("lxe_end", 32, _cumulative(len(j["writes"]) for j in jobs)),
              "  function [31:0] pattern_word;", "    input [31:0] w;", "    reg [31:0] x;", "    begin",
              f"      x = (w * 32'h9e3779b1) ^ {hex_literal(32, bench.seed)};", "      x = x ^ (x >> 15);",
              "      x = x * 32'h85ebca77;", "      pattern_word = x ^ (x >> 13);", "    end", "  endfunction"]

    # ---- AXI slaves
    for k, port in enumerate(PORTS):
        P = AXI_PREFIX[port]
        for ch in ("ar", "aw"):
            bursts = [(addr, n) for e in bench.expected for kind, addr, n in e["bursts"][port] if kind == ch.upper()]
            per_job = [sum(b[0] == ch.upper() for b in e["bursts"][port]) for e in bench.expected]
            lines += [f"  // {port} port ({P}): {len(bursts)} {ch.upper()} bursts expected",
                      *const_table(f"{P}_{ch}_burst", addr_w + 9, [(n << addr_w) | addr for addr, n in bursts] or [0]),
                      *const_table(f"{P}_{ch}_end", 32, _cumulative(per_job)),
                      f"  reg [{addr_w - 1}:0] {P}_{ch}_q_addr [0:{QUEUE - 1}];", f"  reg [7:0] {P}_{ch}_q_len [0:{QUEUE - 1}];",
                      f"  reg [{id_w - 1}:0] {P}_{ch}_q_id [0:{QUEUE - 1}];",
                      f"  integer {P}_{ch}_seen = 0, {P}_{ch}_head = 0;"]
        lines += [f"  reg [{id_w - 1}:0] {P}_b_q [0:{QUEUE - 1}];", f"  integer {P}_b_tail = 0, {P}_b_head = 0;",
                  f"  integer {P}_rbeat = 0, {P}_wbeat = 0;", f"  reg {P}_r_offered = 1'b0, {P}_b_offered = 1'b0;",
                  f"  reg [31:0] {P}_lfsr = {hex_literal(32, lfsr_seed(bench.seed, 200 + k))};"]

    # The clocked block assigns the testbench's state with <= (the design's inputs, queues, memories, counters). A
    # state variable the block reads again after updating it in the same edge has a working copy <name>_n, loaded at
    # the top and committed at the bottom; temporaries are the block's own variables.
    working = [("job", None)]
    for s in STREAMS:
        working += [(f"{s}_sent", None), (f"{s}_lfsr", 32)]
    working.append(("resp_lfsr", 32))
    for port in PORTS:
        P = AXI_PREFIX[port]
        working += [(f"{P}_{v}", None) for v in ("ar_seen", "ar_head", "aw_seen", "aw_head", "b_tail", "b_head",
                                                 "rbeat", "wbeat")]
        working += [(f"{P}_r_offered", 1), (f"{P}_b_offered", 1), (f"{P}_lfsr", 32)]
    body = [f"  always @(posedge {clock}) if (running) begin : step",
            *[f"    integer {n}_n;" if w is None else f"    reg {f'[{w - 1}:0] ' if w > 1 else ''}{n}_n;"
              for n, w in working],
            "    integer idx, rec, rec_beat, lane;", f"    reg [{addr_w - 1}:0] a;", f"    reg [{data_w - 1}:0] word;",
            *[f"    {n}_n = {n};" for n, _ in working]]
    for port in PORTS:
        totals = {ch: sum(kind == ch.upper() for e in bench.expected for kind, _, _ in e["bursts"][port])
                  for ch in ("ar", "aw")}
        body += _axi_slave(AXI_PREFIX[port], mem[TIER_OF_PORT[port]], TIER_OF_PORT[port], beat=beat, size=size, mo=mo,
                           addr_w=addr_w, totals=totals)
    for s in STREAMS:
        p = f"{pre}{s}"
        body += [f"    if ({p}__valid && {p}__ready) {s}_sent_n = {s}_sent_n + 1;",
                 f"    {s}_lfsr_n = lfsr_next({s}_lfsr_n);",
                 f"    if (!({p}__valid && !{p}__ready)) begin",
                 f"      {p}__valid <= {s}_sent_n < {s}_limit && {s}_lfsr_n[1:0] != 2'b00;",
                 f"      {p}__payload <= {s}_beat({s}_sent_n);", "    end"]
    r = f"{pre}resp"
    body += [f"    if (resp_stalled && (!{r}__valid || {r}__payload !== resp_held))",
             "      fail(\"resp: valid dropped or payload changed while stalled\");",
             f"    if ({r}__valid && {r}__ready) begin",
             f"      if (job_n >= {n_jobs}) fail(\"resp: more responses than jobs\");",
             f"      if ({r}__payload !== resp_expected(job_n)) begin",
             f"        $display(\"FAIL: response of job %0d: expected %h, got %h\", job_n, resp_expected(job_n), "
             f"{r}__payload);",
             "        $fatal(1);", "      end"]
    for port in PORTS:
        P = AXI_PREFIX[port]
        body += [f"      if ({P}_ar_seen_n != {P}_ar_end(job_n) || {P}_aw_seen_n != {P}_aw_end(job_n)) begin",
                 f"        $display(\"FAIL: job %0d: {port} port issued %0d AR / %0d AW bursts by its response, the golden "
                 f"model %0d / %0d\", job_n, {P}_ar_seen_n, {P}_aw_seen_n, {P}_ar_end(job_n), {P}_aw_end(job_n));",
                 "        $fatal(1);", "      end",
                 f"      if ({P}_ar_head_n != {P}_ar_seen_n || {P}_b_head_n != {P}_aw_seen_n)",
                 f"        fail(\"{port} port has bursts in flight at a job's response\");"]
    word_hi = min(addr_w, 34) - 1   # pattern_word takes the 32-bit word address
    body += ["      for (rec = (job_n == 0 ? 0 : lxe_end(job_n - 1)); rec < lxe_end(job_n); rec = rec + 1)",
             "        for (rec_beat = 0; rec_beat < lxe_beats(rec); rec_beat = rec_beat + 1) begin",
             f"          a = lxe_addr(rec) + rec_beat * {beat};", "          idx = device_index(a);",
             "          if (idx < 0) fail(\"LXE write outside the pages of the golden run\");",
             f"          for (lane = 0; lane < {beat // 4}; lane = lane + 1) word[32 * lane +: 32] = "
             f"pattern_word(a[{word_hi}:2] + lane);",
             "          dev_mem[idx] <= word;", "        end",
             "      job_n = job_n + 1;",
             *[f"      {s}_limit <= {s}_end(job_n);" for s in STREAMS if s != "ctrl"],
             f"      ctrl_limit <= job_n < {n_jobs} ? job_n + 1 : job_n;", "    end",
             f"    resp_stalled <= {r}__valid && !{r}__ready;", f"    resp_held <= {r}__payload;",
             "    resp_lfsr_n = lfsr_next(resp_lfsr_n);", f"    {r}__ready <= resp_lfsr_n[1:0] != 2'b00;",
             *[f"    {n} <= {n}_n;" for n, _ in working], "  end"]
    lines += body + output_checks(interface)

    checks = signal_checks(ports, {f"status__{pre}{n}": v for n, v in bench.counters.items()})
    budget = bench.cycle_budget()
    final = []
    fold = (f"        for (fold_i = 0; fold_i < {data_w}; fold_i = fold_i + 64) folded = folded ^ "
            "page_word[fold_i +: 64];" if data_w >= 64 else f"        folded = {{{64 - data_w}'d0, page_word}};")
    for t in TIERS:
        final += [f"    for (page_i = 0; page_i < {len(slots[t])}; page_i = page_i + 1) begin", "      sum = 64'd0;",
                  f"      for (beat_i = 0; beat_i < {per_page}; beat_i = beat_i + 1) begin",
                  f"        page_word = {mem[t]}[page_i * {per_page} + beat_i];", "        folded = 64'd0;", fold,
                  "        sum = sum + folded * (2 * beat_i + 1);", "      end",
                  f"      if (sum !== {t}_sum(page_i)) begin",
                  f"        $display(\"FAIL: {t} page %h differs from the golden image after the run\", "
                  f"{t}_page(page_i));",
                  "        $fatal(1);", "      end", "    end"]
    n_pages = len(bench.page_sums)
    lines += ["  initial begin",
              *[f"    for (page_i = 0; page_i < {max(1, len(slots[t])) * per_page}; page_i = page_i + 1) "
                f"{mem[t]}[page_i] = {data_w}'d0;" for t in TIERS],
              f"    repeat (4) @(posedge {clock});", *release_reset(clock, reset),
              f"    while (job < {n_jobs} && cycle < {budget}) begin @(posedge {clock}); cycle = cycle + 1; end",
              f"    if (job < {n_jobs}) fail(\"not finished within the cycle budget ({budget} cycles)\");",
              f"    repeat (4) @(posedge {clock});", f"    @(negedge {clock});", *checks, *final,
              f"    $display(\"PASS: {interface['top']}: {n_jobs} jobs: responses, AXI bursts, status counters and "
              f"{n_pages} memory pages match the golden model under random stalls in %0d cycles\", cycle);",
              "    $finish;", "  end", "endmodule"]
    return "\n".join(lines) + "\n"


def _axi_slave(P: str, mem: str, tier: str, *, beat: int, size: int, mo: int, addr_w: int, totals: dict) -> list[str]:
    """One port's AXI4 slave and checks, inside the testbench's clocked block (values are those the design saw);
    ``totals``: the golden model's AR and AW bursts on the port. The block's working copies ``<name>_n`` carry the
    port's counters through the edge; the queues and the memory are written with ``<=``, so a read burst is served,
    and a write response offered, from the edge after its queue entry was written (the committed ``<P>_ar_seen``,
    ``<P>_b_tail``)."""
    out = [f"    {P}_lfsr_n = lfsr_next({P}_lfsr_n);"]
    for ch in ("ar", "aw"):
        done = f"{P}_ar_head_n" if ch == "ar" else f"{P}_b_head_n"
        seen = f"{P}_{ch}_seen_n"
        out += [f"    if ({P}__{ch}valid && {P}__{ch}ready) begin",
                f"      if ({seen} >= {totals[ch]}) fail(\"{P}: more {ch.upper()} bursts than the golden model\");",
                f"      if ({{{P}__{ch}len + 9'd1, {P}__{ch}addr}} !== {P}_{ch}_burst({seen})) begin",
                f"        $display(\"FAIL: {P} {ch.upper()} burst %0d: expected %h x %0d beats, got %h x %0d\", {seen}, "
                f"{P}_{ch}_burst({seen}) & {{{addr_w}{{1'b1}}}}, {P}_{ch}_burst({seen}) >> {addr_w}, {P}__{ch}addr, "
                f"{P}__{ch}len + 1);",
                "        $fatal(1);", "      end",
                f"      if ({P}__{ch}size !== 3'd{size} || {P}__{ch}burst !== 2'b01) fail(\"{P}: {ch.upper()} is not an INCR "
                "burst of full beats\");",
                f"      if ({P}__{ch}addr[11:0] + ({P}__{ch}len + 1) * {beat} > {PAGE_BYTES}) fail(\"{P}: {ch.upper()} "
                "burst crosses 4 KiB\");",
                f"      {P}_{ch}_q_addr[{seen} % {QUEUE}] <= {P}__{ch}addr;",
                f"      {P}_{ch}_q_len[{seen} % {QUEUE}] <= {P}__{ch}len;",
                f"      {P}_{ch}_q_id[{seen} % {QUEUE}] <= {P}__{ch}id;",
                f"      {seen} = {seen} + 1;",
                f"      if ({seen} - {done} > {mo}) fail(\"{P}: more than max_outstanding ({mo}) {ch.upper()} bursts in "
                "flight\");", "    end"]
    head_r = f"{P}_ar_head_n % {QUEUE}"
    head_w = f"{P}_aw_head_n % {QUEUE}"
    out += [f"    {P}__arready <= {P}_lfsr_n[1:0] != 2'b00 && {P}_ar_seen_n - {P}_ar_head_n < {QUEUE};",
            f"    {P}__awready <= {P}_lfsr_n[5:4] != 2'b00 && {P}_aw_seen_n - {P}_aw_head_n < {QUEUE} && "
            f"{P}_b_tail_n - {P}_b_head_n < {QUEUE};",
            # R: the head read burst's beats, one offered at a time
            f"    if ({P}__rvalid && {P}__rready) begin",
            f"      if ({P}__rlast) begin {P}_ar_head_n = {P}_ar_head_n + 1; {P}_rbeat_n = 0; end",
            f"      else {P}_rbeat_n = {P}_rbeat_n + 1;", f"      {P}_r_offered_n = 1'b0;", "    end",
            f"    if (!{P}_r_offered_n) begin",
            f"      if ({P}_ar_head_n != {P}_ar_seen && {P}_lfsr_n[3:2] != 2'b00) begin",
            f"        a = {P}_ar_q_addr[{head_r}] + {P}_rbeat_n * {beat};",
            f"        idx = {tier}_index(a);",
            f"        if (idx < 0) fail(\"{P}: read outside the pages of the golden run\");",
            f"        {P}__rdata <= {mem}[idx]; {P}__rid <= {P}_ar_q_id[{head_r}]; {P}__rresp <= 2'b00;",
            f"        {P}__rlast <= {P}_rbeat_n == {P}_ar_q_len[{head_r}]; {P}__rvalid <= 1'b1; {P}_r_offered_n = 1'b1;",
            f"      end else {P}__rvalid <= 1'b0;", "    end",
            # W: beats of the head write burst, strobes applied
            f"    if ({P}__wvalid && {P}__wready) begin",
            f"      a = {P}_aw_q_addr[{head_w}] + {P}_wbeat_n * {beat};",
            f"      idx = {tier}_index(a);",
            f"      if (idx < 0) fail(\"{P}: write outside the pages of the golden run\");",
            f"      word = {mem}[idx];",
            f"      for (lane = 0; lane < {beat}; lane = lane + 1) if ({P}__wstrb[lane]) word[8 * lane +: 8] = "
            f"{P}__wdata[8 * lane +: 8];",
            f"      {mem}[idx] <= word;",
            f"      if ({P}__wlast !== ({P}_wbeat_n == {P}_aw_q_len[{head_w}])) fail(\"{P}: WLAST does not mark the "
            "burst's last beat\");",
            f"      if ({P}_wbeat_n == {P}_aw_q_len[{head_w}]) begin",
            f"        {P}_b_q[{P}_b_tail_n % {QUEUE}] <= {P}_aw_q_id[{head_w}]; {P}_b_tail_n = {P}_b_tail_n + 1;",
            f"        {P}_aw_head_n = {P}_aw_head_n + 1; {P}_wbeat_n = 0;",
            f"      end else {P}_wbeat_n = {P}_wbeat_n + 1;", "    end",
            f"    {P}__wready <= {P}_lfsr_n[7:6] != 2'b00 && {P}_aw_head_n != {P}_aw_seen_n;",
            # B: one response per completed write burst
            f"    if ({P}__bvalid && {P}__bready) begin {P}_b_head_n = {P}_b_head_n + 1; {P}_b_offered_n = 1'b0; end",
            f"    if (!{P}_b_offered_n) begin",
            f"      if ({P}_b_head_n != {P}_b_tail && {P}_lfsr_n[9:8] != 2'b00) begin",
            f"        {P}__bid <= {P}_b_q[{P}_b_head_n % {QUEUE}]; {P}__bresp <= 2'b00; {P}__bvalid <= 1'b1; "
            f"{P}_b_offered_n = 1'b1;",
            f"      end else {P}__bvalid <= 1'b0;", "    end"]
    return out
