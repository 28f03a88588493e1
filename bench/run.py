"""Benchmarks for the native protocol and the descriptor codec (`make bench`).

Everything Python-side is measured in one process, in interleaved rounds, so
that machine noise hits every case alike; each case keeps its best round.
The C codec is measured by bench/descriptor_bench.c, compiled against the
installed library. Results go to stdout as a table, and to
docs/performance.md, docs/performance.json (every row, for bench/plot.py) and
docs/_static/bench.svg (the plot of those rows).
"""
import argparse
import gc
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np

import hurray
import pickle_bench  # this directory, beside run.py
import plot

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [64, 4096, 1 << 20, 64 << 20, 1 << 30]
# Every section's rows as data, for the plot: dicts with group, label, ms (or
# ns) and ratio (bench/dequant_bench.py fills group "dequantization").
ROWS: list = []


def _human(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


class _ArrowProducer:
    """An object that hands pyarrow a capsule pair, as a foreign producer would."""

    def __init__(self, array):
        self._array = array

    def __arrow_c_array__(self, requested_schema=None):
        return self._array.__arrow_c_array__(requested_schema)


class _CapsuleProducer:
    """Hands out a Tensor's capsule as any other producer would: from_hurray
    then takes the capsule route (decode, check, one handle per buffer),
    not the shortcut for the package's own tensors (ADR-048)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __hurray__(self):
        return self._tensor.__hurray__()


# The names of the rows the targets compare (float32 4x4 unless stated).
BASELINE = "np.from_dlpack(a)"
END_TO_END = "end to end: np.asarray(hurray.from_hurray(hurray.from_numpy(a)))"
CONSUMER = "consumer to a numpy array: np.asarray(hurray.from_hurray(t))"
FROM_NUMPY = "hurray.from_numpy(a)"
PRODUCER = "Hurray as a DLPack producer: np.from_dlpack(t)"
VIEW = "np.asarray(t)"
PLAIN_64 = "exchange, 1 buffer: np.asarray(hurray.from_hurray(float32 64x64))"
QUANTIZED_64 = "exchange, 3 buffers: hurray.from_hurray(affine int8 64x64).stored_values()"
QUANTIZED_64_REAL = "exchange, 3 buffers, to float32: hurray.from_hurray(affine int8 64x64).dequantize()"
CAPSULE_CONSUMER = "consumer through a capsule: np.asarray(hurray.from_hurray(producer))"
CAPSULE_PLAIN_64 = "exchange through a capsule, 1 buffer: np.asarray(hurray.from_hurray(producer of float32 64x64))"
CAPSULE_QUANTIZED_64 = (
    "exchange through a capsule, 3 buffers: hurray.from_hurray(producer of affine int8 64x64).stored_values()"
)
PYARROW = "pyarrow capsule round trip: pa.array(producer)"


def sized(size):
    """The row of the zero-copy exchange of one buffer of `size` bytes, up to its numpy view."""
    return f"exchange to a view, 1 buffer, {_human(size)}: np.asarray(hurray.from_hurray(t))"


def python_cases():
    """name -> zero-argument callable; each call is what a user runs, up to a
    result they can use: an array (a view where the exchange is zero-copy),
    never a Tensor that no one has looked into yet (issue 26)."""
    cases = {}
    a = np.ones((4, 4), dtype=np.float32)
    t = hurray.from_numpy(a)
    cases[BASELINE] = lambda: np.from_dlpack(a)
    cases[END_TO_END] = lambda: np.asarray(hurray.from_hurray(hurray.from_numpy(a)))
    cases[CONSUMER] = lambda: np.asarray(hurray.from_hurray(t))
    cases[FROM_NUMPY] = lambda: hurray.from_numpy(a)
    cases[PRODUCER] = lambda: np.from_dlpack(t)
    cases[VIEW] = lambda: np.asarray(t)
    try:
        import torch

        t_small = torch.ones(16)
        cases["torch.from_dlpack(tensor)"] = lambda: torch.from_dlpack(t_small)
    except ImportError:
        pass
    try:
        import pyarrow as pa

        producer = _ArrowProducer(pa.array(np.ones(16, dtype=np.float32)))
        cases[PYARROW] = lambda: pa.array(producer)
    except ImportError:
        pass
    for size in SIZES:
        big = hurray.from_numpy(np.empty(size, dtype=np.uint8))
        cases[sized(size)] = lambda big=big: np.asarray(hurray.from_hurray(big))
    weights = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    from hurray.quant.quantizers import quantize_affine

    quantized = quantize_affine(weights, dtype="int8", axis=0)
    # A quantized tensor's usable form short of dequantizing is its codes as
    # an array (np.asarray refuses it and points at dequantize()); the real
    # values are the row after, for the record.
    cases[QUANTIZED_64] = lambda: hurray.from_hurray(quantized).stored_values()
    cases[QUANTIZED_64_REAL] = lambda: hurray.from_hurray(quantized).dequantize()
    plain = hurray.from_numpy(weights)
    cases[PLAIN_64] = lambda: np.asarray(hurray.from_hurray(plain))
    # The same exchanges from a producer that is not one of the package's
    # tensors: what a capsule from another library or language costs.
    foreign = _CapsuleProducer(t)
    cases[CAPSULE_CONSUMER] = lambda: np.asarray(hurray.from_hurray(foreign))
    foreign_plain, foreign_quantized = _CapsuleProducer(plain), _CapsuleProducer(quantized)
    cases[CAPSULE_PLAIN_64] = lambda: np.asarray(hurray.from_hurray(foreign_plain))
    cases[CAPSULE_QUANTIZED_64] = lambda: hurray.from_hurray(foreign_quantized).stored_values()
    from hurray._ffi import ffi, lib

    cases["cffi: hurray_c_abi_version()"] = lib.hurray_c_abi_version
    handle = plain.descriptor.handle
    if handle is not None:
        out = ffi.new("uint32_t *")
        cases["cffi: hurray_descriptor_rank(d, &out)"] = lambda: lib.hurray_descriptor_rank(handle, out)
    return cases


def measure(cases, rounds, calls):
    best = {name: float("inf") for name in cases}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in cases.items():
                n = calls
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    fn()
                dt = (time.perf_counter_ns() - t0) / n
                best[name] = min(best[name], dt)
    finally:
        gc.enable()
    return best


def c_codec():
    """Compile and run the C codec benchmark; name -> ns per call."""
    flags = subprocess.check_output([sys.executable, "-m", "hurray", "--cflags", "--libs"], text=True).split()
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "descriptor_bench")
        cc = sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc"
        subprocess.check_call([cc, "-std=c11", "-O2", os.path.join(HERE, "descriptor_bench.c"), "-o", exe, *flags])
        out = subprocess.check_output([exe], text=True)
    return {name: float(value) for name, value in (line.split() for line in out.splitlines())}


def targets(py, c):
    """(name, measured ratio, at most): issue 16's targets, side by side in one run."""
    dl = py[BASELINE]
    rows = [
        ("end to end / np.from_dlpack", py[END_TO_END] / dl, 6.0),
        ("consumer to a numpy array / np.from_dlpack", py[CONSUMER] / dl, 3.0),
        ("from_numpy / np.from_dlpack", py[FROM_NUMPY] / dl, 2.0),
        ("np.from_dlpack(t) / np.from_dlpack(a)", py[PRODUCER] / dl, 2.0),
    ]
    if PYARROW in py:
        # Both sides through a capsule from a foreign producer, up to a usable array.
        rows.append(("consumer through a capsule, to an array / pyarrow capsule round trip",
                     py[CAPSULE_CONSUMER] / py[PYARROW], 1.0))
    by_size = [py[sized(s)] for s in SIZES]
    rows.append(("exchange to a view: largest (1 GiB) / smallest (64 B)", by_size[-1] / by_size[0], 1.15))
    rows.append(("3-buffer quantized / 1-buffer plain", py[QUANTIZED_64] / py[PLAIN_64], 1.2))
    rows.append(
        ("C decode+destroy / DLManagedTensor baseline",
         c["decode_destroy_quantized"] / c["dlmanaged_tensor_baseline"], 2.0)
    )
    return rows


def table(py, c, rows):
    lines = ["| call | ns per call |", "|---|---:|"]
    lines += [f"| `{name}` | {ns:,.0f} |" for name, ns in py.items()]
    lines += [f"| C: `{name}` | {ns:,.1f} |" for name, ns in c.items()]
    lines += ["", "| target | measured | at most | met |", "|---|---:|---:|---|"]
    lines += [f"| {name} | {value:.2f} | {limit:.2f} | {'yes' if value <= limit else 'NO'} |" for name, value, limit in rows]
    return "\n".join(lines)


# The plot's groups (bench/plot.py draws one panel per group it is given).
EXCHANGE = "exchange: one call in Python (float32 4x4 unless stated)"
PROCESSES = "between processes: pickle and Dask, 64 MiB"
C_CALLS = "C: the descriptor codec, one call"
FILES = "files: model files and hurray-io, 256 MiB"
_PEERS = {"torch.from_dlpack(tensor)", PYARROW}


def file_kind(label):
    """hurray, peer or baseline, for a row of the file tables (their labels name what they time)."""
    text = label.lower()
    if "raw " in text or "copyfile" in text or "baseline" in text:
        return "baseline"
    if "hurray" in text or "write_frame" in text or "convert" in text:
        return "hurray"
    return "peer"


def table_rows(markdown, group):
    """Rows from the markdown tables of a section whose second column is "seconds"
    (the model-file and hurray-io tables); target tables are left out."""
    rows, header = [], None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line) <= set("|-: ") and len(header) > 1 and header[1] == "seconds":
            label = cells[0].replace("`", "")
            rows.append(plot.Row(group, label, float(cells[1].replace(",", "")), "s", file_kind(label)))
    return rows


