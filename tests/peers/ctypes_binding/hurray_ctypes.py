"""hurray_ctypes -- a second binding of the native protocol, on hurray-ffi alone.

This is what a Go (cgo) or Julia (ccall) binding of Hurray would be: it loads
libhurray by path, declares the C functions it calls, copies the constants it
needs from hurray.h, and speaks the "hurray_tensor" capsule protocol with
nothing but the C ABI and the Python C API (through ctypes, on a handle of
its own rather than the shared ``ctypes.pythonapi``).
It never imports the ``hurray`` package, nor numpy.

Producing: ``Binding.produce(...)`` copies the caller's bytes into memory the
binding allocates, builds the descriptor with the hurray-ffi builder, and
returns a capsule whose buffers and owner are released by the binding's own
callbacks, each counted (``Binding.counters``).

Consuming: ``Binding.consume(capsule)`` checks the context's ABI version
first (``hurray_tensor_context_abi_version``), then decodes the descriptor and
checks it against the buffers, and only then takes the capsule (renames it
"used_hurray_tensor", clears its context). The returned ``Taken`` reads the
descriptor through the accessors and walks the buffers.

Limits of a test binding: callbacks are ctypes callbacks, so a capsule or
buffer released after the interpreter has begun to finalize is leaked, not
freed; the capsule name strings live as long as this module.
"""
import ctypes
import itertools
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_int64, c_uint8, c_uint32, c_uint64, c_void_p

# ---- constants of hurray.h, version 4 (as a binding generator would copy them)

ABI_VERSION = 5
MIN_ABI_VERSION = 4  # contexts of version 4 are still read (ADR-059)
BUFFER_READONLY = 1
CONTEXT_MAGIC = 0x48525443
MAX_RANK = 64
MAX_PARTS = 4

OK = 0
ERROR_NULL_ARGUMENT = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_OUT_OF_RANGE = 3
ERROR_NO_MEMORY = 5
ERROR_NOT_A_CONTEXT = 6
ERROR_ABI_VERSION = 7
ERROR_UNSUPPORTED = 9
ERROR_BUFFER_TOO_SMALL = 10
ERROR_NOT_FOUND = 11

BYTE_ORDER_LITTLE = 0
PACKING_PADDED = 1
PACKING_GGML_SPLIT = 3
SCHEME_GGML = 3
GRANULARITY_PER_TENSOR = 1
GRANULARITY_PER_AXIS = 2
GRANULARITY_PER_BLOCK = 3
ROLE_VALUES = 1
ROLE_GLOBAL_SCALE = 4
ROLES = (1, 2, 3, 4)
LAYOUT_SWIZZLED_128X4 = 1
# GGML block formats: type -> (elements per block, bytes per block).
GGML_BLOCKS = {2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
               12: (256, 144), 14: (256, 210), 39: (32, 17)}

_MAX_ENCODED = 32 + 16 * MAX_RANK + 16 * MAX_PARTS

# Static capsule names: PyCapsule keeps the pointer, not a copy.
_CAPSULE_NAME = ctypes.create_string_buffer(b"hurray_tensor")
_USED_CAPSULE_NAME = ctypes.create_string_buffer(b"used_hurray_tensor")

RELEASE = ctypes.CFUNCTYPE(None, c_void_p)
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)


class HurrayCtypesError(Exception):
    """A refusal, with the HurrayStatus code in ``status``."""

    def __init__(self, status, message):
        super().__init__(f"status {status}: {message}")
        self.status = status


# ---- the Python C API, called with the GIL held -------------------------

# Not ctypes.pythonapi: its function objects are shared by every module in
# the process, and a binding must not depend on what others set on them.
_PYTHON = ctypes.PyDLL(None)


def _api(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, _PYTHON))


