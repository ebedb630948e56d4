"""The device-memory tier: how much of each stream's KV stays in device DRAM, and where the rest lives.

A system keeps, per step of a batch of B streams at KV size n per stream (``docs/perf.md`` §Device tier):

- the **sinks and recent window** (``resv.sink_tokens + resv.recent_window_tokens``) of every stream, always
  attended;
- the **retrieval staging area** (:meth:`vrex.config.Config.kv_staging_bytes`: two layers of the batch's retrieval
  candidates at full fetch) for selected KV brought from the host tier;
- the **newest older KV** up to the tier's capacity, shared by the B streams: each stream holds
  ⌊(capacity − staging) / (B · KV bytes per token)⌋ tokens in device DRAM;
- everything older in the **host tier** (NVMe SSD or host DRAM), cluster-contiguous on V-Rex.

Retrieval selects among the *candidates* (tokens older than the window). Selected candidates still in device DRAM
cost DRAM reads only; selected candidates in the host tier cross the link. Which candidates a step selects is not
known to the model, so they are taken uniformly over the candidates (the host share of a selection is the host
share of the candidates); attention favours recent tokens, which are the ones kept, so this over-states the link
traffic (docs/perf.md lists it among the assumptions).

Tiers:

``capacity``
    V-Rex (``dre.kvmu.device_capacity_bytes``; 0 = auto: the device DRAM after weights and activations), and the GPU
    baselines with ``perf.gpu.kv_tier = device`` (auto from ``perf.gpu.dram_capacity_gb``).
``window``
    Only the sinks and recent window stay; every older token is offloaded. The GPU baselines by default
    (``perf.gpu.kv_tier = window``): FlexGen, InfiniGen and ReKV are offloading systems, configured so in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DeviceTier", "vrex_tier", "gpu_tier", "window_tier"]


@dataclass(frozen=True)
class DeviceTier:
    kind: Literal["capacity", "window"]
    explicit_bytes: float = 0.0     # 0 = auto from dram_gb
    dram_gb: float | None = None    # None: the V-Rex system's DRAM (system.dram.capacity_gb)

    def capacity_bytes(self, cfg, batch: int) -> float | None:
        """Total device bytes for the batch's KV, staging included; None for the window-only tier."""
        if self.kind == "window":
            return None
        if self.explicit_bytes:
            return float(self.explicit_bytes)
        return cfg.device_kv_capacity_bytes(batch, self.dram_gb)

    def device_tokens(self, cfg, batch: int, kv_tokens: int) -> int:
        """Tokens of one stream held in device DRAM (sinks, window and the newest older KV)."""
        window = min(kv_tokens, cfg.resv.recent_window_tokens + cfg.resv.sink_tokens)
        cap = self.capacity_bytes(cfg, batch)
        if cap is None:
            return window
        resident = cap - cfg.kv_staging_bytes(batch, kv_tokens)
        per_stream = int(resident // (batch * cfg.model.kv_bytes_per_token)) if resident > 0 else 0
        return min(kv_tokens, max(window, per_stream))

    def describe(self, cfg, batch: int) -> str:
        if self.kind == "window":
            return "window only (sinks + recent window in device memory, older KV offloaded)"
        cap = self.capacity_bytes(cfg, batch)
        if self.explicit_bytes:
            return f"{cap / 1e9:.2f} GB (dre.kvmu.device_capacity_bytes)"
        dram = cfg.system.dram.capacity_gb if self.dram_gb is None else self.dram_gb
        return (f"auto {cap / 1e9:.2f} GB at batch {batch} = {dram:g} GB − weights "
                f"{cfg.model.weight_bytes_total / 1e9:.2f} GB − activations {cfg.activation_bytes(batch) / 1e9:.2f} GB")


def vrex_tier(cfg) -> DeviceTier:
    return DeviceTier("capacity", float(cfg.dre.kvmu.device_capacity_bytes))


def gpu_tier(cfg) -> DeviceTier:
    if cfg.perf.gpu.kv_tier == "device":
        return DeviceTier("capacity", 0.0, cfg.perf.gpu.dram_capacity_gb)
    return window_tier()


def window_tier() -> DeviceTier:
    return DeviceTier("window")
