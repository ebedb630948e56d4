import dataclasses
from pathlib import Path

import pytest

from conftest import config_error
import yaml

from vrex.config import Config, ConfigError, builtin_config_names, field_docs, load_config


def test_builtin_configs_load_and_differ():
    assert builtin_config_names() == ["edge", "gemma3", "qwen05", "server", "smollm2", "tiny"]
    hashes = {n: load_config(n).hash() for n in builtin_config_names()}
    assert len(set(hashes.values())) == len(hashes)


def test_default_is_the_paper_edge_system():
    cfg = load_config()
    assert cfg == load_config("edge")
    assert (cfg.resv.hash_bits, cfg.resv.hamming_threshold) == (32, 7)
    # the selection rule chosen from real-LLM measurements (docs/decisions.md): exp2 weights, per-stage ratios
    assert (cfg.resv.score_transform, cfg.dre.wtu.mode) == ("exp2", "histogram")
    assert (cfg.resv.wicsum_ratio, cfg.resv.text_wicsum_ratio) == (0.6, 0.2)
    assert (cfg.dre.hcu.lanes, cfg.dre.wtu.lanes, cfg.system.cores, cfg.system.clock_mhz) == (16, 16, 8, 800.0)
    assert (cfg.model.layers, cfg.model.query_heads, cfg.model.kv_heads, cfg.model.head_dim) == (32, 32, 8, 128)
    # the DRE memories of paper Fig. 10: 128 B + 4 KB + 8 KB + 8 KB = 20.125 KB
    d = cfg.dre
    assert d.hcu.current_memory_bytes + d.hcu.code_memory_bytes + d.wtu.score_memory_bytes \
        + d.wtu.count_memory_bytes == 20.125 * 1024
    assert cfg.hcu_capacity == 1024 and cfg.hcu_frame_tokens == 32 and cfg.dre.wtu.row_capacity == 4096


def test_edge_yaml_lists_every_key_with_its_default():
    text = (Path(__file__).parent.parent / "configs" / "edge.yaml").read_text()
    assert Config.from_dict(yaml.safe_load(text)).hash() == Config().hash()
    flat = {k for k, _, _ in field_docs()}
    for key in flat:
        assert key.split(".")[-1] + ":" in text, key


def test_hash_ignores_name_and_tracks_parameters():
    cfg = load_config("tiny")
    assert dataclasses.replace(cfg, name="other", description="x").hash() == cfg.hash()
    assert cfg.with_overrides({"dre.hcu.lanes": 8}).hash() != cfg.hash()


def test_yaml_round_trip(tmp_path):
    for name in builtin_config_names():
        cfg = load_config(name)
        p = tmp_path / f"{name}.yaml"
        p.write_text(cfg.dump_yaml())
        assert load_config(str(p)) == cfg


_err = config_error


def test_unknown_key_names_key_and_line(tmp_path):
    msg = _err(tmp_path, "name: x\nresv:\n  hash_bit: 32\n")
    assert msg.startswith("bad.yaml, line 3: resv.hash_bit = 32: is not a configuration key; valid keys of resv are:")


def test_wrong_type(tmp_path):
    assert _err(tmp_path, "dre:\n  hcu:\n    lanes: four\n") == \
        "bad.yaml, line 3: dre.hcu.lanes = 'four': must be an integer."
    assert _err(tmp_path, "resv:\n  include_current_frame: 1\n") == \
        "bad.yaml, line 2: resv.include_current_frame = 1: must be true or false."
    assert _err(tmp_path, "dre:\n  wtu:\n    mode: fast\n") == \
        "bad.yaml, line 3: dre.wtu.mode = 'fast': must be one of 'early_exit', 'histogram', 'topk'."


def test_out_of_range(tmp_path):
    assert _err(tmp_path, "resv:\n  wicsum_ratio: 1.5\n") == "bad.yaml, line 2: resv.wicsum_ratio = 1.5: must be ≤ 1.0."
    assert _err(tmp_path, "dre:\n  hcu:\n    lanes: 0\n") == "bad.yaml, line 3: dre.hcu.lanes = 0: must be ≥ 1."


def test_inconsistent_combinations(tmp_path):
    assert _err(tmp_path, "dre:\n  hcu:\n    bits_per_cycle: 5\n") == \
        "bad.yaml, line 3: dre.hcu.bits_per_cycle = 5: must divide resv.hash_bits (32)."
    assert _err(tmp_path, "dre:\n  wtu:\n    lanes: 5\n") == \
        "bad.yaml, line 3: dre.wtu.lanes = 5: must divide the row capacity (4096 scores in the score memory)."
    assert _err(tmp_path, "model:\n  kv_heads: 5\n").startswith(
        "bad.yaml: model.query_heads = 32: must be a multiple of model.kv_heads (5)")


