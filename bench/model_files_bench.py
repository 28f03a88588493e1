"""Model-file benchmarks (issue 13), run by bench/run.py: what a user runs, up to a usable result.

- ``np.asarray(hurray.load_gguf(path)[name])`` (open, parse, map, one
  tensor, up to its numpy view) on a 256 MiB file of 64 tensors versus a
  one-tensor file: the cost follows the header, not the file's size. (The
  view, not the Tensor alone: a row that times a lazy object is a defect.)
- ``python -m hurray convert`` of a 256 MiB safetensors file to .hurray
  (through ``hurray.convert.convert``, in process) versus a plain copy of
  the same bytes. convert writes to a temporary file, syncs it and renames
  it, like every Hurray writer; the baseline copy (shutil.copyfile) is
  synced too, so both leave the bytes equally durable; the unsynced copy is
  shown beside them.

Page cache warm, best of the rounds. Returns (target rows, a table of times).
"""
import os
import shutil
import tempfile
import time

import numpy as np

import hurray
from hurray import convert

TENSORS = 64


def _best(fn, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _open_one(path, name):
    with hurray.load_gguf(path) as f:
        return np.asarray(f[name])


def _synced_copy(source, target):
    shutil.copyfile(source, target)
    with open(target, "rb+") as f:
        os.fsync(f.fileno())


def model_files(rounds, total_bytes=256 << 20):
    """(rows of (target, measured, limit), markdown table) for bench/run.py."""
    per = total_bytes // TENSORS
    rng = np.random.default_rng(0)
    tensors = {f"blk.{i}.weight": rng.standard_normal(per // 4, dtype=np.float32).reshape(-1, 256)
               for i in range(TENSORS)}
    name = "blk.0.weight"
    loops = max(rounds, 5)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(__file__))) as tmp:
        big, one = os.path.join(tmp, "big.gguf"), os.path.join(tmp, "one.gguf")
        hurray.save_gguf(big, tensors)
        hurray.save_gguf(one, {name: tensors[name]})
        gguf_big = _best(lambda: _open_one(big, name), loops * 20)
        gguf_one = _best(lambda: _open_one(one, name), loops * 20)

        st = os.path.join(tmp, "model.safetensors")
        hurray.save_safetensors(st, tensors)
        out, copy = os.path.join(tmp, "model.hurray"), os.path.join(tmp, "copy.safetensors")
        conversion = _best(lambda: convert(st, out), loops)
        synced = _best(lambda: _synced_copy(st, copy), loops)
        unsynced = _best(lambda: shutil.copyfile(st, copy), loops)
        size = os.path.getsize(st)
    mib = f"{total_bytes >> 20} MiB"
    rows = [
        (f"np.asarray(load_gguf(path)[name]): {mib} file / one-tensor file", gguf_big / gguf_one, 2.0),
        (f"convert {mib} .safetensors -> .hurray / synced file copy", conversion / synced, 1.5),
    ]
    lines = ["", f"| model files ({size / 2**20:.0f} MiB, {TENSORS} float32 tensors) | seconds |", "|---|---:|",
             f"| `np.asarray(hurray.load_gguf(path)[name])`, {mib} file | {gguf_big:.6f} |",
             f"| `np.asarray(hurray.load_gguf(path)[name])`, one-tensor file | {gguf_one:.6f} |",
             f"| `convert` .safetensors -> .hurray (temp, fsync, rename) | {conversion:.3f} |",
             f"| `shutil.copyfile` + fsync | {synced:.3f} |",
             f"| `shutil.copyfile` without fsync | {unsynced:.3f} |"]
    return rows, "\n".join(lines)


if __name__ == "__main__":
    found, text = model_files(3)
    print(text)
    for label, value, limit in found:
        print(f"{label}: {value:.2f} (at most {limit})")
