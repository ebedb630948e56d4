"""The KVMU (KV memory-hierarchy manager) in RTL: front-end, coalescer, burst legaliser, AXI engines, table port."""

from .layouts import KVMUGeometry
from .top import KVMU, KVMU_COUNTERS

__all__ = ["KVMU", "KVMU_COUNTERS", "KVMUGeometry"]