DEQUANT = "dequantization: to float32, one thread"


def dequant_plot_rows(dequant):
    """The dequantization table's schemes and the memcpy they are held to
    (bench/dequant_bench.py's rows; the 2-thread rows stay in the table)."""
    single = [r for r in dequant if not r["label"].endswith("rows on 2 threads")]
    if not single:
        return []
    memcpy = single[0]["ms"] / single[0]["ratio"]
    return [plot.Row(DEQUANT, "memcpy", memcpy, "ms", "baseline")] + \
        [plot.Row(DEQUANT, r["label"], r["ms"], "ms", "hurray") for r in single]


def plot_rows(py, c, pickled, file_text, dequant=()):
    """Every measured row, grouped for the plot."""
    rows = [plot.Row(EXCHANGE, name, ns, "ns",
                     "baseline" if name == BASELINE else "peer" if name in _PEERS else "hurray")
            for name, ns in py.items()]
    rows += [plot.Row(PROCESSES, name, ns, "ns", "baseline" if "numpy" in name else "hurray")
             for name, ns in pickled.items()]
    rows += [plot.Row(C_CALLS, name, ns, "ns", "baseline" if "baseline" in name else "hurray")
             for name, ns in c.items()]
    return rows + table_rows(file_text, FILES) + dequant_plot_rows(list(dequant))