_py = ctypes.py_object
_Capsule_New = _api("PyCapsule_New", _py, c_void_p, c_void_p, CAPSULE_DESTRUCTOR)
_Capsule_IsValid = _api("PyCapsule_IsValid", c_int, _py, c_void_p)
_Capsule_GetPointer = _api("PyCapsule_GetPointer", c_void_p, _py, c_void_p)
_Capsule_GetContext = _api("PyCapsule_GetContext", c_void_p, _py)
_Capsule_SetContext = _api("PyCapsule_SetContext", c_int, _py, c_void_p)
_Capsule_SetName = _api("PyCapsule_SetName", c_int, _py, c_void_p)
# The same, on a capsule being destroyed: a raw pointer, never a py_object
# (turning a dying object into a reference would resurrect it).
_Raw_IsValid = _api("PyCapsule_IsValid", c_int, c_void_p, c_void_p)
_Raw_GetPointer = _api("PyCapsule_GetPointer", c_void_p, c_void_p, c_void_p)
_Raw_GetContext = _api("PyCapsule_GetContext", c_void_p, c_void_p)

_NAME = ctypes.addressof(_CAPSULE_NAME)
_USED_NAME = ctypes.addressof(_USED_CAPSULE_NAME)

# Bindings hold the callbacks C may still call; they are never freed.
_KEEP_ALIVE = []


def _declare(lib):
    """argtypes/restype for every function the binding calls."""
    H = c_void_p  # every handle is opaque: a pointer the binding never reads
    table = {
        "hurray_c_abi_version": (c_uint32,),
        "hurray_status_name": (c_char_p, c_int),
        "hurray_last_error_message": (c_char_p,),
        "hurray_buffer_from_ptr": (c_int, c_void_p, c_uint64, RELEASE, c_void_p, POINTER(H)),
        "hurray_buffer_data": (c_int, H, POINTER(c_void_p), POINTER(c_uint64)),
        "hurray_buffer_destroy": (None, POINTER(H)),
        "hurray_buffer_list_new": (c_int, POINTER(H)),
        "hurray_buffer_list_push": (c_int, H, POINTER(H)),
        "hurray_buffer_list_len": (c_int, H, POINTER(c_uint64)),
        "hurray_buffer_list_get": (c_int, H, c_uint64, POINTER(H)),
        "hurray_buffer_list_destroy": (None, POINTER(H)),
        "hurray_descriptor_decode": (c_int, c_void_p, c_uint64, POINTER(H)),
        "hurray_descriptor_check_buffers": (c_int, H, H),
        "hurray_descriptor_destroy": (None, POINTER(H)),
        "hurray_descriptor_new": (c_int, c_uint32, c_uint32, POINTER(c_uint64), POINTER(H)),
        "hurray_descriptor_set_strides": (c_int, H, c_uint32, POINTER(c_int64)),
        "hurray_descriptor_set_byte_order": (c_int, H, c_uint32),
        "hurray_descriptor_set_packing": (c_int, H, c_uint32),
        "hurray_descriptor_set_quantization": (c_int, H, c_uint32, c_uint32, c_uint32, c_uint64, c_uint32),
        "hurray_descriptor_set_part": (c_int, H, c_uint32, c_uint32, c_uint64, c_uint64, c_uint32),
        "hurray_descriptor_validate": (c_int, H),
        "hurray_descriptor_encode": (c_int, H, POINTER(c_uint8), c_uint64, POINTER(c_uint64)),
        "hurray_descriptor_dtype": (c_int, H, POINTER(c_uint32)),
        "hurray_descriptor_rank": (c_int, H, POINTER(c_uint32)),
        "hurray_descriptor_shape": (c_int, H, POINTER(POINTER(c_uint64))),
        "hurray_descriptor_strides": (c_int, H, POINTER(POINTER(c_int64))),
        "hurray_descriptor_byte_order": (c_int, H, POINTER(c_uint32)),
        "hurray_descriptor_packing": (c_int, H, POINTER(c_uint32)),
        "hurray_descriptor_quantization": (c_int, H, POINTER(c_uint32), POINTER(c_uint32),
                                           POINTER(c_uint32), POINTER(c_uint64), POINTER(c_uint32)),
        "hurray_descriptor_part": (c_int, H, c_uint32, POINTER(c_uint32), POINTER(c_uint64),
                                   POINTER(c_uint64), POINTER(c_uint32)),
        "hurray_descriptor_buffer_count": (c_int, H, POINTER(c_uint64)),
        "hurray_dtype_bits": (c_int, c_uint32, POINTER(c_uint32)),
        "hurray_tensor_context_new": (c_int, c_uint32, c_void_p, c_uint64, c_void_p, RELEASE, POINTER(H)),
        "hurray_tensor_context_abi_version": (c_int, H, POINTER(c_uint32)),
        "hurray_tensor_context_descriptor": (c_int, H, POINTER(c_void_p), POINTER(c_uint64)),
        "hurray_tensor_context_destroy": (None, POINTER(H)),
        "hurray_tensor_context_buffer_flags": (c_int, H, H, c_uint64, POINTER(c_uint32)),
        "hurray_buffer_mark_readonly": (c_int, H),
    }
    for name, (restype, *argtypes) in table.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


