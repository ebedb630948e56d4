"""A :class:`~vrex.sim.dre.kvmu.bench.KVMUBench` as one self-checking Verilog-2005 testbench: the KVMU's FuseSoC ``sim`` target.

The cocotb bench (:mod:`vrex.sim.dre.kvmu.cocotb_test`) serves the KVMU's AXI4 masters with cocotbext-axi memories; a plain
Verilog testbench has no such library, so this one carries its own minimal AXI4 slave per port, on paged memories:

- **memories**: the device tier (ports ``dev`` and ``tbl``) and the host tier (``host``) hold only the 4 KiB pages
  the golden run touches (bursts and LXE writes), zeroed at the start (the bench is made with ``fill=False``); an
  access to any other page fails the run;
- **AXI slave per port**: AR and AW accepted with random ready into a queue, R beats of the head burst offered with
  random valid (RID = ARID, RLAST on the last beat, OKAY), W beats (strobes applied) accepted with random ready
  while a write burst is open, one B per burst with random valid; every AR / AW is compared in order with the
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
probability :data:`vrex.sim.verilog_bench.STALL_PROBABILITY`.
"""

from __future__ import annotations

from vrex.config import Config

from vrex.sim.dre.kvmu.bench import AXI_PREFIX, PAGE_BYTES, PORTS, TIER_OF_PORT, KVMUBench, address_pattern
from vrex.sim.verilog_bench import (const_table, hex_literal, lfsr_seed, output_checks, preamble, reg_decl, signal_checks)

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
              "  integer i, k, b, idx;", f"  reg [{data_w - 1}:0] word;", "  reg [63:0] sum, folded;",
              f"  reg [{addr_w - 1}:0] a;"]

    # ---- paged memories
    slots = {t: [page for tier, page, _ in bench.page_sums if tier == t] for t in TIERS}
    sums = {t: [s for tier, _, s in bench.page_sums if tier == t] for t in TIERS}
    mem = {"device": "dev_mem", "host": "host_mem"}
    for t in TIERS:
        n = max(1, len(slots[t]))
        lines += [f"  // {t} tier: {len(slots[t])} pages of {per_page} beats (the pages the golden run touches)",
                  f"  reg [{data_w - 1}:0] {mem[t]} [0:{n * per_page - 1}];",
                  f"  function integer {t}_index;   // beat index of an address, -1 outside the pages",
                  f"    input [{addr_w - 1}:0] addr;", "    begin", f"      case (addr[{addr_w - 1}:12])"]
        lines += [f"        {addr_w - 12}'h{page >> 12:x}: {t}_index = {k * per_page} + addr[11:{size}];"
                  for k, page in enumerate(slots[t])]
        lines += [f"        default: {t}_index = -1;", "      endcase", "    end", "  endfunction",
                  *const_table(f"{t}_page", addr_w, slots[t] or [0]), *const_table(f"{t}_sum", 64, sums[t] or [0])]

    # ---- the sequencer's streams and the expected responses
    counts = {"ctrl": [1] * n_jobs, "tokens": [len(j["tokens"]) for j in jobs], "masks": [len(j["masks"]) for j in jobs]}
    beats = {"ctrl": [j["ctrl"] for j in jobs], "tokens": [t for j in jobs for t in j["tokens"]],
             "masks": [m for j in jobs for m in j["masks"]]}
    for k, s in enumerate(STREAMS):
        p, w = f"{pre}{s}", ports[f"{pre}{s}__payload"]["width"]
        lines += [f"  // input stream {s}: {len(beats[s])} beats over {n_jobs} jobs",
                  *const_table(f"{s}_beat", w, beats[s] or [0]), *const_table(f"{s}_end", 32, _cumulative(counts[s])),
                  f"  integer {s}_sent = 0, {s}_limit = 0;", f"  reg [31:0] {s}_lfsr = {hex_literal(32, lfsr_seed(bench.seed, k))};"]
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

    body = [f"  always @(posedge {clock}) if (running) begin"]
    for port in PORTS:
        totals = {ch: sum(kind == ch.upper() for e in bench.expected for kind, _, _ in e["bursts"][port])
                  for ch in ("ar", "aw")}
        body += _axi_slave(AXI_PREFIX[port], mem[TIER_OF_PORT[port]], TIER_OF_PORT[port], beat=beat, size=size, mo=mo,
                           addr_w=addr_w, totals=totals)
    for s in STREAMS:
        p = f"{pre}{s}"
        body += [f"    if ({p}__valid && {p}__ready) {s}_sent = {s}_sent + 1;", f"    {s}_lfsr = lfsr_next({s}_lfsr);",
                 f"    if (!({p}__valid && !{p}__ready)) begin",
                 f"      {p}__valid <= {s}_sent < {s}_limit && {s}_lfsr[1:0] != 2'b00;",
                 f"      {p}__payload <= {s}_beat({s}_sent);", "    end"]
    r = f"{pre}resp"
    body += [f"    if (resp_stalled && (!{r}__valid || {r}__payload !== resp_held))",
             "      fail(\"resp: valid dropped or payload changed while stalled\");",
             f"    if ({r}__valid && {r}__ready) begin",
             f"      if (job >= {n_jobs}) fail(\"resp: more responses than jobs\");",
             f"      if ({r}__payload !== resp_expected(job)) begin",
             f"        $display(\"FAIL: response of job %0d: expected %h, got %h\", job, resp_expected(job), {r}__payload);",
             "        $fatal(1);", "      end"]
    for port in PORTS:
        P = AXI_PREFIX[port]
        body += [f"      if ({P}_ar_seen != {P}_ar_end(job) || {P}_aw_seen != {P}_aw_end(job)) begin",
                 f"        $display(\"FAIL: job %0d: {port} port issued %0d AR / %0d AW bursts by its response, the golden "
                 f"model %0d / %0d\", job, {P}_ar_seen, {P}_aw_seen, {P}_ar_end(job), {P}_aw_end(job));",
                 "        $fatal(1);", "      end",
                 f"      if ({P}_ar_head != {P}_ar_seen || {P}_b_head != {P}_aw_seen)",
                 f"        fail(\"{port} port has bursts in flight at a job's response\");"]
    body += ["      for (i = (job == 0 ? 0 : lxe_end(job - 1)); i < lxe_end(job); i = i + 1)",
             "        for (k = 0; k < lxe_beats(i); k = k + 1) begin",
             f"          a = lxe_addr(i) + k * {beat};", "          idx = device_index(a);",
             "          if (idx < 0) fail(\"LXE write outside the pages of the golden run\");",
             f"          for (b = 0; b < {beat // 4}; b = b + 1) word[32 * b +: 32] = pattern_word((a >> 2) + b);",
             "          dev_mem[idx] = word;", "        end",
             "      job = job + 1;",
             *[f"      {s}_limit = {s}_end(job);" for s in STREAMS if s != "ctrl"],
             f"      ctrl_limit = job < {n_jobs} ? job + 1 : job;", "    end",
             f"    resp_stalled = {r}__valid && !{r}__ready;", f"    resp_held = {r}__payload;",
             "    resp_lfsr = lfsr_next(resp_lfsr);", f"    {r}__ready <= resp_lfsr[1:0] != 2'b00;", "  end"]
    lines += body + output_checks(interface)

    checks = signal_checks(ports, {f"status__{pre}{n}": v for n, v in bench.counters.items()})
    budget = bench.cycle_budget()
    final = []
    for t in TIERS:
        final += [f"    for (i = 0; i < {len(slots[t])}; i = i + 1) begin", "      sum = 64'd0;",
                  f"      for (k = 0; k < {per_page}; k = k + 1) begin",
                  f"        word = {mem[t]}[i * {per_page} + k];", "        folded = 64'd0;",
                  f"        for (b = 0; b < {data_w}; b = b + 64) folded = folded ^ (word >> b);",
                  "        sum = sum + folded * (2 * k + 1);", "      end",
                  f"      if (sum !== {t}_sum(i)) begin",
                  f"        $display(\"FAIL: {t} page %h differs from the golden image after the run\", {t}_page(i));",
                  "        $fatal(1);", "      end", "    end"]
    n_pages = len(bench.page_sums)
    lines += ["  initial begin",
              *[f"    for (i = 0; i < {max(1, len(slots[t])) * per_page}; i = i + 1) {mem[t]}[i] = {data_w}'d0;"
                for t in TIERS],
              "    ctrl_limit = 1; tokens_limit = tokens_end(0); masks_limit = masks_end(0);",
              f"    repeat (4) @(posedge {clock});", f"    {reset} <= 1'b0;", "    running <= 1'b1;",
              f"    while (job < {n_jobs} && cycle < {budget}) begin @(posedge {clock}); cycle = cycle + 1; end",
              f"    if (job < {n_jobs}) fail(\"not finished within the cycle budget ({budget} cycles)\");",
              f"    repeat (4) @(posedge {clock});", f"    @(negedge {clock});", *checks, *final,
              f"    $display(\"PASS: {interface['top']}: {n_jobs} jobs: responses, AXI bursts, status counters and "
              f"{n_pages} memory pages match the golden model under random stalls in %0d cycles\", cycle);",
              "    $finish;", "  end", "endmodule"]
    return "\n".join(lines) + "\n"


