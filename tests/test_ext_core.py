"""hurray._core, the hot path in C (ADR-046), against the Python it stands in for.

Every case the C half serves must give what the Python half gives, and
every case it does not serve must reach the Python half: a Tensor subclass
(hurray.io's LazyTensor verifies through its _buffers property), a closed
descriptor, a quantized tensor, an argument it does not handle.
"""
import gc
import sys
import weakref

import numpy as np
import pytest

import hurray
from hurray import _core, _protocol, _wiring
from hurray.bridges import dlpack
from hurray.bridges import numpy as numpy_bridge
from hurray.errors import InvalidArgumentError, UnsupportedError
from hurray.quant.quantizers import quantize_affine
from hurray.core.tensor import Tensor
from support.watched_tensor import watched_arange

base = np.arange(24, dtype=np.float32).reshape(4, 6)
ARRAYS = {
    "plain": base,
    "reversed": base[::-1, ::-2],
    "broadcast": np.broadcast_to(np.arange(3, dtype=np.int16), (4, 3)),
    "empty": np.zeros((0, 3), np.float64),
    "0-d": np.array(7, np.int64),
    "big-endian": np.arange(5, dtype=">u4"),
    "read-only": np.frombuffer(bytes(range(16)), np.uint8).reshape(4, 4),
    "column": np.asfortranarray(base)[:, 1],
    "bool": np.array([True, False, True]),
    "complex": np.arange(4, dtype=np.complex64),
}


def python_from_numpy(a):
    return numpy_bridge._from_numpy(a)


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_from_numpy_in_c_gives_what_python_gives(name):
    a = ARRAYS[name]
    python_from_numpy(a)  # the dtype is known to the C half from now on
    assert a.dtype in numpy_bridge._CODES
    fast, slow = hurray.from_numpy(a), python_from_numpy(a)
    assert type(fast) is Tensor
    assert fast.descriptor == slow.descriptor
    assert fast.buffers == slow.buffers
    assert fast.owner is a and fast.readonly == slow.readonly == (not a.flags.writeable)


def test_from_numpy_in_c_hands_the_rest_to_python():
    with pytest.raises(InvalidArgumentError, match="numpy.ndarray"):
        _core.from_numpy([1, 2, 3])
    with pytest.raises(UnsupportedError, match="mask"):
        _core.from_numpy(np.ma.masked_array([1.0], mask=[False]))
    odd = np.ndarray((2,), np.int16, np.zeros(8, np.uint8), 0, (3,))  # a 3-byte step
    numpy_bridge._from_numpy(np.zeros(1, np.int16))  # int16 is known: the stride decides
    with pytest.raises(InvalidArgumentError, match="byte stride of 3"):
        _core.from_numpy(odd)


@pytest.mark.parametrize("name", sorted(set(ARRAYS) - {"empty"}))
def test_the_numpy_view_in_c_is_the_python_view(name):
    t = hurray.from_numpy(ARRAYS[name])
    _wiring.array_py(t)  # the dtype is known to the C half from now on
    fast, slow = np.asarray(t), _wiring.array_py(t)
    assert type(fast.base).__name__ == "ViewBase" and fast.base.tensor is t
    assert fast.dtype == slow.dtype and fast.shape == slow.shape and fast.strides == slow.strides
    assert fast.__array_interface__["data"] == slow.__array_interface__["data"]
    assert fast.flags.writeable == slow.flags.writeable
    assert np.array_equal(fast, slow)


def test_arguments_and_quantized_tensors_go_to_python():
    t = hurray.from_numpy(np.arange(4, dtype=np.int32))
    np.asarray(t)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(UnsupportedError, match="needs a copy"):
        t.__array__(np.float64, copy=False)
    q = quantize_affine(np.ones((4, 4), np.float32), dtype="int8", axis=0)
    for _ in range(2):
        with pytest.raises(UnsupportedError, match="affine"):
            np.asarray(q)


