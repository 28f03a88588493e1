"""Fault tests that stay (issue 27): each runs in a child process, so that a crash fails the test.

- close-while-reading: 8 threads read every kind of file (.hurray mapped and
  not, GGUF, safetensors) while the main thread closes it; each read ends
  in a tensor or a HurrayError, never a crash (GGUFFile.close() used to
  free the C index under threads still searching it);
- a save onto a full disk: a small tmpfs in a private mount namespace where
  the machine allows mounting one, else a child under RLIMIT_FSIZE; the
  error is the operating system's (No space left on device / File too
  large, with its errno), the old file is intact, no temporary is left;
- kill -9 at random points of 50 saves: the file is always the old one or
  the whole new one, and the temporaries the killed writers leave are gone
  after the next save;
- truncation under a mapped reader: a tensor taken, then the file cut
  short; using it, verifying it, reading the file's metadata or names is a
  CorruptError, never a SIGBUS inside Hurray's code.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hurray

CHILD_PRELUDE = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    import hurray
    from hurray.errors import CorruptError, HurrayError
""")


def run_child(body, *args, timeout=240):
    """PRELUDE + body in a new interpreter with `args` as sys.argv[1:]; it must print OK last and exit 0."""
    code = CHILD_PRELUDE + textwrap.dedent(body) + "\nprint('OK')\n"
    result = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), (
        f"exit {result.returncode}\n--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}")
    return result.stdout


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if ".hurray-tmp-" in name)


# ---- close while reading ------------------------------------------------------------

def _files(tmp_path):
    tensors = {f"t{i}": np.full((64, 64), i, np.float32) for i in range(32)}
    paths = {
        "hurray": tmp_path / "m.hurray",
        "gguf": tmp_path / "m.gguf",
        "safetensors": tmp_path / "m.safetensors",
    }
    hurray.save(paths["hurray"], tensors, metadata={"k": "v"})
    # A key-value store past the first page, so that the names lie in pages
    # a truncation takes away (a cut inside the first page reads as zeros).
    vocabulary = [f"token-{i}" for i in range(20000)]
    hurray.save_gguf(paths["gguf"], tensors, metadata={"k": "v", "tokenizer.ggml.tokens": vocabulary})
    hurray.save_safetensors(paths["safetensors"], tensors, metadata={"k": "v"})
    return paths


@pytest.mark.parametrize("kind, opener", [
    ("hurray", "hurray.load(path)"),
    ("hurray", "hurray.load(path, mmap=False)"),
    ("gguf", "hurray.load_gguf(path)"),
    ("safetensors", "hurray.load_safetensors(path)"),
])
def test_close_while_eight_threads_read(tmp_path, kind, opener):
    path = _files(tmp_path)[kind]
    out = run_child(f"""
        path = sys.argv[1]
        outcomes = {{"tensor": 0, "refused": 0}}
        lock = threading.Lock()

        def reader(f, start):
            names = [f"t{{i}}" for i in range(32)]
            for k in range(400):
                name = names[(start + k) % 32]
                try:
                    if k % 4 == 0:
                        got = name in f and len(list(f)) == 32 and f.metadata is not None
                    else:
                        got = float(np.asarray(f[name]).sum()) == 64 * 64 * int(name[1:])
                    assert got
                    kind = "tensor"
                except HurrayError:
                    kind = "refused"  # closed under us: a clean refusal
                with lock:
                    outcomes[kind] += 1

        for round in range(30):
            f = {opener}
            threads = [threading.Thread(target=reader, args=(f, i)) for i in range(8)]
            for t in threads:
                t.start()
            f.close()
            for t in threads:
                t.join()
        print(outcomes)
        assert outcomes["refused"] > 0, outcomes
    """, path)
    assert "tensor" in out


# ---- a save onto a full disk ---------------------------------------------------------

FULL_DISK_CHILD = """
    directory, expected = sys.argv[1], sys.argv[2]
    target = os.path.join(directory, "model")
    small = {"t": np.arange(16, dtype=np.float32)}
    big = {f"t{i}": np.ones(1 << 20, np.float32) for i in range(4)}  # 16 MiB: more than the room
    savers = {
        ".hurray": lambda p, t: hurray.save(p, t),
        ".gguf": lambda p, t: hurray.save_gguf(p, t),
        ".safetensors": lambda p, t: hurray.save_safetensors(p, t),
    }
    for ext, save in savers.items():
        path = target + ext
        save(path, small)
        before = open(path, "rb").read()
        try:
            save(path, big)
        except hurray.errors.HurrayIOError as exc:
            assert exc.errno == getattr(__import__("errno"), expected), (ext, exc.errno, exc)
            assert os.strerror(exc.errno) in str(exc), (ext, str(exc))
            assert "refused a write" not in str(exc), str(exc)
        else:
            raise AssertionError(f"{ext}: a save larger than the disk succeeded")
        assert open(path, "rb").read() == before, ext
        left = [n for n in os.listdir(directory) if ".hurray-tmp-" in n]
        assert left == [], (ext, left)
"""


