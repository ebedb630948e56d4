"""Torch intra-op threads for the golden model.

The golden model's tensors are small (one step's rows against one context's clusters), and on a shared 2-core
machine several torch threads per process spin against each other: measured 12× slower with 2 threads than with 1
under load (docs/results-golden.md §Run cost). Runs therefore use ``$VREX_TORCH_THREADS`` threads (default 1)
and restore the previous setting afterwards.
"""

from __future__ import annotations

import contextlib
import os

import torch

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int | None = None):
    n = n or int(os.environ.get("VREX_TORCH_THREADS", "1") or 1)
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