class Binding:
    """hurray-ffi loaded from ``library_path``, and the capsule protocol over it."""

    def __init__(self, library_path):
        self.lib = ctypes.CDLL(library_path)
        _declare(self.lib)
        linked = self.lib.hurray_c_abi_version()
        if linked < ABI_VERSION:  # a newer library serves this binding's version too
            raise HurrayCtypesError(
                ERROR_ABI_VERSION, f"{library_path} has C ABI {linked}; this binding speaks {ABI_VERSION}"
            )
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._memory = {}  # id -> the ctypes array a HurrayBuffer points into
        self._owners = {}  # id -> the record a context owns
        self.counters = dict.fromkeys(
            ("buffers_made", "buffers_released", "owners_made", "owners_released", "bad_releases"), 0
        )
        self._release_buffer_cb = RELEASE(self._release_buffer)
        self._release_owner_cb = RELEASE(self._release_owner)
        self._destructor_cb = CAPSULE_DESTRUCTOR(self._capsule_destructor)
        _KEEP_ALIVE.append(self)

    # ---- errors --------------------------------------------------------

    def _message(self):
        raw = self.lib.hurray_last_error_message()
        return raw.decode("utf-8", "replace") if raw else ""

    def _check(self, status, doing):
        if status != OK:
            name = self.lib.hurray_status_name(status).decode()
            raise HurrayCtypesError(status, f"{doing}: {name}: {self._message()}")

    # ---- release callbacks (any thread; counted) ----------------------

    def _release(self, table, context, released):
        with self._lock:
            if table.pop(context, None) is None:
                self.counters["bad_releases"] += 1  # twice, or never handed out
            else:
                self.counters[released] += 1

    def _release_buffer(self, context):
        self._release(self._memory, context, "buffers_released")

    def _release_owner(self, owner):
        self._release(self._owners, owner, "owners_released")

    def _capsule_destructor(self, capsule):
        # Frees the handles only while the capsule still has its first name:
        # a consumer that renamed it owns them.
        try:
            if not _Raw_IsValid(capsule, _NAME):
                return
            handle = c_void_p(_Raw_GetPointer(capsule, _NAME))
            ctx = c_void_p(_Raw_GetContext(capsule))
            self.lib.hurray_buffer_list_destroy(byref(handle))
            self.lib.hurray_tensor_context_destroy(byref(ctx))
        except Exception:  # a destructor must not leave an exception behind
            pass

    # ---- producing -----------------------------------------------------

    def build_descriptor(self, dtype, shape, strides=None, *, byte_order=BYTE_ORDER_LITTLE, packing=None,
                         scheme=0, granularity=0, axis=0, block_size=0, ggml_type=0, parts=()):
        """Encoded descriptor bytes from the hurray-ffi builder. parts: (role, dtype, buffer, offset, layout)."""
        desc = c_void_p()
        shape_arr = (c_uint64 * max(len(shape), 1))(*shape)
        self._check(self.lib.hurray_descriptor_new(dtype, len(shape), shape_arr, byref(desc)), "descriptor_new")
        try:
            if strides is not None:
                arr = (c_int64 * max(len(strides), 1))(*strides)
                self._check(self.lib.hurray_descriptor_set_strides(desc, len(strides), arr), "set_strides")
            if byte_order != BYTE_ORDER_LITTLE:
                self._check(self.lib.hurray_descriptor_set_byte_order(desc, byte_order), "set_byte_order")
            if packing is not None:
                self._check(self.lib.hurray_descriptor_set_packing(desc, packing), "set_packing")
            self._check(
                self.lib.hurray_descriptor_set_quantization(desc, scheme, granularity, axis, block_size, ggml_type),
                "set_quantization",
            )
            for role, part_dtype, buffer_index, byte_offset, layout in parts:
                self._check(
                    self.lib.hurray_descriptor_set_part(desc, role, part_dtype, buffer_index, byte_offset, layout),
                    "set_part",
                )
            self._check(self.lib.hurray_descriptor_validate(desc), "validate")
            out = (c_uint8 * _MAX_ENCODED)()
            out_len = c_uint64()
            self._check(self.lib.hurray_descriptor_encode(desc, out, _MAX_ENCODED, byref(out_len)), "encode")
            return bytes(out[: out_len.value])
        finally:
            self.lib.hurray_descriptor_destroy(byref(desc))

    def _wrap(self, data):
        """A HurrayBuffer over a fresh copy of data, released through the binding."""
        memory = (c_uint8 * max(len(data), 1)).from_buffer_copy(bytes(data) or b"\0")
        with self._lock:
            key = next(self._ids)
            self._memory[key] = memory
            self.counters["buffers_made"] += 1
        buf = c_void_p()
        status = self.lib.hurray_buffer_from_ptr(
            ctypes.addressof(memory), len(data), self._release_buffer_cb, key, byref(buf)
        )
        if status != OK:
            self._release_buffer(key)  # the buffer never took it
            self._check(status, "buffer_from_ptr")
        return buf

    def produce(self, dtype, shape, strides=None, *, buffers=(), **fields):
        """(capsule, descriptor bytes): a "hurray_tensor" capsule over copies of ``buffers``
        (bytes-like), owned by the binding, and the descriptor it carries."""
        encoded = self.build_descriptor(dtype, shape, strides, **fields)
        handle = c_void_p()
        self._check(self.lib.hurray_buffer_list_new(byref(handle)), "buffer_list_new")
        try:
            for data in buffers:
                buf = self._wrap(data)
                status = self.lib.hurray_buffer_list_push(handle, byref(buf))
                if status != OK:
                    self.lib.hurray_buffer_destroy(byref(buf))
                    self._check(status, "buffer_list_push")
            with self._lock:
                owner = next(self._ids)
                self._owners[owner] = {"descriptor": encoded, "buffers": len(buffers)}
                self.counters["owners_made"] += 1
            ctx = c_void_p()
            raw = (c_uint8 * len(encoded)).from_buffer_copy(encoded)
            status = self.lib.hurray_tensor_context_new(
                ABI_VERSION, raw, len(encoded), owner, self._release_owner_cb, byref(ctx)
            )
            if status != OK:
                self._release_owner(owner)  # the context never took it
                self._check(status, "tensor_context_new")
        except BaseException:
            self.lib.hurray_buffer_list_destroy(byref(handle))
            raise
        try:
            capsule = _Capsule_New(handle, _NAME, self._destructor_cb)
        except BaseException:
            self.lib.hurray_buffer_list_destroy(byref(handle))
            self.lib.hurray_tensor_context_destroy(byref(ctx))
            raise
        _Capsule_SetContext(capsule, ctx)
        return capsule, encoded

    # ---- consuming -----------------------------------------------------

    def consume(self, capsule):
        """Check, then take, a "hurray_tensor" capsule. Refusals leave it untouched."""
        if not _Capsule_IsValid(capsule, _NAME):
            raise HurrayCtypesError(ERROR_INVALID_ARGUMENT, "not an unused capsule named 'hurray_tensor'")
        handle = c_void_p(_Capsule_GetPointer(capsule, _NAME))
        ctx = c_void_p(_Capsule_GetContext(capsule))
        if not ctx.value:
            raise HurrayCtypesError(ERROR_NULL_ARGUMENT, "the capsule has no context")
        # ADR-034 section 4: the version, read by the one call safe on any
        # context, is judged before anything else is read.
        version = c_uint32()
        self._check(self.lib.hurray_tensor_context_abi_version(ctx, byref(version)), "reading the ABI version")
        if not MIN_ABI_VERSION <= version.value <= ABI_VERSION:
            raise HurrayCtypesError(
                ERROR_ABI_VERSION,
                f"the context has C ABI version {version.value}; this binding reads versions "
                f"{MIN_ABI_VERSION} to {ABI_VERSION}",
            )
        data, length = c_void_p(), c_uint64()
        self._check(self.lib.hurray_tensor_context_descriptor(ctx, byref(data), byref(length)), "reading the descriptor")
        desc = c_void_p()
        self._check(self.lib.hurray_descriptor_decode(data, length, byref(desc)), "decoding the descriptor")
        status = self.lib.hurray_descriptor_check_buffers(desc, handle)
        if status != OK:
            message = self._message()
            self.lib.hurray_descriptor_destroy(byref(desc))
            raise HurrayCtypesError(status, f"checking the buffers: {message}")
        _Capsule_SetName(capsule, _USED_NAME)
        _Capsule_SetContext(capsule, None)
        return Taken(self, handle, ctx, desc, version.value)


