"""Hostile capsules against the native protocol's consumer, hurray.from_hurray.

Every capsule here is built by hand, the way a careless or malicious producer
could build one: the handles through the C ABI (ctypes over libhurray), the
capsule through ctypes.pythonapi (PyCapsule_New, PyCapsule_SetContext), with
no destructor, so that the test itself frees what it made. Each hostile
capsule must be refused with a hurray.HurrayError subclass, and a refused
capsule must be left exactly as it was -- same name, same handles, freed once
by its producer. Nothing may crash. Where a capsule is well-formed (the
controls, and random descriptors that happen to be valid), it must be taken,
and its handles freed once by the consumer.

Alignment is the one property the protocol does not check (docs/security.md):
a buffer whose address or byte offset is not aligned for its dtype is
accepted, and numpy reads it correctly through an unaligned view.
"""
import ctypes
import gc
import glob
import itertools
import json
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hurray
from hurray import errors

VECTORS = os.path.join(os.path.dirname(__file__), "vectors")

# ABI facts from hurray.h (C ABI 5).
OK = 0
ABI = 5
CONTEXT_MAGIC = 0x48525443
MAGIC = b"HRYD"
FLOAT32 = 17

c_void_p, c_uint32, c_uint64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
P = ctypes.POINTER
RELEASE = ctypes.CFUNCTYPE(None, c_void_p)


def load_lib():
    lib = ctypes.CDLL(hurray.get_library())
    for name, restype, argtypes in [
        ("hurray_last_error_message", ctypes.c_char_p, []),
        ("hurray_buffer_from_ptr", ctypes.c_int, [c_void_p, c_uint64, RELEASE, c_void_p, P(c_void_p)]),
        ("hurray_buffer_list_new", ctypes.c_int, [P(c_void_p)]),
        ("hurray_buffer_list_push", ctypes.c_int, [c_void_p, P(c_void_p)]),
        ("hurray_buffer_list_destroy", None, [P(c_void_p)]),
        ("hurray_tensor_context_new", ctypes.c_int,
         [c_uint32, ctypes.c_char_p, c_uint64, c_void_p, RELEASE, P(c_void_p)]),
        ("hurray_tensor_context_destroy", None, [P(c_void_p)]),
        ("hurray_descriptor_decode", ctypes.c_int, [ctypes.c_char_p, c_uint64, P(c_void_p)]),
        ("hurray_descriptor_check_buffers", ctypes.c_int, [c_void_p, c_void_p]),
        ("hurray_descriptor_destroy", None, [P(c_void_p)]),
        ("hurray_dtype_bits", ctypes.c_int, [c_uint32, P(c_uint32)]),
    ]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


LIB = load_lib()
API = ctypes.pythonapi
API.PyCapsule_New.restype = ctypes.py_object
API.PyCapsule_New.argtypes = [c_void_p, c_void_p, c_void_p]
API.PyCapsule_SetContext.restype = ctypes.c_int
API.PyCapsule_SetContext.argtypes = [ctypes.py_object, c_void_p]
API.PyCapsule_GetName.restype = c_void_p
API.PyCapsule_GetName.argtypes = [ctypes.py_object]
API.PyCapsule_GetContext.restype = c_void_p
API.PyCapsule_GetContext.argtypes = [ctypes.py_object]

# Every release callback lands here: token -> how many times it ran.
RELEASED = {}
_tokens = itertools.count(1)


@RELEASE
def _count_release(token):
    RELEASED[token] = RELEASED.get(token, 0) + 1


def new_token():
    token = next(_tokens)
    RELEASED[token] = 0
    return token


def ok(status):
    assert status == OK, LIB.hurray_last_error_message().decode()


# ---- a hand-made producer ---------------------------------------------------


