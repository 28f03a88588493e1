"""hurray-io against safetensors and np.save (called by bench/run.py; also runs alone).

The workload of the issue: 64 float32 tensors of 4 MiB (256 MiB), page cache
warm, in a temporary directory. Every case measures what a user runs up to
a result they can use, all cases interleaved in rounds, best round kept:

- save: ``hurray.save`` (checksums, fdatasync, rename, directory fsync) vs
  ``np.save`` of each array to its own file vs ``safetensors.numpy.save_file``;
  for the record, ``hurray.save`` timed until the file it replaced has
  been released, ``np.save`` with an ``os.fsync`` of each file, and the
  same bytes written raw to one new file and fdatasynced (a durable write
  with no format, no checksum and no early writeback);
- one tensor: ``hurray.load(path)[name]`` on the 256 MiB file vs the same on
  a one-tensor file vs ``safe_open`` + ``get_tensor``; and, for the record,
  the same with ``np.asarray`` (which verifies the checksum);
- everything: load every tensor and touch every byte (``max``), checksums
  verified, vs ``safetensors.numpy.load_file`` and the same touch;
- frames: 64 frames over a local socket (``write_frame`` / ``read_frame``,
  every checksum verified) vs ``sendall`` / ``recv_into`` of the same bytes.
"""
import os
import socket
import sys
import tempfile
import threading
import time

import numpy as np

import hurray

MIB = 1 << 20


# Cases that take microseconds run this many times per round (the mean of
# those calls is the round's time): one call is too short to time alone.
REPEAT = 200


# Files a case left to be removed untimed (see _settle).
_LEFTOVERS = []


def _settle():
    """Untimed, between cases: waits for the threads hurray.save leaves
    releasing the file it replaced (ADR-050), so that work does not run into
    the next case, and removes the raw write case's file."""
    for thread in threading.enumerate():
        if thread.name == "hurray-save-release":
            thread.join()
    while _LEFTOVERS:
        os.unlink(_LEFTOVERS.pop())


def _best(cases, rounds):
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            calls = REPEAT if name.startswith("one tensor") else 1
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / calls)
            _settle()
    return best


def _socket_pair():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    server.close()
    return client, conn


def _over_socket(send, receive):
    """Seconds for send(sock) in a thread while receive(sock) runs here."""
    a, b = _socket_pair()
    try:
        t0 = time.perf_counter()
        sender = threading.Thread(target=send, args=(a,))
        sender.start()
        receive(b)
        sender.join()
        return time.perf_counter() - t0
    finally:
        a.close()
        b.close()


