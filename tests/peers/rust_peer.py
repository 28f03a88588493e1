"""rust-peer, the Python half: the "hurray_tensor" capsule around the Rust half.

The Rust half (bindings/rust/examples/rust_peer, a cdylib built with the
crate) produces and consumes with the crate's safe API and deals only in
the raw pair a capsule carries: the buffer list (the capsule's pointer) and
the tensor context (its context). This module loads it with ctypes and does
what a PyO3 or hand-written extension would do around it, through the
Python C API on a handle of its own:

- producing: wraps the pair the Rust half made in a capsule whose destructor
  hands it back (``rust_peer_discard``) while the capsule has its first name;
- consuming: reads the capsule's pointer and context, lets the Rust half
  check and take them (``rust_peer_take``: ABI version first, then the
  descriptor, then the buffers), and only then renames the capsule
  "used_hurray_tensor" and clears its context. A refusal leaves it untouched.

It never imports ``hurray``. Like the ctypes binding, a capsule destroyed
after the interpreter has begun to finalize is leaked, not freed.
"""
import ctypes
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_int64, c_uint32, c_uint64, c_void_p

OK, NULL_ARGUMENT, INVALID_ARGUMENT, NOT_FOUND = 0, 1, 2, 11
MAX_RANK, MAX_PARTS, MAX_DESCRIPTOR_LEN = 64, 4, 1120
COUNTERS = ("buffers_made", "buffers_released", "owners_made", "owners_released", "bad_releases")


class RustPeerError(Exception):
    """A refusal: ``status`` (also ``args[0]``) is the HurrayStatus, then the Rust half's message."""

    def __init__(self, status, message):
        super().__init__(status, message)
        self.status = status

    def __str__(self):
        return f"status {self.args[0]}: {self.args[1]}"


class Fields(ctypes.Structure):
    _fields_ = [(name, c_uint32) for name in ("abi_version", "dtype", "rank", "byte_order", "packing", "scheme",
                                               "granularity", "axis", "ggml_type", "part_count")] + [
        ("block_size", c_uint64), ("buffer_count", c_uint64), ("shape", c_uint64 * MAX_RANK),
        ("strides", c_int64 * MAX_RANK), ("parts", (c_uint64 * 5) * MAX_PARTS)]


# ---- the Python C API (GIL held), on a private handle ---------------------

_PYTHON = ctypes.PyDLL(None)
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)


def _api(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, _PYTHON))


_py = ctypes.py_object
_Capsule_New = _api("PyCapsule_New", _py, c_void_p, c_void_p, CAPSULE_DESTRUCTOR)
_Capsule_IsValid = _api("PyCapsule_IsValid", c_int, _py, c_void_p)
_Capsule_GetPointer = _api("PyCapsule_GetPointer", c_void_p, _py, c_void_p)
_Capsule_GetContext = _api("PyCapsule_GetContext", c_void_p, _py)
_Capsule_SetContext = _api("PyCapsule_SetContext", c_int, _py, c_void_p)
_Capsule_SetName = _api("PyCapsule_SetName", c_int, _py, c_void_p)
# On a capsule being destroyed: a raw pointer, never a py_object.
_Raw_IsValid = _api("PyCapsule_IsValid", c_int, c_void_p, c_void_p)
_Raw_GetPointer = _api("PyCapsule_GetPointer", c_void_p, c_void_p, c_void_p)
_Raw_GetContext = _api("PyCapsule_GetContext", c_void_p, c_void_p)

# Static names: a capsule keeps the pointer, not a copy.
_CAPSULE_NAME = ctypes.create_string_buffer(b"hurray_tensor")
_USED_CAPSULE_NAME = ctypes.create_string_buffer(b"used_hurray_tensor")
_NAME = ctypes.addressof(_CAPSULE_NAME)
_USED_NAME = ctypes.addressof(_USED_CAPSULE_NAME)
_KEEP_ALIVE = []  # peers whose destructor callbacks capsules may still call

_MESSAGE = (c_char_p, ctypes.c_size_t)


def _declare(lib):
    H = c_void_p
    table = {
        "rust_peer_counters": (None, POINTER(c_uint64)),
        "rust_peer_produce": (c_int, c_uint32, c_uint32, POINTER(c_uint64), POINTER(c_int64), c_int32, c_uint32,
                              c_uint32, c_uint32, c_uint64, c_uint32, c_uint32, POINTER(c_uint64), c_uint64,
                              POINTER(c_void_p), POINTER(c_uint64), POINTER(H), POINTER(H), POINTER(ctypes.c_uint8),
                              c_uint64, POINTER(c_uint64), *_MESSAGE),
        "rust_peer_discard": (None, H, H),
        "rust_peer_take": (c_int, H, H, POINTER(H), *_MESSAGE),
        "rust_peer_fields": (c_int, H, POINTER(Fields), *_MESSAGE),
        "rust_peer_descriptor": (c_int, H, POINTER(c_void_p), POINTER(c_uint64), *_MESSAGE),
        "rust_peer_buffer": (c_int, H, c_uint64, POINTER(c_void_p), POINTER(c_uint64), *_MESSAGE),
        "rust_peer_walk": (c_int, H, *_MESSAGE),
        "rust_peer_element": (c_int, H, c_uint32, POINTER(c_void_p), POINTER(c_uint64), *_MESSAGE),
        "rust_peer_release": (None, H),
    }
    for name, (restype, *argtypes) in table.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def _array(ctype, values):
    values = list(values)
    return (ctype * max(len(values), 1))(*values)