def test_malformed_yaml_names_the_line(tmp_path):
    assert _err(tmp_path, "name: x\nmodel:\n  layers: [1\n  hidden: 2\n").startswith(
        "bad.yaml, line 4: malformed YAML:")


def test_a_key_twice_in_one_mapping_names_the_key_and_both_lines(tmp_path):
    assert _err(tmp_path, "name: x\ndre:\n  hcu:\n    lanes: 8\n    bits_per_cycle: 4\n\n    lanes: 16\n") == \
        "bad.yaml: key 'lanes' appears twice in one mapping (lines 4 and 7); keep one."
    assert _err(tmp_path, "resv: {hash_bits: 16}\nname: x\nresv:\n  wicsum_ratio: 0.5\n") == \
        "bad.yaml: key 'resv' appears twice in one mapping (lines 1 and 3); keep one."
    assert _err(tmp_path, "dre: {hcu: {lanes: 8, lanes: 16}}\n") == \
        "bad.yaml: key 'lanes' appears twice in one mapping (both on line 1); keep one."
    # the same key in two different mappings is fine
    assert load_config_text(tmp_path, "dre:\n  hcu:\n    lanes: 8\n  wtu:\n    lanes: 8\n").dre.wtu.lanes == 8


def load_config_text(tmp_path, text):
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    return load_config(str(path))


