"""Loading configs: built-in names and YAML files (with line numbers in errors), and the field docs; and the YAML
reader of every YAML file the project reads (:func:`read_yaml`: configs, sweep specs, ``--set`` values, core
files), which refuses a mapping with the same key twice."""

from __future__ import annotations

import dataclasses
import os
from importlib import resources
from pathlib import Path

import yaml

from ..errors import ConfigError
from .convert import _build, _to_plain
from .top import Config

__all__ = ["UniqueKeyLoader", "read_yaml", "load_config", "builtin_config_names", "field_docs"]


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a mapping with the same key twice is a :class:`ConfigError` naming the key, the
    source and both lines (PyYAML keeps the last value silently, so ``lanes: 8`` ... ``lanes: 16`` would be 16 with
    no word). ``source`` names the document in the message; merge keys (``<<``) are left to PyYAML."""

    source = "<string>"

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:   # an unhashable key: SafeConstructor's own error says so
                    continue
                if first is not key_node:
                    a, b = first.start_mark.line + 1, key_node.start_mark.line + 1
                    where = f"lines {a} and {b}" if a != b else f"both on line {a}"
                    raise ConfigError(None, None, f"key {key!r} appears twice in one mapping ({where}); keep one.",
                                      source=self.source)
        return super().construct_mapping(node, deep=deep)


def read_yaml(text: str, source: str):
    """The YAML document ``text`` as Python data (safe loading, :class:`UniqueKeyLoader`); ``source`` (a file name)
    names it in errors. Malformed YAML raises ``yaml.YAMLError`` as ``yaml.safe_load`` does."""
    loader = UniqueKeyLoader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _key_lines(text: str) -> dict:
    """Map dotted keys to 1-based line numbers of their values in a YAML document."""
    lines = {}

    def walk(node, prefix):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = prefix + str(k.value)
                lines[key] = k.start_mark.line + 1
                walk(v, key + ".")

    try:
        walk(yaml.compose(text), "")
    except yaml.YAMLError:
        pass
    return lines


def builtin_config_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("vrex.configs").iterdir() if p.name.endswith(".yaml"))


def _resolve(name_or_path) -> tuple[str, str]:
    """Return (text, source label) for a built-in name (edge, server, smollm2, tiny) or a file path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or os.sep in str(name_or_path) or p.exists():
        try:
            return p.read_text(), str(name_or_path)
        except FileNotFoundError:
            raise ConfigError("--config", str(name_or_path), "no such file; give a YAML path or one of the built-in "
                              f"names {', '.join(builtin_config_names())}.") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError("--config", str(name_or_path), f"cannot be read ({e}).") from None
    res = resources.files("vrex.configs") / f"{name_or_path}.yaml"
    if not res.is_file():
        raise ConfigError("--config", str(name_or_path), "is neither a file nor a built-in config; built-in names "
                          f"are {', '.join(builtin_config_names())}.")
    return res.read_text(), f"{name_or_path} (built-in)"


def load_config(name_or_path=None) -> Config:
    """Load a config by built-in name or YAML path; ``None`` gives the built-in default (the edge system)."""
    if name_or_path is None:
        name_or_path = "edge"
    text, source = _resolve(name_or_path)
    try:
        data = read_yaml(text, source)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(None, None, f"malformed YAML: {problem}; fix the syntax at that line.",
                          source=source, line=line) from None
    _check_document(text, data, source)
    return _build(Config, data, "", source, _key_lines(text))


_START_HINT = "start from `vrex config show -c edge > my.yaml`"
_KINDS = {list: "a list", str: "a string", bool: "true or false", int: "a number", float: "a number"}


def _check_document(text: str, data, source: str) -> None:
    """An empty, comments-only or key-less file, or a top level that is not a mapping, is one clear error.

    Without this check an empty file would silently be the edge config (missing keys take its defaults).
    """
    if isinstance(data, dict) and data:
        return
    if isinstance(data, dict) or data is None:
        lines = [ln.strip() for ln in text.splitlines()]
        what = ("is empty" if not any(lines) else
                "holds only comments" if all(not ln or ln.startswith("#") for ln in lines) else "holds no keys")
        raise ConfigError(None, None, f"the file {what}, but a config file needs at least one key (the keys it "
                          f"leaves out take the edge defaults); {_START_HINT}.", source=source)
    kind = _KINDS.get(type(data), type(data).__name__)
    shown = repr(data) if len(repr(data)) <= 40 else repr(data)[:37] + "..."
    raise ConfigError(None, None, f"the top level is {kind} ({shown}), not a mapping of keys to values (name:, "
                      f"model:, resv:, dre: ...); {_START_HINT}.", source=source)


def field_docs(cls=Config, prefix="") -> list[tuple[str, object, str]]:
    """(dotted key, default, doc) for every leaf parameter, in declaration order."""
    out = []
    inst = cls()
    for f in dataclasses.fields(cls):
        v = getattr(inst, f.name)
        if dataclasses.is_dataclass(v):
            out += field_docs(type(v), prefix + f.name + ".")
        else:
            doc = f.metadata.get("doc", "")
            unit = f.metadata.get("unit")
            out.append((prefix + f.name, _to_plain(v), doc + (f" [{unit}]" if unit else "")))
    return out
