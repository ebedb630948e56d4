"""The components ``vrex verilog|sim|synth --component NAME`` know, built from a Config."""

from dataclasses import dataclass
from typing import Callable

from vrex.errors import UsageError

__all__ = ["ComponentSpec", "COMPONENTS", "get_component", "register"]


@dataclass(frozen=True)
class ComponentSpec:
    name: str          # CLI name
    top: str           # Verilog module name
    description: str
    build: Callable    # build(cfg) -> wiring.Component


COMPONENTS: dict[str, ComponentSpec] = {}


def register(spec: ComponentSpec) -> ComponentSpec:
    COMPONENTS[spec.name] = spec
    return spec


def get_component(name: str) -> ComponentSpec:
    _load_all()
    try:
        return COMPONENTS[name]
    except KeyError:
        raise UsageError(f"unknown component {name!r}; known components: {', '.join(sorted(COMPONENTS))}.") from None


def _load_all():
    if COMPONENTS:
        return
    from .hamming_lanes import HammingLanes

    register(ComponentSpec("hamming_lanes", "vrex_hamming_lanes",
                           "HCU lane array: lanes x (XOR + popcount + compare with threshold)",
                           HammingLanes.from_config))
    from .hcu import HCU

    register(ComponentSpec("hcu", "vrex_hcu",
                           "Hash-bit cluster unit: nearest open cluster by Hamming distance, lanes x bit slices, "
                           "early exit, code memory and current-frame buffer", HCU.from_config))

    from .wtu import WTU

    register(ComponentSpec("wtu", "vrex_wtu",
                           "WiCSum threshold unit: per-row cluster masks (early-exit / histogram WiCSum or top-k) "
                           "and the OR-aggregated mask per GQA group", WTU.from_config))

    from .kvmu import KVMU

    register(ComponentSpec("kvmu", "vrex_kvmu",
                           "KV memory-hierarchy manager: evicts the oldest KV to cluster-contiguous host block chains, "
                           "prefetches selected clusters into staging; coalescer, burst legaliser, AXI4 masters",
                           KVMU.from_config))

    from .dre import DRE

    register(ComponentSpec("dre", "vrex_dre",
                           "DRE top: HCU + WTU with GQA aggregation + KVMU with its AXI4 masters, control inputs and status "
                           "counters",
                           DRE.from_config))


def component_names() -> list[str]:
    _load_all()
    return sorted(COMPONENTS)
