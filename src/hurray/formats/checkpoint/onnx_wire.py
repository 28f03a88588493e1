"""A reader of the protobuf wire format, for the parts of an ONNX model that
hold weights: the graph's initializers (TensorProto) and its nodes
(NodeProto with their AttributeProto), and the opset imports.

The input is hostile: every varint is at most 10 bytes, every length is
checked against the bytes of the message that holds it before anything is
read, group wire types are refused, and the walk descends only into the
messages it knows (model -> graph -> initializer / node -> attribute or
external-data entry), so nesting is bounded by that fixed depth and the
work by the file's size. A tensor's bytes are never copied: raw_data is an
(offset, length) span of the input. Every failure is a CorruptError that
says where.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from ...errors import CorruptError

__all__ = ["Attribute", "Initializer", "Model", "OnnxNode", "parse_model"]

MAX_RANK = 32
MAX_NAME = 1 << 16
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _fail(message: str) -> CorruptError:
    return CorruptError(f"load_checkpoint: ONNX: {message}")


def _varint(data: Any, at: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(10):
        if at + i >= end:
            raise _fail(f"a varint at byte {at} runs past the end of its message (byte {end})")
        byte = data[at + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if i == 9 and byte > 1:
                raise _fail(f"the varint at byte {at} does not fit in 64 bits")
            return value, at + i + 1
        shift += 7
    raise _fail(f"the varint at byte {at} is longer than 10 bytes")


def _fields(data: Any, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or offset, length) of each field in data[start:end]."""
    at = start
    while at < end:
        key, at = _varint(data, at, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _fail(f"field number 0 at byte {at}")
        if wire == _VARINT:
            value, at = _varint(data, at, end)
            yield number, wire, value, 0
        elif wire == _I64 or wire == _I32:
            width = 8 if wire == _I64 else 4
            if at + width > end:
                raise _fail(f"a {width}-byte field at byte {at} runs past the end of its message (byte {end})")
            yield number, wire, int.from_bytes(bytes(data[at:at + width]), "little"), width
            at += width
        elif wire == _LEN:
            length, at = _varint(data, at, end)
            if length > end - at:
                raise _fail(f"field {number} at byte {at} claims {length} bytes; its message has {end - at} left")
            yield number, wire, at, length
            at += length
        else:
            raise _fail(f"wire type {wire} (a group, or not protobuf) at byte {at}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(data: Any, at: int, length: int, what: str) -> str:
    if length > MAX_NAME:
        raise _fail(f"{what} of {length} bytes")
    try:
        return bytes(data[at:at + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(f"{what} at byte {at} is not UTF-8") from None


def _ints(data: Any, wire: int, value: int, length: int) -> list[int]:
    """A repeated int64 field's values: one varint, or a packed run of them."""
    if wire == _VARINT:
        return [_signed(value)]
    if wire != _LEN:
        raise _fail(f"a repeated integer field with wire type {wire}")
    out, at, end = [], value, value + length
    while at < end:
        v, at = _varint(data, at, end)
        out.append(_signed(v))
    return out


@dataclass
class Initializer:
    name: str = ""
    dims: list[int] = field(default_factory=list)
    data_type: int = 0
    raw: Optional[tuple[int, int]] = None  # (offset, length) of raw_data in the model's bytes
    external: dict[str, str] = field(default_factory=dict)
    location: int = 0  # 0 DEFAULT, 1 EXTERNAL
    other_data: bool = False  # values in float_data, int32_data, ... (not raw_data)


@dataclass
class Attribute:
    name: str = ""
    i: Optional[int] = None
    ints: list[int] = field(default_factory=list)


@dataclass
class OnnxNode:
    op_type: str = ""
    domain: str = ""
    name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass
class Model:
    ir_version: int = 0
    opsets: dict[str, int] = field(default_factory=dict)
    initializers: list[Initializer] = field(default_factory=list)
    nodes: list[OnnxNode] = field(default_factory=list)
    graph_inputs: list[str] = field(default_factory=list)


def _initializer(data: Any, start: int, end: int) -> Initializer:
    t = Initializer()
    for number, wire, value, length in _fields(data, start, end):
        if number == 1:
            t.dims.extend(_ints(data, wire, value, length))
            if len(t.dims) > MAX_RANK:
                raise _fail(f"an initializer with more than {MAX_RANK} dimensions")
        elif number == 2 and wire == _VARINT:
            t.data_type = value
        elif number == 8 and wire == _LEN:
            t.name = _text(data, value, length, "an initializer's name")
        elif number == 9 and wire == _LEN:
            t.raw = (value, length)
        elif number == 13 and wire == _LEN:
            key = val = ""
            for n2, w2, v2, l2 in _fields(data, value, value + length):
                if n2 == 1 and w2 == _LEN:
                    key = _text(data, v2, l2, "an external_data key")
                elif n2 == 2 and w2 == _LEN:
                    val = _text(data, v2, l2, "an external_data value")
            t.external[key] = val
        elif number == 14 and wire == _VARINT:
            t.location = value
        elif number in (4, 5, 6, 7, 10, 11):
            t.other_data = True
        elif number == 3:
            raise _fail("a segmented initializer (TensorProto.segment)")
    return t


def _attribute(data: Any, start: int, end: int) -> Attribute:
    a = Attribute()
    for number, wire, value, length in _fields(data, start, end):
        if number == 1 and wire == _LEN:
            a.name = _text(data, value, length, "an attribute's name")
        elif number == 3 and wire == _VARINT:
            a.i = _signed(value)
        elif number == 8:
            a.ints.extend(_ints(data, wire, value, length))
    return a


def _node(data: Any, start: int, end: int) -> OnnxNode:
    n = OnnxNode()
    for number, wire, value, length in _fields(data, start, end):
        if wire != _LEN:
            continue
        if number == 1:
            n.inputs.append(_text(data, value, length, "a node input"))
        elif number == 2:
            n.outputs.append(_text(data, value, length, "a node output"))
        elif number == 3:
            n.name = _text(data, value, length, "a node name")
        elif number == 4:
            n.op_type = _text(data, value, length, "an op_type")
        elif number == 7:
            n.domain = _text(data, value, length, "a domain")
        elif number == 5:
            a = _attribute(data, value, value + length)
            n.attributes[a.name] = a
    return n


def parse_model(data: Any) -> Model:
    """The weights' part of a ModelProto held in `data` (bytes-like, indexable)."""
    model = Model()
    graphs = 0
    for number, wire, value, length in _fields(data, 0, len(data)):
        if number == 1 and wire == _VARINT:
            model.ir_version = value
        elif number == 8 and wire == _LEN:
            domain, version = "", 0
            for n2, w2, v2, l2 in _fields(data, value, value + length):
                if n2 == 1 and w2 == _LEN:
                    domain = _text(data, v2, l2, "an opset domain")
                elif n2 == 2 and w2 == _VARINT:
                    version = _signed(v2)
            model.opsets[domain] = version
        elif number == 7 and wire == _LEN:
            graphs += 1
            if graphs > 1:
                raise _fail("the model holds two graphs")
            for n2, w2, v2, l2 in _fields(data, value, value + length):
                if w2 != _LEN:
                    continue
                if n2 == 5:
                    model.initializers.append(_initializer(data, v2, v2 + l2))
                elif n2 == 1:
                    model.nodes.append(_node(data, v2, v2 + l2))
                elif n2 == 11:
                    for n3, w3, v3, l3 in _fields(data, v2, v2 + l2):
                        if n3 == 1 and w3 == _LEN:
                            model.graph_inputs.append(_text(data, v3, l3, "a graph input's name"))
                elif n2 == 15:
                    raise _fail("sparse initializers are not read")
    if graphs == 0:
        raise _fail("the model holds no graph")
    return model
