"""The HC table of one clustering context and how the session drives the HCU reference with it.

A context is one (layer, KV head) (``resv.cluster_scope = kv_head``) or one layer (``layer``). Its table keeps,
per cluster (ids in creation order): the code (first member's code, or the bitwise majority of the members),
the running key sum and token count (mean key = sum / count), the newest member, and whether the cluster is
closed; per token, its cluster id.

**Open clusters and the HCU preload** (docs/golden.md §HCU jobs). A cluster is *open* while it is not closed and
its newest member is resident (in the recent window or the current step). Before each HCU job the table
updater stages the open clusters into the code memory:

1. the limit is ``capacity - job tokens`` (``resv.preload = reserve``: every token of the job can open a cluster)
   or ``capacity`` (``fill``: a full memory then follows ``dre.hcu.full_policy``);
2. if more clusters are open than the limit, the most recently touched ones (largest newest-member index) stay;
   the others are **closed for good** (they keep their members and stay scorable, but take no new token);
3. the preload is the kept clusters in ascending id order (oldest first), so the HCU's lowest-slot tie rule is
   the lowest-cluster-id rule.

A job holds at most ``cfg.hcu_frame_tokens`` tokens (the current-frame code buffer); a longer step is clustered
in consecutive chunks, each a job whose preload includes the clusters the previous chunk opened. A spilled token
(``full_policy = spill`` with a full memory) becomes a closed singleton cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vrex.golden.dre.hcu.reference import HCUResult
from vrex.golden.dre.hcu.tensor import hcu_assign_engine

__all__ = ["ClusterTable", "JobOutcome"]


@dataclass(frozen=True)
class JobOutcome:
    preload: list[int]            # cluster ids staged in slots 0..n-1
    open_codes: list[int]         # their codes, as preloaded
    token_codes: list[int]
    clusters: list[int]           # cluster id each token ended in
    result: HCUResult


class ClusterTable:
    """``engine``: ``tensor`` runs HCU jobs with the vectorised twin (:mod:`.hcu_tensor`), ``reference`` with
    :func:`vrex.golden.dre.hcu.reference.hcu_assign`; both give the same assignments (tested).

    ``numerics`` (with ``context``, the table's key in it) replaces the float64 key sums and float32 means by another
    number format's (:class:`vrex.golden.core.session.LxeNumerics`: the LXE's FP32 sums and BF16 means)."""

    def __init__(self, cfg, tokens: int, dim: int, engine: str = "tensor", *, numerics=None, context=None):
        r = cfg.resv
        self.cfg, self.engine = cfg, engine
        self.numerics, self.context = numerics, context
        self.token_cluster = torch.full((tokens,), -1, dtype=torch.int64)
        self.sums = torch.zeros(tokens, dim, dtype=torch.float64)
        self.counts = torch.zeros(tokens, dtype=torch.int64)
        self.newest = torch.full((tokens,), -1, dtype=torch.int64)
        self.closed = torch.zeros(tokens, dtype=torch.bool)
        self.codes: list[int] = []              # table code per cluster (what a preload stages)
        self.first_codes: list[int] = []
        self.majority = r.cluster_code == "majority"
        self.ones = torch.zeros(tokens, r.hash_bits, dtype=torch.int32) if self.majority else None
        self.n = 0
        self.spilled = 0
        self.full_events = 0
        self.jobs = 0
        self.closed_by_capacity = 0

    # ---- cluster bookkeeping -------------------------------------------------------------------------------------

    def _new_cluster(self, code: int, closed: bool = False) -> int:
        cid = self.n
        self.n += 1
        self.codes.append(code)
        self.first_codes.append(code)
        self.closed[cid] = closed
        return cid

    def _add(self, cid: int, token: int, key: torch.Tensor, bits: torch.Tensor | None) -> None:
        self.token_cluster[token] = cid
        if self.numerics is not None:
            self.numerics.add(self, cid, token)
        else:
            self.sums[cid] += key.to(torch.float64)
        self.counts[cid] += 1
        self.newest[cid] = token
        if self.majority:
            self.ones[cid] += bits.to(torch.int32)

    def _add_job(self, cids: list[int], tokens: list[int], keys: torch.Tensor, bits: torch.Tensor | None) -> None:
        """:meth:`_add` for every token of a job at once (same float64 sums: index_add_ adds in index order)."""
        idx, tok = torch.tensor(cids, dtype=torch.int64), torch.tensor(tokens, dtype=torch.int64)
        self.token_cluster[tok] = idx
        if self.numerics is not None:
            for cid, token in zip(cids, tokens, strict=True):
                self.numerics.add(self, cid, token)
        else:
            self.sums.index_add_(0, idx, keys.to(torch.float64))
        self.counts.index_add_(0, idx, torch.ones_like(idx))
        self.newest.scatter_reduce_(0, idx, tok, "amax")
        if self.majority:
            self.ones.index_add_(0, idx, bits.to(torch.int32))

    def _refresh_majority(self, cids) -> None:
        for cid in set(cids):
            n, ones = int(self.counts[cid]), self.ones[cid]
            first = self.first_codes[cid]
            code = 0
            for m, o in enumerate(ones.tolist()):
                if 2 * o > n or (2 * o == n and (first >> m) & 1):
                    code |= 1 << m
            self.codes[cid] = code

    def add_singletons(self, tokens: list[int], codes: list[int], keys: torch.Tensor, bits) -> None:
        """Tokens that skip the HCU (text tokens with ``resv.cluster_text_tokens = false``): closed singletons."""
        for i, t in enumerate(tokens):
            self._add(self._new_cluster(codes[i], closed=True), t, keys[i], None if bits is None else bits[i])

    # ---- HCU jobs -------------------------------------------------------------------------------------------------

    def stage_preload(self, window_start: int, job_tokens: int) -> list[int]:
        """Open clusters staged for a job, oldest first (see the module docstring); closes the ones left out."""
        cap = self.cfg.hcu_capacity
        limit = max(0, cap - job_tokens) if self.cfg.resv.preload == "reserve" else cap
        n = self.n
        open_ = (~self.closed[:n]) & (self.newest[:n] >= window_start)
        ids = torch.nonzero(open_).flatten()
        if len(ids) > limit:
            by_recent = torch.sort(self.newest[ids], descending=True, stable=True).indices
            drop = ids[by_recent[limit:]]
            self.closed[drop] = True
            self.closed_by_capacity += len(drop)
            ids = torch.sort(ids[by_recent[:limit]]).values
        return ids.tolist()

    def run_job(self, window_start: int, tokens: list[int], codes: list[int], keys: torch.Tensor, bits) -> JobOutcome:
        """Cluster ``tokens`` (one HCU job) with the HCU reference or its twin (``engine``); update the table."""
        cfg = self.cfg
        preload = self.stage_preload(window_start, len(tokens))
        open_codes = [self.codes[c] for c in preload]
        res = hcu_assign_engine(cfg, open_codes, codes, engine=self.engine)
        slots = list(preload)
        clusters = []
        for a in res.assignments:
            i = a.token
            if a.full:
                self.full_events += 1
            if a.cluster == cfg.hcu_capacity:             # spilled: a closed singleton that is not stored
                cid = self._new_cluster(codes[i], closed=True)
                self.spilled += 1
            elif a.new:
                cid = self._new_cluster(codes[i])
                slots.append(cid)
                assert len(slots) - 1 == a.cluster, "HCU slot numbering out of step with the table"
            else:
                cid = slots[a.cluster]
            clusters.append(cid)
        self._add_job(clusters, tokens, keys, bits)
        if self.majority:
            self._refresh_majority(clusters)
        self.jobs += 1
        return JobOutcome(preload, open_codes, list(codes), clusters, res)

    # ---- queries --------------------------------------------------------------------------------------------------

    def means(self, ids: torch.Tensor):
        if self.numerics is not None:
            return self.numerics.means(self, ids)
        return (self.sums[ids] / self.counts[ids, None].to(torch.float64)).to(torch.float32)

    def offloaded_counts(self, lo: int, hi: int) -> torch.Tensor:
        """Members of each cluster among tokens ``[lo, hi)``, shape ``(n,)``."""
        tc = self.token_cluster[lo:hi]
        return torch.bincount(tc[tc >= 0], minlength=self.n)[: self.n]

    def stats(self) -> dict:
        members = int(self.counts[: self.n].sum())
        return {"clusters": self.n, "tokens": members, "mean_size": members / self.n if self.n else 0.0,
                "max_size": int(self.counts[: self.n].max()) if self.n else 0, "spilled": self.spilled,
                "full_events": self.full_events, "closed_by_capacity": self.closed_by_capacity, "jobs": self.jobs}
