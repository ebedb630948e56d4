"""A :class:`~vrex.sim.bench.StreamBench` as one self-checking Verilog-2005 testbench (no Python, no cocotb).

The IP package's FuseSoC ``sim`` target runs it on Icarus (docs/ip.md): the golden stimulus and expected
outputs are written into the testbench as constants, so any Verilog simulator can replay them.

Per clock edge, as :class:`vrex.sim.traffic.Traffic` does: each input stream offers its next payload with
probability 3/4 (an offered payload stays offered, unchanged, until it is taken), each output is ready with
probability 3/4 (one 32-bit LFSR per port, seeded from the bench seed). Every output beat is compared with the
expected one in order; an output that drops valid or changes its payload while stalled, an extra beat, any
output that is X or Z after reset (a stream payload or an AXI channel field only while its VALID is high: it is
don't-care otherwise), a status signal that differs from ``expected_signals`` after the drain, or
not finishing within the bench's cycle budget ends the run with ``$fatal`` (non-zero exit). A bench with no
stimulus and no expected beats is the idle test: after reset every VALID and every other non-payload output is
defined and no output stream transfers a beat.

Statics are constant inputs for the whole run; any other input that is not the clock or reset is held at 0.

The Verilog lints clean with the package's waivers (``verilator --lint-only -Wall <top>.vlt <top>.v tb_<top>.v``,
docs/ip.md): clocked blocks assign the testbench's state and the design's inputs with ``<=`` (a value needed again
within the edge is a variable of the block), and the initial block releases the reset on a falling edge.
"""

from __future__ import annotations

from .bench import StreamBench

__all__ = ["verilog_testbench", "usable_bench", "STALL_PROBABILITY", "preamble", "output_checks", "signal_checks",
           "clock_and_reset", "hex_literal", "const_table", "lfsr_seed", "reg_decl", "release_reset"]

STALL_PROBABILITY = 0.25   # LFSR low two bits == 0
_LFSR_TAPS = "32'h80200003"   # x^32 + x^22 + x^2 + x + 1 (maximal length), Galois form


def usable_bench(bench, ports: list[dict]) -> str | None:
    """None if ``bench`` can be replayed on a design with these ports, else the reason it cannot."""
    if type(bench) is not StreamBench:
        return f"its bench is a {type(bench).__name__}, not a plain StreamBench"
    names = {p["name"] for p in ports}
    for p in list(bench.inputs) + list(bench.expected):
        missing = [f"{p}__{s}" for s in ("payload", "valid", "ready") if f"{p}__{s}" not in names]
        if missing:
            return f"stream {p} has no port {missing[0]}"
    for name in list(bench.statics) + list(bench.expected_signals):
        if name not in names:
            return f"signal {name} is not a port"
    driven = ({f"{p}__{s}" for p in bench.inputs for s in ("payload", "valid")}
              | {f"{p}__ready" for p in bench.expected} | set(bench.statics))
    idle = tuple(bench.idle_inputs)
    for p in ports:
        n = p["name"]
        if n in idle or any(n.startswith(prefix + "__") for prefix in idle):
            continue
        if p["direction"] == "input" and p.get("role") not in ("clock", "reset") and n not in driven:
            return f"its bench does not drive the input {n} (a model outside the bench answers it)"
    return None


def hex_literal(width: int, value: int) -> str:
    return f"{width}'h{value & ((1 << width) - 1):x}"


def reg_decl(width: int, name: str, init: str | None = None) -> str:
    rng = f"[{width - 1}:0] " if width > 1 else ""
    return f"  reg {rng}{name}" + (f" = {init};" if init is not None else ";")


def const_table(name: str, width: int, values: list[int]) -> list[str]:
    """A constant table ``name`` (function of the index): one case item per value."""
    rng = f"[{width - 1}:0] " if width > 1 else ""
    out = [f"  function {rng}{name};", "    input integer k;", "    begin", "      case (k)"]
    out += [f"        {k}: {name} = {hex_literal(width, v)};" for k, v in enumerate(values)]
    out += [f"        default: {name} = {width}'d0;", "      endcase", "    end", "  endfunction"]
    return out


def clock_and_reset(interface: dict) -> tuple[str, str]:
    """The design's clock and reset ports (a combinational design has neither: the testbench keeps time with its own
    ``tb_clk`` / ``tb_rst``)."""
    clock = interface["clock"]["port"] if interface["clock"] else "tb_clk"
    reset = interface["reset"]["port"] if interface["reset"] else "tb_rst"
    return clock, reset