class Hostile:
    """One hand-built capsule and everything it points at.

    pointer: "list" (a real HurrayBufferList), "context" (the context handle,
    i.e. the two swapped) or an int address. context: "real" (a real
    HurrayTensorContext over `descriptor`), "none" (NULL), "list" (the list
    handle) or bytes (foreign memory standing in for a context).
    """

    def __init__(self, descriptor, sizes=(), *, name=b"hurray_tensor", pointer="list",
                 context="real", misalign=0):
        self.memory = []  # keeps every span and foreign byte alive
        self.tokens = []  # one per release callback we handed over
        self.addresses = []  # where each span starts
        self.list = c_void_p()
        ok(LIB.hurray_buffer_list_new(ctypes.byref(self.list)))
        for size in sizes:
            raw = np.zeros(size + 64 + misalign, dtype=np.uint8)
            start = (-raw.ctypes.data) % 64 + misalign  # 64-aligned, then shifted
            span = raw[start:start + size]
            span[:] = np.arange(size, dtype=np.uint64).astype(np.uint8)
            self.memory.append(raw)
            self.addresses.append(span.ctypes.data)
            token = new_token()
            self.tokens.append(token)
            buf = c_void_p()
            ok(LIB.hurray_buffer_from_ptr(span.ctypes.data, size, _count_release,
                                          token, ctypes.byref(buf)))
            ok(LIB.hurray_buffer_list_push(self.list, ctypes.byref(buf)))
        self.ctx = c_void_p()
        if context in ("real", "list", "none") or pointer == "context":
            token = new_token()
            self.tokens.append(token)
            ok(LIB.hurray_tensor_context_new(ABI, descriptor, len(descriptor), token, _count_release,
                                             ctypes.byref(self.ctx)))
        context_address = {
            "real": self.ctx.value, "none": None, "list": self.list.value,
        }.get(context) if not isinstance(context, bytes) else self._foreign(context)
        pointer_address = {"list": self.list.value, "context": self.ctx.value}.get(pointer, pointer)
        self.name = None if name is None else ctypes.create_string_buffer(name)
        self.capsule = API.PyCapsule_New(pointer_address,
                                         None if name is None else ctypes.addressof(self.name), None)
        if context_address is not None:
            assert API.PyCapsule_SetContext(self.capsule, context_address) == 0

    def _foreign(self, data):
        foreign = ctypes.create_string_buffer(bytes(data), max(len(data), 8))
        self.memory.append(foreign)
        return ctypes.addressof(foreign)

    def capsule_name(self):
        address = API.PyCapsule_GetName(self.capsule)
        return None if address is None else ctypes.string_at(address)

    def refused(self, error=hurray.HurrayError, match=None):
        """from_hurray must refuse, leave the capsule as it was, and free nothing."""
        name, context = self.capsule_name(), API.PyCapsule_GetContext(self.capsule)
        with pytest.raises(error, match=match) as info:
            hurray.from_hurray(self.capsule)
        assert isinstance(info.value, hurray.HurrayError)
        assert self.capsule_name() == name, "a refused capsule was renamed"
        assert API.PyCapsule_GetContext(self.capsule) == context, "a refused capsule lost its context"
        assert all(RELEASED[t] == 0 for t in self.tokens), "a refused capsule's handle was freed"
        self.free()
        return info.value

    def free(self):
        """The producer's own cleanup of a capsule nobody took: each handle once."""
        LIB.hurray_buffer_list_destroy(ctypes.byref(self.list))
        LIB.hurray_tensor_context_destroy(ctypes.byref(self.ctx))
        assert self.list.value is None and self.ctx.value is None
        assert all(RELEASED[t] == 1 for t in self.tokens), "a handle was released other than once"

    def taken(self):
        """from_hurray must accept; the consumer then owns and frees the handles once."""
        tensor = hurray.from_hurray(self.capsule)
        assert self.capsule_name() == b"used_hurray_tensor"
        assert API.PyCapsule_GetContext(self.capsule) is None
        return tensor

    def released_once(self):
        if not all(RELEASED[t] for t in self.tokens):
            gc.collect()  # only when a cycle still holds the tensor: a full collection is slow
        assert all(RELEASED[t] == 1 for t in self.tokens), "the consumer released a handle other than once"


# ---- descriptors ------------------------------------------------------------


