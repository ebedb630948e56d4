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


def _module_graph():
    """Every module of ours (``vrex.…``) and the modules of ours it imports, at module level or inside a function;
    relative imports resolved, ``from pkg import sub`` counted as an import of the submodule."""
    files = {}
    for pkg, folder in PROJECT["package-dir"].items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            files[".".join([pkg, *parts])] = path
    graph = {}
    for mod, path in files.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package[:len(package) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" for a in node.names]
                targets.update(n if n in files else base for n in names)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
        resolved = set()
        for t in targets:
            while t and t not in files:
                t = t.rpartition(".")[0]
            if t and t != mod:
                resolved.add(t)
        graph[mod] = resolved
    return graph


def test_no_import_circles():
    """No module reaches itself through the imports of ours (lazy imports inside functions included)."""
    graph = _module_graph()
    circles, state = [], {}

    def visit(mod, stack):
        state[mod] = "open"
        for nxt in sorted(graph[mod]):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[mod] = "done"

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_module_graph_sees_relative_and_lazy_imports():
    """The circle check is only as good as its graph: a relative import and a lazy one are both edges."""
    graph = _module_graph()
    assert "vrex.hdl.dre.hcu" in graph["vrex.hdl.dre.top"]                 # relative, module level
    assert "vrex.golden.dre.wtu.exp_tensor" in graph["vrex.golden.dre.wtu.linear_tensor"]   # inside a function