def test_a_subclass_is_served_by_python_through_its_buffers():
    w, reads = watched_arange()
    for use in (np.asarray, hurray.from_hurray, lambda x: np.from_dlpack(x)):
        del reads[:]
        use(w)
        assert reads, use


def test_a_closed_descriptor_is_left_to_python():
    # close() frees the C descriptor and keeps the fields; the C half must
    # not read freed memory, so it leaves the view to Python, which works
    # from the kept fields.
    t = hurray.from_numpy(np.arange(6, dtype=np.float32))
    d = Tensor._from_checked(hurray.Descriptor.decode(t.descriptor.encode()), t.buffers, t)
    d.descriptor.close()
    assert d.descriptor._address is None
    view = np.asarray(d)
    assert type(view.base).__name__ != "ViewBase"
    assert np.array_equal(view, np.arange(6, dtype=np.float32))


def test_from_hurray_in_c_keeps_the_decoded_descriptor():
    t = hurray.from_numpy(np.arange(7, dtype=np.uint16))
    _core.descriptors.clear()
    # A capsule: the descriptor consume() decoded and checked is kept, not decoded again.
    back = hurray.from_hurray(t.__hurray__())
    kept = _core.descriptors[t.descriptor.encode()]
    assert back.descriptor is kept and kept._box is not None
    assert hurray.from_hurray(t.__hurray__()).descriptor is kept
    assert np.array_equal(np.asarray(back), np.arange(7, dtype=np.uint16))
    # A Tensor needs no capsule (ADR-048): the consumer shares the producer's
    # immutable Descriptor and spans.
    u = hurray.from_hurray(t)
    assert u.descriptor is t.descriptor and u.buffers is t.buffers


def _released():
    gc.collect()
    return _protocol._owner_counters()[0]


@pytest.mark.parametrize("buffers", [1, 3])
def test_from_hurray_of_a_tensor_holds_what_the_capsule_handles_would(buffers):
    # ADR-048: no C handle is made, but the Holder takes the references the
    # capsule's buffers and context would have taken (D-NB2, decision 2) and
    # drops each once, as they would, when the consumer dies.
    weights = np.arange(32, dtype=np.float32).reshape(4, 8)
    t = hurray.from_numpy(weights) if buffers == 1 else quantize_affine(weights, dtype="int8", axis=0)
    assert len(t.buffers) == buffers
    refs, released = sys.getrefcount(t), _released()
    u = hurray.from_hurray(t)
    holder = u.owner
    assert type(holder) is _protocol.Holder
    assert repr(holder) == f"<hurray._protocol.Holder of {buffers} buffer{'s' if buffers > 1 else ''}>"
    assert sys.getrefcount(t) == refs + buffers + 1
    assert _released() == released
    assert all(np.shares_memory(u.buffer(i), t.buffer(i)) for i in range(buffers))
    holder_ref = weakref.ref(holder)
    del u, holder
    assert holder_ref() is None
    assert _released() == released + buffers + 1
    assert sys.getrefcount(t) == refs


def test_from_hurray_of_a_tensor_keeps_the_producer_alive():
    a = np.arange(6, dtype=np.int32)
    a_ref = weakref.ref(a)
    t = hurray.from_numpy(a)
    t_ref = weakref.ref(t)
    del a
    u = hurray.from_hurray(hurray.from_hurray(t))  # a chain: each Holder keeps the one before
    del t
    assert t_ref() is not None and a_ref() is not None
    assert np.array_equal(np.asarray(u), np.arange(6, dtype=np.int32))
    del u
    gc.collect()
    assert t_ref() is None and a_ref() is None