def preamble(interface: dict, *, name: str, clock_mhz: float, origin: str, driven: set, statics: dict) -> list[str]:
    """Module header, a reg per input (``driven`` ones start at 0, others hold their ``statics`` value or 0), a wire
    per output, the design instance, the clock, ``cycle`` / ``running``, ``lfsr_next`` and the ``fail`` task."""
    top = interface["top"]
    ports = {p["name"]: p for p in interface["ports"]}
    clock, reset = clock_and_reset(interface)
    lines = ["`timescale 1ns / 1ps",
             f"// Self-checking testbench of {top} (component {interface['component']}, config {interface['config']}, "
             f"hash {interface['config_hash']}), written by vrex {interface['vrex']}.",
             f"// {origin}", f"module {name};"]
    lines += [reg_decl(1, n, init) for n, init in ((clock, "1'b0"), (reset, "1'b1")) if n not in ports]
    for p in interface["ports"]:
        n, w = p["name"], p["width"]
        if n == clock:
            lines.append(reg_decl(1, n, "1'b0"))
        elif n == reset:
            lines.append(reg_decl(1, n, "1'b1"))
        elif p["direction"] == "input":
            lines.append(reg_decl(w, n, hex_literal(w, statics.get(n, 0)) if n not in driven else f"{w}'d0"))
        else:
            lines.append(f"  wire {f'[{w - 1}:0] ' if w > 1 else ''}{n};")
    lines += [f"  {top} dut (", ",\n".join(f"    .{n}({n})" for n in ports), "  );",
              f"  always #{500.0 / clock_mhz:.6g} {clock} = ~{clock};",
              "  integer cycle = 0;", "  reg running = 1'b0;",
              "  function [31:0] lfsr_next;", "    input [31:0] s;",
              f"    lfsr_next = s[0] ? (s >> 1) ^ {_LFSR_TAPS} : s >> 1;", "  endfunction",
              "  task fail;", "    input [8*80-1:0] what;", "    begin",
              "      $display(\"FAIL: %0s (cycle %0d after reset)\", what, cycle);", "      $fatal(1);",
              "    end", "  endtask"]
    return lines


def output_checks(interface: dict) -> list[str]:
    """On every falling clock edge while running: no output is X or Z (a payload or AXI field only while valid)."""
    clock, _ = clock_and_reset(interface)
    outputs = [p["name"] for p in interface["ports"] if p["direction"] == "output"]
    lines = [f"  always @(negedge {clock}) if (running) begin"]
    for n in outputs:
        valid = _valid_of(n, set(outputs))
        guard = f"{valid} === 1'b1 && " if valid else ""
        lines.append(f"    if ({guard}(^{n}) === 1'bx) fail(\"output {n} is X or Z\");")
    return lines + ["  end"]


def release_reset(clock: str, reset: str) -> list[str]:
    """Release the reset and start the clocked blocks on a falling edge: the design samples the change on the next
    rising edge, with no race between the initial block and the design's (or the testbench's) clocked processes."""
    return [f"    @(negedge {clock});", f"    {reset} = 1'b0;", "    running = 1'b1;"]


