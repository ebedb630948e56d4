"""SRAM macro model: area, access energy and timing of a ``words x bits`` memory from the ASAP7 SRAM liberties.

The ASAP7 SRAM kit (``<Liberty folder>/asap7_sram/srambank_<a>x<b>x<bits>_6t122.lib.gz``; 0.7 V, 7 nm) gives a
few bank sizes (``a x b`` words of ``bits``). For a memory of any other shape vrex fits, over those banks,

    y = c0 + c1 * words * bits + c2 * bits + c3 * words

by least squares for each of: area (µm²), read energy and write energy per access (pJ, the ``clk`` pin's
``internal_power`` under ``!write`` / ``write``, VDD side, rise + fall), clock-to-data access time and input
setup time (ns, mean of the tables), and the input pin capacitances (pF: the clock pin, and the mean of the other
inputs: address, write data, the ``read`` / ``write`` enables). ``c1`` is the bit-cell array, ``c2`` the
per-column periphery (sense amplifiers, write drivers), ``c3`` the per-row decoder and word-line drivers, ``c0``
the fixed control. The area is clamped to at least the densest bank's area per bit, so no shape gets a smaller
area than the bit cells need. The kit's access energies do not depend on the bank size (1.82 pJ per read and
0.19 pJ per write at 0.7 V in all seven banks), so the energy fit is that constant; this is the library's
statement, not a physical law, and the record says which model was used. Its pins do not depend on it either:
0.32 fF on every address, data and enable pin (one ``write`` pin per bank, no per-bit enables) and 5.7 fF on the
clock. The libraries give no leakage (``cell_leakage_power : 0``), so macro leakage is 0 and reported as such.

Without the folder, the stored coefficients (the same fit, computed once from the seven ASAP7 banks and stored here)
is used and the record says so. Multi-port memories are modelled as one bank per read port (replication), which
is how a single-port SRAM compiler would serve them.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SramMacro", "SramModel", "read_asap7_macros", "sram_model", "ANALYTIC_SOURCE", "parse_groups"]


@dataclass(frozen=True)
class SramMacro:
    name: str
    words: int
    bits: int
    area_um2: float
    read_pj: float
    write_pj: float
    access_ns: float
    setup_ns: float
    input_pf: float = 0.0       # mean capacitance of an input pin other than the clock (address, data, enables)
    clock_pf: float = 0.0       # the clock pin's capacitance


def parse_groups(text: str):
    """A small Liberty parser: ``(name, args, attributes, children)`` for every group (for small files)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S).replace("\\\n", " ")
    tokens = re.findall(r'"[^"]*"|[{}();:,]|[^\s{}();:,"]+', text)
    pos = 0

    def group(name, args):
        nonlocal pos
        attrs, children = {}, []
        while pos < len(tokens):
            t = tokens[pos]
            if t == "}":
                pos += 1
                return (name, args, attrs, children)
            key = t
            pos += 1
            if pos < len(tokens) and tokens[pos] == ":":
                val = tokens[pos + 1].strip('"')
                pos += 2
                if pos < len(tokens) and tokens[pos] == ";":
                    pos += 1
                attrs[key] = val
            elif pos < len(tokens) and tokens[pos] == "(":
                pos += 1
                a = []
                while tokens[pos] != ")":
                    if tokens[pos] != ",":
                        a.append(tokens[pos].strip('"'))
                    pos += 1
                pos += 1
                if pos < len(tokens) and tokens[pos] == "{":
                    pos += 1
                    children.append(group(key, a))
                else:
                    if pos < len(tokens) and tokens[pos] == ";":
                        pos += 1
                    attrs.setdefault(key, a)
        return (name, args, attrs, children)

    return group("<root>", [])


def _walk(g):
    yield g
    for c in g[3]:
        yield from _walk(c)


def _values(g) -> list[float]:
    vals = g[2].get("values", [])
    return [float(x) for v in (vals if isinstance(vals, list) else [vals]) for x in v.split(",") if x.strip()]