class Taken:
    """A tensor this binding took from a capsule: it owns the list and the context."""

    def __init__(self, binding, handle, ctx, desc, version):
        self._binding = binding
        self._lib = binding.lib
        self._list = handle
        self._ctx = ctx
        self._desc = desc
        self.abi_version = version

    def release(self):
        """Destroy the list, then the context. Later calls do nothing."""
        lib = self._lib
        lib.hurray_descriptor_destroy(byref(self._desc))
        lib.hurray_buffer_list_destroy(byref(self._list))
        lib.hurray_tensor_context_destroy(byref(self._ctx))

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass

    def _call(self, fn, *args):
        self._binding._check(fn(*args), fn.__name__)

    def fields(self):
        """The descriptor, read through the accessors."""
        lib, d = self._lib, self._desc
        u = [c_uint32() for _ in range(5)]
        block_size = c_uint64()
        self._call(lib.hurray_descriptor_dtype, d, byref(u[0]))
        self._call(lib.hurray_descriptor_rank, d, byref(u[1]))
        rank = u[1].value
        shape_p, strides_p = POINTER(c_uint64)(), POINTER(c_int64)()
        self._call(lib.hurray_descriptor_shape, d, byref(shape_p))
        self._call(lib.hurray_descriptor_strides, d, byref(strides_p))
        result = {"dtype": u[0].value, "shape": tuple(shape_p[:rank]), "strides": tuple(strides_p[:rank])}
        self._call(lib.hurray_descriptor_byte_order, d, byref(u[0]))
        result["byte_order"] = u[0].value
        self._call(lib.hurray_descriptor_packing, d, byref(u[0]))
        result["packing"] = u[0].value
        self._call(lib.hurray_descriptor_quantization, d, byref(u[0]), byref(u[1]), byref(u[2]),
                   byref(block_size), byref(u[3]))
        result.update(scheme=u[0].value, granularity=u[1].value, axis=u[2].value,
                      block_size=block_size.value, ggml_type=u[3].value)
        parts = {}
        offsets = [c_uint64(), c_uint64()]
        for role in ROLES:
            status = lib.hurray_descriptor_part(d, role, byref(u[0]), byref(offsets[0]), byref(offsets[1]),
                                                byref(u[1]))
            if status == ERROR_NOT_FOUND:
                continue
            self._binding._check(status, "hurray_descriptor_part")
            parts[role] = (u[0].value, offsets[0].value, offsets[1].value, u[1].value)
        result["parts"] = parts
        count = c_uint64()
        self._call(lib.hurray_descriptor_buffer_count, d, byref(count))
        result["buffer_count"] = count.value
        return result

    def descriptor_bytes(self):
        data, length = c_void_p(), c_uint64()
        self._call(self._lib.hurray_tensor_context_descriptor, self._ctx, byref(data), byref(length))
        return ctypes.string_at(data, length.value)

    def buffers(self):
        """Every buffer's bytes, copied out through hurray_buffer_list_get / hurray_buffer_data."""
        lib = self._lib
        if not self._list.value:
            raise HurrayCtypesError(ERROR_NULL_ARGUMENT, "the tensor was released")
        count = c_uint64()
        self._call(lib.hurray_buffer_list_len, self._list, byref(count))
        out = []
        for i in range(count.value):
            buf, data, length = c_void_p(), c_void_p(), c_uint64()
            self._call(lib.hurray_buffer_list_get, self._list, i, byref(buf))
            self._call(lib.hurray_buffer_data, buf, byref(data), byref(length))
            out.append(ctypes.string_at(data.value or 0, length.value) if length.value else b"")
        return out

    def elements(self, fields=None, buffers=None):
        """{role: bytes}: each part's elements in logical row-major order (values: one element
        per ceil(storage bits / 8) bytes; GGML values: the block bytes; parameters as stored)."""
        fields = fields or self.fields()
        buffers = buffers if buffers is not None else self.buffers()
        out = {}
        for role, (part_dtype, index, offset, layout) in fields["parts"].items():
            data = buffers[index]
            if role == ROLE_VALUES:
                out[role] = _gather_values(self._binding, fields, data, offset)
            else:
                count = _parameter_count(fields, role, layout)
                nbytes = (count * _bits(self._binding, part_dtype) + 7) // 8
                _require(offset + nbytes <= len(data), "a parameter part passes its buffer")
                out[role] = data[offset:offset + nbytes]
        return out

    def readonly(self, count):
        """Per buffer, whether it may only be read: asked of the context (ABI 5)."""
        out = []
        for i in range(count):
            flags = c_uint32()
            self._binding._check(self._lib.hurray_tensor_context_buffer_flags(self._ctx, self._list, i, byref(flags)),
                                 "reading a buffer's flags")
            out.append(bool(flags.value & BUFFER_READONLY))
        return out

    def report(self):
        """The same record the C peer gives: what this consumer saw."""
        fields = self.fields()
        buffers = self.buffers()
        return {
            "abi_version": self.abi_version,
            "descriptor": self.descriptor_bytes(),
            "fields": fields,
            "buffers": buffers,
            "elements": self.elements(fields, buffers),
            "readonly": self.readonly(len(buffers)),
        }


