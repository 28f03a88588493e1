"""The peers, built and loaded once per test session (shared by the interop test files)."""
import atexit
import functools
import shutil
import sys
import tempfile
from pathlib import Path

from . import adapters, build

HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def _build_dir():
    path = tempfile.mkdtemp(prefix="hurray-peers-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@functools.lru_cache(maxsize=None)
def c_peer_module():
    return build.load(build.build_linked(_build_dir()))


@functools.lru_cache(maxsize=None)
def c_peer_abi4_module():
    """The C peer built against the frozen ABI-4 header (build.build_abi4)."""
    return build.load(build.build_abi4(_build_dir()))


@functools.lru_cache(maxsize=None)
def c_peer_static_path():
    return build.build_static(_build_dir())


@functools.lru_cache(maxsize=None)
def c_peer_static_module():
    return build.load(c_peer_static_path())


def ctypes_binding_module():
    """hurray_ctypes, imported from its directory (it is not a package)."""
    directory = str(HERE / "ctypes_binding")
    if directory not in sys.path:
        sys.path.insert(0, directory)
    import hurray_ctypes

    return hurray_ctypes


@functools.lru_cache(maxsize=None)
def ctypes_binding():
    import hurray

    return ctypes_binding_module().Binding(hurray.get_library())


def rust_peer_path():
    """The rust-peer cdylib, built once per session by cargo (offline) into bindings/rust/target.
    Without cargo this raises, and every test that needs it fails: CI has cargo."""
    from support import rust

    return rust.EXAMPLES.path("rust_peer")


@functools.lru_cache(maxsize=None)
def rust_peer():
    from . import rust_peer as module

    return module.RustPeer(rust_peer_path())


@functools.lru_cache(maxsize=None)
def peers():
    """name -> adapter, for the matrix."""
    return {
        "hurray-python": adapters.PythonPeer(),
        "c-peer": adapters.CPeer(c_peer_module(), "c-peer"),
        "ctypes-binding": adapters.CtypesPeer(ctypes_binding()),
        "rust-peer": adapters.RustPeer(rust_peer()),
    }


@functools.lru_cache(maxsize=None)
def static_peer():
    return adapters.CPeer(c_peer_static_module(), "c-peer-static")


def refusal_types():
    """The exception each peer refuses a capsule with."""
    import hurray

    from .rust_peer import RustPeerError

    return (hurray.HurrayError, c_peer_module().PeerError, ctypes_binding_module().HurrayCtypesError, RustPeerError)
