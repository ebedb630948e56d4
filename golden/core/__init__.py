"""Golden model of the V-Rex core's retrieval path: the ReSV session in the LXE's numerics and the HC table the
core keeps in device DRAM (docs/formats.md §Core)."""

from .numerics import LxeParams, bf16_of, inv_sqrt_bf16, recip_bf16
from .session import ContextStep, CoreStep, LxeNumerics, TableSnapshot, core_session, frame_steps, record_bytes
from .table import write_context

__all__ = ["LxeParams", "bf16_of", "inv_sqrt_bf16", "recip_bf16", "ContextStep", "CoreStep", "LxeNumerics",
           "TableSnapshot", "core_session", "frame_steps", "record_bytes", "write_context"]