def write_page(text, rows, machine):
    plot.save(plot.RESULTS, rows, machine=machine)
    with open(plot.CHART, "w", encoding="utf-8") as f:
        f.write(plot.draw(rows))
    page = f"""# Performance

Written by `make bench` (`bench/run.py`); the numbers below are from its last
run on {machine}. Python-side cases run interleaved in one process, best of
the rounds; C cases come from `bench/descriptor_bench.c`.

The plot shows every row of the tables below, one panel per group, each
panel on a logarithmic axis of its own. `python bench/plot.py` draws it
again from `docs/performance.json`, where `make bench` keeps the rows of its
last run.

![Every benchmark row, grouped: time per call, lower is better](_static/bench.svg)

Every row is timed up to a result a user can use: an array (a zero-copy
view where the exchange is zero-copy), a sum, a file on disk, or, for a
producer (`hurray.from_numpy`), the Tensor it hands over; never a received
Tensor that no one has looked into yet, which would time a promise. Rows
that once timed `hurray.from_hurray(...)` or `hurray.load(path)[name]`
alone now go on to `np.asarray` of the result (a quantized tensor to
`stored_values()`, its codes as an array, since `np.asarray` refuses a
quantized tensor; its `dequantize()` is shown beside it for the record),
and the lazy `hurray.load(path)[name]` row is gone (the verified, summed
one stays). The targets built on those rows keep their meaning:
*consumer through a capsule / pyarrow capsule round trip* compares two
exchanges through a capsule from a foreign producer, each up to a usable
array; *exchange to a view: largest / smallest* still asks that the cost of
a zero-copy exchange not follow the buffer's size; *3-buffer quantized /
1-buffer plain* still asks that a quantized tensor's extra buffers cost
little; and the GGUF file target still compares a 256 MiB file with a
one-tensor file, each up to the tensor's view.

{text}
"""
    with open(os.path.join(ROOT, "docs", "performance.md"), "w", encoding="utf-8") as f:
        f.write(page)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/ alone")
    args = parser.parse_args(argv)
    # Other work on the machine slows every row: the page says how much there was.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    py = measure(python_cases(), args.rounds, args.calls)
    c = c_codec()
    rows = targets(py, c)
    pickled, pickle_rows = pickle_bench.run(measure, args.rounds, args.calls)  # bench/pickle_bench.py
    from model_files_bench import model_files  # issue 13's targets, in their own module

    file_rows, file_table = model_files(args.rounds, (256 if args.rounds > 1 else 16) << 20)
    from checkpoint_bench import checkpoints  # issue 25's targets (bench/checkpoint_bench.py)

    checkpoint_rows, checkpoint_table = checkpoints(args.rounds, (256 if args.rounds > 1 else 16) << 20)
    text = table({**py, **pickled}, c, rows + pickle_rows + file_rows + checkpoint_rows) + "\n" + file_table \
        + "\n" + checkpoint_table
    from io_bench import io_section  # hurray-io: files and frames (bench/io_bench.py)

    io_text = io_section(rounds=1, count=4, nbytes=64 << 10) if args.rounds < 3 else io_section()
    text += "\n\n" + io_text
    from dequant_bench import dequant_section  # issue 23: the dequantizer in C (bench/dequant_bench.py)

    dequant_rows, dequant_text = dequant_section(rounds=5, rows=4096) if args.rounds >= 3 else \
        dequant_section(rounds=1, rows=256)
    ROWS.extend(dequant_rows)
    text += "\n\n" + dequant_text
    print(text)
    rows = plot_rows(py, c, pickled, file_table + "\n\n" + io_text, dequant_rows)
    if not args.no_write:
        machine = (f"{os.cpu_count()} cores (load average {load:.1f} as it began), "
                   f"Python {sys.version.split()[0]}, numpy {np.__version__}")
        write_page(text, rows, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
