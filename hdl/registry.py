"""The components ``vrex verilog|sim|synth --component NAME`` know, built from a Config."""

from dataclasses import dataclass
from typing import Callable

from vrex.errors import UsageError

__all__ = ["ComponentSpec", "COMPONENTS", "get_component", "register", "parts_of"]


@dataclass(frozen=True)
class ComponentSpec:
    name: str          # CLI name
    top: str           # Verilog module name
    description: str
    build: Callable    # build(cfg) -> wiring.Component
    # Hierarchical figures: part component -> instance count (the part's figures are measured alone and multiplied;
    # the rest is the glue, synthesised with the parts as blackboxes). None (or parts(cfg) None): synthesised whole.
    parts: Callable | None = None
    glue: str | None = None     # the spec of the composite without its parts (hierarchical figures)
    hidden: bool = False        # parts and glues measured for a composite; not listed by component_names()


COMPONENTS: dict[str, ComponentSpec] = {}


def register(spec: ComponentSpec) -> ComponentSpec:
    COMPONENTS[spec.name] = spec
    return spec


def get_component(name: str) -> ComponentSpec:
    _load_all()
    try:
        return COMPONENTS[name]
    except KeyError:
        raise UsageError(f"unknown component {name!r}; known components: {', '.join(component_names())}.") from None


def _load_all():
    if COMPONENTS:
        return
    from vrex.hdl.dre.hamming_lanes import HammingLanes

    register(ComponentSpec("hamming_lanes", "vrex_hamming_lanes",
                           "HCU lane array: lanes x (XOR + popcount + compare with threshold)",
                           HammingLanes.from_config))
    from vrex.hdl.dre.hcu import HCU

    register(ComponentSpec("hcu", "vrex_hcu",
                           "Hash-bit cluster unit: nearest open cluster by Hamming distance, lanes x bit slices, "
                           "early exit, code memory and current-frame buffer", HCU.from_config))

    from vrex.hdl.dre.wtu.linear import WTU

    register(ComponentSpec("wtu", "vrex_wtu",
                           "WiCSum threshold unit: per-row cluster masks (early-exit / histogram WiCSum or top-k) "
                           "and the OR-aggregated mask per GQA group", WTU.from_config))

    from vrex.hdl.dre.kvmu import KVMU

    register(ComponentSpec("kvmu", "vrex_kvmu",
                           "KV memory-hierarchy manager: evicts the oldest KV to cluster-contiguous host block chains, "
                           "prefetches selected clusters into staging; coalescer, burst legaliser, AXI4 masters",
                           KVMU.from_config))

    from vrex.hdl.dre.top import DRE

    register(ComponentSpec("dre", "vrex_dre",
                           "DRE top: HCU + WTU with GQA aggregation + KVMU with its AXI4 masters, control inputs and status "
                           "counters",
                           DRE.from_config, parts=_dre_parts, glue="dre_glue"))
    register(ComponentSpec("dre_glue", "vrex_dre_glue", "DRE without HCU, WTU and KVMU (status counters and wiring)",
                           _glue(DRE.from_config), hidden=True))

    _register_lxe()

    from vrex.hdl.core.resident_mass import ResidentMass

    register(ComponentSpec("resident_mass", "vrex_resident_mass",
                           "Resident-mass unit: per row of resident-key scores, the WTU's row-mode resident input "
                           "(max and saturated bin-mass total, one pass with circular bin accumulators)",
                           ResidentMass.from_config))


def _dre_parts(cfg):
    """The DRE's parts for hierarchical figures, or None (synthesised whole) with ``technology.dre_figures: flat``."""
    return {"hcu": 1, "wtu": 1, "kvmu": 1} if cfg.technology.dre_figures == "hierarchical" else None


def _core_parts(cfg):
    """The core's parts: the LXE and the DRE, and with ``resv.threshold_mass = row`` the resident-mass unit."""
    return {"lxe": 1, "dre": 1, **({"resident_mass": 1} if cfg.resv.threshold_mass == "row" else {})}


def parts_of(spec: ComponentSpec, cfg) -> dict | None:
    """The parts (component -> count) whose figures make up ``spec``'s for ``cfg``, or None when it is synthesised
    whole."""
    return None if spec.parts is None else spec.parts(cfg)


def _glue(build):
    return lambda cfg: build(cfg, external=True)


def _register_lxe():
    from .lxe.dpe import DPE
    from .lxe.lxe import LXE
    from .lxe.mac_tree import MacTree
    from .lxe.vpe import VPE, VpeLane

    register(ComponentSpec("mac_tree", "vrex_mac_tree",
                           "LXE MAC tree: dpe_inputs exact BF16 products, block-aligned adder tree, accumulator, "
                           "one RNE to FP32 and BF16", MacTree.from_config))
    register(ComponentSpec("dpe", "vrex_dpe", "LXE dot-product engine: dpe_trees MAC trees sharing a broadcast operand",
                           DPE.from_config, parts=lambda cfg: {"mac_tree": cfg.lxe.dpe_trees}, glue="dpe_glue"))
    register(ComponentSpec("dpe_glue", "vrex_dpe_glue", "DPE without its MAC trees", _glue(DPE.from_config),
                           hidden=True))
    register(ComponentSpec("vpe_lane", "vrex_vpe_lane", "one VPE lane", VpeLane.from_config, hidden=True))
    register(ComponentSpec("vpe", "vrex_vpe", "LXE vector engine: lanes in lockstep (add, mul, max, sign, running sum "
                                              "+ count, fixed-point conversion, 2^x)", VPE.from_config,
                           parts=lambda cfg: {"vpe_lane": cfg.lxe.lanes}, glue="vpe_glue"))
    register(ComponentSpec("vpe_glue", "vrex_vpe_glue", "VPE without its lanes (count and tag pipeline)",
                           _glue(VPE.from_config), hidden=True))
    register(ComponentSpec("lxe", "vrex_lxe", "LXE: DPE + VPE + banked SRAM of one core", LXE.from_config,
                           parts=lambda cfg: {"dpe": 1, "vpe": 1}, glue="lxe_glue"))
    register(ComponentSpec("lxe_glue", "vrex_lxe_glue", "LXE without DPE and VPE (the SRAM banks)",
                           _glue(LXE.from_config), hidden=True))
    from .core import Core

    register(ComponentSpec("core", "vrex_core", "V-Rex core: LXE (DPE + VPE + SRAM), DRE (HCU + WTU + KVMU) and the "
                                                "retrieval-path sequencer with its HC-table AXI4 master",
                           Core.from_config, parts=_core_parts, glue="core_glue"))
    register(ComponentSpec("core_glue", "vrex_core_glue", "core without LXE, DRE and resident-mass unit (the sequencer and the wiring)",
                           _glue(Core.from_config), hidden=True))


def component_names(*, hidden: bool = False) -> list[str]:
    """Registered components (with ``hidden``: also the parts and glues of hierarchical figures)."""
    _load_all()
    return sorted(n for n, s in COMPONENTS.items() if hidden or not s.hidden)
