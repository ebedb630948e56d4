"""The selection rule's targets (issue 23), checked on a run's own numbers and printed by `vrex golden` and
`vrex niah`: the config's ReSV rule (method ``resv``) against ReKV (``rekv``, the paper's baseline) and, on the
needle benchmark, full attention.

| target | bound | needs |
|---|---|---|
| frame / text traffic | retrieval ratio ≤ 1/3 of ReKV's, per stage | both methods' ratio in the stage |
| frame / text recall | attention recall ≥ ReKV's − 1 point, per stage | both methods' recall (offline run) |
| e2e KL | KL(full ‖ resv) ≤ KL(full ‖ rekv) | `--e2e` with both methods |
| needle accuracy | ≥ ReKV's, and ≥ full attention's − 2 points | `vrex niah` with full, resv and rekv |

A target whose inputs the run does not have is not checked (and not listed); a stage where nothing was offloaded
has no ratio and is skipped the same way. The bounds are the issue's, not tuned here: a miss is printed as one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Target", "retrieval_targets", "e2e_targets", "niah_targets", "format_targets", "rule_label",
           "TRAFFIC_SHARE", "RECALL_SLACK", "NIAH_SLACK"]

TRAFFIC_SHARE = 1.0 / 3.0     # resv's retrieval ratio ≤ this × ReKV's, per stage
RECALL_SLACK = 0.01           # resv's recall ≥ ReKV's − this, per stage
NIAH_SLACK = 0.02             # resv's needle accuracy ≥ full attention's − this


@dataclass(frozen=True)
class Target:
    """One checked target: ``value`` (the method's) against ``bound`` (derived from the reference's ``reference``);
    ``kind`` says which way: ``max`` (value ≤ bound) or ``min`` (value ≥ bound)."""

    name: str
    value: float
    bound: float
    kind: str
    reference: str

    @property
    def met(self) -> bool:
        return self.value <= self.bound if self.kind == "max" else self.value >= self.bound

    def as_dict(self) -> dict:
        return {**asdict(self), "met": self.met}


def _stage_value(report: dict, method: str, stage: str, key: str):
    return ((report.get("methods", {}).get(method) or {}).get(stage) or {}).get(key)


def retrieval_targets(report: dict, method: str = "resv", baseline: str = "rekv") -> list[Target]:
    """Traffic and recall targets of an offline `vrex golden` report (``methods.<m>.<stage>.retrieval_ratio /
    recall``); empty without both methods."""
    out = []
    for stage in ("frame", "text"):
        r, b = (_stage_value(report, m, stage, "retrieval_ratio") for m in (method, baseline))
        if r is not None and b is not None:
            out.append(Target(f"{stage} traffic", r, TRAFFIC_SHARE * b, "max", f"1/3 of {baseline}'s {100 * b:.1f} %"))
        r, b = (_stage_value(report, m, stage, "recall") for m in (method, baseline))
        if r is not None and b is not None:
            out.append(Target(f"{stage} recall", r, b - RECALL_SLACK, "min", f"{baseline}'s {100 * b:.1f} % − 1 pt"))
    return out


def e2e_targets(report: dict, method: str = "resv", baseline: str = "rekv") -> list[Target]:
    """The e2e KL target (``methods.<m>.e2e.logit_kl``, written by ``--e2e``)."""
    m, b = ((report.get("methods", {}).get(x) or {}).get("e2e") for x in (method, baseline))
    if not m or not b:
        return []
    return [Target("e2e KL(full‖m)", m["logit_kl"], b["logit_kl"], "max", f"{baseline}'s {b['logit_kl']:.4f}")]


def niah_targets(agg: dict, method: str = "resv", baseline: str = "rekv") -> list[Target]:
    """Traffic and accuracy targets of a needle-benchmark aggregate (``methods.<m>.niah``)."""
    ms = agg.get("methods", {})
    if method not in ms:
        return []
    mine = ms[method]["niah"]
    out = []
    if baseline in ms:
        ref = ms[baseline]["niah"]
        for stage in ("frame", "text"):
            r, b = mine["ratio"].get(stage), ref["ratio"].get(stage)
            if r is not None and b is not None:
                out.append(Target(f"{stage} traffic", r, TRAFFIC_SHARE * b, "max",
                                  f"1/3 of {baseline}'s {100 * b:.1f} %"))
        if mine["accuracy"] is not None and ref["accuracy"] is not None:
            out.append(Target("needle accuracy vs ReKV", mine["accuracy"], ref["accuracy"], "min",
                              f"{baseline}'s {100 * ref['accuracy']:.1f} %"))
    full = ms.get("full", {}).get("niah", {}).get("accuracy")
    if mine["accuracy"] is not None and full is not None:
        out.append(Target("needle accuracy vs full", mine["accuracy"], full - NIAH_SLACK, "min",
                          f"full attention's {100 * full:.1f} % − 2 pts"))
    return out


def format_targets(targets: list[Target], method: str = "resv", rule: str = "") -> str:
    """One line per target, then the verdict; empty when nothing could be checked."""
    if not targets:
        return ""
    lines = [f"targets (issue 23) of {method}{f' ({rule})' if rule else ''}:"]
    for t in targets:
        op = "≤" if t.kind == "max" else "≥"
        val = f"{t.value:.4f}" if "KL" in t.name else f"{100 * t.value:.1f} %"
        bound = f"{t.bound:.4f}" if "KL" in t.name else f"{100 * t.bound:.1f} %"
        lines.append(f"  {t.name:<24} {val:>9} {op} {bound:>9} ({t.reference}): {'met' if t.met else 'MISSED'}")
    missed = [t.name for t in targets if not t.met]
    lines.append(f"  {len(targets) - len(missed)} of {len(targets)} met" + (f"; missed: {', '.join(missed)}"
                                                                            if missed else ""))
    return "\n".join(lines)


def rule_label(cfg) -> str:
    """The config's selection rule in words, e.g. ``row p 0.9 / 0.9`` or ``offloaded 0.6 / 0.2`` (frame / text)."""
    r = cfg.resv
    a, b = (getattr(r, cfg.stage_ratio_key(s)) for s in ("frame", "text"))
    return f"{r.threshold_mass} {'p ' if r.threshold_mass == 'row' else ''}{a:g} / {b:g}"