def encode(shape, strides, parts, *, dtype_bits=None, byte_order=0, packing=0, scheme=0,
           granularity=0, axis=0, ggml_type=0, block_size=0, reserved=0, version=1, length=None):
    """Layer-4 bytes written from the spec (docs/impl/descriptor-encoding.md), any field hostile."""
    rank = len(shape)
    total = 32 + 16 * rank + 16 * len(parts) if length is None else length
    out = MAGIC + struct.pack("<HHBBBBBBHIIQ", version, total & 0xFFFF, rank, byte_order, packing, scheme,
                              granularity, len(parts), reserved, axis, ggml_type, block_size)
    out += b"".join(struct.pack("<Q", d & (2**64 - 1)) for d in shape)
    out += b"".join(struct.pack("<Q", s & (2**64 - 1)) for s in strides)
    out += b"".join(struct.pack("<BBBBIQ", *p) for p in parts)
    return out


def float32_matrix(rows, cols, offset=0):
    return encode([rows, cols], [cols, 1], [(1, FLOAT32, 0, 0, 0, offset)])


def c_accepts(descriptor, sizes):
    """What the C library says, straight through the ABI: decode, then check_buffers."""
    desc = c_void_p()
    if LIB.hurray_descriptor_decode(descriptor, len(descriptor), ctypes.byref(desc)) != OK:
        return False
    probe = Hostile(descriptor, sizes, context="none")
    try:
        return LIB.hurray_descriptor_check_buffers(desc, probe.list) == OK
    finally:
        LIB.hurray_descriptor_destroy(ctypes.byref(desc))
        probe.free()


def vectors():
    out = []
    for path in sorted(glob.glob(os.path.join(VECTORS, "*.hex"))):
        text = "".join(line.split("#", 1)[0] for line in open(path, encoding="utf-8"))
        with open(path[:-4] + ".json", encoding="utf-8") as f:
            sizes = json.load(f)["buffer_sizes"]
        out.append((os.path.basename(path)[:-4], bytes.fromhex("".join(text.split())), sizes))
    return out


VECTORS_LIST = vectors()


def test_there_are_vectors():
    assert len(VECTORS_LIST) >= 10


# ---- controls: a well-formed hand-made capsule is taken ---------------------


@pytest.mark.parametrize("name,descriptor,sizes", VECTORS_LIST, ids=[v[0] for v in VECTORS_LIST])
def test_a_valid_hand_made_capsule_is_taken(name, descriptor, sizes):
    hostile = Hostile(descriptor, sizes)
    tensor = hostile.taken()
    assert tensor.descriptor.encode() == descriptor
    for i, size in enumerate(sizes):
        view = tensor.buffer(i)
        assert view.nbytes == size and int(view.sum()) == int(np.arange(size).astype(np.uint8).sum())
    assert all(RELEASED[t] == 0 for t in hostile.tokens)
    with pytest.raises(errors.CapsuleError, match="already consumed"):
        hurray.from_hurray(hostile.capsule)
    del tensor, view
    hostile.released_once()


def test_an_empty_tensor_over_a_null_buffer_is_taken():
    # The C ABI allows a NULL pointer for an empty buffer; a tensor with no
    # elements reaches no bytes, so nothing is ever read through it.
    lst, buf, ctx = c_void_p(), c_void_p(), c_void_p()
    tokens = [new_token(), new_token()]
    ok(LIB.hurray_buffer_list_new(ctypes.byref(lst)))
    ok(LIB.hurray_buffer_from_ptr(None, 0, _count_release, tokens[0], ctypes.byref(buf)))
    ok(LIB.hurray_buffer_list_push(lst, ctypes.byref(buf)))
    descriptor = encode([0, 3], [3, 1], [(1, FLOAT32, 0, 0, 0, 0)])
    ok(LIB.hurray_tensor_context_new(ABI, descriptor, len(descriptor), tokens[1], _count_release,
                                     ctypes.byref(ctx)))
    name = ctypes.create_string_buffer(b"hurray_tensor")
    capsule = API.PyCapsule_New(lst.value, ctypes.addressof(name), None)
    assert API.PyCapsule_SetContext(capsule, ctx.value) == 0
    tensor = hurray.from_hurray(capsule)
    assert np.asarray(tensor).shape == (0, 3) and tensor.buffer(0).nbytes == 0
    del tensor
    gc.collect()
    assert [RELEASED[t] for t in tokens] == [1, 1]


# ---- a descriptor larger than its buffers -----------------------------------