# ---- walking the layout -----------------------------------------------

def _require(condition, message):
    if not condition:
        raise HurrayCtypesError(ERROR_BUFFER_TOO_SMALL, message)


def _bits(binding, dtype):
    out = c_uint32()
    binding._check(binding.lib.hurray_dtype_bits(dtype, byref(out)), "hurray_dtype_bits")
    return out.value


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _row_major_indices(shape):
    return itertools.product(*(range(d) for d in shape))


def _gather_values(binding, fields, data, offset):
    shape, strides = fields["shape"], fields["strides"]
    n = _count(shape)
    if fields["scheme"] == SCHEME_GGML:
        block_elements, block_bytes = GGML_BLOCKS[fields["ggml_type"]]
        end = offset + n // block_elements * block_bytes
        _require(end <= len(data), "GGML blocks pass their buffer")
        return data[offset:end]
    storage = 8 if fields["packing"] == PACKING_PADDED else _bits(binding, fields["dtype"])
    width = (storage + 7) // 8
    out = bytearray()
    for flat, index in enumerate(_row_major_indices(shape)):
        if fields["packing"] == PACKING_GGML_SPLIT:
            j = flat % 32
            bit = 8 * (offset + flat // 32 * 16 + j % 16) + (0 if j < 16 else 4)
        else:
            bit = 8 * offset + storage * sum(i * s for i, s in zip(index, strides))
        byte = bit // 8
        if storage % 8 == 0:
            _require(0 <= byte and byte + width <= len(data), f"element {flat} passes its buffer")
            out += data[byte:byte + width]
        else:
            _require(0 <= byte < len(data), f"element {flat} passes its buffer")
            out.append((data[byte] >> (bit % 8)) & ((1 << storage) - 1))
    return bytes(out)


def _parameter_count(fields, role, layout):
    granularity = fields["granularity"]
    if role == ROLE_GLOBAL_SCALE or granularity == GRANULARITY_PER_TENSOR:
        return 1
    if granularity == GRANULARITY_PER_AXIS:
        return fields["shape"][fields["axis"]]
    if granularity == GRANULARITY_PER_BLOCK:
        if layout == LAYOUT_SWIZZLED_128X4:
            rows = -(-fields["shape"][0] // 128) * 128
            cols = -(-(fields["shape"][1] // fields["block_size"]) // 4) * 4
            return rows * cols
        return _count(fields["shape"]) // fields["block_size"]
    raise HurrayCtypesError(ERROR_UNSUPPORTED, f"granularity {granularity} has no parameter part")