def verilog_testbench(bench: StreamBench, interface: dict, *, name: str, clock_mhz: float,
                      origin: str) -> str:
    """Verilog text of module ``name`` replaying ``bench`` on the design described by ``interface``
    (:func:`vrex.synth.interface.describe`); ``origin`` is a one-line account of where the vectors come from."""
    top = interface["top"]
    ports = {p["name"]: p for p in interface["ports"]}
    clock, reset = clock_and_reset(interface)
    ins, outs = list(bench.inputs), list(bench.expected)
    driven = {f"{p}__{s}" for p in ins for s in ("payload", "valid")} | {f"{p}__ready" for p in outs}
    lines = preamble(interface, name=name, clock_mhz=clock_mhz, origin=origin, driven=driven, statics=bench.statics)
    for k, p in enumerate(ins):
        w, n = ports[f"{p}__payload"]["width"], len(bench.inputs[p])
        lines += [f"  // input stream {p}: {n} beats", *const_table(f"{p}_beat", w, bench.inputs[p]),
                  f"  integer {p}_sent = 0;", f"  reg [31:0] {p}_lfsr = {hex_literal(32, lfsr_seed(bench.seed, k))};",
                  f"  always @(posedge {clock}) if (running) begin : {p}_drive",
                  "    integer sent_n;", "    reg [31:0] lfsr_n;",
                  f"    sent_n = {p}__valid && {p}__ready ? {p}_sent + 1 : {p}_sent;",
                  f"    lfsr_n = lfsr_next({p}_lfsr);",
                  f"    {p}_sent <= sent_n;", f"    {p}_lfsr <= lfsr_n;",
                  f"    if (!({p}__valid && !{p}__ready)) begin",
                  f"      {p}__valid <= sent_n < {n} && lfsr_n[1:0] != 2'b00;",
                  f"      {p}__payload <= {p}_beat(sent_n);",
                  "    end", "  end"]
    for k, p in enumerate(outs):
        w, n = ports[f"{p}__payload"]["width"], len(bench.expected[p])
        lines += [f"  // output stream {p}: {n} beats expected", *const_table(f"{p}_expected", w, bench.expected[p]),
                  f"  integer {p}_seen = 0;", f"  reg [31:0] {p}_lfsr = {hex_literal(32, lfsr_seed(bench.seed, 100 + k))};",
                  f"  reg {p}_stalled = 1'b0;", reg_decl(w, f"{p}_held"),
                  f"  always @(posedge {clock}) if (running) begin : {p}_check",
                  "    reg [31:0] lfsr_n;",
                  f"    if ({p}_stalled && (!{p}__valid || {p}__payload !== {p}_held))",
                  f"      fail(\"{p}: valid dropped or payload changed while stalled\");",
                  f"    if ({p}__valid && {p}__ready) begin",
                  f"      if ({p}_seen >= {n}) fail(\"{p}: more beats than expected\");",
                  f"      if ({p}__payload !== {p}_expected({p}_seen)) begin",
                  f"        $display(\"FAIL: {p} beat %0d: expected %h, got %h\", {p}_seen, {p}_expected({p}_seen), "
                  f"{p}__payload);",
                  "        $fatal(1);", "      end",
                  f"      {p}_seen <= {p}_seen + 1;", "    end",
                  f"    {p}_stalled <= {p}__valid && !{p}__ready;", f"    {p}_held <= {p}__payload;",
                  f"    lfsr_n = lfsr_next({p}_lfsr);", f"    {p}_lfsr <= lfsr_n;",
                  f"    {p}__ready <= lfsr_n[1:0] != 2'b00;", "  end"]
    lines += output_checks(interface)
    pending = " || ".join([f"{p}_sent < {len(bench.inputs[p])}" for p in ins]
                          + [f"{p}_seen < {len(bench.expected[p])}" for p in outs]) or "1'b0"
    checks = signal_checks(ports, bench.expected_signals)
    budget = bench.cycle_budget()
    lines += ["  initial begin",
              f"    repeat ({bench.reset_cycles}) @(posedge {clock});", *release_reset(clock, reset),
              f"    while (({pending}) && cycle < {budget}) begin @(posedge {clock}); cycle = cycle + 1; end",
              f"    if ({pending}) fail(\"not finished within the cycle budget ({budget} cycles)\");",
              f"    repeat ({bench.drain_cycles}) @(posedge {clock});",
              f"    @(negedge {clock});", *checks,
              f"    $display(\"PASS: {top}: {_summary(bench)} in %0d cycles\", cycle);",
              "    $finish;", "  end", "endmodule"]
    return "\n".join(lines) + "\n"


def signal_checks(ports: dict, expected: dict) -> list[str]:
    """After the run: each output named in ``expected`` (None: not checked) holds its expected value."""
    return [f"    if ({n} !== {hex_literal(ports[n]['width'], v)}) begin\n"
            f"      $display(\"FAIL: {n} is %0d after the run, expected {v}\", {n});\n      $fatal(1);\n    end"
            for n, v in expected.items() if v is not None]


def _valid_of(name: str, outputs: set) -> str | None:
    """The VALID output that qualifies output ``name``, or None: a stream's ``X__payload`` is qualified by
    ``X__valid``, an AXI master's address / write-data field ``P__awlen`` (``aw``, ``w``, ``ar`` channels) by
    ``P__awvalid``. A payload is don't-care while its VALID is low (the stream protocol and AXI), so it is checked
    for X / Z only on cycles it is valid; the VALIDs themselves, and every other output, always."""
    if name.endswith("__payload") and name[:-len("payload")] + "valid" in outputs:
        return name[:-len("payload")] + "valid"
    prefix, _, field = name.rpartition("__")
    for channel in ("aw", "ar", "w"):
        if prefix and field.startswith(channel) and field != channel + "valid" and f"{prefix}__{channel}valid" in outputs:
            return f"{prefix}__{channel}valid"
    return None


def _summary(bench: StreamBench) -> str:
    if not bench.inputs and not any(bench.expected.values()):
        return "idle after reset, every output defined (payloads while valid) and no output stream active"
    beats = [f"{len(v)} {p}" for p, v in bench.inputs.items()] + [f"{len(v)} {p}" for p, v in bench.expected.items()]
    return f"{', '.join(beats)} beats match the golden model under random stalls"


def lfsr_seed(seed: int, port: int) -> int:
    """A non-zero LFSR seed per (bench seed, port)."""
    return ((seed * 0x9E3779B1) ^ (port * 0x85EBCA77) ^ 0x1234567) & 0xFFFFFFFF or 1
