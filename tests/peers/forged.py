"""Run in a child process: offer every consumer forged contexts behind guard pages.

Usage: python forged.py C_PEER.so C_PEER_STATIC.so LIBHURRAY.so RUST_PEER.so

Each forged context is exactly 8 bytes, the frozen header of ADR-034 § 4
(uint32 magic, uint32 ABI version), placed at the very end of a readable
page whose successor is PROT_NONE; the capsule's pointer (where a buffer
list would be) is inside that PROT_NONE page. A consumer that reads past
the header, or touches the list before judging the version, dies of
SIGSEGV, and the parent sees the crash. Prints one JSON object:
{"refusals": {forged: {consumer: {...}}}, "headers": {forged: [status, version]}}.
"""
import ctypes
import json
import mmap
import os
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "ctypes_binding"))

from peers import build, matrix, rust_peer  # noqa: E402

MAGIC = 0x48525443
DEAD = 0x44454144  # what hurray_tensor_context_destroy writes over the magic
PROT_NONE = 0  # <sys/mman.h>; the mmap module does not export it
HEADERS = {"version_3": (MAGIC, 3), "version_6": (MAGIC, 6), "no_magic": (0, 5), "dead_magic": (DEAD, 5)}
assert set(HEADERS) == {forged_id for forged_id, _, _ in matrix.FORGED}

_api = ctypes.PyDLL(None)  # private: ctypes.pythonapi's function objects are shared by every module
_NAME = ctypes.create_string_buffer(b"hurray_tensor")
_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(("PyCapsule_New", _api))
_set_context = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_SetContext", _api))
_get_context = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyCapsule_GetContext", _api))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_GetPointer", _api))


class GuardedPages:
    """Two pages: the first readable, the second PROT_NONE."""

    def __init__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        self.page = mmap.PAGESIZE
        self.base = libc.mmap(None, 2 * self.page, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if self.base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        if libc.mprotect(self.base + self.page, self.page, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")

    def header_at_edge(self, magic, version):
        address = self.base + self.page - 8
        ctypes.memmove(address, struct.pack("<II", magic, version), 8)
        return address

    @property
    def unreadable(self):
        return self.base + self.page + 64


def forged_capsule(pages, forged_id):
    """A capsule no producer owns (no destructor): the pointer unreadable, the context forged."""
    capsule = _new(pages.unreadable, ctypes.addressof(_NAME), None)
    if forged_id != "null_context":
        _set_context(capsule, pages.header_at_edge(*HEADERS[forged_id]))
    return capsule


def state(capsule):
    return [_get_name(capsule).decode(), _get_pointer(capsule, ctypes.addressof(_NAME)), _get_context(capsule)]


def main(c_peer_path, static_path, library_path, rust_peer_path):
    import hurray
    import hurray_ctypes

    c_peer, c_static = build.load(c_peer_path), build.load(static_path)
    binding = hurray_ctypes.Binding(library_path)
    rust = rust_peer.RustPeer(rust_peer_path)
    consumers = {
        "hurray-python": (hurray.from_hurray, hurray.HurrayError),
        "c-peer": (c_peer.consume, c_peer.PeerError),
        "ctypes-binding": (binding.consume, hurray_ctypes.HurrayCtypesError),
        "c-peer-static": (c_static.consume, c_static.PeerError),
        "rust-peer": (rust.consume, rust_peer.RustPeerError),
    }
    assert set(consumers) == set(matrix.CONSUMERS_OF_FORGED)
    pages = GuardedPages()
    refusals = {}
    for forged_id in list(HEADERS) + ["null_context"]:
        refusals[forged_id] = {}
        for name, (consume, error) in consumers.items():
            capsule = forged_capsule(pages, forged_id)
            before = state(capsule)
            print(f"offering a {forged_id} context to {name}", file=sys.stderr, flush=True)
            outcome = {"accepted": False}
            try:
                consume(capsule)
                outcome["accepted"] = True
            except error as exc:
                status = exc.status if hasattr(exc, "status") else exc.args[0]
                outcome.update(status=status, error=type(exc).__name__, message=str(exc))
            outcome["unchanged"] = state(capsule) == before
            refusals[forged_id][name] = outcome
    # The one accessor every library answers on any context: the header, read.
    headers = {}
    for forged_id, (magic, version) in HEADERS.items():
        out = ctypes.c_uint32(12345)
        status = binding.lib.hurray_tensor_context_abi_version(pages.header_at_edge(magic, version), ctypes.byref(out))
        headers[forged_id] = [status, out.value]
    print(json.dumps({"refusals": refusals, "headers": headers}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
    sys.stdout.flush()
    os._exit(0)  # the forged capsules have no destructor; nothing to tear down
