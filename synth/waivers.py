"""The Verilator waiver file shipped beside generated Verilog (``<top>.vlt``, docs/lint.md).

It holds the generic rules of ``synth/verilator_waivers.vlt`` (patterns of Amaranth's Verilog backend) and,
for designs with submodules, one line-exact waiver per *alias wire* of two kinds, both declared by Amaranth for
waveform viewing and often left unused:

- *submodule port aliases*: in a parent module, one wire per port of each submodule it instantiates, named after
  the port (``$N`` suffix when the name is taken);
- *copy aliases*: a wire declared on its own line whose only driver is one ``assign w = net;``,
  ``assign w = net[i:j];`` or ``assign w = 2'h1;`` (a plain copy of a net or of a constant the backend folded into
  it): the names of a re-exported interface (a top whose ports are its submodules' own members, as the LXE and core
  tops; the KVMU's fixed AXI fields arrive there as constants) and the memory-port signals of a module with several
  memories (``rp__addr$16``).

The aliases are found by reading the Verilog (module headers, instances, wire declarations, assignments), never
from Verilator's warnings, so a waiver can only cover such a wire: any other unused signal still fails
``verilator --lint-only -Wall <top>.vlt <top>.v``.

Last, one rule for the design file as a whole: it has no delays and so no `` `timescale`` (Amaranth writes none), and
Verilator flags each of its modules (TIMESCALEMOD) when another file of the run declares one, as a testbench does
(the package's ``tb_<top>.v``, or the user's): the file's waiver lets the package lint clean as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GENERIC_WAIVERS", "PortAlias", "module_headers", "submodule_port_aliases", "copy_aliases", "waiver_text"]

GENERIC_WAIVERS = Path(__file__).with_name("verilator_waivers.vlt")

_MODULE = re.compile(r"^module\s+(\\\S+|\w+)\s*\(([^)]*)\)\s*;", re.M)
_IDENT = r"(\\\S+|[A-Za-z_][\w$]*)"
_INSTANCE = re.compile(rf"^\s*{_IDENT}\s+{_IDENT}\s*\(\s*$")
_WIRE = re.compile(rf"^\s*wire\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?{_IDENT}\s*;")


def _name(token: str) -> str:
    return token[1:] if token.startswith("\\") else token


@dataclass(frozen=True)
class PortAlias:
    """A wire of ``module`` (declared on ``line``) that mirrors port ``port`` of submodule ``child``."""

    module: str
    line: int
    wire: str
    child: str
    port: str


def module_headers(text: str) -> dict[str, frozenset]:
    """The modules an Amaranth Verilog file defines, in file order (escaped names without their backslash), each with
    its port names (Amaranth writes a plain port list in the header)."""
    return {_name(m.group(1)): frozenset(p.strip() for p in m.group(2).split(",") if p.strip())
            for m in _MODULE.finditer(text)}


def submodule_port_aliases(text: str) -> list[PortAlias]:
    """Every submodule port alias wire of an Amaranth Verilog file, in file order."""
    headers = list(_MODULE.finditer(text))
    ports = module_headers(text)
    lines = text.splitlines()
    out = []
    for k, m in enumerate(headers):
        module = _name(m.group(1))
        first = text.count("\n", 0, m.start())
        last = text.count("\n", 0, headers[k + 1].start()) if k + 1 < len(headers) else len(lines)
        body = range(first, last)
        child_port = {}
        for i in body:
            inst = _INSTANCE.match(lines[i])
            if inst and _name(inst.group(1)) in ports:
                child = _name(inst.group(1))
                for p in sorted(ports[child]):
                    child_port.setdefault(p, child)
        if not child_port:
            continue
        for i in body:
            decl = _WIRE.match(lines[i])
            if not decl:
                continue
            wire = _name(decl.group(1))
            base = re.sub(r"\$\d+$", "", wire)
            if wire not in ports[module] and base in child_port:
                out.append(PortAlias(module, i + 1, wire, child_port[base], base))
    return out


_COPY = re.compile(rf"^\s*assign\s+{_IDENT}\s*=\s*({_IDENT}\s*(?:\[\d+(?::\d+)?\])?|\d+'[bodh][0-9a-fA-F_]+)\s*;\s*$")
_ASSIGN_TARGET = re.compile(rf"^\s*assign\s+{_IDENT}\s*(?:\[[^\]]*\])?\s*=")


def copy_aliases(text: str, *, exclude=()) -> list[PortAlias]:
    """Every copy-alias wire (module docstring) of an Amaranth Verilog file, in file order; ``exclude``: aliases
    already found as submodule port aliases. ``child`` and ``port`` name the copied net (``child`` empty)."""
    headers = list(_MODULE.finditer(text))
    lines = text.splitlines()
    done = {(a.module, a.wire) for a in exclude}
    out = []
    for k, m in enumerate(headers):
        module = _name(m.group(1))
        ports = {p.strip().lstrip("\\") for p in m.group(2).split(",") if p.strip()}
        first = text.count("\n", 0, m.start())
        last = text.count("\n", 0, headers[k + 1].start()) if k + 1 < len(headers) else len(lines)
        declared, drivers, copies = {}, {}, {}
        for i in range(first, last):
            decl = _WIRE.match(lines[i])
            if decl:
                declared[_name(decl.group(1))] = i + 1
                continue
            target = _ASSIGN_TARGET.match(lines[i])
            if target:
                name = _name(target.group(1))
                drivers[name] = drivers.get(name, 0) + 1
                copy = _COPY.match(lines[i])
                if copy:
                    copies[name] = copy.group(2) if "'" in copy.group(2) else _name(copy.group(2))
        for wire, line in sorted(declared.items(), key=lambda kv: kv[1]):
            if wire in ports or (module, wire) in done or drivers.get(wire) != 1 or wire not in copies:
                continue
            if "." in wire or wire.endswith("]") or wire.startswith("$"):
                continue          # struct-field views and internal nets: the generic rules already cover them
            out.append(PortAlias(module, line, wire, "", copies[wire]))
    return out


def waiver_text(verilog_text: str, verilog_name: str) -> str:
    """The shipped waiver file for the Verilog ``verilog_text`` written as ``verilog_name``."""
    parts = [GENERIC_WAIVERS.read_text().rstrip("\n")]
    aliases = submodule_port_aliases(verilog_text)
    if aliases:
        parts.append(f"// 9. Submodule port aliases of {verilog_name}: one wire per port of each submodule, declared "
                     "in the parent for\n//    waveform viewing (docs/lint.md). One waiver per wire, on its "
                     "declaration line.")
        for a in aliases:
            parts.append(f'lint_off -rule UNUSEDSIGNAL -file "*{verilog_name}" -lines {a.line}'
                         f"  // {a.module}: {a.wire} = {a.child}.{a.port}")
    copies = copy_aliases(verilog_text, exclude=aliases)
    if copies:
        parts.append(f"// 10. Copy aliases of {verilog_name}: wires whose only driver is a plain copy of one net (re-exported "
                     "interfaces,\n//    memory-port signals; docs/lint.md). One waiver per wire, on its declaration line.")
        for a in copies:
            parts.append(f'lint_off -rule UNUSEDSIGNAL -file "*{verilog_name}" -lines {a.line}'
                         f"  // {a.module}: {a.wire} = {a.port}")
    parts.append(f"// 11. {verilog_name} has no delays and no `timescale (Amaranth writes none): it runs in the timescale "
                 "of the flow.\n//     A testbench that declares one (tb_*.v of the package, or yours) would flag "
                 f"each of its modules.\nlint_off -rule TIMESCALEMOD -file \"*{verilog_name}\"")
    return "\n".join(parts) + "\n"
