"""scripts/golden_extract.py: an extract names the rule of the config as shipped, and a report of another config
hash (another rule or model) is refused in one sentence."""

import importlib.util
import json
from pathlib import Path

from vrex.config import load_config

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "golden_extract.py"


def _script():
    spec = importlib.util.spec_from_file_location("golden_extract", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_source_names_the_shipped_rule_and_a_stale_report_is_refused(tmp_path, capsys):
    ge = _script()
    extracts = sorted((Path(__file__).resolve().parents[2] / "perf" / "data" / "real_llm").glob("golden-*.json"))
    assert len(extracts) == 9
    for path in extracts:                       # every shipped extract is its config's as shipped, rule named
        shipped = json.loads(path.read_text())
        assert shipped["config_hash"] == load_config(shipped["config"]).hash(), path.name
        assert "(row p 0.9 / 0.99, frame / text)" in shipped["source"], path.name
    report = {"config": "qwen05", "config_hash": load_config("qwen05").with_overrides(
        {"resv.text_row_mass_p": 0.9}).hash()}
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(report))
    assert ge.main([str(stale), str(tmp_path / "out.json"), "--command", "vrex golden …", "--wall", "1",
                    "--git", "0"]) == 2
    err = capsys.readouterr().err
    assert "ships as" in err and "rerun its vrex golden command" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()
