"""Cycle, efficiency and power figures from the figures flow (``vrex report`` → ``build/report/figures.json``).

Layout read (the record layout of docs/figures.md and the KVMU / LXE contracts)::

    {"meta": {"config_hash": …},
     "components": {NAME: {"scaled": {"power_mw", "area_mm2", "clock_mhz", "method", …}, "cycles": {…}}}}

| component | cycles | scaled | replaces |
|---|---|---|---|
| ``hcu`` | ``per_token = {overhead, per_unit}`` | ``power_mw`` | HCU cycle formula a, b; ``perf.energy.hcu_pj_per_compare`` |
| ``wtu`` | ``per_row = {overhead, per_unit[, per_pass_overhead]}``, ``mean_passes`` | ``power_mw`` | WTU formula; ``wtu_passes_per_row``; ``wtu_pj_per_score`` |
| ``kvmu`` | ``bytes_per_cycle``, ``bus_utilisation`` | ``power_mw`` | KVMU rate (unbounded otherwise); ``kvmu_pj_per_byte`` |
| ``lxe`` (else ``core``) | ``dpe_efficiency``, ``vpe_efficiency`` | — | ``perf.vrex.dpe_efficiency`` / ``vpe_efficiency`` |
| ``dpe``, ``vpe`` | — | ``power_mw`` | ``dpe_pj_per_mac``, ``vpe_pj_per_op`` |
| ``core``, ``dre`` | — | ``power_mw``, ``area_mm2`` | nothing: printed beside the model's power (a cross-check) |

Powers are per core at the scaled clock (``scaled.clock_mhz``, else ``technology.target_clock_mhz``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .inputs import dig, load_json, number, section

__all__ = ["Figures", "read_figures_json", "figures_from_dict"]


@dataclass(frozen=True)
class Figures:
    """Figures from the figures flow; None where the file does not give them."""

    path: str
    hcu_overhead: float | None = None
    hcu_per_unit: float | None = None
    wtu_overhead: float | None = None
    wtu_per_unit: float | None = None
    wtu_mean_passes: float | None = None
    wtu_per_pass_overhead: float = 0.0     # optional: fixed cycles each pass adds (RTL pipeline fill / decision)
    hcu_power_mw: float | None = None
    wtu_power_mw: float | None = None
    hcu_clock_mhz: float | None = None
    wtu_clock_mhz: float | None = None
    kvmu_bytes_per_cycle: float | None = None
    kvmu_bus_utilisation: float | None = None
    kvmu_power_mw: float | None = None
    kvmu_clock_mhz: float | None = None
    dpe_efficiency: float | None = None
    vpe_efficiency: float | None = None
    efficiency_component: str | None = None
    dpe_power_mw: float | None = None
    vpe_power_mw: float | None = None
    dpe_clock_mhz: float | None = None
    vpe_clock_mhz: float | None = None
    core_power_mw: float | None = None
    core_area_mm2: float | None = None
    dre_power_mw: float | None = None
    dre_area_mm2: float | None = None
    power_method: str | None = None
    config_hash: str | None = None
    notes: tuple = ()

    @property
    def has_hcu_cycles(self) -> bool:
        return self.hcu_overhead is not None and self.hcu_per_unit is not None

    @property
    def has_wtu_cycles(self) -> bool:
        return self.wtu_overhead is not None and self.wtu_per_unit is not None

    @property
    def kvmu_rate_bytes_per_cycle(self) -> float | None:
        """Sustained KVMU payload bytes per cycle per port (bus utilisation applied)."""
        if self.kvmu_bytes_per_cycle is None:
            return None
        return self.kvmu_bytes_per_cycle * (self.kvmu_bus_utilisation if self.kvmu_bus_utilisation else 1.0)

    def replaced_values(self) -> list[str]:
        """The model inputs this file replaces (for provenance warnings)."""
        out = []
        for label, present in (("HCU cycles", self.has_hcu_cycles), ("WTU cycles", self.has_wtu_cycles),
                               ("WTU passes", self.wtu_mean_passes is not None),
                               ("HCU power", self.hcu_power_mw is not None),
                               ("WTU power", self.wtu_power_mw is not None),
                               ("KVMU rate", self.kvmu_bytes_per_cycle is not None),
                               ("KVMU power", self.kvmu_power_mw is not None),
                               ("DPE efficiency", self.dpe_efficiency is not None),
                               ("VPE efficiency", self.vpe_efficiency is not None),
                               ("DPE power", self.dpe_power_mw is not None),
                               ("VPE power", self.vpe_power_mw is not None)):
            if present:
                out.append(label)
        return out


def read_figures_json(path) -> Figures:
    return figures_from_dict(load_json(path, "figures JSON"), path)


def figures_from_dict(data: dict, path) -> Figures:
    """:class:`Figures` from figures.json content already in memory (``vrex report``'s own run); ``path`` names it
    in the notes and sources."""
    notes = []
    comps = section(data, "components", path, notes, "DRE cycles and power fall back to formulas and Table III")
    values = {}

    def take(name, comp, *keys, lo=0.0, hi=None, what, quiet_if_absent=False):
        raw = dig(comps, comp, *keys)
        v = number(raw, lo, hi)
        if v is None and not (quiet_if_absent and comp not in comps):
            why = "missing" if raw is None else f"invalid ({raw!r})"
            notes.append(f"{path}: components.{comp}.{'.'.join(keys)} {why}; {what}.")
        values[name] = v

    take("hcu_overhead", "hcu", "cycles", "per_token", "overhead", what="HCU cycles use the formula")
    take("hcu_per_unit", "hcu", "cycles", "per_token", "per_unit", what="HCU cycles use the formula")
    take("wtu_overhead", "wtu", "cycles", "per_row", "overhead", what="WTU cycles use the formula")
    take("wtu_per_unit", "wtu", "cycles", "per_row", "per_unit", what="WTU cycles use the formula")
    take("wtu_mean_passes", "wtu", "cycles", "mean_passes", lo=1.0,
         what="WTU passes per row use perf.wtu_passes_per_row")
    extra = number(dig(comps, "wtu", "cycles", "per_row", "per_pass_overhead"), 0.0)
    values["wtu_per_pass_overhead"] = extra if extra is not None else 0.0
    take("hcu_power_mw", "hcu", "scaled", "power_mw", what="HCU energy uses perf.energy.hcu_pj_per_compare")
    take("wtu_power_mw", "wtu", "scaled", "power_mw", what="WTU energy uses perf.energy.wtu_pj_per_score")

    # KVMU, LXE / core and per-engine power: one note per absent component, details when present
    if "kvmu" in comps:
        take("kvmu_bytes_per_cycle", "kvmu", "cycles", "bytes_per_cycle", lo=1e-9,
             what="the KVMU's transfer rate is not bounded")
        take("kvmu_bus_utilisation", "kvmu", "cycles", "bus_utilisation", lo=1e-9, hi=1.0,
             what="its bytes per cycle are taken at full bus utilisation")
        take("kvmu_power_mw", "kvmu", "scaled", "power_mw", what="KVMU energy uses perf.energy.kvmu_pj_per_byte")
    else:
        notes.append(f"{path}: no 'kvmu' component; the KVMU's rate is not bounded and its energy is "
                     "perf.energy.kvmu_pj_per_byte (Table III).")
        values.update(kvmu_bytes_per_cycle=None, kvmu_bus_utilisation=None, kvmu_power_mw=None)
    eff_comp = "lxe" if isinstance(dig(comps, "lxe", "cycles"), dict) else (
        "core" if isinstance(dig(comps, "core", "cycles"), dict) else None)
    if eff_comp:
        for name in ("dpe_efficiency", "vpe_efficiency"):
            take(name, eff_comp, "cycles", name, lo=1e-6, hi=1.0, what=f"perf.vrex.{name} is used")
    else:
        notes.append(f"{path}: no 'lxe' or 'core' cycles; perf.vrex.dpe_efficiency and vpe_efficiency are used.")
        values.update(dpe_efficiency=None, vpe_efficiency=None)
    values["efficiency_component"] = eff_comp
    for comp in ("dpe", "vpe"):
        take(f"{comp}_power_mw", comp, "scaled", "power_mw", what=f"{comp.upper()} energy uses perf.energy "
             f"({'dpe_pj_per_mac' if comp == 'dpe' else 'vpe_pj_per_op'}, Table III)", quiet_if_absent=True)
    if "dpe" not in comps and "vpe" not in comps:
        notes.append(f"{path}: no 'dpe' / 'vpe' components; DPE and VPE energies are Table III's.")
    for comp in ("core", "dre"):
        values[f"{comp}_power_mw"] = number(dig(comps, comp, "scaled", "power_mw"), 0.0)
        values[f"{comp}_area_mm2"] = number(dig(comps, comp, "scaled", "area_mm2"), 0.0)
    for comp in ("hcu", "wtu", "kvmu", "dpe", "vpe"):
        clock = number(dig(comps, comp, "scaled", "clock_mhz"), 1e-3)
        if values[f"{comp}_power_mw"] is not None and clock is None:
            notes.append(f"{path}: components.{comp}.scaled.clock_mhz missing; its power is taken at "
                         "technology.target_clock_mhz.")
        values[f"{comp}_clock_mhz"] = clock
    # both halves of a cycle formula or neither
    for keys in (("hcu_overhead", "hcu_per_unit"), ("wtu_overhead", "wtu_per_unit")):
        if any(values[k] is None for k in keys):
            values.update({k: None for k in keys})
    method = dig(comps, "hcu", "scaled", "method") or dig(comps, "wtu", "scaled", "method")
    meta_hash = dig(data, "meta", "config_hash")
    return Figures(str(path), power_method=method if isinstance(method, str) else None,
                   config_hash=meta_hash if isinstance(meta_hash, str) else None, notes=tuple(notes), **values)
