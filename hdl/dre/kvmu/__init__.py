"""The KVMU (KV memory-hierarchy manager) in RTL: front-end, coalescer, burst legaliser, AXI engines, table port."""

from vrex.hdl.dre.kvmu.layouts import KVMUGeometry
from vrex.hdl.dre.kvmu.top import KVMU, KVMU_COUNTERS

__all__ = ["KVMU", "KVMU_COUNTERS", "KVMUGeometry"]
