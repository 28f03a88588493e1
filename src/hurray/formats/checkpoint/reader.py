"""The Checkpoint mapping: a checkpoint as its library wrote it, one Tensor per weight (ADR-063).

A checkpoint is a directory (config.json, shards, model.safetensors.index.json,
or one model.safetensors; a GPTQ or AWQ quantize_config.json beside them) or
one file: .safetensors (with the config.json beside it, when there is one),
.onnx, .gguf or .hurray. The convention is recognised from the checkpoint's
own metadata: the quantization config's ``quant_method`` (compressed-tensors,
gptq, awq, fp8), mlx-lm's ``quantization`` dict, and bitsandbytes'
self-describing ``quant_state`` entries. An unknown ``quant_method`` is
refused at once, by name. Each convention claims its weights; every other
stored tensor is a plain tensor as it is.

The mapping is lazy: a weight is made when it is asked for, so a weight
the build refuses (an unknown version, an ambiguous convention, a config
that contradicts the tensors) raises its HurrayError then, naming it, and
the rest of the checkpoint still loads.
"""
from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Iterator
from typing import Any, Optional

from ...core.tensor import Tensor
from ...errors import InvalidArgumentError, UnsupportedError
from ...io._tensor_map import FileMapping
from . import awq, bitsandbytes, compressed_tensors, fp8_block, gptq, mlx
from ._claims import Claim
from ._graph import make_tensor
from .sources import CONFIG, Sources, read_json

__all__ = ["Checkpoint", "assemble", "read_config"]

_QUANT_CONFIGS = ("quantize_config.json", "quant_config.json")  # GPTQ's and AWQ's own files
_METHODS = {"compressed-tensors": compressed_tensors.claim, "gptq": gptq.claim, "awq": awq.claim,
            "fp8": fp8_block.claim}
_IGNORED = ("bitsandbytes",)  # self-describing: claimed from the stored names
_PARTS = operator.attrgetter("parts")


class Checkpoint(FileMapping):
    """A checkpoint: a read-only Mapping of weight names to Tensors, with `.config` and `.metadata`.

    Quantized weights are one quantized Tensor each (a version-2 graph over
    the stored tensors, zero-copy); ``scheme(name)`` says how in words and
    ``convention(name)`` names the library's convention ("plain" for the rest).
    """

    _kind = "checkpoint"

    def __init__(self, path: str, sources: Any, config: Optional[dict[str, Any]],
                 claims: dict[str, Claim], plain: list[str]) -> None:
        self._path = path
        self._sources = sources
        self._config = config
        self._claims = claims
        self._order: Optional[list[str]] = None  # made when first asked for: opening needs only the claims
        self._plain_list = plain
        self._plain = set(plain)
        files = sources.files_by_name()
        if not claims and len(plain) == len(files):
            self._direct = dict(files)  # plain tensors, one lookup away
        else:
            self._direct = {name: files[name] for name in plain if name in files}

    @property
    def config(self) -> Optional[dict[str, Any]]:
        """config.json as parsed (None when the checkpoint has none)."""
        return None if self._config is None else dict(self._config)

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(getattr(self._sources, "metadata", {}) or {})

    def __getitem__(self, name: str) -> Tensor:
        direct = self._direct.get(name)
        if direct is not None:
            return direct[name]  # the file checks that it is open
        self._check_open()
        claim = self._claims.get(name)
        if claim is not None:
            built = claim.make(self._sources)
            return make_tensor(built.descriptor, built.arrays)
        if name in self._plain:
            return self._sources.plain(name)
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list[str]:
        order = self._order
        if order is None:
            order = self._order = _in_file_order(self._sources, self._claims, self._plain_list)
        return order

    def __contains__(self, name: object) -> bool:
        return name in self._claims or name in self._plain

    def convention(self, name: str) -> str:
        """The library convention that stores `name` ("plain" for a tensor stored as it is)."""
        if name in self._claims:
            return self._claims[name].convention
        if name in self._plain:
            return "plain"
        raise KeyError(name)

    def parts(self, name: str) -> tuple[str, ...]:
        """The stored tensors the weight `name` is made of (itself for a plain tensor)."""
        if name in self._claims:
            return self._claims[name].parts
        if name in self._plain:
            return (name,)
        raise KeyError(name)

    def scheme(self, name: str) -> str:
        """The weight's quantization in words, e.g. 'int4 affine, groups of 128, fp16 scales (GPTQ v1)'."""
        self._check_open()
        if name in self._claims:
            return self._claims[name].make(self._sources).words
        if name in self._plain:
            return "plain"
        raise KeyError(name)

    def _release(self) -> None:
        self._sources.close()