def test_from_hurray_of_a_tensor_leaves_closed_descriptors_to_python():
    # A read-only tensor is exchanged in C too, and stays read-only (ADR-059).
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    u = hurray.from_hurray(hurray.from_numpy(frozen))
    assert u.readonly and not np.asarray(u).flags.writeable
    with pytest.raises(UnsupportedError, match="read-only"):
        hurray.from_numpy(frozen).__hurray__()
    # A closed descriptor: Python exports a capsule (from the kept bytes) and
    # consumes it, decoding a new descriptor.
    t = hurray.from_numpy(np.arange(5, dtype=np.float64))
    d = Tensor._from_checked(hurray.Descriptor.decode(t.descriptor.encode()), t.buffers, t)
    d.descriptor.close()
    u = hurray.from_hurray(d)
    assert u.descriptor is not d.descriptor and u.descriptor._address is not None
    assert np.array_equal(np.asarray(u), np.arange(5, dtype=np.float64))


def test_every_way_to_make_a_tensor_proves_its_spans():
    # Why the exchange of a Tensor need not check again (ADR-048): a Tensor
    # is proved against its buffers when it is made, whichever way.
    a = np.arange(4, dtype=np.float32)
    d = hurray.from_numpy(a).descriptor
    short = ((a.ctypes.data, a.nbytes - 1),)
    with pytest.raises(hurray.errors.BufferTooSmallError):
        Tensor(d, short, owner=a)
    with pytest.raises(hurray.errors.BufferTooSmallError):
        _core.tensor_from_spans(d, short, a, False)
    with pytest.raises(hurray.errors.BufferTooSmallError):
        hurray.from_hurray(_protocol.export(d.encode(), short, a))


def test_dlpack_in_c_gives_what_python_gives():
    t = hurray.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2])
    dlpack.to_dlpack(t, max_version=(1, 0))  # the plan is made
    out = np.from_dlpack(t)
    assert np.shares_memory(out, np.asarray(t)) and np.array_equal(out, np.asarray(t))
    with pytest.raises(hurray.HurrayError):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(hurray.HurrayError):
        t.__dlpack__(max_version=(1, 0), stream=1)


def test_keywords_the_c_halves_read_need_not_be_interned():
    # The C halves match keyword names by identity first (a call site's are
    # interned) and then by value; a name built at run time is not interned.
    t = hurray.from_numpy(np.arange(6, dtype=np.float32))
    dlpack.to_dlpack(t, max_version=(1, 0))
    version, copy = "".join(["max_", "version"]), "".join(["co", "py"])
    assert version is not "max_version" and copy is not "copy"  # noqa: F632
    capsule = t.__dlpack__(**{version: (1, 0), copy: False})
    assert '"dltensor_versioned"' in repr(capsule)
    np.asarray(t)  # the dtype is known to the C half from now on
    view = t.__array__(**{copy: False})
    assert type(view.base).__name__ == "ViewBase" and np.shares_memory(view, np.asarray(t))
    with pytest.raises(TypeError):
        t.__array__(**{"".join(["cop", "ies"]): False})  # unknown: the Python half refuses


def test_buffer_in_c_is_the_python_buffer():
    for a in (np.arange(10, dtype=np.int32), ARRAYS["read-only"], ARRAYS["reversed"]):
        t = hurray.from_numpy(a)
        fast, slow = t.buffer(0), _wiring.buffer_py(t, 0)
        assert type(fast.base).__name__ == "ViewBase" and fast.base.tensor is t
        assert fast.dtype == slow.dtype == np.uint8 and fast.shape == slow.shape
        assert fast.__array_interface__["data"] == slow.__array_interface__["data"]
        assert fast.flags.writeable == slow.flags.writeable == (not t.readonly)
    t = hurray.from_numpy(np.arange(3, dtype=np.int8))
    for bad, error in ((1, hurray.errors.OutOfRangeError), (-1, hurray.errors.OutOfRangeError),
                       (True, InvalidArgumentError), ("0", InvalidArgumentError)):
        with pytest.raises(error):
            t.buffer(bad)
    empty = hurray.from_numpy(np.zeros(0, np.float32))
    assert empty.buffer(0).shape == (0,)  # an empty span is the Python half's