@pytest.mark.parametrize("name,descriptor,sizes", VECTORS_LIST, ids=[v[0] for v in VECTORS_LIST])
def test_each_buffer_one_byte_short_is_refused(name, descriptor, sizes):
    for i, size in enumerate(sizes):
        if size == 0:
            continue
        short = list(sizes)
        short[i] -= 1
        Hostile(descriptor, short).refused(errors.BufferTooSmallError, "BUFFER_TOO_SMALL")


@pytest.mark.parametrize("name,descriptor,sizes", VECTORS_LIST, ids=[v[0] for v in VECTORS_LIST])
def test_a_buffer_missing_or_extra_is_refused(name, descriptor, sizes):
    Hostile(descriptor, sizes[:-1]).refused(errors.InvalidArgumentError)
    Hostile(descriptor, list(sizes) + [16]).refused(errors.InvalidArgumentError)


def test_a_byte_offset_past_the_buffer_is_refused():
    Hostile(float32_matrix(2, 2, offset=1), [16]).refused(errors.BufferTooSmallError)
    Hostile(float32_matrix(2, 2, offset=2**64 - 1), [16]).refused(errors.BufferTooSmallError)


def test_negative_strides_reaching_before_the_buffer_are_refused():
    # 4 float32 walked backwards from byte 8: elements at 8, 4, 0, -4.
    descriptor = encode([4], [-1], [(1, FLOAT32, 0, 0, 0, 8)])
    Hostile(descriptor, [16]).refused(errors.BufferTooSmallError, "before the start")
    # From byte 12 the same walk stays inside: the control.
    hostile = Hostile(encode([4], [-1], [(1, FLOAT32, 0, 0, 0, 12)]), [16])
    tensor = hostile.taken()
    assert np.asarray(tensor).tolist() == np.frombuffer(bytes(range(16)), "<f4")[::-1].tolist()
    del tensor
    hostile.released_once()


@settings(max_examples=150, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), offset=st.integers(0, 64),
       slack=st.integers(-64, 64))
def test_buffer_size_decides_exactly(rows, cols, offset, slack):
    need = offset + 4 * rows * cols
    size = max(0, need + slack)
    hostile = Hostile(float32_matrix(rows, cols, offset), [size])
    if size >= need:
        tensor = hostile.taken()
        assert np.asarray(tensor).shape == (rows, cols)
        del tensor
        hostile.released_once()
    else:
        hostile.refused(errors.BufferTooSmallError)


# ---- the capsule itself -----------------------------------------------------


@pytest.mark.parametrize("name", [b"dltensor", b"used_hurray_tensor", b"hurray_tensor ", b"HURRAY_TENSOR",
                                  b"hurray", b"", None])
def test_a_wrong_capsule_name_is_refused(name):
    Hostile(float32_matrix(2, 2), [16], name=name).refused(errors.CapsuleError)


def test_a_producer_returning_a_wrong_capsule_is_refused():
    hostile = Hostile(float32_matrix(2, 2), [16], name=b"dltensor")

    class Producer:
        def __hurray__(self):
            return hostile.capsule

    with pytest.raises(errors.CapsuleError):
        hurray.from_hurray(Producer())
    hostile.refused(errors.CapsuleError)  # directly, then the producer frees it


@pytest.mark.parametrize("result", [None, b"bytes", 42, np.zeros(3)])
def test_a_producer_returning_no_capsule_is_refused(result):
    class Producer:
        def __hurray__(self):
            return result

    with pytest.raises(errors.CapsuleError):
        hurray.from_hurray(Producer())


def test_a_producer_that_raises_is_reported_as_a_hurray_error():
    class Producer:
        def __hurray__(self):
            raise RuntimeError("boom")

    with pytest.raises(hurray.HurrayError, match="boom"):
        hurray.from_hurray(Producer())


# ---- the context ------------------------------------------------------------


def test_a_capsule_without_a_context_is_refused():
    Hostile(float32_matrix(2, 2), [16], context="none").refused(errors.NotAContextError)


def test_swapped_pointer_and_context_are_refused():
    # The list where the context belongs: it has no magic.
    Hostile(float32_matrix(2, 2), [16], context="list").refused(errors.NotAContextError)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=8, max_size=64).filter(lambda b: struct.unpack("<I", b[:4])[0] != CONTEXT_MAGIC))