def _in_file_order(sources: Any, claims: dict[str, Claim], plain: list[str]) -> list[str]:
    """The names in the order the files list them, each weight where its first stored part is."""
    if not claims:
        return list(plain)
    first: dict[str, str] = {}
    for name, claim in claims.items():
        for part in (name, *claim.parts):
            first.setdefault(part, name)
    plain_set = set(plain)
    order: list[str] = []
    seen: set[str] = set()
    for stored in [*sources.visible(), *claims]:
        found = first.get(stored, stored if stored in plain_set else None)
        if found is not None and found not in seen:
            seen.add(found)
            order.append(found)
    return order


def read_config(directory: str) -> Optional[dict[str, Any]]:
    path = os.path.join(directory, CONFIG)
    if not os.path.isfile(path):
        return None
    config = read_json(path, "load_checkpoint")
    if not isinstance(config, dict):
        raise InvalidArgumentError(f"load_checkpoint: {path!r} is not a JSON object")
    if not isinstance(config.get("quantization_config"), dict) and "quantization" not in config:
        for other in _QUANT_CONFIGS:  # GPTQ / AWQ keep theirs beside config.json
            extra = os.path.join(directory, other)
            if os.path.isfile(extra):
                quant = read_json(extra, "load_checkpoint")
                if isinstance(quant, dict):
                    config = {**config, "quantization_config": quant}
                break
    return config


def _quant_method(config: dict[str, Any]) -> Optional[str]:
    quant = config.get("quantization_config")
    if isinstance(quant, dict):
        method = quant.get("quant_method")
        if method is None and isinstance(config.get("quantization"), dict):
            return None  # mlx-lm writes its quantization dict twice; its loader reads "quantization"
        if method is None and "w_bit" in quant:
            return "awq"  # AutoAWQ's quant_config.json
        if method is None and "bits" in quant and "group_size" in quant and "desc_act" in quant:
            return "gptq"  # AutoGPTQ's quantize_config.json
        return method if isinstance(method, str) else repr(method)
    return None


def claim_all(sources: Sources, config: Optional[dict[str, Any]], where: str) -> dict[str, Claim]:
    """Every convention's claims over `sources` (names that two conventions claim are refused)."""
    claims: dict[str, Claim] = {}
    found: list[dict[str, Claim]] = [bitsandbytes.claim(sources)]
    if config is not None:
        method = _quant_method(config)
        if method is not None and method not in _IGNORED:
            claim = _METHODS.get(method)
            if claim is None:
                raise UnsupportedError(f"load_checkpoint: {where!r}: quant_method {method!r} is not a convention "
                                       f"this build reads ({', '.join(sorted(_METHODS))}, bitsandbytes, mlx-lm)")
            found.append(claim(sources, config["quantization_config"]))
    if mlx.applies(sources, config):
        found.append(mlx.claim(sources, config))
    for group in found:
        both = claims.keys() & group.keys()  # set operations in C: no Python per claim
        if both:
            name = next(n for n in group if n in both)
            raise UnsupportedError(f"load_checkpoint: tensor {name!r} is claimed by both "
                                   f"{claims[name].convention} and {group[name].convention}: ambiguous")
        claims.update(group)
    return claims


def assemble(path: str, sources: Sources, config: Optional[dict[str, Any]]) -> Checkpoint:
    claims = claim_all(sources, config, path)
    plain = list(sources.visible())
    if claims:
        consumed = set(itertools.chain.from_iterable(map(_PARTS, claims.values())))
        consumed.update(claims)
        plain = list(itertools.filterfalse(consumed.__contains__, plain))
    return Checkpoint(path, sources, config, claims, plain)