def cases(tmp, count, nbytes):
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(0)
    arrays = {f"layer{i}.weight": rng.standard_normal(nbytes // 4).astype(np.float32) for i in range(count)}
    first = next(iter(arrays))
    total = count * nbytes
    big = os.path.join(tmp, "all.hurray")
    one = os.path.join(tmp, "one.hurray")
    st = os.path.join(tmp, "all.safetensors")
    hurray.save(big, arrays)
    hurray.save(one, {first: arrays[first]})
    save_file(arrays, st)

    def np_save():
        for i, array in enumerate(arrays.values()):
            np.save(os.path.join(tmp, f"np{i}.npy"), array)

    def save_and_release():
        hurray.save(big, arrays)
        _settle()

    def np_save_fsync():
        for i, array in enumerate(arrays.values()):
            with open(os.path.join(tmp, f"npsync{i}.npy"), "wb") as f:
                np.save(f, array)
                f.flush()
                os.fsync(f.fileno())

    def raw_fdatasync():
        # The plain durable write of these bytes: a new file, no header, no
        # checksum, one sync at the end; the file is removed untimed.
        path = os.path.join(tmp, "raw.bin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for array in arrays.values():
                os.write(fd, memoryview(array).cast("B"))
            os.fdatasync(fd)
        finally:
            os.close(fd)
            _LEFTOVERS.append(path)

    def hurray_all_touched():
        f = hurray.load(big)
        for name in f:
            np.asarray(f[name]).max()

    def safetensors_all_touched():
        for array in load_file(st).values():
            array.max()

    def get_tensor():
        with safe_open(st, framework="numpy") as f:
            return f.get_tensor(first)

    def frames_send(sock):
        with sock.makefile("wb") as out:
            for name, array in arrays.items():
                hurray.write_frame(out, array, name=name)
        sock.shutdown(socket.SHUT_WR)

    def frames_receive(sock):
        with sock.makefile("rb") as stream:
            while hurray.read_frame(stream) is not None:
                pass

    def raw_send(sock):
        for array in arrays.values():
            sock.sendall(memoryview(array).cast("B"))
        sock.shutdown(socket.SHUT_WR)

    def raw_receive(sock):
        for _ in range(count):
            buf = np.empty(nbytes, np.uint8)  # a fresh buffer per tensor, as read_frame makes
            view = memoryview(buf)
            got = 0
            while got < nbytes:
                n = sock.recv_into(view[got:])
                if n == 0:
                    raise EOFError
                got += n

    return total, {
        "save: hurray.save (xxh3, fdatasync, rename)": lambda: hurray.save(big, arrays),
        "save: np.save, one file per array": np_save,
        "save: safetensors save_file": lambda: save_file(arrays, st),
        "save (for the record): hurray.save, then wait for the replaced file's release": save_and_release,
        "save (for the record): np.save + os.fsync, one file per array": np_save_fsync,
        "save (for the record): raw write of the bytes + fdatasync, one file": raw_fdatasync,
        "one tensor: hurray.load(path)[name], 64-tensor file": lambda: hurray.load(big)[first],
        "one tensor: hurray.load(path)[name], 1-tensor file": lambda: hurray.load(one)[first],
        "one tensor: safe_open + get_tensor": get_tensor,
        "one tensor: np.asarray(hurray.load(path)[name]) (verified)": lambda: np.asarray(hurray.load(big)[first]),
        "all: hurray.load, every tensor verified + max": hurray_all_touched,
        "all: safetensors load_file + max": safetensors_all_touched,
        "frames: write_frame/read_frame over a socket": lambda: _over_socket(frames_send, frames_receive),
        "frames: raw sendall/recv_into of the same bytes": lambda: _over_socket(raw_send, raw_receive),
    }


def targets(t):
    return [
        ("hurray.save / np.save", t["save: hurray.save (xxh3, fdatasync, rename)"] / t["save: np.save, one file per array"], 1.0),
        ("load()[name] / safe_open+get_tensor",
         t["one tensor: hurray.load(path)[name], 64-tensor file"] / t["one tensor: safe_open + get_tensor"], 0.2),
        ("load()[name]: 64-tensor / 1-tensor file",
         t["one tensor: hurray.load(path)[name], 64-tensor file"] / t["one tensor: hurray.load(path)[name], 1-tensor file"], 2.0),
        ("all+touch+verify / load_file+touch",
         t["all: hurray.load, every tensor verified + max"] / t["all: safetensors load_file + max"], 1.0),
        ("raw socket time / frames time (throughput ratio)",
         t["frames: raw sendall/recv_into of the same bytes"] / t["frames: write_frame/read_frame over a socket"], None),
    ]


def io_section(rounds=5, count=64, nbytes=4 * MIB):
    """The markdown section for docs/performance.md (and stdout)."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("HURRAY_BENCH_DIR")) as tmp:
        total, fns = cases(tmp, count, nbytes)
        best = _best(fns, rounds)
    lines = [
        "## hurray-io (layer 5)",
        "",
        f"Written by `bench/io_bench.py`: {count} float32 tensors of {nbytes // MIB if nbytes >= MIB else nbytes} "
        f"{'MiB' if nbytes >= MIB else 'B'} ({total // MIB} MiB), page cache warm, best of {rounds} interleaved rounds "
        f"(the one-tensor cases: the mean of {REPEAT} calls per round).",
        "`hurray.save` syncs the file before the rename and its directory after it "
        "(ADR-039 § 6, ADR-050); `np.save` and `save_file` do not sync at all. "
        "`hurray.save` returns once the new file is durable; the file it replaced is released on a thread "
        "after that (ADR-050), waited for untimed before the next case, and timed in the first row "
        "\"for the record\". The other two rows for the record are durable writes of the same bytes without hurray-io.",
        "",
        "| case | seconds | GB/s |",
        "|---|---:|---:|",
    ]
    for name, seconds in best.items():
        rate = f"{total / seconds / 1e9:.2f}" if not name.startswith("one tensor") else ""
        lines.append(f"| {name} | {seconds:.6f} | {rate} |")
    lines += ["", "| target | measured | limit | met |", "|---|---:|---:|---|"]
    for name, value, limit in targets(best):
        if limit is None:  # at least 0.5: frames carry at least half the raw throughput
            lines.append(f"| frames throughput / raw throughput | {value:.2f} | at least 0.50 | "
                         f"{'yes' if value >= 0.5 else 'NO'} |")
        else:
            lines.append(f"| {name} | {value:.2f} | at most {limit:.2f} | {'yes' if value <= limit else 'NO'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print(io_section(rounds=1, count=4, nbytes=64 << 10) if quick else io_section())
