"""The selection rule's targets (golden/evaluation/targets.py): bounds, met / missed, and what a run cannot check."""

import pytest

from vrex.config import load_config
from vrex.golden.evaluation.targets import (NIAH_SLACK, RECALL_SLACK, TRAFFIC_SHARE, e2e_targets, format_targets,
                                            iso_accuracy_notes, niah_targets, retrieval_targets, rule_label)


def _offline(resv, rekv):
    """A golden report with (ratio, recall) per stage for resv and rekv; None leaves the stage out."""
    def stages(v):
        return {s: ({} if v[s] is None else {"retrieval_ratio": v[s][0], "recall": v[s][1]}) for s in ("frame", "text")}
    return {"methods": {"resv": stages(resv), "rekv": stages(rekv)}}


def test_traffic_and_recall_bounds_follow_rekv():
    rep = _offline({"frame": (0.19, 0.94), "text": (0.12, 0.99)}, {"frame": (0.60, 0.95), "text": (0.30, 0.97)})
    got = {t.name: t for t in retrieval_targets(rep)}
    assert got["frame traffic"].bound == pytest.approx(TRAFFIC_SHARE * 0.60) and got["frame traffic"].met
    assert got["text traffic"].bound == pytest.approx(0.10) and not got["text traffic"].met      # 0.12 > 0.30 / 3
    assert got["frame recall"].bound == pytest.approx(0.95 - RECALL_SLACK) and got["frame recall"].met  # 0.94 = edge
    assert got["text recall"].met


def test_recall_just_below_the_slack_is_a_miss():
    rep = _offline({"frame": (0.1, 0.9399), "text": None}, {"frame": (0.6, 0.95), "text": None})
    got = {t.name: t for t in retrieval_targets(rep)}
    assert set(got) == {"frame traffic", "frame recall"}            # a stage without a ratio is not checked
    assert not got["frame recall"].met


def test_nothing_to_check_without_the_baseline():
    assert retrieval_targets({"methods": {"resv": {"frame": {"retrieval_ratio": 0.1, "recall": 1.0}}}}) == []
    assert e2e_targets({"methods": {"resv": {"e2e": {"logit_kl": 0.1}}, "rekv": {}}}) == []
    assert format_targets([]) == ""


def test_e2e_kl_must_not_exceed_rekvs():
    rep = {"methods": {"resv": {"e2e": {"logit_kl": 0.31}}, "rekv": {"e2e": {"logit_kl": 0.22}}}}
    (kl,) = e2e_targets(rep)
    assert not kl.met and kl.as_dict()["met"] is False
    rep["methods"]["resv"]["e2e"]["logit_kl"] = 0.22
    assert e2e_targets(rep)[0].met


def _niah(acc, frame, text):
    return {"niah": {"accuracy": acc, "ratio": {"frame": frame, "text": text}}}


def test_needle_accuracy_against_rekv_and_full():
    agg = {"methods": {"full": _niah(0.875, 1.0, 1.0), "resv": _niah(0.875, 0.55, 0.67),
                       "rekv": _niah(0.875, 0.60, 0.32)}}
    got = {t.name: t for t in niah_targets(agg)}
    assert got["needle accuracy vs ReKV"].met and got["needle accuracy vs full"].met
    assert got["needle accuracy vs full"].bound == pytest.approx(0.875 - NIAH_SLACK)
    assert not got["frame traffic"].met and not got["text traffic"].met
    agg["methods"]["resv"] = _niah(0.5, 0.1, 0.05)
    got = {t.name: t for t in niah_targets(agg)}
    assert not got["needle accuracy vs ReKV"].met and not got["needle accuracy vs full"].met
    assert got["frame traffic"].met and got["text traffic"].met
    text = format_targets(list(got.values()), rule="row p 0.9 / 0.9")
    assert "targets (issues 23, 32) of resv (row p 0.9 / 0.9):" in text
    assert "2 of 4 met; missed: needle accuracy vs ReKV, needle accuracy vs full" in text


def test_not_worse_than_full_is_the_paired_intervals_upper_end():
    agg = {"methods": {"full": _niah(0.6, 1.0, 1.0), "resv": _niah(0.55, 0.5, 0.5), "rekv": _niah(0.5, 0.6, 0.3)}}
    agg["methods"]["resv"]["niah"].update(delta_points=-5.0, delta_ci=[-10.2, 0.5])
    got = {t.name: t for t in niah_targets(agg)}
    assert "needle accuracy vs full" not in got and got["not worse than full"].met
    assert got["not worse than full"].value == pytest.approx(0.005)
    agg["methods"]["resv"]["niah"]["delta_ci"] = [-10.2, -0.1]
    assert not {t.name: t for t in niah_targets(agg)}["not worse than full"].met


def _sweep(traffic, lowest_passes=False):
    return {"traffic": traffic, "bounded_below": lowest_passes, "points": [{"traffic": 0.1}, {"traffic": 0.5}]}


def test_iso_accuracy_traffic_against_a_third_of_rekvs():
    agg = {"methods": {"full": _niah(0.6, 1.0, 1.0), "resv": _niah(0.6, 0.5, 0.5), "rekv": _niah(0.5, 0.6, 0.3)},
           "iso_accuracy": {"resv_row": {"frame": _sweep(0.15), "text": _sweep(0.2)},
                            "rekv": {"frame": _sweep(0.48), "text": _sweep(0.45)}}}
    got = {t.name: t for t in niah_targets(agg)}
    frame, text = got["frame traffic at iso-acc. (resv_row)"], got["text traffic at iso-acc. (resv_row)"]
    assert frame.met and frame.bound == pytest.approx(0.16) and not text.met
    assert iso_accuracy_notes(agg) == []
    agg["iso_accuracy"]["rekv"] = {"frame": _sweep(None), "text": _sweep(0.05, lowest_passes=True)}
    agg["iso_accuracy"]["resv_row"]["text"] = _sweep(None)
    assert not any("iso-acc." in t.name for t in niah_targets(agg))
    assert iso_accuracy_notes(agg) == [
        "frame traffic at iso-accuracy (resv_row) not checked: rekv is worse than full at every point of its sweep "
        "(up to 50.0 %); resv_row is not worse from 15.0 %",
        "text traffic at iso-accuracy (resv_row) not checked: no point of the resv_row sweep is not worse than full"]
    del agg["iso_accuracy"]["rekv"]
    assert iso_accuracy_notes(agg) == ["iso-accuracy traffic targets not checked: no rekv sweep (give rekv@F at two "
                                       "F or more)"]


def test_all_needles_dropped_leaves_only_traffic():
    agg = {"methods": {"full": _niah(None, 1.0, 1.0), "resv": _niah(None, 0.1, 0.1), "rekv": _niah(None, 0.6, 0.3)}}
    assert [t.name for t in niah_targets(agg)] == ["frame traffic", "text traffic"]
    assert niah_targets({"methods": {"full": _niah(1.0, 1.0, 1.0)}}) == []


def test_rule_label_names_the_config_rule():
    cfg = load_config("smollm2")
    offloaded = cfg.with_overrides({"resv.threshold_mass": "offloaded"}, source="test")
    assert rule_label(offloaded) == "offloaded 0.6 / 0.2"
    row = cfg.with_overrides({"resv.threshold_mass": "row", "resv.text_row_mass_p": 0.8}, source="test")
    assert rule_label(row) == "row p 0.9 / 0.8"
