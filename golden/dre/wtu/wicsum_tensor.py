"""The WiCSum pieces shared by the vectorised twins of the linear and the exp2 rule: the threshold of a row sum and
the exact sorted rule (one module both import, so neither twin imports the other)."""

from __future__ import annotations

import torch

__all__ = ["mask_int", "sorted_wicsum", "wicsum_thresholds"]


def mask_int(row: torch.Tensor) -> int:
    """A bool row as the reference's integer mask (bit ``j`` set: cluster ``j`` selected)."""
    return sum(1 << j for j in torch.nonzero(row).flatten().tolist())


def wicsum_thresholds(total: torch.Tensor, ratio_q: int, ratio_bits: int) -> torch.Tensor:
    """``(total · ratio_q) >> ratio_bits`` per row, split so that int64 cannot overflow (exact)."""
    low = total & ((1 << ratio_bits) - 1)
    return (total >> ratio_bits) * ratio_q + ((low * ratio_q) >> ratio_bits)


def sorted_wicsum(sp: torch.Tensor, prod: torch.Tensor, thr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact rule on ``(R, N)`` rows, ``N ≥ 1``: visit clusters in descending ``sp`` (ties: lower index), select
    up to and including the first after which ``Σ prod > thr`` (all if never); bool masks and the sum at the stop."""
    R, N = sp.shape
    order = torch.sort(sp, dim=1, descending=True, stable=True).indices
    cum = torch.cumsum(torch.gather(prod, 1, order), 1)
    over = cum > thr[:, None]
    stop = torch.where(over.any(1), over.to(torch.int8).argmax(1), torch.full((R,), N - 1))
    picked = torch.arange(N)[None, :] <= stop[:, None]
    masks = torch.zeros(R, N, dtype=torch.bool).scatter_(1, order, picked)
    return masks, torch.gather(cum, 1, stop[:, None])[:, 0]
