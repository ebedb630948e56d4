"""Sub-blocks of a composite component, measured alone by hierarchical synthesis and emitted once as Verilog modules.

A composite (DPE, VPE, LXE, DRE, core) builds its sub-blocks through :func:`part`, in one of three ways:

- normally, the sub-block is instantiated (added as an Amaranth submodule): the flat design;
- with ``external=True`` the composite becomes its own *glue*: every sub-block is replaced by a port of the glue with
  the sub-block's signature flipped (``In(sub.signature)``), so the glue is a self-contained design (the composite's
  logic without the sub-blocks) that Yosys and OpenSTA can measure; the figures flow adds ``count x`` the sub-block's
  own figures (docs/figures.md "Hierarchical figures");
- after :func:`instantiate_parts`, every sub-block is an ``Instance`` of a Verilog module emitted on its own
  (:mod:`vrex.synth.instances`): the composite's own logic keeps its names and its ports, and 64 identical MAC
  trees are one module instantiated 64 times (docs/decisions.md "Hierarchical Verilog").

A composite lists its sub-blocks with a ``hierarchy_parts()`` method: ``{name: Part or Built}``.
"""

from dataclasses import dataclass

from amaranth.hdl import ClockSignal, Instance, ResetSignal, ValueCastable
from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["Part", "Built", "PartModule", "part_members", "part", "hierarchy_parts", "instantiate_parts",
           "instance_ports"]


class Part:
    """A sub-block to build: its component class, constructor arguments and signature (known without building it,
    so a glue never creates components it does not use). Two parts of the same class and arguments are the same
    design (:attr:`key`)."""

    def __init__(self, cls, **args):
        self.cls, self.args = cls, args

    @property
    def signature(self):
        return self.cls.make_signature(**self.args)

    @property
    def key(self) -> tuple:
        return f"{self.cls.__module__}.{self.cls.__qualname__}", repr(sorted(self.args.items()))

    @property
    def kind(self) -> str:
        return self.cls.__name__

    def build(self):
        return self.cls(**self.args)


class Built:
    """A sub-block the composite built itself (its constructor reads more of the block than its signature: the core's
    LXE and DRE, the DRE's HCU, WTU and KVMU). Its :attr:`key` is the object itself, so it is never taken for
    another part."""

    def __init__(self, component):
        self.component = component

    @property
    def signature(self):
        return self.component.signature

    @property
    def key(self) -> tuple:
        return "built", id(self.component)

    @property
    def kind(self) -> str:
        return type(self.component).__name__

    def build(self):
        return self.component


@dataclass(frozen=True)
class PartModule:
    """A part emitted as a Verilog module of its own: the module's name and its ports (``clk`` / ``rst`` only when
    the module has them: a part without synchronous logic has neither)."""

    name: str
    ports: frozenset


def part_members(parts: dict, external: bool) -> dict:
    """Extra signature members of a glue: ``{port name: In(sub signature)}`` for each named :class:`Part`."""
    return {name: In(p.signature) for name, p in parts.items()} if external else {}


def hierarchy_parts(component) -> dict:
    """``{name: Part or Built}`` of a composite (none for a leaf or a glue, whose parts are ports)."""
    if getattr(component, "external", False) or not hasattr(component, "hierarchy_parts"):
        return {}
    return component.hierarchy_parts()


def instantiate_parts(component, modules: dict) -> None:
    """Make ``component`` instantiate its parts as the Verilog modules ``modules`` (``{name: PartModule}``, every
    part of :func:`hierarchy_parts`) when it is elaborated, instead of building them."""
    missing = set(hierarchy_parts(component)) ^ set(modules)
    if missing:
        raise ValueError(f"parts {sorted(missing)} of {type(component).__name__} are not those it has")
    component._part_modules = dict(modules)


def instance_ports(signature, iface) -> dict:
    """``{i_<port> / o_<port>: value}`` of an ``Instance`` of a module whose top has ``signature``, connected to
    ``iface``: the ports are named and directed as Amaranth's converter names a top's (the flattened path joined
    with ``__``, ``In`` an input)."""
    ports = {}
    for path, member, value in signature.flatten(iface):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        ports[("i_" if member.flow == In else "o_") + "__".join(map(str, path))] = value
    return ports


def _instance(m, name, spec, module: PartModule):
    iface = spec.signature.create(path=(name,))
    ports = instance_ports(spec.signature, iface)
    for port, value in (("clk", ClockSignal()), ("rst", ResetSignal())):
        if port in module.ports:
            ports[f"i_{port}"] = value
    if {p[2:] for p in ports} != module.ports:
        raise ValueError(f"part {name}: the ports of module {module.name} ({sorted(module.ports)}) are not those of "
                         f"its signature ({sorted(p[2:] for p in ports)})")
    m.submodules[name] = Instance(module.name, **ports)
    return iface


def part(m, component, name, spec, external: bool):
    """The interface to connect to: the sub-block itself (built and added as a submodule), the glue's port, or an
    interface wired to an instance of the part's module (:func:`instantiate_parts`)."""
    if external:
        return wiring.flipped(getattr(component, name))
    module = (getattr(component, "_part_modules", None) or {}).get(name)
    if module is not None:
        return _instance(m, name, spec, module)
    sub = m.submodules[name] = spec.build()
    return sub
