"""Building the Rust crate (bindings/rust) from the Python test suite.

cargo is found on PATH or in $HOME/.cargo/bin. Every build runs
``cargo build --offline`` with HURRAY_PYTHON set to this interpreter, so the
crate links the very libhurray the hurray package under test loaded, and
keeps its output in bindings/rust/target (shared with `make test`'s
``cargo test``, so nothing is compiled twice). Each example is built once
per session.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRATE = ROOT / "bindings" / "rust"
TARGET = CRATE / "target"
BUILD_TIMEOUT = 900


def find_cargo():
    """The cargo executable, or None."""
    found = shutil.which("cargo")
    if found:
        return found
    home = Path(os.environ.get("HOME", str(Path.home()))) / ".cargo" / "bin" / "cargo"
    return str(home) if home.is_file() and os.access(home, os.X_OK) else None


def cargo_env():
    env = dict(os.environ, HURRAY_PYTHON=sys.executable, CARGO_TARGET_DIR=str(TARGET))
    cargo = find_cargo()
    if cargo:  # rustc lives beside cargo; make sure cargo finds it
        env["PATH"] = str(Path(cargo).parent) + os.pathsep + env.get("PATH", "")
    return env


def cargo(*args, timeout=BUILD_TIMEOUT):
    """Runs cargo in the crate; raises RuntimeError with its output on failure."""
    exe = find_cargo()
    if exe is None:
        raise RuntimeError("cargo is not on PATH nor in $HOME/.cargo/bin; the Rust binding needs it")
    result = subprocess.run([exe, *args], cwd=CRATE, env=cargo_env(), capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"cargo {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


class Examples:
    """Cargo examples, each built once on first use (share EXAMPLES below)."""

    def __init__(self):
        self._built = {}

    def path(self, name):
        if name not in self._built:
            cargo("build", "--offline", "--example", name)
            debug = TARGET / "debug" / "examples"
            candidates = [debug / name, debug / f"lib{name}.so"]
            found = [p for p in candidates if p.is_file()]
            if not found:
                raise RuntimeError(f"cargo built example {name} but none of {candidates} exists")
            self._built[name] = str(found[0])
        return self._built[name]

    def run(self, name, *args, timeout=120):
        """Runs a binary example; returns the CompletedProcess (never raises on exit status)."""
        return subprocess.run([self.path(name), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout)


def fnv1a64(data):
    """64-bit FNV-1a, as the Rust inspect example computes it."""
    h = 0xCBF29CE484222325
    for b in bytes(data):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# One per test session: each example is built once, whichever test asks first.
EXAMPLES = Examples()


def test_binaries():
    """{name: path} of the crate's integration-test executables (built, not run)."""
    import json

    result = cargo("test", "--offline", "--no-run", "--message-format=json")
    found = {}
    for line in result.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        target = message.get("target", {})
        if message.get("reason") == "compiler-artifact" and message.get("executable") and \
                target.get("kind") == ["test"]:
            found[target["name"]] = message["executable"]
    return found