class RustPeer:
    """The Rust half loaded from ``path``. Its calls run without the GIL (ctypes.CDLL): whatever a
    producer's release callback needs, it takes itself, as it must for any foreign consumer."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        _declare(self.lib)
        self._destructor_cb = CAPSULE_DESTRUCTOR(self._capsule_destructor)
        _KEEP_ALIVE.append(self)

    def call(self, fn, *args):
        message = ctypes.create_string_buffer(1024)
        status = fn(*args, message, len(message))
        if status != OK:
            raise RustPeerError(status, message.value.decode("utf-8", "replace"))

    @property
    def counters(self):
        out = (c_uint64 * len(COUNTERS))()
        self.lib.rust_peer_counters(out)
        return dict(zip(COUNTERS, out))

    # ---- producing -----------------------------------------------------

    def _capsule_destructor(self, capsule):
        # The handles are the capsule's only while it has its first name.
        try:
            if _Raw_IsValid(capsule, _NAME):
                self.lib.rust_peer_discard(_Raw_GetPointer(capsule, _NAME), _Raw_GetContext(capsule))
        except Exception:  # a destructor must not leave an exception behind
            pass

    def produce(self, dtype, shape, strides=None, *, packing=None, scheme=0, granularity=0, axis=0, block_size=0,
                ggml_type=0, parts=(), buffers=()):
        """(capsule, descriptor bytes); parts: (role, dtype, buffer index, byte offset, layout)."""
        memories = [bytes(b) for b in buffers]
        pointers = _array(c_void_p, [ctypes.cast(c_char_p(m), c_void_p).value for m in memories])
        handle, ctx = c_void_p(), c_void_p()
        descriptor = (ctypes.c_uint8 * MAX_DESCRIPTOR_LEN)()
        length = c_uint64()
        self.call(self.lib.rust_peer_produce, dtype, len(shape), _array(c_uint64, shape),
                  None if strides is None else _array(c_int64, strides), -1 if packing is None else packing,
                  scheme, granularity, axis, block_size, ggml_type, len(parts),
                  _array(c_uint64, [v for part in parts for v in part]), len(memories), pointers,
                  _array(c_uint64, map(len, memories)), byref(handle), byref(ctx), descriptor, len(descriptor),
                  byref(length))
        try:
            capsule = _Capsule_New(handle, _NAME, self._destructor_cb)
        except BaseException:
            self.lib.rust_peer_discard(handle, ctx)
            raise
        _Capsule_SetContext(capsule, ctx)
        return capsule, bytes(descriptor[:length.value])

    # ---- consuming -----------------------------------------------------

    def consume(self, capsule):
        """Check, then take, a "hurray_tensor" capsule. Refusals leave it untouched."""
        if not _Capsule_IsValid(capsule, _NAME):
            raise RustPeerError(INVALID_ARGUMENT, "not an unused capsule named 'hurray_tensor'")
        handle, ctx = _Capsule_GetPointer(capsule, _NAME), _Capsule_GetContext(capsule)
        held = c_void_p()
        self.call(self.lib.rust_peer_take, handle, ctx, byref(held))
        _Capsule_SetName(capsule, _USED_NAME)
        _Capsule_SetContext(capsule, None)
        return Taken(self, held)


class Taken:
    """A tensor the Rust half holds; ``release`` drops it there."""

    def __init__(self, peer, held):
        self._peer = peer
        self._held = held

    def _lent(self, fn, *args):
        data, length = c_void_p(), c_uint64()
        self._peer.call(fn, self._live(), *args, byref(data), byref(length))
        return ctypes.string_at(data.value or 0, length.value) if length.value else b""

    def _live(self):
        if self._held is None:
            raise RustPeerError(NULL_ARGUMENT, "the tensor was released")
        return self._held

    def report(self):
        """What the Rust half saw, as the other peers report it (copies only)."""
        lib = self._peer.lib
        f = Fields()
        self._peer.call(lib.rust_peer_fields, self._live(), byref(f))
        rank = f.rank
        fields = {"dtype": f.dtype, "shape": tuple(f.shape[:rank]), "strides": tuple(f.strides[:rank]),
                  "byte_order": f.byte_order, "packing": f.packing, "scheme": f.scheme,
                  "granularity": f.granularity, "axis": f.axis, "block_size": f.block_size,
                  "ggml_type": f.ggml_type,
                  "parts": {p[0]: (p[1], p[2], p[3], p[4]) for p in (tuple(f.parts[i]) for i in range(f.part_count))},
                  "buffer_count": f.buffer_count}
        buffers = [self._lent(lib.rust_peer_buffer, i) for i in range(f.buffer_count)]
        self._peer.call(lib.rust_peer_walk, self._live())
        elements = {role: self._lent(lib.rust_peer_element, role) for role in fields["parts"]}
        return {"abi_version": f.abi_version, "descriptor": self._lent(lib.rust_peer_descriptor),
                "fields": fields, "buffers": buffers, "elements": elements}

    def release(self):
        """Drop the tensor in Rust (the list, then the context). Later calls do nothing."""
        held, self._held = self._held, None
        if held is not None:
            self._peer.lib.rust_peer_release(held)

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass
