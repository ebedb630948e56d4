"""Verilog emission: component + config -> ``<top>.v``, a file list, the config snapshot and the IP package.

Output folders are keyed by component and config hash (``build/rtl/<component>-<hash>/``, a composite's flat
Verilog in ``<component>-<hash>-flat/``), so an unchanged config reuses its Verilog. Each folder holds:

- ``<top>.v``      the generated Verilog (Amaranth backend, no source attributes); a composite's is hierarchical by
  default: one module per distinct part, instantiated by name (:mod:`vrex.synth.instances`), all in this one file;
- ``files.f``      the file list for simulators and synthesis tools;
- ``config.yaml``  the full resolved config that produced it;
- ``manifest.json`` component, top, config name and hash, vrex and Amaranth versions, hashes of the ``vrex.hdl``
  sources and of the package generators (so an edited component is regenerated, never served stale), whether the
  Verilog is hierarchical and, if so, its modules (instances in the design, seconds to convert each);
- the IP package (:mod:`vrex.synth.package`, docs/ip.md): ``<top>.sdc``, ``<top>.vlt`` (Verilator waivers),
  ``<top>.core`` (FuseSoC), ``<top>.interface.json`` / ``.md`` and ``tb_<top>.v`` (smoke testbench).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Const, Value, ValueCastable
from amaranth.lib import wiring

from vrex import __version__
from vrex.errors import UsageError
from vrex.paths import build_dir
from vrex.hdl.registry import get_component, parts_of
from vrex.tools import python_packages

from .stopwatch import lap
from .package import check_folder, package_files, package_source_hash, write_atomic, write_package

__all__ = ["Emitted", "emit", "is_composite", "hdl_source_hash", "flow_source_hash", "top_input_bits",
           "check_top_width", "TOP_INPUT_BITS_LIMIT"]

# Amaranth's netlist numbers the bits of the top's inputs (clock and reset included) in 16 bits
# (``_nir.Net.from_cell(0, bit)``): a top with more input bits cannot be converted at all.
TOP_INPUT_BITS_LIMIT = 1 << 16


@dataclass(frozen=True)
class Emitted:
    component: str
    top: str
    directory: Path
    verilog: Path
    filelist: Path
    hierarchical: bool = False   # one module per distinct part (a composite unless emitted flat)

    def file(self, role: str) -> Path:
        """A file of the package by role (:func:`vrex.synth.package.package_files`)."""
        return self.directory / package_files(self.top)[role]

    @property
    def waivers(self) -> Path:
        return self.file("waivers")

    @property
    def core(self) -> Path:
        return self.file("core")


def _package_hash(package, patterns=("*.py",), exclude=()) -> str:
    h = hashlib.sha256()
    for folder in package.__path__:
        for pattern in patterns:
            for path in sorted(Path(folder).rglob(pattern)):
                if path.relative_to(folder).as_posix() in exclude:
                    continue
                h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def hdl_source_hash() -> str:
    """Hash of every source file of the vrex.hdl package (the generator of all emitted Verilog)."""
    import vrex.hdl

    return _package_hash(vrex.hdl)


@functools.cache
def bench_source_hash() -> str:
    """Hash of the vrex.sim and vrex.golden sources (the golden vectors of the package's testbench)."""
    import vrex.golden
    import vrex.sim

    return _package_hash(vrex.sim) + _package_hash(vrex.golden)


# Modules of vrex.synth that only render or drive figures (the report's text and plots, the CLI, the run's
# stopwatch): no record depends on them, so editing them keeps the figures cache (a warm rerun stays warm).
RENDER_ONLY = ("report.py", "html.py", "plots.py", "text.py", "paper.py", "core_section.py", "cli.py", "sweep.py",
               "stopwatch.py")


@functools.cache
def flow_source_hash() -> str:
    """Hash of the flows that turn Verilog into figures (vrex.synth but :data:`RENDER_ONLY`, and the vrex.sim
    benches that drive the activity runs): part of every figures cache key, so a changed script never serves a stale
    record."""
    import vrex.sim
    import vrex.synth

    return _package_hash(vrex.synth, ("*.py", "*.vlt"), RENDER_ONLY) + _package_hash(vrex.sim)


def top_input_bits(dut) -> dict[str, int]:
    """Width of every top-level input port of ``dut`` (``stream__payload`` ...: the names of the Verilog), from its
    signature; the clock and reset that Amaranth adds are not in it."""
    widths = {}
    for path, member, value in dut.signature.flatten(dut):
        value = value.as_value() if isinstance(value, ValueCastable) else value
        if member.flow == wiring.In and isinstance(value, Value) and not isinstance(value, Const):
            widths["__".join(map(str, path))] = len(value)
    return widths


def check_top_width(component: str, dut, cfg) -> None:
    """Raise :class:`~vrex.errors.UsageError` (one sentence) when the top of ``dut`` has more input bits than
    Amaranth can convert (:data:`TOP_INPUT_BITS_LIMIT`, clock and reset counted): the DPE's input stream is
    ``dpe_load_trees × dpe_inputs × 16`` bits wide, so a very wide load port does not fit (docs/decisions.md,
    "Weight-stationary DPE")."""
    widths = top_input_bits(dut)
    total = sum(widths.values()) + 2
    if total <= TOP_INPUT_BITS_LIMIT:
        return
    _discard(dut)
    widest = max(widths, key=widths.get)
    lxe = cfg.lxe
    raise UsageError(
        f"component {component} (config {cfg.name}, hash {cfg.hash()}) has {total} top-level input bits (clock and "
        f"reset included; the widest port is {widest}, {widths[widest]} bits), more than the {TOP_INPUT_BITS_LIMIT} "
        f"an Amaranth netlist can hold, so it cannot be emitted as one flat Verilog top (nor measured by the "
        f"hierarchical figures flow, whose glue takes the same streams): emit its MAC trees alone "
        f"(--component mac_tree), or use a config with a smaller lxe.dpe_load_trees (a load beat is "
        f"{lxe.dpe_load_trees} trees × lxe.dpe_inputs = {lxe.dpe_inputs} × 16 bits).")


def _convert(component: str, dut, top: str, cfg) -> str:
    """``amaranth.back.verilog.convert``; a value wider than Amaranth's netlist holds *inside* the design (its top
    fits: the DPE's input stream inside the core, with a very wide load port) fails Amaranth's own assertion,
    turned here into the same one-sentence error as :func:`check_top_width`."""
    import traceback

    try:
        return verilog.convert(dut, name=top, emit_src=False)
    except AssertionError as e:
        frames = traceback.extract_tb(e.__traceback__)
        if not frames or not frames[-1].filename.replace("\\", "/").endswith("amaranth/hdl/_nir.py"):
            raise
    _too_wide_inside(component, cfg)


def _dpe_input_bits(cfg) -> int:
    """Bits of one beat of the DPE's input stream (a load beat is the widest: lxe.dpe_load_trees words)."""
    from vrex.hdl.lxe.dpe import dpe_input_layout

    x = cfg.lxe
    return dpe_input_layout(x.dpe_trees, x.dpe_inputs, x.dpe_weight_words, x.dpe_load_trees).size


def _holds_lxe(component: str, cfg) -> bool:
    """Whether ``component`` contains the LXE among its (transitive) hierarchical parts, so its DPE's input stream
    is an internal value whatever its own ports are."""
    parts = parts_of(get_component(component), cfg)
    return bool(parts) and any(p == "lxe" or _holds_lxe(p, cfg) for p in parts)


def _too_wide_inside(component: str, cfg):
    lxe = cfg.lxe
    raise UsageError(
        f"component {component} (config {cfg.name}, hash {cfg.hash()}) has {_dpe_input_bits(cfg)} bits in one value "
        f"inside (the DPE's input stream, whose load beats are lxe.dpe_load_trees = {lxe.dpe_load_trees} trees × "
        f"lxe.dpe_inputs = {lxe.dpe_inputs} × 16 bits wide), more than the {TOP_INPUT_BITS_LIMIT} an Amaranth "
        f"netlist can hold, so it cannot be emitted as Verilog: emit its MAC trees alone (--component mac_tree), or "
        f"use a config with a smaller lxe.dpe_load_trees.") from None


def _discard(design) -> None:
    """Mark a design that will not be converted, and the blocks its constructor built, as deliberately unused, so
    that dropping it prints no ``UnusedElaboratable`` warning beside the error."""
    from vrex.hdl.unused import silence_unused

    silence_unused(design)


def is_composite(component: str) -> bool:
    """Whether ``component`` is built of parts (the registry's composites: DPE, VPE, LXE, DRE, core), so that its
    Verilog can be hierarchical."""
    return get_component(component).parts is not None


def emit(component: str, cfg, out_dir: str | os.PathLike | None = None, *, force: bool = False,
         flat: bool = False) -> Emitted:
    """Write the Verilog and the IP package of ``component`` built from ``cfg``; reuse an up-to-date folder unless
    ``force``. A composite's Verilog is hierarchical (:mod:`vrex.synth.instances`) unless ``flat``: every part
    instance elaborated and emitted again, Amaranth's own output, in ``<component>-<hash>-flat/`` by default. An
    ``out_dir`` that holds something else raises :class:`~vrex.errors.UsageError` before anything is written
    (:func:`vrex.synth.package.check_folder`), and so does a top too wide for Amaranth (:func:`check_top_width`)."""
    spec = get_component(component)
    hierarchical = is_composite(component) and not flat
    suffix = "-flat" if flat and is_composite(component) else ""
    d = Path(out_dir) if out_dir is not None else build_dir("rtl", f"{component}-{cfg.hash()}{suffix}")
    files = package_files(spec.top)
    e = Emitted(component, spec.top, d, d / files["verilog"], d / files["filelist"], hierarchical)
    manifest = d / files["manifest"]
    meta = {"component": component, "top": spec.top, "config": cfg.name, "config_hash": cfg.hash(),
            "vrex": __version__, "amaranth": python_packages().get("amaranth"), "hdl_sources": hdl_source_hash(),
            "package": package_source_hash(), "benches": bench_source_hash(), "hierarchical": hierarchical}
    if out_dir is not None:   # the build folder is named by component and hash: nothing else can be in it
        check_folder(d, component, spec.top, cfg)
    if not force and manifest.is_file() and all((d / name).is_file() for name in files.values()):
        try:
            old = json.loads(manifest.read_text())
            if isinstance(old, dict) and {k: old.get(k) for k in meta} == meta:
                return e
        except json.JSONDecodeError:
            pass
    if _holds_lxe(component, cfg) and _dpe_input_bits(cfg) > TOP_INPUT_BITS_LIMIT:
        _too_wide_inside(component, cfg)   # found before a minutes-long elaboration of the edge core
    with lap("verilog"):
        dut = spec.build(cfg)
        check_top_width(component, dut, cfg)   # before anything is written
        convert = functools.partial(_convert, component, cfg=cfg)
        if hierarchical:
            from .instances import hierarchical_verilog

            h = hierarchical_verilog(dut, spec.top, convert)
            text, meta = h.text, {**meta, "modules": h.summary()}
        else:
            text = convert(dut, spec.top)
        d.mkdir(parents=True, exist_ok=True)
        write_atomic(e.verilog, text)
        write_atomic(e.filelist, f"{e.verilog.name}\n")
        write_atomic(d / files["config"], cfg.dump_yaml())
        write_package(d, component, spec, dut, text, cfg)
        write_atomic(manifest, json.dumps(meta, indent=2) + "\n")
    return e
