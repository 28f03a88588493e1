"""The bytes of a safetensors header, laid out as safetensors itself lays them out (ADR-064).

safetensors (`safetensors/src/tensor.rs`, `prepare`) sorts the tensors by
its dtype enum, highest first, then by name; gives each the next
`data_offsets` with no gaps; writes one compact JSON object with
``__metadata__`` first (when metadata was given, even empty) and then the
tensors in that order, each ``{"dtype":...,"shape":[...],"data_offsets":[b,e]}``;
and pads it with spaces to a multiple of 8, so the data starts 8-aligned.
Strings are escaped as its JSON writer escapes them (quote, backslash and
the control characters; other characters as UTF-8). The same dict therefore
gives the same bytes here and there. Its metadata is a hash map, so with
more than one metadata key safetensors' own key order varies from run to
run; this writer keeps the caller's order. A larger `alignment` pads the
header further, so the data starts at a multiple of it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional, TypeVar

from ..errors import InvalidArgumentError

__all__ = ["DTYPE_ORDER", "header", "order"]

# safetensors' Dtype enum, in declaration order: the sort key of `prepare`.
DTYPE_ORDER = {name: rank for rank, name in enumerate((
    "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
    "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"))}

# (name, safetensors dtype, shape, nbytes)
Planned = tuple[str, str, Sequence[int], int]


_E = TypeVar("_E", bound=tuple[Any, ...])


def order(entries: Sequence[_E]) -> list[_E]:
    """The entries (name, safetensors dtype, ...) in safetensors' order: dtype enum descending, then name."""
    ranked = sorted(entries, key=lambda e: e[0])
    return sorted(ranked, key=lambda e: DTYPE_ORDER.get(e[1], -1), reverse=True)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def header(entries: Sequence[Planned], metadata: Optional[Mapping[str, str]], alignment: int = 8) -> bytes:
    """The header (padded, without its 8-byte length) of `entries`, already in their order."""
    if type(alignment) is not int or alignment < 8 or alignment & (alignment - 1):
        raise InvalidArgumentError(f"save_safetensors: alignment {alignment!r} is not a power of two of 8 or more")
    parts = []
    if metadata is not None:
        parts.append(f'"__metadata__":{_text(dict(metadata))}')
    at = 0
    for name, dtype, shape, nbytes in entries:
        parts.append(f'{_text(name)}:{{"dtype":{_text(dtype)},"shape":{_text(list(shape))},'
                     f'"data_offsets":[{at},{at + nbytes}]}}')
        at += nbytes
    text = ("{" + ",".join(parts) + "}").encode("utf-8")
    padded = -(-(8 + len(text)) // alignment) * alignment - 8
    return text + b" " * (padded - len(text))
