"""`vrex niah --quick` on the shipped model (Qwen2.5-Coder-0.5B-Instruct from its PyPI wheels) and config, as a new
user runs it after the README's set-up: the table, the JSON contract, and a benchmark that measures something
(full attention answers the quick needles; retrieval fetches part of the haystack). The quick grid: 1K tokens, two
haystacks with chelsea and astronaut in the slots 50 % and window (swapped in the second), what questions only.
On a CPU that emulates bfloat16 (docs/decisions.md N15) the run asks float32, as the CLI's note tells a user to:
the default dtype's own path is the default tier's (tests/golden/test_niah.py, the tiny model)."""

import json

import pytest

from vrex.cli import main
from vrex.golden.cpu import native_bfloat16

pytestmark = pytest.mark.slow


def test_quick_niah_on_the_default_model(tmp_path, capsys):
    out = tmp_path / "niah.json"
    dtype = "float32" if native_bfloat16() is False else "bfloat16"
    assert main(["niah", "--quick", "--dtype", dtype, "--json", str(out), "-o", str(tmp_path / "plots"), "-q"]) == 0
    table = capsys.readouterr().out
    assert "niah method" in table and "resv" in table and "rekv" in table and "95% CI" in table
    r = json.loads(out.read_text())
    assert r["config"] == "qwen05" and r["model"]["sha256"].startswith("1d9614638d18")
    assert r["spec"]["dtype"] == dtype
    m = r["methods"]
    assert set(m) == {"full", "resv", "rekv"}
    asked = [q for q in r["questions"] if q["method"] == "full"]
    assert len(asked) == 4 and all(len(q["scores"]) == 5 and q["orders"] == 1 for q in asked)     # 5 options
    assert sorted(str(q["depth"]) for q in asked) == ["0.5", "0.5", "window", "window"]
    gone = set(r["dropped_groups"])
    kept = [q for q in asked if q["counted"] and f"what:{q['needle']}" not in gone]
    for name, v in m.items():
        n = v["niah"]
        assert n["n_questions"] == len(kept)
        assert not kept or (0.0 <= n["accuracy"] <= 1.0 and n["delta_points"] is not None)
        assert n["controls"]["n_questions"] == 2 - sum(f"what:{q['needle']}" in gone for q in asked
                                                       if not q["counted"])
    for name in ("resv", "rekv"):
        assert 0.0 < m[name]["niah"]["ratio"]["frame"] < 1.0     # part of the offloaded haystack is fetched
    hits = [q["hit_rate"] for q in r["questions"] if q["method"] == "resv" and q["depth"] == 0.5]
    assert hits and all(0.0 <= h <= 1.0 for h in hits)      # the needle at 50 % is offloaded at the question
    assert all((tmp_path / "plots" / f).is_file() for f in ("niah-heatmaps.png", "niah-accuracy-vs-traffic.png"))
    assert r["cells"]["1024/0/full"]["seconds"]["batch"] == 2          # the two haystacks ran as one batch
