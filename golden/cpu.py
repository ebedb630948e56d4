"""What the CPU does natively, for the choices that depend on it (docs/decisions.md N15).

A bfloat16 matrix product runs natively only where the CPU has bfloat16 instructions (x86: ``avx512_bf16`` or
``amx_bf16``; Arm: ``bf16``); elsewhere PyTorch emulates it, and it is several times slower than float32 (measured on
an AVX2-only EPYC: a 70 × 896 by 896 × 4864 product 4.6× slower, docs/results-accuracy.md §Speed).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["BF16_FLAGS", "cpu_flags", "native_bfloat16"]

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of a ``/proc/cpuinfo`` text (x86 ``flags``, Arm ``Features``), over all processors."""
    out: set[str] = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            out.update(value.split())
    return frozenset(out)


def native_bfloat16(cpuinfo: str | None = None) -> bool | None:
    """Whether the CPU multiplies bfloat16 natively: True / False from ``/proc/cpuinfo`` (or the text given), None
    where that file does not exist or names no flags (another OS: unknown)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        if not sys.platform.startswith("linux") or not path.is_file():
            return None
        try:
            cpuinfo = path.read_text(errors="replace")
        except OSError:
            return None
    flags = cpu_flags(cpuinfo)
    return None if not flags else bool(flags & BF16_FLAGS)