def test_tensor_from_spans_in_c_proves_the_spans():
    a = np.arange(8, dtype=np.float32)
    d = hurray.from_numpy(a).descriptor
    t = _core.tensor_from_spans(d, ((a.ctypes.data, a.nbytes),), a, False)
    assert type(t) is Tensor and t.owner is a and np.array_equal(np.asarray(t), a)
    with pytest.raises(hurray.errors.BufferTooSmallError):
        _core.tensor_from_spans(d, ((a.ctypes.data, a.nbytes - 1),), a, False)
    with pytest.raises(InvalidArgumentError):
        _core.tensor_from_spans(d, ((a.ctypes.data, 16), (a.ctypes.data, 16)), a, False)


def test_arguments_the_c_half_does_not_know_reach_python():
    t = hurray.from_numpy(np.arange(4, dtype=np.int16))
    np.asarray(t)
    dlpack.to_dlpack(t, max_version=(1, 0))
    assert t.__array__(np.float32).dtype == np.float32  # positional dtype
    assert t.__array__(None, False).base.tensor is t  # positional, both plain
    with pytest.raises(TypeError):
        t.__array__(bogus=1)
    with pytest.raises(TypeError):
        t.__array__(None, None, None)
    assert np.from_dlpack(hurray.from_dlpack(t.__dlpack__(None, max_version=(1, 0)))).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        t.__dlpack__(max_version=(1, 0), unknown=1)


def test_decode_in_c_is_decode_in_python():
    t = quantize_affine(np.ones((4, 8), np.float32), dtype="int8", axis=0)
    data = t.descriptor.encode()
    fast = hurray.Descriptor.decode(data)
    assert fast._box is not None and fast.encode() is data  # decoded in C, owning its box
    assert fast == t.descriptor and fast.parts == t.descriptor.parts
    assert _core.decode(b"not a descriptor") is None  # refused: Python decodes to name the rule
    with pytest.raises(hurray.errors.InvalidDescriptorError):
        hurray.Descriptor.decode(b"not a descriptor")
    assert hurray.Descriptor.decode(bytearray(data)) == fast  # bytes-like: the Python path


def test_a_descriptor_made_in_c_casts_its_handle_on_first_use():
    # ADR-048: hurray._core leaves _handle None; Descriptor.handle makes the
    # cffi pointer from _address when first asked, and a closed descriptor
    # (its _address None) still says so.
    from hurray._ffi import ffi, lib

    for dt in (np.float32, np.int8):
        python_from_numpy(np.zeros(1, dt))  # the dtypes are known to the C half from now on
    d = hurray.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)).descriptor
    assert d._handle is None and d._address is not None
    handle = d.handle
    assert int(ffi.cast("uintptr_t", handle)) == d._address and d.handle is handle
    rank = ffi.new("uint32_t *")
    assert lib.hurray_descriptor_rank(handle, rank) == lib.HURRAY_OK and rank[0] == 2
    fresh = hurray.from_numpy(np.arange(3, dtype=np.int8)).descriptor
    fresh.close()  # never cast: close works from _address alone
    fresh.close()
    assert fresh.shape == (3,) and fresh._handle is None and fresh._address is None
    with pytest.raises(InvalidArgumentError, match="closed"):
        fresh.handle


