"""Checkpoint benchmarks (issue 25), run by bench/run.py; each measured up to a usable result.

- ``hurray.load_checkpoint(directory)`` of 4 shards and an index holding 256
  tensors, every tensor taken as a numpy view, against
  ``hurray.load_safetensors`` of one file holding the same tensors, taken
  the same way: the index and config are read once, each shard opened once.
- The first quantized weight of a 256 MiB compressed-tensors checkpoint
  (pack-quantized int4, groups of 128, fp16 scales): ``load_checkpoint`` +
  the weight + its first row dequantized by the C dequantizer, against
  safetensors' own ``safe_open`` + ``get_tensor`` of that weight's
  ``weight_packed`` alone (the codes, copied into an array, nothing
  decoded). safetensors has no checksum, so there is nothing to verify.

Page cache warm, the cases interleaved round by round, best of the rounds.
Returns (target rows, a markdown table).
"""
import json
import os
import tempfile
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

import hurray
from hurray.formats.checkpoint._graph import dequantize

SHARDS = 4
TENSORS = 256
MODULES = 32  # quantized modules of the 256 MiB checkpoint


def _best(cases, rounds):
    """Best seconds of each case, the cases interleaved round by round: a slow
    spell of a shared machine then meets every case, not one."""
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _every_view(opener, path):
    with opener(path) as f:
        for name in f:
            np.asarray(f[name])


def _sharded(tmp, rng):
    tensors = {f"model.layers.{i // 8}.block{i % 8}.weight": rng.standard_normal((16, 64), dtype=np.float32)
               for i in range(TENSORS)}
    names = sorted(tensors)
    directory = os.path.join(tmp, "sharded")
    os.mkdir(directory)
    weight_map = {}
    per = TENSORS // SHARDS
    for s in range(SHARDS):
        file = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        save_file(part, os.path.join(directory, file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"model_type": "llama"}, f)
    one = os.path.join(tmp, "one.safetensors")
    save_file(tensors, one, metadata={"format": "pt"})
    return directory, one


def _compressed(tmp, rng, total_bytes):
    """A pack-quantized int4 checkpoint as compressed-tensors lays it out, of about total_bytes."""
    rows = 4096
    cols = max(128, (total_bytes // MODULES) * 2 // rows // 128 * 128)  # int4: half a byte a weight
    tensors = {}
    for m in range(MODULES):
        prefix = f"model.layers.{m}.mlp.down_proj"
        tensors[f"{prefix}.weight_packed"] = rng.integers(-2**31, 2**31, (rows, cols // 8), dtype=np.int64) \
            .astype(np.int32)
        tensors[f"{prefix}.weight_scale"] = (rng.random((rows, cols // 128), dtype=np.float32) * 0.01) \
            .astype(np.float16)
        tensors[f"{prefix}.weight_shape"] = np.array([rows, cols], np.int64)
    directory = os.path.join(tmp, "ct")
    os.mkdir(directory)
    path = os.path.join(directory, "model.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    config = {"model_type": "llama", "quantization_config": {
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128,
            "dynamic": False}}},
        "format": "pack-quantized", "quant_method": "compressed-tensors", "quantization_status": "compressed",
        "version": "0.20.1"}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    first = sorted(n for n in tensors if n.endswith(".weight_packed"))[0]
    return directory, path, first, os.path.getsize(path)


def _first_weight_row(directory, name):
    with hurray.load_checkpoint(directory) as ck:
        return dequantize(ck[name], "float32", rows=(0, 1))


def _safe_open_packed(path, name):
    with safe_open(path, "np") as f:
        return f.get_tensor(name)


def checkpoints(rounds, total_bytes=256 << 20):
    """(rows of (target, measured, limit), markdown table) for bench/run.py."""
    rng = np.random.default_rng(0)
    loops = max(rounds, 5) * 4
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(__file__))) as tmp:
        directory, one = _sharded(tmp, rng)
        ct_dir, ct_file, packed, size = _compressed(tmp, rng, total_bytes)
        weight = packed[: -len("_packed")]
        row = _first_weight_row(ct_dir, weight)
        assert row.shape[0] == 1
        best = _best({
            "sharded": lambda: _every_view(hurray.load_checkpoint, directory),
            "single": lambda: _every_view(hurray.load_safetensors, one),
            "hurray first": lambda: _first_weight_row(ct_dir, weight),
            "safetensors first": lambda: _safe_open_packed(ct_file, packed),
        }, loops)
        sharded, single = best["sharded"], best["single"]
        hurray_first, safetensors_first = best["hurray first"], best["safetensors first"]
    mib = f"{size / 2**20:.0f} MiB"
    rows = [
        (f"load_checkpoint: {SHARDS} shards / load_safetensors: one file ({TENSORS} tensors, every view)",
         sharded / single, 1.5),
        (f"first quantized weight, row 0 dequantized / safe_open + get_tensor(weight_packed), {mib}",
         hurray_first / safetensors_first, 0.5),
    ]
    lines = ["", "| checkpoints | seconds |", "|---|---:|",
             f"| `load_checkpoint` of {SHARDS} shards + index, {TENSORS} tensors, every `np.asarray` | {sharded:.6f} |",
             f"| `load_safetensors` of one file, the same {TENSORS} tensors | {single:.6f} |",
             f"| `load_checkpoint(dir)[first weight]` + its row 0 dequantized, {mib} compressed-tensors | "
             f"{hurray_first:.6f} |",
             f"| safetensors `safe_open` + `get_tensor(weight_packed)` of that weight | {safetensors_first:.6f} |"]
    return rows, "\n".join(lines)


if __name__ == "__main__":
    found, text = checkpoints(3)
    for name, value, limit in found:
        print(f"{name}: {value:.3f} (limit {limit})")
    print(text)
