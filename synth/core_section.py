"""The "V-Rex core" section of ``vrex report``: the core's blocks beside paper Table III, the DRE's share, per-MAC
figures and the V-Rex8 / V-Rex48 totals, from the hierarchical records of ``dpe``, ``vpe``, ``lxe``, ``core`` and
``dre`` (the figures JSON carries the summary under ``core``)."""

from __future__ import annotations

from .paper import CORE_TOTAL, SYSTEMS, TABLE_III

__all__ = ["core_summary", "core_section"]


def _scaled(rec, key):
    s = (rec or {}).get("scaled") or {}
    return s.get(key)


def _glue(rec):
    """The glue part's entry of a hierarchical record (``lxe_glue``: the LXE's SRAM banks)."""
    for name, p in ((rec or {}).get("hierarchy") or {}).get("parts", {}).items():
        if name.endswith("_glue"):
            return p
    return None


def core_summary(components: dict, cfg) -> dict | None:
    """The ``core`` object of figures.json (None without a core record with scaled figures)."""
    core = components.get("core")
    if not core or not core.get("scaled"):
        return None
    lxe, dpe, vpe, dre = (components.get(n) for n in ("lxe", "dpe", "vpe", "dre"))
    macs, f = cfg.lxe.macs_per_cycle, cfg.technology.target_clock_mhz
    sram = (_glue(lxe) or {}).get("scaled") or {}
    blocks = {
        "DPE": (_scaled(dpe, "area_mm2"), _scaled(dpe, "power_mw")),
        "VPE": (_scaled(vpe, "area_mm2"), _scaled(vpe, "power_mw")),
        "On-chip memory": (sram.get("area_mm2"), sram.get("power_mw")),
        "DRE": (_scaled(dre, "area_mm2"), _scaled(dre, "power_mw")),
    }
    area, power = core["scaled"]["area_mm2"], core["scaled"]["power_mw"]
    dpe_area, dpe_power = blocks["DPE"]
    raw_dpe = (dpe or {}).get("area_um2")
    out = {"config_hash": cfg.hash(), "area_mm2": area, "power_mw": power, "fmax_mhz": core["scaled"].get("fmax_mhz"),
           "meets_target_clock": core["scaled"].get("meets_target_clock"),
           "worst_module": (core.get("timing") or {}).get("worst_module"),
           "dre_area_share": blocks["DRE"][0] / area if area and blocks["DRE"][0] else None,
           "dre_power_share": blocks["DRE"][1] / power if power and blocks["DRE"][1] else None,
           "macs": macs, "um2_per_mac": dpe_area * 1e6 / macs if dpe_area else None,
           "um2_per_mac_raw": raw_dpe / macs if raw_dpe else None,
           "pj_per_mac": dpe_power / (macs * f) * 1e3 if dpe_power else None,
           "core_pj_per_mac": power / (macs * f) * 1e3 if power else None,
           "blocks": {k: {"area_mm2": a, "power_mw": p} for k, (a, p) in blocks.items()},
           "paper": {"area_mm2": CORE_TOTAL[0], "power_mw": CORE_TOTAL[1]}}
    for name, (cores, paper_area, paper_power) in SYSTEMS.items():
        out[name.lower().replace("-", "")] = {"cores": cores, "area_mm2": cores * area,
                                              "core_power_w": cores * power / 1e3 if power else None,
                                              "paper_area_mm2": paper_area, "paper_system_power_w": paper_power}
    return out


def core_section(summary: dict | None, components: dict, target: dict, out) -> tuple[list[str], list]:
    """Markdown lines and plots of the section."""
    from .plots import bar_vs_paper
    from .text import fmt_value

    L = ["## V-Rex core beside Table III", ""]
    if summary is None:
        why = (components.get("core") or {}).get("missing") or {"core": "no core record"}
        return L + ["The core has no scaled figures: " + "; ".join(f"{k}: {v}" for k, v in why.items()), ""], []
    L += [f"Hierarchical synthesis: one MAC tree and one VPE lane synthesised and timed alone, multiplied by their "
          f"instance counts, plus the SRAM macros, the glue and the DRE; scaled to {target['node_nm']:g} nm / "
          f"{target['voltage']:g} V / {target['clock_mhz']:g} MHz. Nothing is flattened.", "",
          "| block | paper area mm² | vrex area mm² | paper power mW | vrex power mW |", "|---|---:|---:|---:|---:|"]
    paper_dre = tuple(sum(TABLE_III[b][k] for b in ("HCU", "WTU", "KVMU")) for k in (0, 2))
    rows = []
    for block, v in summary["blocks"].items():
        pa, pp = paper_dre if block == "DRE" else (TABLE_III[block][0], TABLE_III[block][2])
        label = "Retrieval engine (DRE: HCU + WTU + KVMU)" if block == "DRE" else block
        L.append(f"| {label} | {pa:.3g} | {fmt_value(v['area_mm2'])} | {pp:.4g} | {fmt_value(v['power_mw'])} |")
        rows.append((block, v["area_mm2"], v["power_mw"], pa, pp))
    L.append(f"| **core** | {CORE_TOTAL[0]} | {fmt_value(summary['area_mm2'])} | {CORE_TOTAL[1]} | "
             f"{fmt_value(summary['power_mw'])} |")
    share = lambda x: fmt_value(None if x is None else 100 * x, "{:.2f}")      # noqa: E731
    L += ["", f"DRE share: area {share(summary['dre_area_share'])} % (paper 2.04 %), power "
              f"{share(summary['dre_power_share'])} % (paper 2.19 %). Core fmax (scaled) "
              f"{fmt_value(summary['fmax_mhz'], '{:.0f}')} MHz (slowest module: `{summary['worst_module']}`; target "
              f"{target['clock_mhz']:g} MHz: {'met' if summary['meets_target_clock'] else 'missed'}).",
          f"Per MAC ({summary['macs']} MACs): DPE {fmt_value(summary['um2_per_mac'])} µm²/MAC scaled "
          f"({fmt_value(summary['um2_per_mac_raw'])} µm² at the library node), {fmt_value(summary['pj_per_mac'])} pJ/MAC; "
          f"whole core {fmt_value(summary['core_pj_per_mac'])} pJ/MAC (paper: 461 µm²/MAC and 0.80 pJ/MAC whole core).",
          ""]
    L += ["| system | cores | vrex core area mm² | paper area mm² | vrex cores' power W | paper system power W |",
          "|---|---:|---:|---:|---:|---:|"]
    for key in ("vrex8", "vrex48"):
        s = summary[key]
        L.append(f"| {key.replace('vrex', 'V-Rex')} | {s['cores']} | {fmt_value(s['area_mm2'])} | {s['paper_area_mm2']} | "
                 f"{fmt_value(s['core_power_w'])} | {s['paper_system_power_w']} (with DRAM, link, storage) |")
    L.append("")
    plots = [bar_vs_paper([(b, a, pa) for b, a, _, pa, _ in rows], "area (mm²)", "V-Rex core area vs Table III",
                          out / "core_area_vs_paper.png"),
             bar_vs_paper([(b, p, pp) for b, _, p, _, pp in rows], "power (mW)", "V-Rex core power vs Table III",
                          out / "core_power_vs_paper.png")]
    return L, plots
