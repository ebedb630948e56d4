"""Conversion between plain data and the section dataclasses: typed, checked building and back to dicts."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Literal, get_args, get_origin

from ..errors import ConfigError
from .fields import _fail


def _to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [_to_plain(v) for v in obj]
    return obj


def _hashed_plain(obj) -> dict:
    """The plain dict of a section that ``Config.hash`` digests: :func:`_to_plain`, without the fields that hold their
    ``omit_from_hash_at`` value and those whose ``hashed_only_if`` condition does not hold (fields.param)."""
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        only_if = f.metadata.get("hashed_only_if")
        if dataclasses.is_dataclass(v):
            out[f.name] = _hashed_plain(v)
        elif only_if is not None and getattr(obj, only_if[0]) != only_if[1]:
            continue
        elif "omit_from_hash_at" not in f.metadata or v != f.metadata["omit_from_hash_at"]:
            out[f.name] = _to_plain(v)
    return out


def _type_name(tp) -> str:
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if get_origin(tp) is tuple:
        return f"a list of {_type_name(get_args(tp)[0])}"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


def _coerce(tp, value, key):
    origin = get_origin(tp)
    if origin is Literal:
        if value not in get_args(tp):
            _fail(key, value, f"must be {_type_name(tp)}.")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or not value:
            _fail(key, value, f"must be {_type_name(tp)} (non-empty).")
        return tuple(_coerce(get_args(tp)[0], v, key) for v in value)
    if tp is bool:
        if not isinstance(value, bool):
            _fail(key, value, "must be true or false.")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(key, value, "must be an integer.")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            _fail(key, value, "must be a finite number.")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            _fail(key, value, "must be a string.")
        return value
    raise TypeError(tp)


def _build(cls, data, prefix, source, lines):
    hints = typing.get_type_hints(cls)
    if not isinstance(data, dict):
        key = prefix.rstrip(".") or "<top level>"
        raise ConfigError(key, data, "must be a mapping of keys to values.", source=source, line=lines.get(key))
    names = {f.name for f in dataclasses.fields(cls)}
    for k in data:
        if k not in names:
            key = prefix + str(k)
            close = ", ".join(sorted(names))
            raise ConfigError(key, data[k], f"is not a configuration key; valid keys {'of ' + prefix.rstrip('.') if prefix else 'at the top level'} "
                              f"are: {close}.",
                              source=source, line=lines.get(key))
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        key, tp, value = prefix + f.name, hints[f.name], data[f.name]
        try:
            if dataclasses.is_dataclass(tp):
                kwargs[f.name] = _build(tp, value, key + ".", source, lines)
            else:
                kwargs[f.name] = _coerce(tp, value, key)
        except ConfigError as e:
            if e.source is None:
                raise ConfigError(e.key, e.value, e.rule, source=source, line=lines.get(e.key)) from None
            raise
    try:
        return cls(**kwargs)
    except ConfigError as e:
        full = e.key if "." in e.key else prefix + e.key
        raise ConfigError(full, e.value, e.rule, source=source, line=lines.get(full, lines.get(e.key))) from None