def _read_pair(made):
    """(descriptor bytes, spans, owner count) of a (context, list) address pair."""
    from hurray._ffi import ffi, lib

    context = ffi.cast("HurrayTensorContext *", made[0])
    buffer_list = ffi.cast("HurrayBufferList *", made[1])
    data, length = ffi.new("const uint8_t **"), ffi.new("uint64_t *")
    assert lib.hurray_tensor_context_descriptor(context, data, length) == lib.HURRAY_OK
    encoded = ffi.buffer(data[0], length[0])[:]
    version = ffi.new("uint32_t *")
    assert lib.hurray_tensor_context_abi_version(context, version) == lib.HURRAY_OK
    count = ffi.new("uint64_t *")
    assert lib.hurray_buffer_list_len(buffer_list, count) == lib.HURRAY_OK
    spans = []
    buf, where = ffi.new("const HurrayBuffer **"), ffi.new("void **")
    for i in range(count[0]):
        assert lib.hurray_buffer_list_get(buffer_list, i, buf) == lib.HURRAY_OK
        assert lib.hurray_buffer_data(buf[0], where, length) == lib.HURRAY_OK
        spans.append((int(ffi.cast("uintptr_t", where[0])), length[0]))
    lib.hurray_buffer_list_destroy(ffi.new("HurrayBufferList **", buffer_list))
    lib.hurray_tensor_context_destroy(ffi.new("HurrayTensorContext **", context))
    return encoded, tuple(spans), version[0]


@pytest.mark.parametrize("name", ["plain", "reversed", "empty", "read-only", "quantized"])
def test_the_writers_pair_in_c_is_the_python_pair(name):
    from hurray.io import _pairs

    t = quantize_affine(base, axis=0) if name == "quantized" else hurray.from_numpy(ARRAYS[name])
    before = sys.getrefcount(t)
    made = _core.pair(t)
    assert made is not None
    assert sys.getrefcount(t) == before  # borrowed: the pair holds no reference
    in_c = _read_pair(made)
    assert in_c == _read_pair(_pairs._pair_in_python(t))
    assert in_c == (t.descriptor.encode(), t.buffers, hurray.C_ABI_VERSION)


def test_the_writers_pair_of_a_subclass_is_left_to_python_which_reads_its_buffers():
    from hurray.io import _pairs

    w, reads = watched_arange()
    assert _core.pair(w) is None and _core.pair(object()) is None
    with _pairs.borrowed_pair(w):
        pass
    assert reads  # the Python half read w.buffers (a LazyTensor verifies there)


def test_the_writers_pair_of_a_closed_descriptor_uses_its_kept_bytes():
    # close() keeps the encoding; the C half reads only that, never the freed descriptor.
    t = hurray.from_numpy(base)
    d = Tensor._from_checked(hurray.Descriptor.decode(t.descriptor.encode()), t.buffers, t)
    d.descriptor.close()
    assert _read_pair(_core.pair(d)) == (t.descriptor.encode(), t.buffers, hurray.C_ABI_VERSION)


def _codes_cases():
    cases = {name: hurray.from_numpy(a) for name, a in ARRAYS.items() if name not in ("empty", "0-d")}
    cases["affine per axis"] = quantize_affine(base, axis=0)
    cases["affine int16, reversed"] = quantize_affine(base[::-1], dtype="int16", axis=1)
    cases["microscaling (fp8 codes: ml_dtypes, Python)"] = hurray.quantize_mx(np.arange(64, dtype=np.float32))
    return cases


@pytest.mark.parametrize("name", list(_codes_cases()))
def test_stored_values_in_c_is_the_python_view(name):
    from hurray.core.dtypes import is_builtin

    t = _codes_cases()[name]
    slow = _wiring.stored_values_py(t)  # the dtype is known to the C half from now on
    fast = t.stored_values()
    served_in_c = type(fast.base).__name__ == "ViewBase"
    assert served_in_c == is_builtin(slow.dtype), name
    assert fast.dtype == slow.dtype and fast.shape == slow.shape and fast.strides == slow.strides
    assert fast.ctypes.data == slow.ctypes.data and fast.flags.writeable == slow.flags.writeable
    assert fast.tobytes() == slow.tobytes()


