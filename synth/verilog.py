"""Verilog emission: component + config -> ``<top>.v``, a file list and the config snapshot.

Output folders are keyed by component and config hash (``build/rtl/<component>-<hash>/``), so an unchanged
config reuses its Verilog. Each folder holds:

- ``<top>.v``      the generated Verilog (Amaranth backend, no source attributes);
- ``files.f``      the file list for simulators and synthesis tools;
- ``config.yaml``  the full resolved config that produced it;
- ``manifest.json`` component, top, config name and hash, vrex and Amaranth versions, and a hash of the
  ``vrex.hdl`` sources (so an edited component is regenerated, never served stale).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import verilog

from vrex import __version__
from vrex.paths import build_dir
from vrex.hdl.registry import get_component
from vrex.tools import python_packages

__all__ = ["Emitted", "emit", "hdl_source_hash", "flow_source_hash"]


@dataclass(frozen=True)
class Emitted:
    component: str
    top: str
    directory: Path
    verilog: Path
    filelist: Path


def _package_hash(package, patterns=("*.py",)) -> str:
    h = hashlib.sha256()
    for folder in package.__path__:
        for pattern in patterns:
            for path in sorted(Path(folder).rglob(pattern)):
                h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def hdl_source_hash() -> str:
    """Hash of every source file of the vrex.hdl package (the generator of all emitted Verilog)."""
    import vrex.hdl

    return _package_hash(vrex.hdl)


@functools.cache
def flow_source_hash() -> str:
    """Hash of the flows that turn Verilog into figures (vrex.synth, and the vrex.sim benches that drive the
    activity runs): part of every figures cache key, so a changed script never serves a stale record."""
    import vrex.sim
    import vrex.synth

    return _package_hash(vrex.synth, ("*.py", "*.vlt")) + _package_hash(vrex.sim)


def emit(component: str, cfg, out_dir: str | os.PathLike | None = None, *, force: bool = False) -> Emitted:
    """Write the Verilog of ``component`` built from ``cfg``; reuse an up-to-date folder unless ``force``."""
    spec = get_component(component)
    d = Path(out_dir) if out_dir is not None else build_dir("rtl", f"{component}-{cfg.hash()}")
    d.mkdir(parents=True, exist_ok=True)
    vfile, flist, manifest = d / f"{spec.top}.v", d / "files.f", d / "manifest.json"
    meta = {"component": component, "top": spec.top, "config": cfg.name, "config_hash": cfg.hash(),
            "vrex": __version__, "amaranth": python_packages().get("amaranth"), "hdl_sources": hdl_source_hash()}
    if not force and vfile.is_file() and manifest.is_file():
        try:
            if json.loads(manifest.read_text()) == meta:
                return Emitted(component, spec.top, d, vfile, flist)
        except json.JSONDecodeError:
            pass
    text = verilog.convert(spec.build(cfg), name=spec.top, emit_src=False)
    _write_atomic(vfile, text)
    _write_atomic(flist, f"{vfile.name}\n")
    _write_atomic(d / "config.yaml", cfg.dump_yaml())
    _write_atomic(manifest, json.dumps(meta, indent=2) + "\n")
    return Emitted(component, spec.top, d, vfile, flist)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
