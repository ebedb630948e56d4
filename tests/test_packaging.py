"""Layout contracts: the namespace mapping, and the dependency direction between packages."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed():
    mapping = PROJECT["package-dir"]
    listed = set(PROJECT["packages"])
    for pkg, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            name = ".".join([pkg, *rel.parts])
            assert name in listed, f"{name} ({init.parent}) is missing from [tool.setuptools] packages"


def _imports(folder):
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = "." * node.level + node.module if node.level else node.module
                yield path, mod
            elif isinstance(node, ast.Import):
                for a in node.names:
                    yield path, a.name


def test_hdl_never_imports_golden():
    bad = [(p.name, m) for p, m in _imports("hdl") if "golden" in m]
    assert not bad, bad


def test_golden_imports_only_config_of_ours():
    allowed = {"vrex.config", "vrex.errors"}
    bad = [(p.name, m) for p, m in _imports("golden")
           if m.startswith("vrex") and not m.startswith("vrex.golden") and m not in allowed]
    assert not bad, bad