def _axi_slave(P: str, mem: str, tier: str, *, beat: int, size: int, mo: int, addr_w: int, totals: dict) -> list[str]:
    """One port's AXI4 slave and checks, inside the testbench's clocked block (values are those the design saw);
    ``totals``: the golden model's AR and AW bursts on the port."""
    out = [f"    {P}_lfsr = lfsr_next({P}_lfsr);"]
    for ch in ("ar", "aw"):
        done = f"{P}_ar_head" if ch == "ar" else f"{P}_b_head"
        out += [f"    if ({P}__{ch}valid && {P}__{ch}ready) begin",
                f"      if ({P}_{ch}_seen >= {totals[ch]}) fail(\"{P}: more {ch.upper()} bursts than the golden model\");",
                f"      if ({{{P}__{ch}len + 9'd1, {P}__{ch}addr}} !== {P}_{ch}_burst({P}_{ch}_seen)) begin",
                f"        $display(\"FAIL: {P} {ch.upper()} burst %0d: expected %h x %0d beats, got %h x %0d\", {P}_{ch}_seen, "
                f"{P}_{ch}_burst({P}_{ch}_seen) & {{{addr_w}{{1'b1}}}}, {P}_{ch}_burst({P}_{ch}_seen) >> {addr_w}, {P}__{ch}addr, "
                f"{P}__{ch}len + 1);",
                "        $fatal(1);", "      end",
                f"      if ({P}__{ch}size !== 3'd{size} || {P}__{ch}burst !== 2'b01) fail(\"{P}: {ch.upper()} is not an INCR "
                "burst of full beats\");",
                f"      if ({P}__{ch}addr[11:0] + ({P}__{ch}len + 1) * {beat} > {PAGE_BYTES}) fail(\"{P}: {ch.upper()} "
                "burst crosses 4 KiB\");",
                f"      {P}_{ch}_q_addr[{P}_{ch}_seen % {QUEUE}] = {P}__{ch}addr;",
                f"      {P}_{ch}_q_len[{P}_{ch}_seen % {QUEUE}] = {P}__{ch}len;",
                f"      {P}_{ch}_q_id[{P}_{ch}_seen % {QUEUE}] = {P}__{ch}id;",
                f"      {P}_{ch}_seen = {P}_{ch}_seen + 1;",
                f"      if ({P}_{ch}_seen - {done} > {mo}) fail(\"{P}: more than max_outstanding ({mo}) {ch.upper()} bursts in "
                "flight\");", "    end"]
    head_r = f"{P}_ar_head % {QUEUE}"
    head_w = f"{P}_aw_head % {QUEUE}"
    out += [f"    {P}__arready <= {P}_lfsr[1:0] != 2'b00 && {P}_ar_seen - {P}_ar_head < {QUEUE};",
            f"    {P}__awready <= {P}_lfsr[5:4] != 2'b00 && {P}_aw_seen - {P}_aw_head < {QUEUE} && "
            f"{P}_b_tail - {P}_b_head < {QUEUE};",
            # R: the head read burst's beats, one offered at a time
            f"    if ({P}__rvalid && {P}__rready) begin",
            f"      if ({P}__rlast) begin {P}_ar_head = {P}_ar_head + 1; {P}_rbeat = 0; end",
            f"      else {P}_rbeat = {P}_rbeat + 1;", f"      {P}_r_offered = 1'b0;", "    end",
            f"    if (!{P}_r_offered) begin",
            f"      if ({P}_ar_head != {P}_ar_seen && {P}_lfsr[3:2] != 2'b00) begin",
            f"        a = {P}_ar_q_addr[{head_r}] + {P}_rbeat * {beat};",
            f"        idx = {tier}_index(a);",
            f"        if (idx < 0) fail(\"{P}: read outside the pages of the golden run\");",
            f"        {P}__rdata <= {mem}[idx]; {P}__rid <= {P}_ar_q_id[{head_r}]; {P}__rresp <= 2'b00;",
            f"        {P}__rlast <= {P}_rbeat == {P}_ar_q_len[{head_r}]; {P}__rvalid <= 1'b1; {P}_r_offered = 1'b1;",
            f"      end else {P}__rvalid <= 1'b0;", "    end",
            # W: beats of the head write burst, strobes applied
            f"    if ({P}__wvalid && {P}__wready) begin",
            f"      a = {P}_aw_q_addr[{head_w}] + {P}_wbeat * {beat};",
            f"      idx = {tier}_index(a);",
            f"      if (idx < 0) fail(\"{P}: write outside the pages of the golden run\");",
            f"      word = {mem}[idx];",
            f"      for (b = 0; b < {beat}; b = b + 1) if ({P}__wstrb[b]) word[8 * b +: 8] = {P}__wdata >> 8 * b;",
            f"      {mem}[idx] = word;",
            f"      if ({P}__wlast !== ({P}_wbeat == {P}_aw_q_len[{head_w}])) fail(\"{P}: WLAST does not mark the burst's "
            "last beat\");",
            f"      if ({P}_wbeat == {P}_aw_q_len[{head_w}]) begin",
            f"        {P}_b_q[{P}_b_tail % {QUEUE}] = {P}_aw_q_id[{head_w}]; {P}_b_tail = {P}_b_tail + 1;",
            f"        {P}_aw_head = {P}_aw_head + 1; {P}_wbeat = 0;",
            f"      end else {P}_wbeat = {P}_wbeat + 1;", "    end",
            f"    {P}__wready <= {P}_lfsr[7:6] != 2'b00 && {P}_aw_head != {P}_aw_seen;",
            # B: one response per completed write burst
            f"    if ({P}__bvalid && {P}__bready) begin {P}_b_head = {P}_b_head + 1; {P}_b_offered = 1'b0; end",
            f"    if (!{P}_b_offered) begin",
            f"      if ({P}_b_head != {P}_b_tail && {P}_lfsr[9:8] != 2'b00) begin",
            f"        {P}__bid <= {P}_b_q[{P}_b_head % {QUEUE}]; {P}__bresp <= 2'b00; {P}__bvalid <= 1'b1; "
            f"{P}_b_offered = 1'b1;",
            f"      end else {P}__bvalid <= 1'b0;", "    end"]
    return out
