"""The selection rule's targets (issue 23), checked on a run's own numbers and printed by `vrex golden` and
`vrex niah`: the config's ReSV rule (method ``resv``) against ReKV (``rekv``, the paper's baseline) and, on the
needle benchmark, full attention.

| target | bound | needs |
|---|---|---|
| frame / text traffic | retrieval ratio ≤ 1/3 of ReKV's, per stage | both methods' ratio in the stage |
| frame / text recall | attention recall ≥ ReKV's − 1 point, per stage | both methods' recall (offline run) |
| e2e KL | KL(full ‖ resv) ≤ KL(full ‖ rekv) | `--e2e` with both methods |
| needle accuracy | ≥ ReKV's, and not worse than full attention's: the upper end of the paired bootstrap interval of Δ against full ≥ 0 (issue 32; ≥ full's − 2 points where a run has no interval) | `vrex niah` with full, resv and rekv |
| traffic at iso-accuracy | per stage, the ReSV sweep's least traffic not worse than full ≤ 1/3 of ReKV's (issue 32) | `vrex niah` sweeps of both (`resv_row@P`, `rekv@F`), both resolved |

A target whose inputs the run does not have is not checked (and not listed; :func:`iso_accuracy_notes` says why an
iso-accuracy target could not be read); a stage where nothing was offloaded
has no ratio and is skipped the same way. The bounds are the issue's, not tuned here: a miss is printed as one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Target", "retrieval_targets", "e2e_targets", "niah_targets", "iso_accuracy_notes", "format_targets",
           "rule_label",
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
    if mine.get("delta_ci"):
        hi = mine["delta_ci"][1] / 100
        out.append(Target("not worse than full", hi, 0.0, "min",
                          f"upper end of the paired 95 % interval of Δ vs full ({mine['delta_points']:+.1f} pts)"))
    elif mine["accuracy"] is not None and full is not None:
        out.append(Target("needle accuracy vs full", mine["accuracy"], full - NIAH_SLACK, "min",
                          f"full attention's {100 * full:.1f} % − 2 pts"))
    iso = agg.get("iso_accuracy") or {}
    for fam in _resv_families(iso):
        for stage in ("frame", "text"):
            r, b = (iso.get(f, {}).get(stage) or {} for f in (fam, baseline))
            if r.get("traffic") is not None and b.get("traffic") is not None and not b.get("bounded_below"):
                out.append(Target(f"{stage} traffic at iso-acc. ({fam})", r["traffic"], TRAFFIC_SHARE * b["traffic"],
                                  "max", f"1/3 of {baseline}'s {100 * b['traffic']:.1f} %"))
    return out


def _resv_families(iso: dict) -> list[str]:
    return [f for f in iso if f.startswith("resv")]


def iso_accuracy_notes(agg: dict, baseline: str = "rekv") -> list[str]:
    """Why an iso-accuracy traffic target of :func:`niah_targets` was not checked, one line per ReSV sweep and
    stage: a sweep that never reaches full attention's accuracy, or a baseline sweep that does not (then ReKV
    fetches more than its whole sweep at iso-accuracy, and no ratio can be read), or one whose lowest point already
    passes (its iso-accuracy traffic is only an upper bound)."""
    iso = agg.get("iso_accuracy") or {}
    fams = _resv_families(iso)
    lines = []
    if fams and baseline not in iso:
        return [f"iso-accuracy traffic targets not checked: no {baseline} sweep (give {baseline}@F at two F or more)"]
    for fam in fams:
        for stage in ("frame", "text"):
            r, b = (iso.get(f, {}).get(stage) or {} for f in (fam, baseline))
            if not r or not b:
                continue
            if r.get("traffic") is None:
                lines.append(f"{stage} traffic at iso-accuracy ({fam}) not checked: no point of the {fam} sweep is "
                             "not worse than full")
            elif b.get("traffic") is None:
                top = max(p["traffic"] for p in b["points"])
                lines.append(f"{stage} traffic at iso-accuracy ({fam}) not checked: {baseline} is worse than full at "
                             f"every point of its sweep (up to {100 * top:.1f} %); {fam} is not worse from "
                             f"{100 * r['traffic']:.1f} %")
            elif b.get("bounded_below"):
                lines.append(f"{stage} traffic at iso-accuracy ({fam}) not checked: {baseline}'s lowest point "
                             f"({100 * b['traffic']:.1f} %) already passes, so its iso-accuracy traffic is only an "
                             "upper bound")
    return lines


def format_targets(targets: list[Target], method: str = "resv", rule: str = "") -> str:
    """One line per target, then the verdict; empty when nothing could be checked."""
    if not targets:
        return ""
    lines = [f"targets (issues 23, 32) of {method}{f' ({rule})' if rule else ''}:"]
    for t in targets:
        op = "≤" if t.kind == "max" else "≥"
        val = f"{t.value:.4f}" if "KL" in t.name else f"{100 * t.value:.1f} %"
        bound = f"{t.bound:.4f}" if "KL" in t.name else f"{100 * t.bound:.1f} %"
        lines.append(f"  {t.name:<34} {val:>9} {op} {bound:>9} ({t.reference}): {'met' if t.met else 'MISSED'}")
    missed = [t.name for t in targets if not t.met]
    lines.append(f"  {len(targets) - len(missed)} of {len(targets)} met" + (f"; missed: {', '.join(missed)}"
                                                                            if missed else ""))
    return "\n".join(lines)


def rule_label(cfg) -> str:
    """The config's selection rule in words, e.g. ``row p 0.9 / 0.9`` or ``offloaded 0.6 / 0.2`` (frame / text)."""
    r = cfg.resv
    a, b = (getattr(r, cfg.stage_ratio_key(s)) for s in ("frame", "text"))
    return f"{r.threshold_mass} {'p ' if r.threshold_mass == 'row' else ''}{a:g} / {b:g}"

