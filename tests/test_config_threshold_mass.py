"""Config keys of the row-mass rule (resv.threshold_mass, row_mass_p, text_row_mass_p, dre.wtu.resident_sum_bits):
one-sentence load errors, the per-stage ratio input, and hashes that added keys at their old behaviour do not move."""

import hashlib
import json

import pytest

from conftest import config_error
from vrex.config import builtin_config_names, load_config
from vrex.config.convert import _hashed_plain

ROW = "resv:\n  threshold_mass: row\n"
ADDED = {"resv": ("threshold_mass", "row_mass_p", "text_row_mass_p"), "dre": ("wtu", "resident_sum_bits")}


def _hash_without_added_keys(cfg) -> str:
    """Config.hash() as it was computed before the row-mass keys existed: the hashed dict (which leaves out other
    sections' later keys at their old values too) without the row-mass keys, whatever their values."""
    d = _hashed_plain(cfg)
    d.pop("name"), d.pop("description")
    for key in ADDED["resv"]:
        d["resv"].pop(key, None)
    d["dre"]["wtu"].pop("resident_sum_bits", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


def test_added_keys_at_their_old_behaviour_leave_the_hash_alone():
    for name in builtin_config_names():
        cfg = load_config(name)
        # every built-in model config ships the row rule (its hash moved with the switch); tiny keeps its linear rule
        assert cfg.resv.threshold_mass == ("offloaded" if name == "tiny" else "row"), name
        old = cfg.with_overrides({"resv.threshold_mass": "offloaded"}) if cfg.resv.threshold_mass == "row" else cfg
        assert old.hash() == _hash_without_added_keys(old), name
        assert (cfg.hash() == old.hash()) == (cfg is old), name
    edge = load_config("edge").with_overrides({"resv.threshold_mass": "offloaded"})
    moved = {edge.with_overrides({k: v}).hash() for k, v in (("resv.threshold_mass", "row"),
                                                            ("dre.wtu.resident_sum_bits", 30))}
    assert len(moved) == 2 and edge.hash() not in moved
    # the row rule's p move the hash under the row rule only: under offloaded they have no effect
    row = load_config("edge")
    assert len({row.with_overrides({k: 0.8}).hash() for k in ("resv.row_mass_p", "resv.text_row_mass_p")}
               | {row.hash()}) == 3
    assert {edge.with_overrides({k: 0.8}).hash() for k in ("resv.row_mass_p", "resv.text_row_mass_p")} == {edge.hash()}


def test_the_text_p_default_moved_the_row_configs_only():
    """text_row_mass_p went 0.9 -> 0.99 (decisions P1-P4): a row config at 0.9 keeps its hash of then, an offloaded
    config (on which p has no effect) keeps its hash whatever p holds, and the new default is a new hash."""
    edge = load_config("edge")
    assert (edge.resv.row_mass_p, edge.resv.text_row_mass_p) == (0.9, 0.99)
    assert edge.with_overrides({"resv.text_row_mass_p": 0.9}).hash() == "3e66ba34d0c4"     # the edge of stop 28
    assert edge.hash() != "3e66ba34d0c4"
    tiny = load_config("tiny")
    assert tiny.resv.threshold_mass == "offloaded"
    assert {tiny.with_overrides({k: v}).hash() for k, v in (("resv.text_row_mass_p", 0.9), ("resv.row_mass_p", 0.5),
                                                            ("resv.text_row_mass_p", 0.99))} == {tiny.hash()}


@pytest.mark.parametrize("text, message", [
    ("resv:\n  row_mass_p: 0\n", "line 2: resv.row_mass_p = 0.0: must be in (0, 1]: it is the share of the row's "
                                 "attention mass (resident and fetched) that the selection keeps."),
    ("resv:\n  text_row_mass_p: 1.5\n", "line 2: resv.text_row_mass_p = 1.5: must be in (0, 1]"),
    ("resv:\n  row_mass_p: -0.2\n", "resv.row_mass_p = -0.2: must be in (0, 1]"),
    (ROW + "  score_transform: shift_min\n",
     "resv.threshold_mass = 'row': needs resv.score_transform exp2 (or the golden-only exp): the row rule adds "
     "resident and offloaded softmax weights taken against one maximum, which shift_min does not give; set "
     "resv.threshold_mass: offloaded for that transform."),
    (ROW + "dre:\n  wtu:\n    mode: topk\n",
     "resv.threshold_mass = 'row': needs dre.wtu.mode histogram, the mode that runs the exp2 rule; topk keeps a fixed "
     "number of clusters whatever the masses (set resv.threshold_mass: offloaded for it)."),
    (ROW + "  retrieval_scope: all\n", "resv.retrieval_scope = 'all': must be offloaded with resv.threshold_mass = "
                                      "row: with all, the resident tokens would count in m_res and again in their "
                                      "clusters."),
    (ROW + "dre:\n  wtu:\n    resident_sum_bits: 39\n",
     "dre.wtu.resident_sum_bits = 39: must be ≤ the WTU's row-sum accumulator (38 bits, dre.wtu's exp_sum_bits) with "
     "resv.threshold_mass = row."),
    (ROW + "  row_mass_p: 0.9\n  wicsum_guard: 0.2\n",
     "resv.row_mass_p = 0.9: plus resv.wicsum_guard (0.2) must be ≤ 1.0, the largest ratio the WTU's ratio input "
     "holds."),
])
def test_bad_row_mass_configs_are_rejected_in_one_sentence(tmp_path, text, message):
    assert message in config_error(tmp_path, text)


def test_row_mode_rules_apply_only_in_row_mode():
    edge = load_config("edge").with_overrides({"resv.threshold_mass": "offloaded"})
    # the offloaded rule does not read the resident input: a wide one is accepted
    assert edge.with_overrides({"dre.wtu.resident_sum_bits": 50}).dre.wtu.resident_sum_bits == 50
    assert edge.with_overrides({"dre.wtu.resident_sum_bits": 38, "resv.threshold_mass": "row"})
    # the golden-only float exp runs the row rule (no WTU format involved)
    assert load_config("tiny").with_overrides({"resv.score_transform": "exp", "resv.threshold_mass": "row"})


def test_stage_ratio_input_is_p_in_row_mode():
    cfg = load_config("edge").with_overrides({"resv.threshold_mass": "row", "resv.row_mass_p": 0.875,
                                              "resv.text_row_mass_p": 0.5, "resv.wicsum_guard": 0.0625})
    assert (cfg.stage_ratio_key("frame"), cfg.stage_ratio_key("text")) == ("row_mass_p", "text_row_mass_p")
    assert (cfg.stage_ratio_fixed("frame"), cfg.stage_ratio_fixed("text"), cfg.ratio_fixed) == (61440, 36864, 61440)
    assert cfg.stage_ratio("text") == 0.5625
    off = load_config("edge").with_overrides({"resv.threshold_mass": "offloaded"})
    assert (off.stage_ratio_key("frame"), off.stage_ratio_fixed("text")) == ("wicsum_ratio", round(0.2 * 65536))
