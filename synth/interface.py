"""Interface description of a generated design (``<top>.interface.json`` and ``<top>.interface.md``).

Everything comes from the design itself, so a new component is described without any code of its own:

- the Verilog ports (name, direction, width) are read from the emitted module header, and each is matched to the
  ``wiring.Component`` signature member it flattens (Amaranth joins member paths with ``__``);
- stream members (``amaranth.lib.stream.Signature``) are described field by field from their ``lib.data``
  payload layout (LSB offset, width, signedness, arrays), with the comment on the field's line in the
  ``StructLayout({...})`` literal of the ``vrex.hdl`` sources as the field's description;
- port descriptions and protocol notes come from the component class's numpydoc docstring (its ``Members``
  section, and every other section such as ``Protocol`` or ``Latency``).

A signature member without a Verilog port, or a port that is neither a member nor the clock/reset, is an internal
inconsistency and raises.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from amaranth.hdl import Shape
from amaranth.lib import data, stream, wiring

__all__ = ["verilog_ports", "describe", "interface_markdown", "STREAM_PROTOCOL"]

STREAM_PROTOCOL = ("valid/ready handshake (amaranth.lib.stream): a beat transfers on a rising clock edge where "
                   "valid and ready are both high; the source raises valid without waiting for ready and then holds "
                   "valid and the payload unchanged until the beat transfers; payload fields are packed LSB first "
                   "in the order listed.")
CLOCK_PORT, RESET_PORT = "clk", "rst"

_PORT_DECL = re.compile(r"^\s*(input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?(\\\S+|\w+)\s*;", re.M)


def verilog_ports(text: str, top: str) -> list[dict]:
    """Ports of module ``top`` in declaration order: ``{name, direction, width}``."""
    m = re.search(rf"^module\s+{re.escape(top)}\s*\(([^)]*)\)\s*;", text, re.M)
    if m is None:
        raise ValueError(f"module {top} not found in the Verilog")
    end = text.find("\nendmodule", m.end())
    order = [p.strip() for p in m.group(1).split(",") if p.strip()]
    decls = {}
    for d in _PORT_DECL.finditer(text, m.end(), end):
        hi, lo = d.group(2), d.group(3)
        decls[d.group(4).lstrip("\\")] = {"direction": d.group(1), "width": int(hi) - int(lo) + 1 if hi else 1}
    return [{"name": p, **decls[p]} for p in order]


# ---- docstrings and layout comments ---------------------------------------------------------------------------


def _sections(doc: str) -> tuple[str, dict]:
    """(text before the first section, {section title: body}) of a numpydoc docstring."""
    lines = doc.splitlines()
    heads = [i for i in range(len(lines) - 1)
             if lines[i].strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip())]
    first = heads[0] if heads else len(lines)
    intro = "\n".join(lines[:first]).strip().split("\n\n")
    summary = "\n\n".join(" ".join(par.split()) for par in intro if par.strip()).replace("``", "`")
    out = {}
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        out[lines[i].strip()] = "\n".join(lines[i + 2:end]).strip("\n").replace("``", "`")
    return summary, out


def _member_docs(body: str) -> dict:
    """``name : text`` entries of a Members section (``a, b : ...`` documents both), continuation lines joined."""
    docs, names, text = {}, [], []

    def close():
        for n in names:
            docs[n] = " ".join(" ".join(text).split())

    for line in body.splitlines():
        m = re.match(r"^([A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_]\w*)*)\s+:\s*(.*)$", line)
        if m and not line.startswith((" ", "\t")):
            close()
            names, text = [n.strip() for n in m.group(1).split(",")], [m.group(2)]
        elif names:
            text.append(line.strip())
    close()
    return {n: _strip_declaration(t) for n, t in docs.items()}


def _strip_declaration(text: str) -> str:
    """Drop a leading ``In(...)`` / ``Out(...)`` (the member's declaration, already in the tables) and turn RST
    literals into markdown ones."""
    m = re.match(r"^(In|Out)\(", text)
    if m:
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and ch == ")":
                text = text[i + 1:].strip()
                break
    return text.replace("``", "`")


@cache
def _layout_comments() -> dict:
    """{frozenset of field names: {field: comment}} from every ``StructLayout({...})`` literal in vrex.hdl."""
    import vrex.hdl

    out: dict = {}
    for folder in vrex.hdl.__path__:
        for path in sorted(Path(folder).rglob("*.py")):
            source = path.read_text()
            comments = {}
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type == tokenize.COMMENT:
                    comments[tok.start[0]] = tok.string.lstrip("#").strip()
            for node in ast.walk(ast.parse(source)):
                func = getattr(node, "func", None)
                name = getattr(func, "attr", getattr(func, "id", None))
                if name != "StructLayout" or not node.args or not isinstance(node.args[0], ast.Dict):
                    continue
                keys = [k for k in node.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                entry = out.setdefault(frozenset(k.value for k in keys), {})
                for k in keys:
                    if comments.get(k.lineno) and not entry.get(k.value):
                        entry[k.value] = comments[k.lineno]
    return out


# ---- shapes ---------------------------------------------------------------------------------------------------


def _type(shape) -> str:
    s = Shape.cast(shape)
    return f"{'signed' if s.signed else 'unsigned'}({s.width})"


def _fields(layout, prefix: str = "", lsb: int = 0) -> list[dict]:
    """One row per field of a ``lib.data`` layout (nested structs flattened as ``a.b``, arrays as one row plus
    their element's fields as ``a[*].b``)."""
    rows = []
    notes = _layout_comments().get(frozenset(name for name, _ in layout), {}) if isinstance(
        layout, data.StructLayout) else {}
    for name, f in layout:
        full, at = f"{prefix}{name}", lsb + f.offset
        row = {"name": full, "lsb": at, "width": f.width, "type": "struct", "doc": notes.get(name, "")}
        shape = f.shape
        if isinstance(shape, data.ArrayLayout):
            elem = shape.elem_shape
            row.update(type="array", length=shape.length, element_width=Shape.cast(elem).width,
                       element_type=_type(elem) if not isinstance(elem, data.Layout) else "struct")
            rows.append(row)
            if isinstance(elem, data.StructLayout):
                rows += _fields(elem, f"{full}[*].", at)
        elif isinstance(shape, data.StructLayout):
            rows.append(row)
            rows += _fields(shape, f"{full}.", at)
        else:
            row["type"] = _type(shape)
            rows.append(row)
    return rows


# ---- the description ------------------------------------------------------------------------------------------


def _stream(member, path, doc, port_of, ports) -> dict:
    """The record of one stream member: its ports, payload width and fields."""
    sig = member.signature
    shape = sig.members["payload"].shape
    names = {}
    for part in ("payload", "valid", "ready"):
        names[part] = port_of(path + (part,))
        constant = (part == "valid" and sig.always_valid) or (part == "ready" and sig.always_ready)
        if names[part] is None and not constant:
            raise ValueError(f"stream {'.'.join(path)}.{part} has no Verilog port")
        if names[part]:
            ports[names[part]]["stream"] = ".".join(path)
    fields = _fields(shape) if isinstance(shape, data.Layout) else [
        {"name": "", "lsb": 0, "width": Shape.cast(shape).width, "type": _type(shape), "doc": ""}]
    return {"name": ".".join(path), "direction": "input" if member.flow == wiring.In else "output",
            "payload_width": Shape.cast(shape).width, "ports": names, "doc": doc,
            "always_valid": sig.always_valid, "always_ready": sig.always_ready, "fields": fields}


def describe(component: str, spec, dut: wiring.Component, verilog_text: str, cfg, *, vlnv: str) -> dict:
    """The interface record of ``dut`` (component ``component``, Verilog module ``spec.top``)."""
    from vrex import __version__

    ports = {p["name"]: dict(p) for p in verilog_ports(verilog_text, spec.top)}
    summary, sections = _sections(inspect.getdoc(type(dut)) or "")
    member_docs = _member_docs(sections.pop("Members", ""))
    sections.pop("Parameters", None)
    streams, signals, groups, seen, seen_order = [], [], {}, set(), []

    def port_of(path) -> str | None:
        name = "__".join(path)
        if name in ports:
            seen.add(name)
            seen_order.append(name)
            ports[name].update(member=".".join(path), role="data")
            return name
        return None

    def walk(members, path):
        for key, member in members.items():
            here = path + (key,)
            doc = member_docs.get(key, "") if not path else ""
            if member.is_signature and isinstance(member.signature, stream.Signature):
                streams.append(_stream(member, here, doc, port_of, ports))
            elif member.is_signature:
                groups[".".join(here)] = doc
                walk(member.signature.members, here)
            else:
                name = port_of(here)
                if name is None:
                    raise ValueError(f"member {'.'.join(here)} has no Verilog port")
                signals.append({"name": ".".join(here), "port": name, "direction": ports[name]["direction"],
                                "width": ports[name]["width"], "type": _type(member.shape), "doc": doc,
                                "group": ".".join(path)})

    walk(dut.signature.members, ())
    for name, p in ports.items():
        if name in seen:
            continue
        if name == CLOCK_PORT:
            p["role"] = "clock"
        elif name == RESET_PORT:
            p["role"] = "reset"
        else:
            raise ValueError(f"Verilog port {name} of {spec.top} is not a member of the component's signature")
    from .sdc import ip_clock_mhz

    clock_mhz = ip_clock_mhz(cfg)
    ordered = [p for p in ports.values() if p.get("role") in ("clock", "reset")]
    ordered += [ports[name] for name in seen_order]
    return {
        "component": component, "top": spec.top, "vlnv": vlnv, "description": spec.description, "summary": summary,
        "config": cfg.name, "config_hash": cfg.hash(), "vrex": __version__,
        "clock": {"port": CLOCK_PORT, "edge": "rising", "mhz": clock_mhz} if CLOCK_PORT in ports else None,
        "reset": ({"port": RESET_PORT, "kind": "synchronous, active high; every register returns to its init value"}
                  if RESET_PORT in ports else None),
        "ports": ordered, "streams": streams, "signals": signals, "groups": groups,
        "protocol": {"streams": STREAM_PROTOCOL, **sections},
    }


# ---- markdown -------------------------------------------------------------------------------------------------


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") if text not in (None, "") else "—"


def _field_type(f: dict) -> str:
    if f["type"] == "array":
        return f"{f['length']} × {f['element_type']} (element i at bit {f['lsb']} + {f['element_width']}·i)"
    return f["type"]


def interface_markdown(d: dict) -> str:
    """The description as a markdown page."""
    out = [f"# `{d['top']}`: interface of component `{d['component']}`", "",
           f"{d['description']}. Config `{d['config']}` (hash `{d['config_hash']}`), vrex {d['vrex']}, FuseSoC "
           f"core `{d['vlnv']}`. Generated by `vrex verilog`; do not edit.", ""]
    if d["summary"]:
        out += [d["summary"], ""]
    if d["clock"] or d["reset"]:
        out += ["## Clock and reset", ""]
        if d["clock"]:
            out.append(f"- `{d['clock']['port']}`: single clock, {d['clock']['edge']} edge; constrained at "
                       f"{d['clock']['mhz']:g} MHz in the SDC (`technology.clock_mhz`, or `target_clock_mhz` when it is 0).")
        if d["reset"]:
            out.append(f"- `{d['reset']['port']}`: {d['reset']['kind']}.")
        out.append("")
    out += ["## Ports", "", "| Verilog port | direction | width | member | stream |", "|---|---|---|---|---|"]
    for p in d["ports"]:
        out.append(f"| `{p['name']}` | {p['direction']} | {p['width']} | {_cell(p.get('member') or p.get('role'))} | "
                   f"{_cell(p.get('stream'))} |")
    out.append("")
    if d["streams"]:
        out += ["## Streams", "", d["protocol"]["streams"], ""]
        for s in d["streams"]:
            handshake = ", ".join(f"`{n}`" for n in s["ports"].values() if n)
            out += [f"### `{s['name']}` ({s['direction']}, payload {s['payload_width']} bits)", ""]
            if s["doc"]:
                out += [s["doc"], ""]
            out += [f"Ports: {handshake}." + (" Always valid." if s["always_valid"] else "")
                    + (" Always ready (no back-pressure)." if s["always_ready"] else ""), "",
                    "| field | bits | width | type | description |", "|---|---|---|---|---|"]
            for f in s["fields"]:
                bits = f"{f['lsb'] + f['width'] - 1}:{f['lsb']}" if f["width"] > 1 else str(f["lsb"])
                out.append(f"| `{f['name'] or '(payload)'}` | {bits} | {f['width']} | {_cell(_field_type(f))} | "
                           f"{_cell(f['doc'])} |")
            out.append("")
    if d["signals"]:
        out += ["## Control and status signals", "", "| member | Verilog port | direction | type | description |",
                "|---|---|---|---|---|"]
        for s in d["signals"]:
            doc = s["doc"] or (f"(part of `{s['group']}`: {d['groups'][s['group']]})" if d["groups"].get(s["group"])
                               else "")
            out.append(f"| `{s['name']}` | `{s['port']}` | {s['direction']} | {s['type']} | {_cell(doc)} |")
        out.append("")
    notes = {k: v for k, v in d["protocol"].items() if k != "streams"}
    if notes:
        out += ["## Notes from the component's documentation", ""]
        for title, body in notes.items():
            out += [f"### {title}", "", body, ""]
    return "\n".join(out).rstrip("\n") + "\n"
