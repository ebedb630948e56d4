"""SAIF switching activity (Verilator ``--trace-saif``) → OpenSTA activity annotations.

Debian's OpenSTA (2019) has no ``read_saif``, so vrex annotates what the SAIF knows and lets OpenSTA propagate
the rest through the combinational logic (toolchain.md §6):

- every input-port bit: ``set_power_activity -input_ports ... -activity A -duty D``;
- every flop output pin that carries a stored bit: ``sta::set_power_pin_activity pin A D`` (``QN`` pins of
  ASAP7 flops get the complementary duty).

A = TC / cycles (transitions per clock cycle; cycles from the clock's own toggle count) and
D = T1 / (T0 + T1). Constants on cell pins are moved to two input ports that never toggle (:func:`tie_constants`):
Debian's OpenSTA 2.0.17 segfaults in ``report_power`` when it propagates activity from a constant that drives a
gate with more than one load (a ``1'b0`` buffer feeding two NANDs is enough; the KVMU's netlists have such
buffers), and the global-activity run, which propagates nothing, does not. Signal names are the SAIF hierarchy below the design's top instance joined with ``.``, which
is how Yosys names nets after ``flatten`` (``a.wp__en``), with bus bits as ``name[i]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vrex.errors import VrexError

__all__ = ["Saif", "read_saif", "activity_tcl", "normalise_net", "tie_constants", "TIE_PORTS"]

_SIGNAL = re.compile(r"^\s*\((\S+)\s+\(T0 (\d+)\)\s+\(T1 (\d+)\).*?\(TC (\d+)\)")


@dataclass
class Saif:
    path: Path
    top: str
    cycles: float
    signals: dict            # name -> (T0, T1, TC)

    def activity(self, name: str):
        """``(A, D)`` of a signal, or None when the SAIF does not have it."""
        s = self.signals.get(name)
        if s is None:
            return None
        t0, t1, tc = s
        return tc / self.cycles, t1 / max(1, t0 + t1)


def normalise_net(name: str) -> str:
    """A netlist or SAIF net name in the common form ``a.b[3]`` (no escapes, no spaces)."""
    name = name.strip()
    if name.startswith("\\"):
        name = name[1:]
    return re.sub(r"\s+", "", name.replace("\\", ""))


def read_saif(path, top: str, clock: str = "clk") -> Saif:
    """Parse a Verilator SAIF; keep the signals at and below the instance named ``top``."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise VrexError(f"cannot read the SAIF file {path} ({e})") from None
    stack: list[str | None] = []
    signals: dict = {}
    for line in lines:
        s = line.strip()
        if s.startswith("(INSTANCE"):
            stack.append(s.split(None, 1)[1].strip() if len(s.split()) > 1 else "")
            continue
        if s.startswith("(NET") or s.startswith("(PORT"):
            stack.append(None)
            continue
        if s == ")":
            if stack:
                stack.pop()
            continue
        m = _SIGNAL.match(line)
        if not m:
            continue
        insts = [x for x in stack if x is not None]
        if top not in insts:
            continue
        below = insts[insts.index(top) + 1:]
        name = ".".join(below + [normalise_net(m.group(1))])
        signals.setdefault(name, (int(m.group(2)), int(m.group(3)), int(m.group(4))))
    if clock not in signals:
        raise VrexError(f"the SAIF file {path} has no clock {clock!r} under instance {top!r}; was the design "
                        "simulated with --trace-saif?")
    cycles = signals[clock][2] / 2
    if cycles <= 0:
        raise VrexError(f"the SAIF file {path} records no clock cycles")
    return Saif(path, top, cycles, signals)


def activity_tcl(saif: Saif, netlist_text: str, flop_nets) -> tuple[str, dict]:
    """OpenSTA commands annotating input ports and flop outputs, and coverage counts.

    ``flop_nets``: ``(instance, pin, net, inverted)`` from :func:`vrex.synth.mapped.flop_state_nets`.
    """
    lines = []
    inputs = re.findall(r"^\s*input\s+(?:\[(\d+):(\d+)\]\s+)?(\S+?)\s*;", netlist_text, re.M)
    n_in = n_in_hit = 0
    for hi, lo, name in inputs:
        if name == "clk":
            continue
        bits = [f"{name}[{i}]" for i in range(int(lo), int(hi) + 1)] if hi else [name]
        for b in bits:
            n_in += 1
            a = saif.activity(normalise_net(b))
            if a is None:
                continue
            n_in_hit += 1
            lines.append(f"set_power_activity -input_ports [get_ports {{{b}}}] -activity {a[0]:.6f} -duty {a[1]:.5f}")
    n_ff = n_ff_hit = 0
    for inst, pin, net, inverted in flop_nets:
        n_ff += 1
        a = saif.activity(normalise_net(net))
        if a is None:
            continue
        n_ff_hit += 1
        duty = 1 - a[1] if inverted else a[1]
        lines.append(f"sta::set_power_pin_activity [get_pins {{{normalise_net(inst)}/{pin}}}] {a[0]:.6f} {duty:.5f}")
    coverage = {"input_bits": n_in, "input_bits_annotated": n_in_hit, "flop_outputs": n_ff,
                "flop_outputs_annotated": n_ff_hit, "cycles": saif.cycles}
    return "\n".join(lines) + "\n", coverage


# The power netlist's constant sources: input ports with activity 0 and duty 0 / 1 (tie_constants).
TIE_PORTS = {"0": "vrex_tie0", "1": "vrex_tie1"}
_LITERAL = re.compile(r"(\d+)'b([01xz]+)")


def _tied(m) -> str:
    bits = [TIE_PORTS["1" if b == "1" else "0"] for b in m.group(2).rjust(int(m.group(1)), "0")]
    return bits[0] if len(bits) == 1 else "{" + ", ".join(bits) + "}"


def tie_constants(netlist_text: str, top: str) -> tuple[str, str, int]:
    """The netlist with every constant on a cell pin or an ``assign`` right-hand side replaced by the tie ports
    (``x`` / ``z`` bits by the 0 port), the OpenSTA commands that give the ties activity 0, and how many constants
    were replaced. For the SAIF power run only (the netlist's area and timing are the mapped netlist's)."""
    out, count = [], 0
    for line in netlist_text.splitlines(keepends=True):
        s = line.lstrip()
        if s.startswith(".") or s.startswith("assign "):
            head, eq, rhs = line.partition("=") if s.startswith("assign ") else ("", "", line)
            rhs, n = _LITERAL.subn(_tied, rhs)
            count += n
            line = head + eq + rhs
        out.append(line)
    text = "".join(out)
    if count:
        header = re.compile(rf"^(module\s+{re.escape(top)}\s*\()(.*?\);)", re.M | re.S)
        if not header.search(text):
            raise VrexError(f"cannot find module {top} in the mapped netlist to tie its constants")
        ports = ", ".join(TIE_PORTS.values())
        decl = "".join(f"\n  input {p};" for p in TIE_PORTS.values())
        text = header.sub(lambda m: f"{m.group(1)}{ports}, {m.group(2)}{decl}", text, count=1)
    tcl = "".join(f"set_power_activity -input_ports [get_ports {{{p}}}] -activity 0 -duty {v}\n"
                  for v, p in TIE_PORTS.items()) if count else ""
    return text, tcl, count