def test_a_foreign_context_without_the_magic_is_refused(foreign):
    Hostile(float32_matrix(2, 2), [16], context=foreign).refused(errors.NotAContextError, "NOT_A_CONTEXT")


@settings(max_examples=100, deadline=None)
@given(version=st.integers(0, 2**32 - 1).filter(lambda v: v != ABI), rest=st.binary(max_size=56))
def test_a_forged_context_of_another_version_is_refused(version, rest):
    header = struct.pack("<II", CONTEXT_MAGIC, version) + rest
    err = Hostile(float32_matrix(2, 2), [16], context=header).refused(errors.AbiVersionError)
    assert str(version) in str(err)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 6, 2**32 - 1])
def test_forged_versions_named_in_the_issue_are_refused(version):
    header = struct.pack("<II", CONTEXT_MAGIC, version)
    Hostile(float32_matrix(2, 2), [16], context=header).refused(errors.AbiVersionError, f"version {version}")


def test_an_empty_descriptor_cannot_be_put_in_a_context():
    # The C ABI refuses it at the producer: no context can carry zero bytes.
    ctx = c_void_p()
    assert LIB.hurray_tensor_context_new(ABI, b"", 0, None, _count_release, ctypes.byref(ctx)) != OK
    assert ctx.value is None
    assert LIB.hurray_tensor_context_new(ABI, None, 0, None, _count_release, ctypes.byref(ctx)) != OK


@pytest.mark.parametrize("name,descriptor,sizes", VECTORS_LIST[:4], ids=[v[0] for v in VECTORS_LIST[:4]])
def test_every_truncation_of_a_descriptor_is_refused(name, descriptor, sizes):
    for cut in range(1, len(descriptor)):
        Hostile(descriptor[:cut], sizes).refused(errors.InvalidDescriptorError)
    # ... and every extension.
    Hostile(descriptor + b"\0", sizes).refused(errors.InvalidDescriptorError)


# ---- misaligned buffers: accepted, and read correctly -----------------------


@pytest.mark.parametrize("dtype_code,np_dtype", [(17, "<f4"), (18, "<f8"), (5, "<i8"), (22, "<c16"), (3, "<i2")])
@pytest.mark.parametrize("misalign", [1, 3])
def test_a_misaligned_buffer_is_accepted_and_read_correctly(dtype_code, np_dtype, misalign):
    itemsize = np.dtype(np_dtype).itemsize
    descriptor = encode([3, 2], [2, 1], [(1, dtype_code, 0, 0, 0, 0)])
    hostile = Hostile(descriptor, [6 * itemsize], misalign=misalign)
    tensor = hostile.taken()
    view = np.asarray(tensor)
    assert view.ctypes.data == hostile.addresses[0]  # the producer's own bytes, not a copy...
    assert view.ctypes.data % itemsize != 0
    expected = np.frombuffer(np.arange(6 * itemsize).astype(np.uint8).tobytes(), np_dtype).reshape(3, 2)
    np.testing.assert_array_equal(view, expected)  # ... read through an unaligned view
    assert not view.flags.aligned
    del tensor, view
    hostile.released_once()


def test_a_misaligned_byte_offset_is_accepted_and_read_correctly():
    hostile = Hostile(float32_matrix(2, 2, offset=1), [17])
    tensor = hostile.taken()
    expected = np.frombuffer(bytes(range(1, 17)), "<f4").reshape(2, 2)
    np.testing.assert_array_equal(np.asarray(tensor), expected)
    del tensor
    hostile.released_once()


# ---- random and mutated descriptors -----------------------------------------


def check_random(descriptor, sizes):
    """Refused with a HurrayError, or taken exactly when the C ABI accepts it."""
    expected = c_accepts(descriptor, sizes)
    hostile = Hostile(descriptor, sizes)
    if not expected:
        hostile.refused()
        return
    tensor = hostile.taken()
    assert tensor.descriptor.encode() == descriptor
    for i, size in enumerate(sizes):
        assert tensor.buffer(i).nbytes == size
    del tensor
    hostile.released_once()


