"""Hierarchical Verilog of a composite: each distinct part emitted once, as a module of its own, and instantiated by
name (docs/decisions.md "Hierarchical Verilog").

The flat emission elaborates, transforms and emits every part instance again: the edge core's 64 MAC trees and 64
VPE lanes took most of its half hour (docs/results-figures.md). Here a composite (``hierarchy_parts()``,
hdl/lxe/parts.py) is converted with every part an ``Instance`` of the part's module; the part is converted first,
the same way (its own parts instances in turn), once per distinct part: two parts are the same design when their
:attr:`~vrex.hdl.lxe.parts.Part.key` is (class and constructor arguments; a sub-block the composite built itself is
its own key). A leaf is converted whole, as in the flat emission.

What stays as in the flat Verilog: the top's module name and ports, the composite's own logic with its names, the
instance name of every part (``tree3``, ``dre``, ``hcu``), so an instance path (``lxe.dpe.tree3``) names the same
logic in both. What changes: a part's module is ``<top>__<part>`` (``vrex_core__mac_tree``; a second variant of a
part gets the first 8 hex digits of its key's hash appended, a second sub-block of one class that the composite built
itself its number, ``_2``) where the flat file has one module per instance
(``\\vrex_core.lxe.dpe.tree3``), and each module's own submodules are named after it (``\\vrex_core__mac_tree.acc``).
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from vrex.hdl.lxe.parts import PartModule, hierarchy_parts, instantiate_parts

from .waivers import module_headers

__all__ = ["EmittedModule", "Hierarchy", "hierarchical_verilog", "module_ports", "module_names"]


def module_names(text: str) -> list[str]:
    """The modules a Verilog file defines, in order (escaped names without their backslash)."""
    return list(module_headers(text))


def module_ports(text: str, module: str) -> frozenset:
    """The port names of ``module`` in ``text`` (Amaranth's Verilog: a plain port list in the header)."""
    ports = module_headers(text).get(module)
    if ports is None:
        raise ValueError(f"module {module} not found in its own Verilog")
    return ports


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@dataclass
class EmittedModule:
    """One module of a hierarchical emission."""

    name: str                  # Verilog module name
    kind: str                  # the part's class (the top's for the top)
    key: tuple | None          # the part's key (None for the top)
    text: str
    seconds: float             # elaboration and conversion of this module alone (its parts not counted)
    parts: dict = field(default_factory=dict)   # instance name -> module name
    instances: int = 0         # instances in the whole design (1 for the top)

    @property
    def modules(self) -> list[str]:
        """Every module this file defines (the part's own, then Amaranth's submodules ``<name>.<path>``)."""
        return module_names(self.text)


@dataclass
class Hierarchy:
    """The modules of a hierarchical emission, parts before the modules that instantiate them, the top last."""

    top: str
    modules: list[EmittedModule]

    @property
    def text(self) -> str:
        """One Verilog file: the top first, then every module after the modules that instantiate it (Amaranth's own
        order: a file's first module is its top, whose name is the file's, as Verilator's DECLFILENAME wants)."""
        return "".join(m.text for m in reversed(self.modules))

    def summary(self) -> list[dict]:
        """One row per module: name, kind, instances in the design, seconds, parts."""
        return [{"module": m.name, "kind": m.kind, "instances": m.instances, "seconds": round(m.seconds, 2),
                 "parts": dict(m.parts)} for m in self.modules]


def hierarchical_verilog(dut, top: str, convert: Callable[[object, str], str]) -> Hierarchy:
    """Convert ``dut`` as module ``top`` with every distinct part emitted once (the module docstring);
    ``convert(design, name)`` is the one-module converter (``amaranth.back.verilog.convert`` with the project's
    error handling). Raises ``ValueError`` when two files define the same module."""
    by_key: dict[tuple, EmittedModule] = {}
    names: dict[str, tuple | None] = {top: None}
    order: list[EmittedModule] = []

    def module_name(spec) -> str:
        base = f"{top}__{_snake(spec.kind)}"
        if base in names and spec.key[0] == "built":   # keyed by object: numbered in order, so the file is reproducible
            base += f"_{sum(n == base or n.startswith(base + '_') for n in names) + 1}"
        elif base in names:
            base += "_" + hashlib.sha256(repr(spec.key).encode()).hexdigest()[:8]
        names[base] = spec.key
        return base

    def emit(design, name: str, kind: str, key) -> EmittedModule:
        parts = hierarchy_parts(design)
        instances = {}
        for inst, spec in parts.items():
            if spec.key not in by_key:
                by_key[spec.key] = emit(spec.build(), module_name(spec), spec.kind, spec.key)
            instances[inst] = by_key[spec.key]
        if parts:
            instantiate_parts(design, {inst: PartModule(m.name, module_ports(m.text, m.name))
                                       for inst, m in instances.items()})
        start = time.perf_counter()
        text = convert(design, name)
        emitted = EmittedModule(name, kind, key, text, time.perf_counter() - start,
                                {inst: m.name for inst, m in instances.items()})
        order.append(emitted)
        return emitted

    root = emit(dut, top, type(dut).__name__, None)
    _count_instances(root, {m.name: m for m in order})
    seen: dict[str, str] = {}
    for m in order:
        for defined in m.modules:
            if defined in seen:
                raise ValueError(f"module {defined} is defined by both {seen[defined]} and {m.name}")
            seen[defined] = m.name
    return Hierarchy(top, order)


def _count_instances(root: EmittedModule, by_name: dict) -> None:
    """Instances of every module in the design: in reversed emission order a module comes after every module that
    instantiates it (parts are emitted before their parents)."""
    for m in by_name.values():
        m.instances = 0
    root.instances = 1
    for m in reversed(list(by_name.values())):
        for child in m.parts.values():
            by_name[child].instances += m.instances


# ---- equivalence with the flat Verilog (tests, docs/decisions.md "Hierarchical Verilog") -------------------------

_ANONYMOUS = re.compile(r"\\\$signal(?:\$(\d+))? ")
_MODULE_BODY = re.compile(r"^module (\S+)\s*\(.*?^endmodule\n", re.M | re.S)


def canonical_anonymous_names(text: str) -> str:
    """``text`` with the registers Amaranth names ``$signal$N`` (signals created without a name) renamed
    ``vrex_anon<k>``, k the rank of N in their module: Amaranth numbers them across the whole file, so the same
    register of a part is ``$signal$122`` in the flat file and ``$signal$123`` in the hierarchical one, and an
    equivalence check that pairs registers by name (``equiv_make``) must see one name for both."""
    out = []
    for m in _MODULE_BODY.finditer(text):
        body = m.group(0)
        rank = {n: k for k, n in enumerate(sorted({int(g or -1) for g in _ANONYMOUS.findall(body)}))}
        out.append(_ANONYMOUS.sub(lambda g: f"\\vrex_anon{rank[int(g.group(1) or -1)]} ", body))
    return "".join(out)


def _read_flat(name: str, top: str, as_: str) -> str:
    return (f"read_verilog -sv {name}\nhierarchy -check -top {top}\nproc -norom\nmemory -nomap\nflatten\n"
            f"delete t:$scopeinfo\nselect -set keep i:* o:* t:$*dff* %co:+[Q] w:* %i\nrename -hide w:* @keep %d\n"
            f"opt_clean\nrename {top} {as_}\ndesign -stash {as_}\n")


def equivalence_script(gold: str, gate: str, top: str) -> str:
    """Yosys script proving that the designs of files ``gold`` and ``gate`` (top ``top``) are equivalent: both
    flattened, the top's ports, the registers and the memories paired by their hierarchical names (``equiv_make``;
    every other wire is hidden first: the flat file names a part's port aliases in its parent after the port, and
    takes another name for a port of the parent itself when they clash, so ``dpe.o__ready`` is a tree's port there and
    the DPE's own here), each pair proven from the pairs it depends on (``equiv_simple``), what is left by induction
    over all pairs (``equiv_induct``); the status goes to ``equiv_status.txt``. A pair that is not equivalent, or two
    signals paired that are not the same, is left unproven: never a false proof."""
    return (_read_flat(gold, top, "gold") + _read_flat(gate, top, "gate")
            + "design -copy-from gold -as gold gold\ndesign -copy-from gate -as gate gate\n"
            "equiv_make gold gate equiv\nhierarchy -top equiv\nasync2sync\nequiv_simple\nequiv_induct\n"
            "tee -q -o equiv_status.txt equiv_status\n")


@dataclass(frozen=True)
class Equivalence:
    proven: bool
    unproven: tuple[str, ...]    # the pairs left unproven (gold and gate signal names)
    log: object                  # the Yosys log (Path)


def prove_equivalent(gold_verilog, gate_verilog, top: str, work) -> Equivalence:
    """Run :func:`equivalence_script` on two Verilog files (their anonymous registers renamed alike,
    :func:`canonical_anonymous_names`) in folder ``work``."""
    from pathlib import Path

    from .yosys import run_yosys

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    for name, src in (("gold.v", gold_verilog), ("gate.v", gate_verilog)):
        (work / name).write_text(canonical_anonymous_names(Path(src).read_text()))
    log = run_yosys(equivalence_script("gold.v", "gate.v", top), work, "equivalence")
    status = (work / "equiv_status.txt").read_text()
    unproven = tuple(re.findall(r"Unproven \$equiv \S+ (\S+ \S+)", status))
    return Equivalence("Equivalence successfully proven!" in status and not unproven, unproven, log)