def _mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def read_asap7_macros(folder: Path) -> list[SramMacro]:
    """Every ``srambank_*.lib(.gz)`` of ``folder``; words and bits from the name ``<a>x<b>x<bits>``."""
    out = []
    for f in sorted(Path(folder).glob("srambank_*.lib*")):
        m = re.match(r"srambank_(\d+)x(\d+)x(\d+)_", f.name)
        if not m:
            continue
        text = gzip.open(f, "rt").read() if f.name.endswith(".gz") else f.read_text()
        root = parse_groups(text)
        cell = next(g for g in _walk(root) if g[0] == "cell")
        read = write = 0.0
        access, setup, caps, clock = [], [], [], []
        for pin in (g for g in _walk(cell) if g[0] == "pin" and "capacitance" in g[2]):
            (clock if pin[1] == ["clk"] else caps).append(float(pin[2]["capacitance"]))
        for pin in (g for g in _walk(cell) if g[0] in ("pin", "bus")):
            for ip in (c for c in pin[3] if c[0] == "internal_power"):
                if pin[0] == "pin" and pin[1] == ["clk"] and ip[2].get("related_pg_pin") == "VDD":
                    energy = sum(_mean(_values(c)) for c in ip[3] if c[0] in ("rise_power", "fall_power"))
                    when = ip[2].get("when", "")
                    if when == "!write":
                        read += energy
                    elif when == "write":
                        write += energy
            for t in (c for c in pin[3] if c[0] == "timing"):
                tt = t[2].get("timing_type")
                if tt == "rising_edge":
                    access += [_mean(_values(c)) for c in t[3] if c[0] in ("cell_rise", "cell_fall")]
                elif tt == "setup_rising":
                    setup += [_mean(_values(c)) for c in t[3] if c[0] in ("rise_constraint", "fall_constraint")]
        out.append(SramMacro(cell[1][0], int(m.group(1)) * int(m.group(2)), int(m.group(3)),
                             float(cell[2]["area"]), read, write, _mean(access), _mean(setup), _mean(caps),
                             _mean(clock)))
    return out


_FIELDS = ("area_um2", "read_pj", "write_pj", "access_ns", "setup_ns", "input_pf", "clock_pf")


@dataclass(frozen=True)
class SramModel:
    """Linear fits ``c0 + c1*W*B + c2*B + c3*W`` per quantity, at ``node_nm`` / ``voltage``."""

    coefficients: dict            # field -> (c0, c1, c2, c3)
    floor_per_bit: dict           # field -> minimum per bit (area: the densest bank)
    source: str
    node_nm: float = 7.0
    voltage: float = 0.7
    banks: tuple = ()

    @classmethod
    def fit(cls, macros: list[SramMacro], source: str) -> "SramModel":
        import numpy as np

        x = np.array([[1.0, m.words * m.bits, m.bits, m.words] for m in macros])
        coeffs, floor = {}, {}
        for f in _FIELDS:
            y = np.array([getattr(m, f) for m in macros])
            c, *_ = np.linalg.lstsq(x, y, rcond=None)
            coeffs[f] = tuple(round(float(v), 12) for v in c)
        floor["area_um2"] = min(m.area_um2 / (m.words * m.bits) for m in macros)
        return cls(coeffs, floor, source, banks=tuple(m.name for m in macros))

    def estimate(self, words: int, bits: int) -> dict:
        """Figures of one ``words x bits`` single-port bank at the model's node and voltage."""
        out = {}
        for f, (c0, c1, c2, c3) in self.coefficients.items():
            v = c0 + c1 * words * bits + c2 * bits + c3 * words
            lo = self.floor_per_bit.get(f, 0.0) * words * bits
            out[f] = max(v, lo, 0.0)
        out["leakage_w"] = 0.0
        return out


# The fit of the seven ASAP7 banks (srambank_{64,128,256}x4x{32,64} and 256x4x80), stored for machines without
# the asap7_sram folder; refit it when the banks change (no test compares it with the libraries today).
_ANALYTIC_COEFFICIENTS = {
    "area_um2": (25.080526451614, 0.029598050115, 2.53263483871, 0.223337281106),
    "read_pj": (1.815855, 0.0, 0.0, 0.0),
    "write_pj": (0.186927, 0.0, 0.0, 0.0),
    "access_ns": (0.16817656095, 2.47e-07, 0.001089600134, 4.259223e-06),
    "setup_ns": (0.031017709651, 0.0, 0.0, 0.0),
    "input_pf": (0.000318915, 0.0, 0.0, 0.0),
    "clock_pf": (0.00566251, 0.0, 0.0, 0.0),
}
_ANALYTIC_FLOOR = {"area_um2": 0.035208421875}
ANALYTIC_SOURCE = "stored linear fit of the seven ASAP7 SRAM banks (the asap7_sram folder was not used)"


def sram_model(pdk_folder: Path | None, kind: str = "asap7") -> SramModel:
    """The ASAP7 fit from ``pdk_folder/asap7_sram`` or, if absent (or ``kind == 'analytic'``), the stored fit."""
    if kind == "asap7" and pdk_folder is not None and (Path(pdk_folder) / "asap7_sram").is_dir():
        macros = read_asap7_macros(Path(pdk_folder) / "asap7_sram")
        if len(macros) >= 4:
            return SramModel.fit(macros, f"ASAP7 SRAM liberties ({len(macros)} banks), linear fit")
    return SramModel(dict(_ANALYTIC_COEFFICIENTS), dict(_ANALYTIC_FLOOR), ANALYTIC_SOURCE)
