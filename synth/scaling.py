"""Scale area, delay and power between CMOS nodes with the Stillmaker & Baas (2017) equations.

Source: A. Stillmaker and B. Baas, "Scaling equations for the accurate prediction of CMOS device performance
from 180 nm to 7 nm", Integration, the VLSI Journal 58 (2017) 74–81 (doi:10.1016/j.vlsi.2017.02.002), with
the authors' erratum for the Section 4.2.1 example. The paper fits HSPICE results on PTM / ITRS models:

- **area**: a table of relative area between every pair of nodes;
- **delay** (FO4-type circuits): a cubic polynomial in the supply voltage per node;
- **energy per operation**: a quadratic polynomial in the supply voltage per node;
- **power** (static / leakage-dominated): a quadratic polynomial in the supply voltage per node.

A figure at (node_s, V_s) moves to (node_t, V_t) by multiplying with ``f(node_t, V_t) / f(node_s, V_s)`` for
delay, energy and power, and by the table ratio for area. Dynamic power at a fixed clock scales like the energy
per operation times the clock ratio; leakage scales with the power polynomial.

Nodes of 45 nm and below exist as HP (high-performance) and LP (low-power) fits; ``flavour`` picks one (the
paper's Design Compiler 14 nm result is modelled as HP). sky130 maps to the 130 nm fit and ASAP7 to 7 nm.
These are approximations: sky130 is characterised at 1.8 V, above the 1.3 V of the PTM 130 nm model the fit
was made at, and ASAP7 is itself a predictive kit. Compare ratios (block shares) as well as absolutes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SOURCE", "NODES", "area_factor", "delay_factor", "energy_factor", "power_factor", "Scaling",
           "scaling_between"]

SOURCE = ("A. Stillmaker and B. Baas, \"Scaling equations for the accurate prediction of CMOS device performance "
          "from 180 nm to 7 nm\", Integration 58 (2017) 74-81, doi:10.1016/j.vlsi.2017.02.002")

NODES = (180, 130, 90, 65, 45, 32, 20, 16, 14, 10, 7)

# Relative area: _AREA[target][source] = area of a design at `source` expressed in units of the same design at
# `target` (so area_target = area_source / _AREA[target][source]).
_AREA = {
    180: (1, 0.34, 0.15, 0.08, 0.053, 0.025, 0.011, 0.01, 0.0093, 0.0055, 0.0032),
    130: (2.9, 1, 0.44, 0.23, 0.16, 0.072, 0.033, 0.03, 0.027, 0.016, 0.0092),
    90: (6.6, 2.3, 1, 0.53, 0.35, 0.16, 0.075, 0.067, 0.061, 0.036, 0.021),
    65: (12, 4.3, 1.9, 1, 0.66, 0.31, 0.14, 0.13, 0.12, 0.068, 0.039),
    45: (19, 6.4, 2.8, 1.5, 1, 0.46, 0.21, 0.19, 0.17, 0.1, 0.059),
    32: (40, 14, 6.1, 3.3, 2.2, 1, 0.46, 0.41, 0.38, 0.22, 0.13),
    20: (88, 30, 13, 7.1, 4.7, 2.2, 1, 0.89, 0.82, 0.48, 0.28),
    16: (99, 34, 15, 7.9, 5.3, 2.4, 1.1, 1, 0.91, 0.54, 0.31),
    14: (110, 37, 16, 8.7, 5.8, 2.7, 1.2, 1.1, 1, 0.59, 0.34),
    10: (180, 63, 28, 15, 9.8, 4.5, 2.1, 1.9, 1.7, 1, 0.58),
    7: (320, 110, 48, 25, 17, 7.8, 3.6, 3.2, 2.9, 1.7, 1),
}

# Per node: delay cubic (a3, a2, a1, a0), energy quadratic (b2, b1, b0), power quadratic (c2, c1, c0), in V.
_POLY = {
    "130": ((-76.65, 334.9, -493.4, 275.8), (7.171, -6.709, 2.904), (27020, -15450, 5630)),
    "90": ((-60.34, 262.5, -384.2, 210.9), (4.762, -4.781, 2.092), (17320, -11230, 4328)),
    "65": ((-53.3, 230.4, -333.9, 178.6), (3.755, -4.398, 1.975), (12890, -10510, 4362)),
    "HP45": ((-501.6, 1567, -1619, 566.1), (1.018, -0.3107, 0.1539), (5462, -1760, 522.4)),
    "HP32": ((-1047, 2982, -2797, 873.5), (0.8367, -0.4341, 0.1701), (4001, -1733, 533.6)),
    "LP45": ((-285.7, 1239, -1795, 898.8), (1.103, -0.362, 0.2767), (6297, -3009, 1124)),
    "LP32": ((-325.9, 1374, -1922, 913.2), (0.9559, -0.7823, 0.471), (4557, -3037, 1323)),
    "HP20": ((0, 34.63, -66.37, 41.15), (0.373, -0.1582, 0.04104), (2922, -1286, 299.9)),
    "HP16": ((0, 24.8, -47.52, 28.87), (0.2958, -0.1241, 0.03024), (2133, -882.6, 197.7)),
    "HP14": ((-40.66, 109.2, -100.6, 35.92), (0.2363, -0.09675, 0.02239), (1675, -711, 159)),
    "HP10": ((-34.95, 93.65, -85.99, 30.4), (0.2068, -0.09311, 0.02375), (1456, -621.6, 143.8)),
    "HP7": ((-28.58, 76.6, -70.26, 24.69), (0.1776, -0.09097, 0.02447), (1179, -515.7, 123.4)),
    "LP20": ((-160.5, 514.1, -558.6, 217.5), (0.2632, -0.14, 0.06841), (2096, -962.4, 287.1)),
    "LP16": ((-114.6, 366.7, -397.4, 153.6), (0.2139, -0.1187, 0.05639), (1609, -715.5, 205.7)),
    "LP14": ((-85.37, 271.6, -292.2, 111.4), (0.1556, -0.06472, 0.03066), (1259, -554.1, 152.3)),
    "LP10": ((-71.76, 228.6, -246.3, 93.91), (0.1261, -0.0518, 0.02769), (1046, -422.7, 118.9)),
    "LP7": ((-61.79, 196.1, -210.3, 79.55), (0.09365, -0.03409, 0.02043), (815.2, -307.3, 87.54)),
}


def _node(nm: float) -> int:
    n = int(round(nm))
    if n not in NODES:
        raise ValueError(f"node {nm} nm is not one of the fitted nodes {', '.join(map(str, NODES))} nm")
    return n


def _key(nm: float, flavour: str) -> str:
    n = _node(nm)
    if n == 180:
        raise ValueError("the 180 nm voltage fits are not tabulated here; use 130 nm or below")
    return str(n) if n >= 65 else f"{flavour}{n}"


def area_factor(src_nm: float, dst_nm: float) -> float:
    """Multiply an area at ``src_nm`` by this to get the area at ``dst_nm``."""
    s, d = _node(src_nm), _node(dst_nm)
    return 1.0 / _AREA[d][NODES.index(s)]


def _poly(coeffs, v):
    return sum(c * v ** (len(coeffs) - 1 - i) for i, c in enumerate(coeffs))


def _factor(fit: int, src_nm, src_v, dst_nm, dst_v, flavour) -> float:
    """Ratio of the ``fit``-th polynomial of :data:`_POLY` (0 delay, 1 energy, 2 power) at the destination to the
    source."""
    return _poly(_POLY[_key(dst_nm, flavour)][fit], dst_v) / _poly(_POLY[_key(src_nm, flavour)][fit], src_v)


def delay_factor(src_nm, src_v, dst_nm, dst_v, flavour="HP") -> float:
    return _factor(0, src_nm, src_v, dst_nm, dst_v, flavour)


def energy_factor(src_nm, src_v, dst_nm, dst_v, flavour="HP") -> float:
    return _factor(1, src_nm, src_v, dst_nm, dst_v, flavour)


def power_factor(src_nm, src_v, dst_nm, dst_v, flavour="HP") -> float:
    return _factor(2, src_nm, src_v, dst_nm, dst_v, flavour)


@dataclass(frozen=True)
class Scaling:
    """The factors that move one library's figures to the target (node, voltage, clock)."""

    src_nm: float
    src_v: float
    src_clock_mhz: float
    dst_nm: float
    dst_v: float
    dst_clock_mhz: float
    area: float
    delay: float
    energy: float
    leakage: float
    flavour: str

    @property
    def dynamic_power(self) -> float:
        """Dynamic power at the target clock: energy per operation x clock ratio."""
        return self.energy * self.dst_clock_mhz / self.src_clock_mhz

    def method(self) -> str:
        return (f"Stillmaker & Baas 2017 ({self.flavour} fits for nodes <= 45 nm): from {self.src_nm:g} nm, "
                f"{self.src_v:g} V, {self.src_clock_mhz:g} MHz to {self.dst_nm:g} nm, {self.dst_v:g} V, "
                f"{self.dst_clock_mhz:g} MHz; area x{self.area:.4g}, delay x{self.delay:.4g}, energy/op "
                f"x{self.energy:.4g} (dynamic power x{self.dynamic_power:.4g} incl. the clock ratio), leakage "
                f"x{self.leakage:.4g}")

    def as_dict(self) -> dict:
        return {"source": SOURCE, "flavour": self.flavour, "from": {"node_nm": self.src_nm, "voltage": self.src_v,
                                                                    "clock_mhz": self.src_clock_mhz},
                "to": {"node_nm": self.dst_nm, "voltage": self.dst_v, "clock_mhz": self.dst_clock_mhz},
                "factors": {"area": self.area, "delay": self.delay, "energy": self.energy,
                            "dynamic_power": self.dynamic_power, "leakage": self.leakage}}


def scaling_between(src_nm, src_v, src_clock_mhz, dst_nm, dst_v, dst_clock_mhz, flavour="HP") -> Scaling:
    """All factors from one (node, voltage, clock) to another; ValueError for an unfitted node."""
    return Scaling(src_nm, src_v, src_clock_mhz, dst_nm, dst_v, dst_clock_mhz,
                   area_factor(src_nm, dst_nm), delay_factor(src_nm, src_v, dst_nm, dst_v, flavour),
                   energy_factor(src_nm, src_v, dst_nm, dst_v, flavour),
                   power_factor(src_nm, src_v, dst_nm, dst_v, flavour), flavour)