@settings(max_examples=200, deadline=None)
@given(descriptor=st.binary(max_size=1200), sizes=st.lists(st.integers(0, 256), max_size=4))
def test_random_descriptor_bytes(descriptor, sizes):
    if not descriptor:
        return  # no context can hold zero bytes (test above)
    check_random(descriptor, sizes)


def dtype_bits():
    table, bits = {}, c_uint32()
    for code in range(0, 64):
        if LIB.hurray_dtype_bits(code, ctypes.byref(bits)) == OK:
            table[code] = bits.value
    return table


DTYPE_BITS = dtype_bits()
HUGE = [2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1]
FIELDS = ["version", "reserved", "byte_order", "packing", "dtype", "offset", "dims", "strides", "parts"]
hostile_parts = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 36), st.integers(0, 2), st.sampled_from([0, 1]),
              st.integers(0, 4), st.sampled_from([0, 1, 3, 16] + HUGE)),
    min_size=0, max_size=5,
).map(lambda ps: sorted(ps, key=lambda p: p[0]))


@st.composite
def structured_descriptors(draw):
    """Well-formed fields with at most one of them hostile (from the edges of its
    domain), so that every check is probed and some descriptors decode; plus
    free-form quantization with random parts."""
    index = draw(st.integers(0, 2 * len(FIELDS) - 1))
    broken = FIELDS[index] if index < len(FIELDS) else None

    def choose(name, valid, hostile):
        return hostile if broken == name else valid

    def field(name, valid, hostile):
        return draw(choose(name, valid, hostile))

    rank = draw(st.integers(0, 4))
    shape = draw(st.lists(choose("dims", st.integers(0, 6), st.sampled_from([0, 1] + HUGE)),
                          min_size=rank, max_size=rank))
    if broken == "strides":
        strides = draw(st.lists(st.one_of(st.integers(-3, 40), st.sampled_from(HUGE + [-(2**63)])),
                                min_size=rank, max_size=rank))
    else:
        strides, step = [], 1
        for d in reversed(shape):
            strides.insert(0, step)
            step *= max(d, 1)
    dtype = field("dtype", st.sampled_from(sorted(DTYPE_BITS)), st.sampled_from([0, 35, 36, 255]))
    bits = DTYPE_BITS.get(dtype, 8)
    packing = field("packing", st.just(0) if bits >= 8 else st.sampled_from([1, 2]), st.integers(0, 255))
    offset = field("offset", st.integers(0, 8), st.sampled_from(HUGE))
    parts = field("parts", st.just([(1, dtype, 0, 0, 0, offset)]), hostile_parts)
    quantized = broken == "parts" and draw(st.booleans())
    return encode(
        shape, strides, parts, packing=packing,
        byte_order=field("byte_order", st.integers(0, 1), st.integers(2, 255)),
        scheme=draw(st.integers(0, 4)) if quantized else 0,
        granularity=draw(st.integers(0, 4)) if quantized else 0,
        axis=draw(st.integers(0, max(rank, 1))) if quantized else 0,
        ggml_type=draw(st.sampled_from([0, 2, 8, 12, 39, 99])) if quantized else 0,
        block_size=draw(st.sampled_from([0, 16, 32, 256, 7])) if quantized else 0,
        reserved=field("reserved", st.just(0), st.integers(1, 2**16 - 1)),
        version=field("version", st.just(1), st.sampled_from([0, 2, 3, 2**16 - 1])),
    )


@settings(max_examples=300, deadline=None)
@given(descriptor=structured_descriptors(), sizes=st.lists(st.integers(0, 256), min_size=1, max_size=2))
def test_structured_hostile_descriptors(descriptor, sizes):
    check_random(descriptor, sizes)


@settings(max_examples=200, deadline=None)
@given(which=st.integers(0, len(VECTORS_LIST) - 1), position=st.integers(0, 2**16), bit=st.integers(0, 7))
def test_bit_flips_in_valid_descriptors(which, position, bit):
    # A flipped bit is refused or yields a different valid descriptor (integrity
    # is the transport's job, docs/security.md): never a crash, never a wrong OK.
    _, descriptor, sizes = VECTORS_LIST[which]
    flipped = bytearray(descriptor)
    flipped[position % len(flipped)] ^= 1 << bit
    check_random(bytes(flipped), sizes)