def _can_mount_tmpfs():
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return False
    probe = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c",
                            "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs $d && umount $d && rmdir $d"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def test_save_onto_a_full_disk(tmp_path):
    code = CHILD_PRELUDE + textwrap.dedent(FULL_DISK_CHILD) + "\nprint('OK')\n"
    script = tmp_path / "child.py"
    script.write_text(code)
    if _can_mount_tmpfs():
        # A 4 MiB tmpfs, seen only by this child's private mount namespace.
        room = tmp_path / "room"
        room.mkdir()
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   f"mount -t tmpfs -o size=4m tmpfs {room} && exec {sys.executable} {script} {room} ENOSPC"]
        how = "tmpfs"
    else:
        # No mount allowed: the file-size limit makes write(2) fail the same way (EFBIG).
        room = tmp_path / "room"
        room.mkdir()
        prologue = "import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); " \
                   "resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20)); "
        command = [sys.executable, "-c", prologue + f"exec(open({str(script)!r}).read())", str(room), "EFBIG"]
        how = "RLIMIT_FSIZE"
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), (
        f"({how}) exit {result.returncode}\n{result.stdout}\n{result.stderr}")


# ---- kill -9 at random points of 50 saves --------------------------------------------

SAVER = """
    path = sys.argv[1]
    version = int(sys.argv[2])
    tensors = {f"t{i}": np.full(1 << 18, version, np.float32) for i in range(16)}  # 16 MiB
    print("ready", flush=True)
    while True:
        hurray.save(path, tensors, metadata={"version": str(version)})
"""


def test_kill_at_random_points_of_fifty_saves(tmp_path):
    path = tmp_path / "ckpt.hurray"
    hurray.save(path, {f"t{i}": np.full(1 << 18, 0, np.float32) for i in range(16)}, metadata={"version": "0"})
    rng = random.Random(27)
    code = CHILD_PRELUDE + textwrap.dedent(SAVER)
    # How long one save takes here, to spread the kills over whole saves.
    t0 = time.perf_counter()
    hurray.save(tmp_path / "probe.hurray", {f"t{i}": np.zeros(1 << 18, np.float32) for i in range(16)})
    one_save = max(time.perf_counter() - t0, 0.01)
    os.unlink(tmp_path / "probe.hurray")
    versions_seen = set()
    for version in range(1, 51):
        child = subprocess.Popen([sys.executable, "-c", code, str(path), str(version)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0, 3 * one_save))
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(timeout=60)
            child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        with hurray.load(path) as f:  # the old file or the whole new one: it opens and verifies
            stated = int(f.metadata["version"])
            assert stated in (version, max(versions_seen | {0}))
            for name in f:
                assert np.all(np.asarray(f[name]) == stated)
        versions_seen.add(stated)
        assert len(temporaries(tmp_path)) <= 1  # the killed writer's, removed by the next one
    hurray.save(path, {"t": np.zeros(4)})  # the next writer in the folder cleans up
    assert temporaries(tmp_path) == []
    assert len(versions_seen) > 1, "no save ever finished between the kills"


# ---- truncation under a mapped reader ----------------------------------------------

TRUNCATION = """
    kind, path = sys.argv[1], sys.argv[2]
    opener = {"hurray": hurray.load, "gguf": hurray.load_gguf, "safetensors": hurray.load_safetensors}[kind]
    f = opener(path)
    taken = f["t0"]  # handed out before the cut; for .hurray not yet verified
    with open(path, "r+b") as g:
        g.truncate(0)  # what open(path, "wb") or cp over the file does first
    def refused(fn):
        try:
            fn()
        except CorruptError as exc:
            return str(exc)
        raise AssertionError("no CorruptError")
    if kind == "hurray":
        refused(lambda: np.asarray(taken))  # the first-use verification
        refused(lambda: f["t31"])
        refused(lambda: f.verify("t1"))
    elif kind == "gguf":  # names and key-values are read from the map
        refused(lambda: f["t31"])
        refused(lambda: f.metadata)
        refused(lambda: list(f))
        refused(lambda: "t31" in f)
    else:  # the header was parsed at open; a tensor's bytes are past the new end
        refused(lambda: f["t31"])
"""


@pytest.mark.parametrize("kind", ["hurray", "gguf", "safetensors"])
def test_truncated_under_a_mapped_reader(tmp_path, kind):
    paths = _files(tmp_path)
    run_child(TRUNCATION, kind, paths[kind])
