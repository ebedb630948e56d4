"""Every path the CLI is given: a clear one-sentence error before any work, never an internal error, nothing lost."""

import pytest

from vrex.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def afile(tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep me\n")
    return f


CASES = [
    (("verilog", "--component", "hamming_lanes", "-c", "tiny", "-o", "{file}"),
     "-o {file}: this is a file, not a folder"),
    (("verilog", "--all", "-c", "tiny", "-o", "{file}/sub"), "-o {file}/sub: {file} is a file, so no folder can be made"),
    (("synth", "--component", "hamming_lanes", "-c", "tiny", "--json", "{file}/x.json"),
     "--json {file}/x.json: {file} is a file, so it cannot hold x.json"),
    (("synth", "--component", "hamming_lanes", "-c", "tiny", "--json", "{dir}"), "--json {dir}: this is a folder"),
    (("report", "-c", "tiny", "-o", "{file}"), "-o {file}: this is a file, not a folder"),
    (("sweep", "{dir}"), "SPEC {dir}: this is a folder; give the sweep specification (YAML) file."),
    (("sweep", "{dir}/none.yaml"), "SPEC {dir}/none.yaml: no such file"),
    (("perf", "-c", "tiny", "--plot", "{file}"), "--plot {file}: this is a file, not a folder"),
    (("perf", "-c", "tiny", "--json", "{file}/p.json"), "--json {file}/p.json: {file} is a file"),
    (("golden", "-c", "tiny", "--json", "{file}/g.json"), "--json {file}/g.json: {file} is a file"),
    (("golden-jobs", "-c", "tiny", "-o", "{dir}"), "--out {dir}: this is a folder"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(a[:1] + a[-2:-1]) for a, _ in CASES])
def test_bad_paths_are_one_sentence(argv, message, afile, tmp_path, capsys):
    fill = {"file": str(afile), "dir": str(tmp_path)}
    code, out, err = run(capsys, *(a.format(**fill) for a in argv))
    assert code == 2 and err.startswith("vrex: error: " + message.format(**fill)), err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err and "Traceback" not in err
    assert afile.read_text() == "keep me\n"


def test_os_errors_elsewhere_are_one_sentence(monkeypatch, capsys):
    """A file-system error the checks did not foresee is still a one-sentence error, not an internal one."""
    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/some/where")

    monkeypatch.setattr("vrex.synth.verilog.emit", fail)
    code, _, err = run(capsys, "verilog", "--component", "hcu", "-c", "tiny")
    assert code == 2 and err.strip().splitlines()[-1] == (
        "vrex: error: /some/where: permission denied; choose a location you can write to.")