def test_stored_values_in_c_leaves_the_rest_to_python():
    w, reads = watched_arange()
    w.stored_values()
    assert reads  # a subclass: Python, through its buffers
    ggml = hurray.from_ggml(np.zeros(18, np.uint8), "q4_0", (32,))
    with pytest.raises(UnsupportedError, match="ggml q4_0 blocks"):
        ggml.stored_values()  # the Python half's refusal, word for word
    packed = Tensor(hurray.Descriptor.build("uint4", (4,)), [(np.zeros(2, np.uint8).ctypes.data, 2)], owner=None)
    with pytest.raises(UnsupportedError, match="packed 4-bit"):
        packed.stored_values()


def test_companions_groups_names_as_rpartition_splits_them():
    """hurray._core.companions, the checkpoint reader's pass over the names, against str.rpartition."""
    from hurray._core import companions

    suffixes = {"weight_packed": 0, "weight_scale": 1, "weight": 2}
    names = ["a.weight_packed", "a.weight_scale", "weight", "b.c.weight", "b.c.bias", "x.", ".weight_scale",
             "d\u00e4.weight_packed", "weight_scale.other", "e.weight_scale", "a.b.weight_packed"]
    want: dict = {}
    for name in names:
        module, _, suffix = name.rpartition(".")
        if suffix in suffixes:
            want.setdefault(module, [None] * len(suffixes))[suffixes[suffix]] = name
    got = companions(iter(names), suffixes)
    assert got == want and list(got) == list(want)
    assert companions([], suffixes) == {}
    with pytest.raises(TypeError, match="must be strings"):
        companions(["a.weight", 3], suffixes)
    with pytest.raises(ValueError, match="outside"):
        companions(["a.weight"], {"weight": 5})
    with pytest.raises(TypeError):
        companions(["a.weight"], ["weight"])


def test_anchored_claims_are_the_claims_python_makes():
    """hurray._core.anchored_claims, compressed-tensors' claims in C, against the rule written in Python."""
    import functools
    import sys

    from hurray._core import anchored_claims
    from hurray.formats.checkpoint._claims import Claim

    def build(config, name, module, sources):
        return (config, name, module, sources)

    found = {"a": ["a.weight_packed", "a.weight_scale", None], "b": [None, "b.weight_scale", "b.weight_zero_point"],
             "c": [None, "c.weight_scale", None], "d": [None, None, "d.weight_zero_point"],
             "\u00e4": ["\u00e4.weight_packed", None, None], "": ["weight_packed", None, None]}
    stored = {"b.weight", "d.weight", "c.bias"}
    want = {}
    for module, slots in found.items():
        name = module + ".weight"
        filled = tuple(s for s in slots if s is not None)
        if slots[0] is not None:
            want[name] = (filled, module)
        elif slots[1] is not None and name in stored:
            want[name] = ((name,) + filled, module)
    before = sys.getrefcount(Claim)
    got = anchored_claims(found, Claim, "ct", functools.partial, functools.partial(build, "cfg"), stored)
    assert list(got) == list(want) == ["a.weight", "b.weight", "\u00e4.weight", ".weight"]
    for name, claim in got.items():
        assert type(claim) is Claim and claim.name == name and claim.convention == "ct"
        assert claim.parts == want[name][0]
        assert claim.make("src") == ("cfg", name, want[name][1], "src")
    del got, claim
    assert sys.getrefcount(Claim) == before  # each claim held its type once, and let it go
    assert anchored_claims({}, Claim, "ct", functools.partial, build, stored) == {}
    with pytest.raises(TypeError, match="tuple subclass"):
        anchored_claims(found, dict, "ct", functools.partial, build, stored)
    with pytest.raises(TypeError, match="list of two or more"):
        anchored_claims({"a": ("a.weight_packed", None)}, Claim, "ct", functools.partial, build, stored)
    with pytest.raises(TypeError, match="must be strings"):
        anchored_claims({3: ["x", None]}, Claim, "ct", functools.partial, build, stored)
    with pytest.raises(ZeroDivisionError):  # an error of the binding comes through as it is
        anchored_claims(found, Claim, "ct", lambda *a: 1 / 0, build, stored)
