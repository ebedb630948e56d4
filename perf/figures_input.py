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
| ``core`` | ``retrieval_path.parameters`` | — | the HCU / WTU formulas and the LXE's hash / score times: the core's cycle model (``vrex.sim.core.cycle_model``) per step |
| ``core``, ``dre`` | — | ``power_mw``, ``area_mm2`` | nothing: printed beside the model's power (a cross-check) |

Powers are per core at the scaled clock (``scaled.clock_mhz``, else ``technology.target_clock_mhz``).

Besides a whole figures.json, :func:`read_figures_files` takes the per-component records the figures flow keeps:
a figures record (``build/figures/<name>-<hash>/*.json``: ``component``, ``cycles``, ``scaled``, ``config_hash``) or a
cycle record (``build/figures/cycles/<name>-<hash>-*.json``: ``component``, ``config_hash``, ``cycles``), merged into
one components map, later files filling in or replacing earlier ones component by component (cycles and scaled
separately). :func:`cycle_records` finds a config's cycle records (newest per component). The KVMU's per-job
figures (``arrival_cycles_per_token``, ``prefetch_bytes_per_cycle``, ``evict_bytes_per_cycle``) and the DRE
blocks' scaled areas are read for the per-layer DRE view (:mod:`.layer_timeline`) only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from vrex.errors import UsageError

from .inputs import dig, load_json, number, section

__all__ = ["Figures", "read_figures_json", "read_figures_files", "figures_from_dict", "cycle_records",
           "DRE_RECORDS"]

# the cycle records the DRE view reads (the LXE's: DPE/VPE efficiency; the core's: the retrieval path's cycle model)
DRE_RECORDS = ("hcu", "wtu", "kvmu", "lxe", "core")


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
    kvmu_arrival_cycles_per_token: float | None = None
    kvmu_prefetch_bytes_per_cycle: float | None = None
    kvmu_evict_bytes_per_cycle: float | None = None
    hcu_area_mm2: float | None = None
    wtu_area_mm2: float | None = None
    kvmu_area_mm2: float | None = None
    area_method: str | None = None
    files: tuple = ()      # (component, file) of merged records: which file gave which component's figures
    core_path: tuple | None = None   # the retrieval path's cycle model parameters (core record), as sorted items

    def file_of(self, component: str) -> str:
        """The file that gave ``component``'s figures (the whole label for a single figures.json)."""
        return next((p for c, p in self.files if c == component), self.path)

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
                               ("VPE power", self.vpe_power_mw is not None),
                               ("retrieval-path cycles", self.core_path is not None)):
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
    for comp in ("hcu", "wtu", "kvmu"):
        values[f"{comp}_area_mm2"] = number(dig(comps, comp, "scaled", "area_mm2"), 0.0)
    for name, key in (("arrival_cycles_per_token", "arrival_cycles_per_token"),
                      ("prefetch_bytes_per_cycle", "prefetch_bytes_per_cycle"),
                      ("evict_bytes_per_cycle", "evict_bytes_per_cycle")):
        values[f"kvmu_{name}"] = number(dig(comps, "kvmu", "cycles", key), 1e-9)
    area_method = next((m for m in (dig(comps, c, "scaled", "method") for c in ("wtu", "dre", "hcu"))
                        if isinstance(m, str)), None)
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
    core_params = dig(comps, "core", "cycles", "retrieval_path", "parameters")
    values["core_path"] = tuple(sorted(core_params.items())) if isinstance(core_params, dict) and core_params else None
    method = dig(comps, "hcu", "scaled", "method") or dig(comps, "wtu", "scaled", "method")
    meta_hash = dig(data, "meta", "config_hash")
    return Figures(str(path), power_method=method if isinstance(method, str) else None,
                   config_hash=meta_hash if isinstance(meta_hash, str) else None, notes=tuple(notes),
                   area_method=area_method, **values)


def _merge_record(comps: dict, rec: dict, path, files: dict) -> str | None:
    """Merge one component record into ``comps``; returns its config hash."""
    name = rec.get("component")
    if not isinstance(name, str):
        raise UsageError(f"figures file {path}: neither a figures.json ('components') nor a component record "
                         "('component').")
    files[name] = str(path)
    entry = comps.setdefault(name, {})
    for part in ("cycles", "scaled"):
        if isinstance(rec.get(part), dict):
            entry[part] = {**entry.get(part, {}), **rec[part]}
    h = rec.get("config_hash")
    return h if isinstance(h, str) else None


def read_figures_files(paths) -> Figures:
    """:class:`Figures` from one figures.json, or from several files (figures.json and component records, module
    notes) merged in order. The merged hash is the files' config hash; files of different configs are used with a
    note naming them."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if len(paths) == 1:
        data = load_json(paths[0], "figures JSON")
        if "components" in data or "component" not in data:
            return figures_from_dict(data, paths[0])
    comps: dict = {}
    hashes: dict = {}
    files: dict = {}
    for p in paths:
        data = load_json(p, "figures JSON")
        if isinstance(data.get("components"), dict):
            for name, rec in data["components"].items():
                if isinstance(rec, dict):
                    _merge_record(comps, {**rec, "component": name}, p, files)
            h = dig(data, "meta", "config_hash")
        else:
            h = _merge_record(comps, data, p, files)
        if isinstance(h, str):
            hashes.setdefault(h, []).append(str(p))
    label = ", ".join(str(p) for p in paths)
    merged = {"meta": {"config_hash": next(iter(hashes), None)}, "components": comps}
    f = replace(figures_from_dict(merged, label), files=tuple(files.items()))
    if len(hashes) > 1:
        mixed = "; ".join(f"{h}: {', '.join(ps)}" for h, ps in hashes.items())
        f = replace(f, notes=f.notes + (f"figures files of different configs merged ({mixed}); the first hash is "
                                         "checked against the run's.",))
    return f


def cycle_records(cfg, names=DRE_RECORDS, folder=None) -> list[Path]:
    """The newest cycle record of each of ``names`` measured with ``cfg`` (``build/figures/cycles/<name>-<hash>-*``,
    written by ``vrex report`` / the figures flow); components without one are left out."""
    from vrex.paths import build_dir

    folder = Path(folder) if folder is not None else build_dir("figures", "cycles")
    out = []
    for name in names:
        found = sorted(folder.glob(f"{name}-{cfg.hash()}-*.json"), key=lambda p: p.stat().st_mtime)
        if found:
            out.append(found[-1])
    return out