def test_a_key_twice_is_one_line_on_the_command_line(tmp_path, capsys):
    from vrex.cli import main

    twice = tmp_path / "twice.yaml"
    twice.write_text("name: x\ndre:\n  hcu:\n    lanes: 8\n    lanes: 16\n")
    assert main(["config", "validate", str(twice)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (f"vrex: error: {twice}: key 'lanes' appears twice in one mapping "
                                                   "(lines 4 and 5); keep one.\n")
    from vrex.cli import parse_override

    with pytest.raises(ConfigError, match=r"^--set 'dre.hcu={lanes: 8, lanes: 4}': key 'lanes' appears twice in one "
                                          r"mapping \(both on line 1\); keep one.$"):
        parse_override("dre.hcu={lanes: 8, lanes: 4}")


_NEEDS_A_KEY = ("but a config file needs at least one key (the keys it leaves out take the edge defaults); start from "
                "`vrex config show -c edge > my.yaml`.")
_NOT_A_MAPPING = ("not a mapping of keys to values (name:, model:, resv:, dre: ...); start from "
                  "`vrex config show -c edge > my.yaml`.")


@pytest.mark.parametrize("text, message", [
    ("", f"bad.yaml: the file is empty, {_NEEDS_A_KEY}"),
    ("\n  \n", f"bad.yaml: the file is empty, {_NEEDS_A_KEY}"),
    ("# my config\n\n  # resv: {hash_bits: 16}\n", f"bad.yaml: the file holds only comments, {_NEEDS_A_KEY}"),
    ("---\n", f"bad.yaml: the file holds no keys, {_NEEDS_A_KEY}"),
    ("{}\n", f"bad.yaml: the file holds no keys, {_NEEDS_A_KEY}"),
    ("- a\n- b\n", f"bad.yaml: the top level is a list (['a', 'b']), {_NOT_A_MAPPING}"),
    ("[]\n", f"bad.yaml: the top level is a list ([]), {_NOT_A_MAPPING}"),
    ("edge\n", f"bad.yaml: the top level is a string ('edge'), {_NOT_A_MAPPING}"),
    ("0\n", f"bad.yaml: the top level is a number (0), {_NOT_A_MAPPING}"),
], ids=["empty", "blank", "comments", "document-only", "empty-mapping", "list", "empty-list", "string", "zero"])
def test_a_config_file_without_keys_is_an_error(tmp_path, text, message):
    """An empty file (or one of comments only, or no mapping at the top) is never silently the edge config."""
    assert _err(tmp_path, text) == message


def test_empty_config_on_the_command_line_writes_nothing(tmp_path, capsys):
    from vrex.cli import main

    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n")
    for argv in (["config", "validate", str(empty)], ["config", "show", "-c", str(empty)],
                 ["synth", "-c", str(empty), "--component", "hamming_lanes", "--json", str(tmp_path / "f.json")],
                 ["verilog", "-c", str(empty), "--component", "wtu", "-o", str(tmp_path / "pkg")]):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err == (f"vrex: error: {empty}: the file holds only comments, "
                                                       f"{_NEEDS_A_KEY}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.yaml"]


def test_missing_file_and_unknown_name():
    with pytest.raises(ConfigError, match=r"no such file"):
        load_config("does/not/exist.yaml")
    with pytest.raises(ConfigError, match=r"neither a file nor a built-in config; built-in names are edge, gemma3, qwen05, server, smollm2, tiny"):
        load_config("nosuchname")


def test_overrides_validate():
    cfg = load_config("tiny")
    assert cfg.with_overrides({"dre.wtu.buckets": 4}).dre.wtu.buckets == 4
    with pytest.raises(ConfigError, match=r"dre\.hcu\.nope = 1: is not a configuration key"):
        cfg.with_overrides({"dre.hcu.nope": 1})
    with pytest.raises(ConfigError, match=r"resv\.hamming_threshold = 40: must be ≤ resv\.hash_bits \+ 1 \(17\)"):
        cfg.with_overrides({"resv.hamming_threshold": 40})


def test_derived_widths():
    w = load_config("edge").dre.wtu
    assert (w.product_bits, w.acc_bits) == (32, 44)
    assert load_config("edge").ratio_fixed == round(0.9 * 65536)      # the row rule's p (resv.row_mass_p)
    assert load_config("edge").with_overrides({"resv.threshold_mass": "offloaded"}).ratio_fixed == round(0.6 * 65536)


EXP2 = "resv:\n  score_transform: exp2\ndre:\n  wtu:\n    mode: histogram\n"


@pytest.mark.parametrize("text, message", [
    ("dre:\n  wtu:\n    exp_lut_entries: 12\n", "line 3: dre.wtu.exp_lut_entries = 12: must be a power of two."),
    ("dre:\n  wtu:\n    refine_bins: 24\n", "line 3: dre.wtu.refine_bins = 24: must be a power of two."),
    ("dre:\n  wtu:\n    bucket_octaves: 3\n", "line 3: dre.wtu.bucket_octaves = 3: must be a power of two."),
    (EXP2 + "    score_frac_bits: 3\n", "bad.yaml: dre.wtu.exp_lut_entries = 16: must be ≤ 2^dre.wtu.score_frac_bits "
                                         "(8): the LUT is indexed by fraction bits of the score."),
    (EXP2 + "    refine_passes: 3\n", "line 6: dre.wtu.refine_passes = 3: needs 12 bits of a score's position in its "
                                       "bin (log2(refine_bins) each), but a bin of dre.wtu.bucket_octaves (2) octaves "
                                       "at score_frac_bits (8) has 9."),
    (EXP2 + "    exp_mantissa_bits: 24\n    count_bits: 24\n    count_memory_bytes: 12288\n",
     "dre.wtu.exp_mantissa_bits = 24: with count_bits (24) and bucket_octaves (2) gives 49-bit weight terms; at most "
     "48 are supported."),
    (EXP2 + "    exp_mantissa_bits: 24\n    count_bits: 20\n    bucket_octaves: 4\n    score_memory_bytes: 1048576\n"
            "    count_memory_bytes: 1310720\n",
     "dre.wtu.exp_mantissa_bits = 24: gives 67-bit row sums over 524288 clusters; at most 62 are supported."),
    ("dre:\n  wtu:\n    mode: early_exit\n", "dre.wtu.mode = 'early_exit': cannot run resv.score_transform = exp2"),
    ("resv:\n  wicsum_ratio: 0.9\n  wicsum_guard: 0.2\n", "resv.wicsum_ratio = 0.9: plus resv.wicsum_guard (0.2) "
                                                        "must be ≤ 1.0, the largest ratio the WTU's ratio input holds."),
    ("resv:\n  text_wicsum_ratio: 0.000001\n", "resv.text_wicsum_ratio = 1e-06: plus resv.wicsum_guard rounds to 0 in "
                                             "Q0.16 (dre.wtu.ratio_bits); raise the ratio or ratio_bits."),
])
def test_exp2_and_ratio_rules(tmp_path, text, message):
    assert message in _err(tmp_path, text)


def test_exp2_rules_apply_only_with_the_exp2_transform():
    cfg = load_config("tiny").with_overrides({"dre.wtu.score_frac_bits": 2, "dre.wtu.refine_passes": 8})
    assert cfg.dre.wtu.refine_passes == 8
    w = load_config("edge").dre.wtu
    assert (w.exp_term_bits, w.exp_sum_bits) == (16 + 8 + 1, 25 + 12 + 1)


def test_stage_ratios_and_guard():
    cfg = load_config("edge").with_overrides({"resv.threshold_mass": "offloaded", "resv.wicsum_ratio": 0.5,
                                              "resv.text_wicsum_ratio": 0.25, "resv.wicsum_guard": 0.125})
    assert (cfg.stage_ratio_fixed("frame"), cfg.stage_ratio_fixed("text"), cfg.ratio_fixed) == (40960, 24576, 40960)
