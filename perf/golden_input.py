"""Measured retrieval ratios and KVMU traffic from golden-model reports (``vrex golden --json``), one or several.

Layout read (docs/golden.md; the fields of the real-LLM and KVMU contracts)::

    {"config": NAME or {"name": …, "resv": {"predict_from": …}}, "config_hash": …,
     "trace": {"tokens": …, …},
     "methods": {METHOD: {"frame" | "text": {"retrieval_ratio": r, "offloaded_tokens": Σn,
                                             "layer_head_steps": k, …},
                          "e2e": {"top1_agreement", "logit_kl", "answer_nll", "ratio"}}},
     "resv": {"resv": {"mean_cluster_size": …}},
     "kvmu": {"frame" | "text": {"payload_bytes", "bytes_moved", "bursts", "commands", "stalls",
                                 "prefetch": {"payload_bytes", "bytes_moved", "bursts", "commands"}, "evict": {…}},
              "config_hash": …, "capacity_bytes": …}}

The retrieval transfers are the ``prefetch`` part of a stage (the stage totals also count the eviction writes);
reports without the split give the stage totals.

Each report is one session; its **length** for the ratio fit is the mean number of retrieval candidates per layer,
KV head and step, ``offloaded_tokens / layer_head_steps`` (older than the golden run's recent window), falling back
to the session's tokens (``trace.tokens``) with a note. Several reports give several lengths, which
``vrex.perf.ratios`` fits (``perf.ratio_fit``). The ``kvmu`` counters of all reports are summed per stage: their
payload per command, in token slices of the golden model's head (``trace.head_dim`` × 2 bytes, BF16), is the
measured run length of a cluster fetch, and their bytes moved per payload byte the measured overhead of the
cluster-contiguous layout; ``vrex.perf.transfer`` applies both to the modelled system's slices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .inputs import dig, load_json, number, section

__all__ = ["GoldenRun", "MeasuredRatios", "KVMUTraffic", "read_golden_json", "read_golden_jsons", "golden_from_dict",
           "GOLDEN_METHODS"]

# golden method name -> the perf policies whose ratios it measures (stage-wise)
GOLDEN_METHODS = {
    "flexgen": {"flexgen": ("frame", "text")},
    "infinigen": {"infinigen": ("text",), "infinigenp": ("frame", "text")},
    "rekv": {"rekv": ("frame", "text")},
    "resv": {"resv": ("frame", "text")},
}
E2E_FIELDS = ("top1_agreement", "logit_kl", "answer_nll", "ratio")
KVMU_FIELDS = ("payload_bytes", "bytes_moved", "bursts", "commands", "stalls")


@dataclass(frozen=True)
class GoldenRun:
    """One golden report: ratios with their lengths, end-to-end metrics and KVMU counters."""

    path: str
    points: dict = field(default_factory=dict)     # policy -> stage -> (n or None, r)
    e2e: dict = field(default_factory=dict)        # golden method -> {field: value}
    kvmu: dict = field(default_factory=dict)       # stage -> {field: value}
    slice_bytes: float | None = None               # K or V of one token in one head of the golden model
    kvmu_capacity: float | None = None
    kvmu_config_hash: str | None = None
    session_tokens: int | None = None
    mean_cluster_size: float | None = None         # ReSV tokens per cluster (resv.resv.mean_cluster_size)
    config_name: str | None = None
    config_hash: str | None = None
    predict_from: str | None = None
    notes: tuple = ()


@dataclass(frozen=True)
class KVMUTraffic:
    """KVMU counters of the golden sessions, summed per stage."""

    paths: tuple
    stages: dict            # stage -> {field: total, "payload_slices": total}
    capacity: float | None = None

    def run(self, stage: str) -> tuple[float, float] | None:
        """(mean token slices per command, bytes moved per payload byte) of ``stage``, None if unmeasured."""
        s = self.stages.get(stage)
        if not s or not s.get("payload_bytes") or not s.get("commands"):
            return None
        return s["payload_slices"] / s["commands"], max(1.0, s["bytes_moved"] / s["payload_bytes"])

    def describe(self) -> str:
        parts = []
        for stage in ("frame", "text"):
            run = self.run(stage)
            if run:
                s = self.stages[stage]
                parts.append(f"{stage}: {run[0]:.1f} token slices per command, moved/payload {run[1]:.3f} "
                             f"({s['commands']:.0f} commands, {s['bursts']:.0f} bursts, {s['stalls']:.0f} stalls)")
        if self.capacity:
            parts.append(f"golden device capacity {self.capacity / 1e9:.3g} GB")
        return "; ".join(parts)


@dataclass(frozen=True)
class MeasuredRatios:
    """Everything measured by one or several golden reports."""

    runs: tuple                                   # GoldenRun, in the order given

    @property
    def paths(self) -> tuple:
        return tuple(r.path for r in self.runs)

    @property
    def label(self) -> str:
        return ", ".join(self.paths)

    @property
    def notes(self) -> tuple:
        return tuple(n for r in self.runs for n in r.notes)

    def points(self, policy: str, stage: str) -> list:
        """(n, r) per report that measured ``policy`` in ``stage``; n None when the report gives no length."""
        return [r.points[policy][stage] for r in self.runs if stage in r.points.get(policy, {})]

    def tokens_per_cluster(self) -> tuple[float, tuple] | None:
        """Mean ReSV cluster size over the reports that give it, with their paths."""
        got = [(r.mean_cluster_size, r.path) for r in self.runs if r.mean_cluster_size]
        if not got:
            return None
        return sum(v for v, _ in got) / len(got), tuple(p for _, p in got)

    def sources(self, policy: str, stage: str) -> tuple:
        return tuple(r.path for r in self.runs if stage in r.points.get(policy, {}))

    def kvmu(self) -> KVMUTraffic | None:
        stages: dict = {}
        paths, capacity = [], None
        for r in self.runs:
            if not r.kvmu or not r.slice_bytes:
                continue
            paths.append(r.path)
            capacity = r.kvmu_capacity if capacity is None else capacity
            for stage, counters in r.kvmu.items():
                tot = stages.setdefault(stage, dict.fromkeys(KVMU_FIELDS + ("payload_slices",), 0.0))
                for k in KVMU_FIELDS:
                    tot[k] += counters.get(k, 0.0)
                tot["payload_slices"] += counters["payload_bytes"] / r.slice_bytes
        return KVMUTraffic(tuple(paths), stages, capacity) if stages else None


def _length(stage_entry: dict, session_tokens, path, where: str, notes: list):
    off = number(stage_entry.get("offloaded_tokens"), 0.0)
    steps = number(stage_entry.get("layer_head_steps"), 1.0)
    if off is not None and steps is not None and off > 0:
        return off / steps
    if session_tokens:
        notes.append(f"{path}: {where} gives no offloaded_tokens / layer_head_steps; its length for the ratio fit is "
                     f"the session's {session_tokens} tokens.")
        return float(session_tokens)
    notes.append(f"{path}: {where} gives no length (offloaded_tokens / layer_head_steps or trace.tokens); its ratio "
                 "enters the fit as a constant.")
    return None


def read_golden_json(path) -> GoldenRun:
    return golden_from_dict(load_json(path, "golden JSON"), path)


def golden_from_dict(data: dict, path) -> GoldenRun:
    """:class:`GoldenRun` from a golden report already in memory; ``path`` names it in the notes and sources."""
    notes = []
    methods = section(data, "methods", path, notes, "every retrieval ratio falls back to paper Table II")
    session_tokens = number(dig(data, "trace", "tokens"), 1.0)
    session_tokens = int(session_tokens) if session_tokens else None
    points: dict = {}
    e2e: dict = {}
    for method, targets in GOLDEN_METHODS.items():
        entry = methods.get(method)
        if not isinstance(entry, dict):
            notes.append(f"{path}: method '{method}' missing; its ratios fall back to paper Table II.")
            continue
        for stage in ("frame", "text"):
            raw = dig(entry, stage, "retrieval_ratio")
            value = number(raw, 0.0, 1.0)
            if value is None:
                why = "missing" if raw is None else f"invalid ({raw!r}, must be a number in [0, 1])"
                notes.append(f"{path}: methods.{method}.{stage}.retrieval_ratio {why}; falls back to paper Table II.")
                continue
            n = _length(entry[stage], session_tokens, path, f"methods.{method}.{stage}", notes)
            for policy, stages in targets.items():
                if stage in stages:
                    points.setdefault(policy, {})[stage] = (n, value)
    for method, entry in methods.items():
        if isinstance(entry, dict) and isinstance(entry.get("e2e"), dict):
            vals = {k: number(entry["e2e"].get(k)) for k in E2E_FIELDS}
            e2e[method] = {k: v for k, v in vals.items() if v is not None}
    ignored = sorted(set(methods) - set(GOLDEN_METHODS))
    if ignored:
        notes.append(f"{path}: methods {', '.join(ignored)} have no system in the performance model (ignored).")
    kvmu, capacity, kvmu_hash = {}, None, None
    raw_kvmu = data.get("kvmu")
    if isinstance(raw_kvmu, dict):
        for stage in ("frame", "text"):
            counters = raw_kvmu.get(stage)
            if not isinstance(counters, dict):
                continue
            # Retrieval traffic is the prefetch part; the stage totals also hold the eviction writes (one token per
            # command), which are not what a selection fetches. Older reports without the split give the totals.
            fetch = counters.get("prefetch") if isinstance(counters.get("prefetch"), dict) else counters
            vals = {k: number(fetch.get(k, counters.get(k)), 0.0) for k in KVMU_FIELDS}
            bad = [k for k, v in vals.items() if v is None]
            if bad:
                notes.append(f"{path}: kvmu.{stage}.{bad[0]} missing or invalid; the {stage} stage's transfers keep "
                             "the analytic cluster-run model.")
                continue
            kvmu[stage] = vals
        capacity = number(raw_kvmu.get("device_capacity_bytes", raw_kvmu.get("capacity_bytes")), 0.0)
        if kvmu and not number(dig(data, "trace", "head_dim"), 1.0):
            notes.append(f"{path}: trace.head_dim missing; its kvmu counters cannot be turned into token runs "
                         "(ignored).")
        kvmu_hash = raw_kvmu.get("config_hash") if isinstance(raw_kvmu.get("config_hash"), str) else None
    cfg = data.get("config")
    name = cfg if isinstance(cfg, str) else (cfg.get("name") if isinstance(cfg, dict) else None)
    predict_from = dig(cfg, "resv", "predict_from") if isinstance(cfg, dict) else None
    chash = data.get("config_hash") if isinstance(data.get("config_hash"), str) else None
    cluster_size = number(dig(data, "resv", "resv", "mean_cluster_size"), 1.0)
    head_dim = number(dig(data, "trace", "head_dim"), 1.0)
    slice_bytes = 2 * head_dim if head_dim else None      # BF16 K or V of one token in one head
    return GoldenRun(str(path), points, e2e, kvmu, slice_bytes, capacity, kvmu_hash, session_tokens, cluster_size,
                     name if isinstance(name, str) else None, chash,
                     predict_from if isinstance(predict_from, str) else None, tuple(notes))


def read_golden_jsons(paths) -> MeasuredRatios:
    return MeasuredRatios(tuple(read_golden_json(p) for p in paths))
