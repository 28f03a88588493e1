"""The dequantizer in C (issue 23, ADR-055), run by bench/run.py: 16M elements to float32.

Every case is measured side by side in one process, in interleaved rounds,
best round kept:

- ``hurray_dequantize`` of a 4096 x 4096 tensor into a preallocated,
  pre-faulted float32 output (64 MiB), single-threaded, called through cffi
  (the buffer list is made once, outside the timing, as gguf-py's input
  array is);
- ``np.copyto`` of 64 MiB of float32 between two pre-faulted arrays: the
  memcpy of the output that the first column is compared with;
- for the GGML types gguf-py dequantizes, ``gguf.quants.dequantize`` of the
  same bytes, measured the same way: its one allocation of the output (the
  ``np.empty`` in ``_apply_over_grouped_rows``) is handed the same
  pre-faulted array (its per-group temporaries are small and reused);
- the ranged form, ``hurray_dequantize_rows``, on 2 threads (half the rows
  each) against the same call on 1 thread, for Q4_K.

Block bytes are random, with every fp16 scale set to a value of ordinary
size and the MXFP4 exponents to ordinary exponents, so that no NaN or
subnormal takes a slow path on either side. Returns (rows, markdown):
rows are dicts with group "dequantization", label, ms and ratio (to the
memcpy), for bench/run.py's page and plot.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

import hurray
from hurray import Descriptor, Part, Tensor
from hurray._ffi import ffi, lib
from hurray.errors import check
from hurray.quant.ggml import GGML_BLOCKS
from hurray.core.packing import pack

COLS = 4096  # whole blocks of every GGML type
ROWS = 4096  # 16M elements (make bench); fewer for a quick run
LIMIT_MEMCPY = 2.0  # at most this many memcpys (issue 23)
LIMIT_GGUF = 5.0  # at least this many times faster than gguf-py
LIMIT_THREADS = 1.6  # 2 threads at least this much faster than 1

# Where each GGML block keeps its fp16 scales (byte offsets): set to ordinary values.
_F16_FIELDS = {
    "q4_0": (0,), "q4_1": (0, 2), "q5_0": (0,), "q5_1": (0, 2), "q8_0": (0,), "q2_k": (80, 82),
    "q3_k": (108,), "q4_k": (0, 2), "q5_k": (0, 2), "q6_k": (208,), "iq2_xxs": (0,), "iq2_xs": (0,),
    "iq3_xxs": (0,), "iq1_s": (0,), "iq4_nl": (0,), "iq3_s": (0,), "iq2_s": (0,), "iq4_xs": (0,),
    "tq1_0": (52,), "tq2_0": (64,), "q1_0": (0,), "q2_0": (0,),
}
# The ranged form on 2 threads: a GGML type bound by writing its output, and
# a microscaling tensor that does more work per element.
_THREADED = ["Q4_K", "NVFP4 (microscaling)"]
# The table first, then the other K-quants and IQ types: all held to LIMIT_MEMCPY.
_HELD = ["q8_0", "q4_0", "q4_k", "q6_k", "q2_k", "q3_k", "q5_k", "iq2_xxs", "iq2_xs", "iq2_s",
         "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl", "iq4_xs", "mxfp4", "nvfp4"]


def _blocks(name: str, rng: np.random.Generator) -> np.ndarray:
    _code, elements, nbytes = GGML_BLOCKS[name]
    raw = rng.integers(0, 256, (ROWS, COLS // elements, nbytes), dtype=np.uint8)
    for at in _F16_FIELDS.get(name, ()):
        d = rng.uniform(1e-3, 1e-2, raw.shape[:2]).astype(np.float16).view(np.uint8).reshape(*raw.shape[:2], 2)
        raw[:, :, at:at + 2] = d
    if name == "mxfp4":
        raw[:, :, 0] = rng.integers(118, 128, raw.shape[:2], dtype=np.uint8)
    if name == "iq1_m":  # the fp16 scale is the top nibbles of the four scale words
        d = np.float16(0.005).view(np.uint16)
        words = raw[:, :, 48:56].copy().view(np.uint16) & np.uint16(0x0FFF)
        for k in range(4):
            words[..., k] |= np.uint16(((int(d) >> (4 * k)) & 0xF) << 12)
        raw[:, :, 48:56] = words.view(np.uint8)
    return raw.reshape(ROWS, -1)


def _tensor(dtype: str, shape: tuple[int, ...], arrays: list[np.ndarray], parts: dict[str, tuple[Any, ...]],
            **layout: Any) -> Tensor:
    arrays = [np.ascontiguousarray(a) for a in arrays]
    desc = Descriptor.build(dtype, shape, parts={r: Part(*p) for r, p in parts.items()}, **layout)
    return Tensor(desc, tuple((a.__array_interface__["data"][0], a.nbytes) for a in arrays), owner=arrays)


def _other_schemes(rng: np.random.Generator) -> dict[str, Tensor]:
    """The issue's non-GGML rows: int4 affine in blocks of 32, MXFP4 and NVFP4 tensors."""
    q = rng.integers(0, 16, (ROWS, COLS), dtype=np.uint8).view(ml_dtypes.int4)
    scale = rng.uniform(0.01, 0.1, (ROWS, COLS // 32)).astype(np.float16)
    zero = rng.integers(-8, 8, (ROWS, COLS // 32)).astype(np.int8)
    fp4 = rng.integers(0, 16, (ROWS, COLS), dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)
    e8m0 = rng.integers(118, 128, (ROWS, COLS // 32), dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)
    e4m3 = rng.integers(0x20, 0x60, (ROWS, COLS // 16), dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    block = dict(granularity="per_block", axis=1)
    return {
        "int4 affine, block 32": _tensor(
            "int4", (ROWS, COLS), [pack(q, 4), scale, zero],
            {"values": ("int4", 0, 0), "scale": ("float16", 1, 0), "zero_point": ("int8", 2, 0)},
            packing="lsb_first", scheme="affine", block_size=32, **block),
        "MXFP4 (microscaling)": _tensor(
            "float4_e2m1fn", (ROWS, COLS), [pack(fp4, 4), e8m0],
            {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e8m0fnu", 1, 0)},
            packing="lsb_first", scheme="microscaling", block_size=32, **block),
        "NVFP4 (microscaling)": _tensor(
            "float4_e2m1fn", (ROWS, COLS), [pack(fp4, 4), e4m3, np.array([0.25], np.float32)],
            {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e4m3fn", 1, 0),
             "global_scale": ("float32", 2, 0)},
            packing="lsb_first", scheme="microscaling", block_size=16, **block),
    }


class _Call:
    """hurray_dequantize(_rows) of one tensor, its buffer list made once."""

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor
        self.handle = tensor.descriptor.handle
        check(lib.hurray_descriptor_validate(self.handle))  # checked once, as after a decode
        box = ffi.new("HurrayBufferList **")
        check(lib.hurray_buffer_list_new(box))
        buf = ffi.new("HurrayBuffer **")
        for address, nbytes in tensor.buffers:
            check(lib.hurray_buffer_from_ptr(ffi.cast("void *", address), nbytes, ffi.NULL, ffi.NULL, buf))
            check(lib.hurray_buffer_list_push(box[0], buf))
        self.box = box  # destroyed with the object
        self.list = box[0]

    def __del__(self) -> None:
        lib.hurray_buffer_list_destroy(self.box)

    def into(self, out: np.ndarray, first: int = 0, count: int = -1) -> None:
        count = ROWS - first if count < 0 else count
        start = out[first:first + count]
        check(lib.hurray_dequantize_rows(self.handle, self.list, lib.HURRAY_DTYPE_FLOAT32, first, count,
                                         ffi.cast("void *", start.ctypes.data), start.nbytes))


class _NumpyInto:
    """numpy, but np.empty of the output's size returns `out`: handed to
    gguf.quants for one call, so that gguf-py writes into the same
    pre-faulted memory as hurray does."""

    def __init__(self, out: np.ndarray) -> None:
        self._out = out

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def empty(self, shape: Any, dtype: Any = float, **kwargs: Any) -> np.ndarray:
        if np.dtype(dtype) == self._out.dtype and np.prod(shape) == self._out.size:
            return self._out.reshape(shape)
        return np.empty(shape, dtype, **kwargs)


def _gguf_into(raw: np.ndarray, qtype: Any, out: np.ndarray) -> Callable[[], None]:
    import gguf.quants as quants

    into = _NumpyInto(out)

    def run() -> None:
        quants.np = into  # type: ignore[assignment]
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                result = quants.dequantize(raw, qtype)
        finally:
            quants.np = np
        assert np.shares_memory(result, out), "gguf-py allocated its output after all"

    return run


def _two_threads(call: _Call, out: np.ndarray) -> Callable[[], None]:
    half = ROWS // 2

    def run() -> None:
        other = threading.Thread(target=call.into, args=(out, half, ROWS - half))
        other.start()
        call.into(out, 0, half)
        other.join()

    return run


def _copy_on_two_threads(out: np.ndarray, src: np.ndarray) -> Callable[[], None]:
    """The memcpy of the output, half on each of 2 threads (np.copyto drops the GIL): how much a
    second thread can add to a loop that only writes its output, on this machine."""
    half = ROWS // 2

    def run() -> None:
        other = threading.Thread(target=np.copyto, args=(out[half:], src[half:]))
        other.start()
        np.copyto(out[:half], src[:half])
        other.join()

    return run


def _measure(cases: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def dequant_section(rounds: int = 5, rows: int = ROWS) -> tuple[list[dict[str, Any]], str]:
    """The table and its rows; `rows` of 4096 elements (4096 for 16M elements)."""
    global ROWS
    ROWS = rows
    from gguf import GGMLQuantizationType

    rng = np.random.default_rng(23)
    out = np.ones((ROWS, COLS), np.float32)  # pre-faulted
    src = np.ones((ROWS, COLS), np.float32)
    calls: dict[str, _Call] = {}
    raws: dict[str, np.ndarray] = {}
    for name in GGML_BLOCKS:
        raws[name] = _blocks(name, rng)
        calls[name.upper()] = _Call(hurray.from_gguf(raws[name], name, (ROWS, COLS)))
    for label, tensor in _other_schemes(rng).items():
        calls[label] = _Call(tensor)
    gguf_types = {}
    for name in GGML_BLOCKS:
        qtype = getattr(GGMLQuantizationType, name.upper(), None)
        if qtype is not None and name != "q1_0":  # gguf-py 0.19 names Q1_0 but cannot dequantize it
            gguf_types[name] = qtype

    cases: dict[str, Callable[[], Any]] = {"memcpy": lambda: np.copyto(out, src)}
    for label, call in calls.items():
        cases[label] = lambda call=call: call.into(out)
    for name, qtype in gguf_types.items():
        cases[f"gguf-py {name}"] = _gguf_into(raws[name], qtype, out)
    for label in _THREADED:
        call = calls[label]
        cases[f"{label} rows, 1 thread"] = lambda call=call: call.into(out)
        cases[f"{label} rows, 2 threads"] = _two_threads(call, out)
    cases["memcpy, 2 threads"] = _copy_on_two_threads(out, src)
    best = _measure(cases, rounds)

    memcpy = best["memcpy"]
    rows: list[dict[str, Any]] = []
    lines = [
        f"| scheme ({ROWS * COLS >> 20}M elements, float32 out) | hurray ms | / memcpy ({memcpy * 1e3:.1f} ms) "
        "| gguf-py ms | faster than gguf-py |",
        "|---|---:|---:|---:|---:|",
    ]
    for label in calls:
        t = best[label]
        name = label.lower()
        row: dict[str, Any] = {"group": "dequantization", "label": label, "ms": t * 1e3, "ratio": t / memcpy}
        gguf_cell = speed_cell = "–"
        if name in gguf_types:
            g = best[f"gguf-py {name}"]
            row.update(gguf_py_ms=g * 1e3, speedup=g / t)
            gguf_cell, speed_cell = f"{g * 1e3:.1f}", f"{g / t:.1f}x"
        rows.append(row)
        lines.append(f"| {label} | {t * 1e3:.1f} | {t / memcpy:.2f} | {gguf_cell} | {speed_cell} |")
    threads = []
    for label in _THREADED:
        one, two = best[f"{label} rows, 1 thread"], best[f"{label} rows, 2 threads"]
        threads.append((label, one / two))
        rows.append({"group": "dequantization", "label": f"{label} rows on 2 threads", "ms": two * 1e3,
                     "ratio": two / memcpy, "speedup": one / two})
        lines.append(f"| {label}, `hurray_dequantize_rows` on 2 threads (1 thread: {one * 1e3:.1f} ms) "
                     f"| {two * 1e3:.1f} | {two / memcpy:.2f} | – | {one / two:.2f}x (vs 1 thread) |")

    copy_two = best["memcpy, 2 threads"]
    lines.append(f"| for comparison: the memcpy on 2 threads, half each (1 thread: {memcpy * 1e3:.1f} ms) "
                 f"| {copy_two * 1e3:.1f} | {copy_two / memcpy:.2f} | – | {memcpy / copy_two:.2f}x (vs 1 thread) |")

    held = [r for r in rows if r["label"].lower() in _HELD or r["label"] in _other_schemes_labels()]
    worst_memcpy = max(held, key=lambda r: r["ratio"])
    with_gguf = [r for r in rows if "gguf_py_ms" in r]
    worst_gguf = min(with_gguf, key=lambda r: r["speedup"])
    targets = [
        (f"slowest held scheme ({worst_memcpy['label']}) / memcpy", worst_memcpy["ratio"], f"at most {LIMIT_MEMCPY:.2f}",
         worst_memcpy["ratio"] <= LIMIT_MEMCPY),
        (f"least gain over gguf-py ({worst_gguf['label']})", worst_gguf["speedup"], f"at least {LIMIT_GGUF:.2f}",
         worst_gguf["speedup"] >= LIMIT_GGUF),
    ]
    targets += [(f"{label} rows: 1 thread / 2 threads", gain, f"at least {LIMIT_THREADS:.2f}", gain >= LIMIT_THREADS)
                for label, gain in threads]
    lines += ["", "| target | measured | limit | met |", "|---|---:|---:|---|"]
    lines += [f"| {name} | {value:.2f} | {limit} | {'yes' if met else 'NO'} |" for name, value, limit, met in targets]
    intro = (
        "## Dequantization (the reference dequantizer in C)\n\n"
        f"Written by `bench/dequant_bench.py`: {ROWS} x {COLS} elements to float32, single-threaded unless stated, "
        f"best of {rounds} interleaved rounds. Every side writes into the same preallocated, pre-faulted "
        f"output: `hurray_dequantize`, `np.copyto` of the same {ROWS * COLS * 4 >> 20} MiB (the memcpy), and "
        "gguf-py's `gguf.quants.dequantize`, whose one allocation of the output is handed that array. Held "
        "to the memcpy limit: the issue's table (Q8_0, Q4_0, Q4_K, Q6_K, the NVFP4 and MXFP4 tensors, int4 "
        "affine in blocks of 32) and every K-quant and IQ type.\n\n"
    )
    return rows, intro + "\n".join(lines)


def _other_schemes_labels() -> tuple[str, ...]:
    return ("int4 affine, block 32", "MXFP4 (microscaling)", "NVFP4 (microscaling)")


if __name__ == "__main__":
    print(dequant_section()[1])
