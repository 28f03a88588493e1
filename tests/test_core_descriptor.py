"""hurray.Descriptor: building, decoding, encoding, fields, identity and errors."""
import gc
import pickle
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest

import hurray
from hurray import Descriptor, Part
from hurray._ffi import lib
from hurray.errors import (
    HurrayError,
    HurrayOverflowError,
    InvalidArgumentError,
    InvalidDescriptorError,
    UnsupportedError,
)

from support.spec_encoding import spec_bytes


_FOREIGN = ">" if sys.byteorder == "little" else "<"
_FOREIGN_NAME = "big" if _FOREIGN == ">" else "little"
_NATIVE_NAME = sys.byteorder


def test_build_takes_the_byte_order_a_numpy_dtype_states():
    foreign = np.dtype(_FOREIGN + "f4")
    assert Descriptor.build(foreign, (2,)).byte_order == _FOREIGN_NAME
    assert Descriptor.build(_FOREIGN + "i2", (2,)).byte_order == _FOREIGN_NAME
    assert Descriptor.build(foreign, (2,), byte_order=_FOREIGN_NAME).byte_order == _FOREIGN_NAME
    bfloat16 = np.dtype(ml_dtypes.bfloat16).newbyteorder(_FOREIGN)
    assert Descriptor.build(bfloat16, (2,)).byte_order == _FOREIGN_NAME
    # Names, codes, native and one-byte dtypes state nothing: little unless told.
    assert Descriptor.build("float32", (2,)).byte_order == "little"
    assert Descriptor.build(lib.HURRAY_DTYPE_FLOAT32, (2,), byte_order="big").byte_order == "big"
    assert Descriptor.build(np.float32, (2,), byte_order="big").byte_order == "big"
    assert Descriptor.build(np.dtype(_FOREIGN + "i1"), (2,)).byte_order == "little"


def test_build_refuses_a_byte_order_the_dtype_contradicts():
    with pytest.raises(InvalidArgumentError, match=f"{_FOREIGN_NAME}-endian but byte_order is '{_NATIVE_NAME}'"):
        Descriptor.build(np.dtype(_FOREIGN + "f4"), (2,), byte_order=_NATIVE_NAME)
    with pytest.raises(InvalidArgumentError, match="endian"):
        Descriptor.build(_FOREIGN + "u8", (2,), byte_order=lib.HURRAY_BYTE_ORDER_LITTLE if _FOREIGN == ">" else 1)
    with pytest.raises(UnsupportedError, match="complex32"):
        Descriptor.build(np.dtype(ml_dtypes.complex32).newbyteorder(_FOREIGN), (2,))


def test_encoding_follows_the_spec():
    d = Descriptor.build(np.int16, (4, 5), (-5, 1), byte_order="big",
                         parts={"values": {"byte_offset": 30}})
    assert d.encode() == spec_bytes(lib.HURRAY_DTYPE_INT16, (4, 5), (-5, 1), byte_order=1,
                                    parts=[(1, lib.HURRAY_DTYPE_INT16, 0, 0, 30)])
    assert bytes(d) == d.encode() == d._encode_in_c()
    scalar = Descriptor.build("bool", ())
    assert scalar.encode() == spec_bytes(lib.HURRAY_DTYPE_BOOL, (), ())
    assert scalar.shape == () and scalar.strides == () and scalar.size == 1


def test_decode_of_spec_bytes():
    raw = spec_bytes(lib.HURRAY_DTYPE_INT8, (6, 32), (32, 1), scheme=1, granularity=3, axis=1,
                     block_size=16, parts=[(1, lib.HURRAY_DTYPE_INT8, 0, 0, 0),
                                           (2, lib.HURRAY_DTYPE_FLOAT16, 0, 1, 8),
                                           (3, lib.HURRAY_DTYPE_INT8, 0, 1, 0)])
    d = Descriptor.decode(raw)
    assert d.encode() == raw
    assert d._encode_in_c() == raw  # the C encoder writes back exactly what it read
    assert (d.scheme, d.granularity, d.axis, d.block_size) == ("affine", "per_block", 1, 16)
    assert d.parts == {
        "values": Part("int8", 0, 0, "row_major"),
        "scale": Part("float16", 1, 8, "row_major"),
        "zero_point": Part("int8", 1, 0, "row_major"),
    }
    assert d.buffer_count == 2
    # Any bytes-like input.
    assert Descriptor.decode(bytearray(raw)) == d
    assert Descriptor.decode(memoryview(raw)) == d
    assert Descriptor.decode(np.frombuffer(raw, np.uint8)) == d


def test_equality_hash_and_pickle():
    a = Descriptor.build("bfloat16", (3, 4))
    b = Descriptor.decode(a.encode())
    c = Descriptor.build("bfloat16", (4, 3))
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert a != a.encode()  # not equal to its own bytes: different kinds of thing
    assert len({a, b, c}) == 2
    assert pickle.loads(pickle.dumps(a)) == a


def test_repr_is_readable():
    assert repr(Descriptor.build("float32", (2, 3))) == "Descriptor(dtype='float32', shape=(2, 3), strides=(3, 1))"
    q = Descriptor.build("int4", (4, 64), packing="padded", scheme="affine", granularity="per_block",
                         axis=1, block_size=32, parts={"scale": Part("float16", 1)})
    text = repr(q)
    for piece in ("'int4'", "packing='padded'", "scheme='affine'", "granularity='per_block'",
                  "axis=1", "block_size=32", "'scale': Part('float16', 1, 0, 'row_major')"):
        assert piece in text
    g = Descriptor.build("uint8", (2, 64), scheme="ggml", ggml_type="q4_0")
    assert "ggml_type='q4_0'" in repr(g)


def test_sub_byte_default_packings():
    assert Descriptor.build("int4", (8,)).packing == "lsb_first"
    assert Descriptor.build("uint1", (8,)).packing == "lsb_first"
    assert Descriptor.build("float6_e2m3fn", (8,)).packing == "padded"
    assert Descriptor.build("int4", (8,), packing="padded").packing == "padded"
    assert Descriptor.build("uint4", (2, 32), packing="ggml_split").packing == "ggml_split"


def test_quantized_builds_read_back():
    mx = Descriptor.build(
        "float4_e2m1fn", (128, 64), packing="lsb_first", scheme="microscaling", granularity="per_block",
        axis=1, block_size=16,
        parts={"scale": ("float8_e4m3fn", 1, 0, "swizzled_128x4"), "global_scale": {"dtype": "float32", "buffer_index": 2}},
    )
    assert mx.scheme == "microscaling"
    assert mx.parts["scale"] == Part("float8_e4m3fn", 1, 0, "swizzled_128x4")
    assert mx.parts["global_scale"] == Part("float32", 2, 0, "row_major")
    assert mx.buffer_count == 3
    per_axis = Descriptor.build("uint8", (3, 5), scheme="affine", granularity="per_axis", axis=0,
                                parts={"scale": Part("float32", 1), "zero_point": Part("uint8", 1, 12)})
    assert per_axis.granularity == "per_axis" and per_axis.buffer_count == 2
    ggml = Descriptor.build("uint8", (4, 256), scheme="ggml", ggml_type="Q6_K")
    assert ggml.ggml_type == "q6_k"
    # Integer codes are accepted as well as names.
    same = Descriptor.build(lib.HURRAY_DTYPE_UINT8, (4, 256), scheme=lib.HURRAY_SCHEME_GGML,
                            ggml_type=lib.HURRAY_GGML_Q6_K)
    assert same == ggml


def test_parts_may_share_a_buffer_and_values_may_move():
    d = Descriptor.build("int8", (16,), scheme="affine", granularity="per_tensor",
                         parts={"values": Part("int8", 0, 4), "scale": Part("float32", 0, 0)})
    assert d.buffer_count == 1 and d.byte_offset == 4


def test_close_frees_once_and_keeps_fields():
    d = Descriptor.build("float64", (7,))
    encoded = d.encode()
    d.close()
    d.close()
    assert d.shape == (7,) and d.encode() == encoded
    with pytest.raises(InvalidArgumentError, match="closed"):
        d.handle
    with Descriptor.build("int8", (1,)) as e:
        assert e.handle is not None
    with pytest.raises(InvalidArgumentError):
        e.handle


def test_built_descriptors_encode_when_asked():
    d = Descriptor.build("float32", (2, 3), (1, 2))
    assert d._bytes is None  # validated, not yet encoded
    closed = Descriptor.build("float32", (2, 3), (1, 2))
    closed.close()  # the encoding is made before the handle goes
    assert closed.encode() == d._encode_in_c()
    assert d == closed and hash(d) == hash(closed) and d.encode() is d.encode()
    assert pickle.loads(pickle.dumps(Descriptor.build("int8", (4,)))) == Descriptor.build("int8", (4,))
    # Building still validates the whole descriptor at once.
    with pytest.raises(InvalidDescriptorError, match="scale"):
        Descriptor.build("int8", (4,), scheme="affine", granularity="per_tensor")


def test_descriptors_are_collected():
    d = Descriptor.build("float32", (2,))
    ref = weakref.ref(d)
    del d
    gc.collect()
    assert ref() is None


def test_no_public_constructor():
    with pytest.raises(TypeError):
        Descriptor()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(dtype="float32", shape=(2,), packing="lsb_first"), InvalidDescriptorError, "packing"),
        (dict(dtype="int4", shape=(2,), packing="none"), InvalidDescriptorError, "packing"),
        (dict(dtype="int2", shape=(64,), packing="ggml_split"), InvalidDescriptorError, "ggml_split"),
        (dict(dtype="float32", shape=(2,), scheme="affine", granularity="per_tensor",
              parts={"scale": Part("float32", 1)}), InvalidDescriptorError, "affine"),
        (dict(dtype="int8", shape=(2,), scheme="affine", granularity="per_tensor"), InvalidDescriptorError, "scale"),
        (dict(dtype="int8", shape=(4,), scheme="affine", granularity="per_block", block_size=3,
              parts={"scale": Part("float32", 1)}), InvalidDescriptorError, "block size"),
        (dict(dtype="int8", shape=(4,), scheme="affine", granularity="per_axis", axis=1,
              parts={"scale": Part("float32", 1)}), InvalidDescriptorError, "axis"),
        (dict(dtype="int8", shape=(4,), parts={"values": Part("int8", 1)}), InvalidDescriptorError, "gap"),
        (dict(dtype="uint8", shape=(4, 30), scheme="ggml", ggml_type="q4_0"), InvalidDescriptorError, "multiple"),
        (dict(dtype="float32", shape=(2,), ggml_type="q4_0"), InvalidDescriptorError, "ggml"),
        (dict(dtype="float32", shape=(2, 3), strides=(1,)), InvalidArgumentError, "strides"),
        (dict(dtype="float32", shape=(1,) * 65), HurrayError, "rank"),
        (dict(dtype="float32", shape=(1 << 40, 1 << 40)), HurrayOverflowError, None),
        (dict(dtype="float32", shape=(4,), strides=(1 << 62,)), HurrayOverflowError, None),
        (dict(dtype="float32", shape=(-1,)), InvalidArgumentError, "negative"),
        (dict(dtype="float32", shape=(1 << 64,)), HurrayOverflowError, "64"),
        (dict(dtype="float32", shape=(2,), strides=(1 << 63,)), HurrayOverflowError, "64"),
        (dict(dtype="float32", shape=(2.0,)), InvalidArgumentError, "integer"),
        (dict(dtype="float32", shape="ab"), InvalidArgumentError, "sequence"),
        (dict(dtype="float32", shape=(2,), packing="tight"), InvalidArgumentError, "lsb_first"),
        (dict(dtype="float32", shape=(2,), scheme="affin"), InvalidArgumentError, "affine"),
        (dict(dtype="float32", shape=(2,), byte_order=7), UnsupportedError, "byte order"),
        (dict(dtype="float32", shape=(2,), packing=9), UnsupportedError, "packing"),
        (dict(dtype="float32", shape=(2,), parts={"weights": Part("float32")}), InvalidArgumentError, "role"),
        (dict(dtype="float32", shape=(2,), parts={"values": Part("float16")}), InvalidArgumentError, "differs"),
        (dict(dtype="float32", shape=(2,), parts={"scale": 5}), InvalidArgumentError, "Part"),
        (dict(dtype="float32", shape=(2,), parts={"scale": {"buffer_index": 1}}), InvalidArgumentError, "scale"),
        (dict(dtype=object, shape=(2,)), UnsupportedError, "object"),
        (dict(dtype="float32", shape=(2,), axis=-1), InvalidArgumentError, "axis"),
    ],
)
def test_bad_builds_raise(kwargs, error, message):
    with pytest.raises(error, match=message):
        Descriptor.build(**kwargs)


def test_shape_may_be_a_bare_integer():
    assert Descriptor.build("int8", 5).shape == (5,)


@pytest.mark.parametrize(
    "data, error",
    [
        (b"", InvalidDescriptorError),
        (b"HRYD", InvalidDescriptorError),
        (spec_bytes(17, (2,), (1,))[:-1], InvalidDescriptorError),
        (spec_bytes(17, (2,), (1,)) + b"\0", InvalidDescriptorError),
        (b"XRYD" + spec_bytes(17, (2,), (1,))[4:], InvalidDescriptorError),
        (spec_bytes(99, (2,), (1,)), UnsupportedError),
        (spec_bytes(17, (2,), (1,), packing=1), InvalidDescriptorError),
        (spec_bytes(17, (2,), (1,), scheme=7), UnsupportedError),
        (spec_bytes(17, (2,), (1,), parts=[(1, 17, 0, 1, 0)]), InvalidDescriptorError),
        (spec_bytes(17, (2,), (1,), parts=[(1, 17, 1, 0, 0)]), InvalidDescriptorError),
    ],
)
def test_bad_bytes_raise(data, error):
    with pytest.raises(error):
        Descriptor.decode(data)


def test_version_and_reserved_bytes_are_checked():
    good = bytearray(spec_bytes(17, (2,), (1,)))
    Descriptor.decode(bytes(good))
    bad_version = bytearray(good)
    bad_version[4] = 2
    with pytest.raises(UnsupportedError):
        Descriptor.decode(bytes(bad_version))
    bad_reserved = bytearray(good)
    bad_reserved[14] = 1
    with pytest.raises(InvalidDescriptorError):
        Descriptor.decode(bytes(bad_reserved))


def test_decode_refuses_non_bytes():
    for bad in (None, 12, "HRYD", [1, 2, 3]):
        with pytest.raises(InvalidArgumentError):
            Descriptor.decode(bad)


def test_the_package_exports():
    assert hurray.Descriptor is Descriptor and hurray.Part is Part
    assert hurray.Descriptor.build("int8", (2,)) == Descriptor.decode(spec_bytes(lib.HURRAY_DTYPE_INT8, (2,), (1,)))


def test_errors_carry_the_c_status_and_message():
    cases = [
        (lambda: Descriptor.decode(b"HRYD"), InvalidDescriptorError, lib.HURRAY_ERROR_INVALID_DESCRIPTOR, "truncated"),
        (lambda: Descriptor.decode(spec_bytes(99, (2,), (1,))), UnsupportedError, lib.HURRAY_ERROR_UNSUPPORTED, "99"),
        (lambda: Descriptor.build("int8", [1] * 65), InvalidArgumentError, lib.HURRAY_ERROR_INVALID_ARGUMENT,
         "HURRAY_MAX_RANK"),
    ]
    for call, cls, status, words in cases:
        with pytest.raises(cls) as info:
            call()
        assert isinstance(info.value, HurrayError) and info.value.status == status
        assert str(info.value).startswith(cls.status_name + ": ") and words in str(info.value)


def test_c_handles_are_destroyed_exactly_once(monkeypatch):
    """Garbage collection, close() and close() again free each C descriptor once."""
    from hurray.core import descriptor as descriptor_module

    freed = []
    original = descriptor_module._destroy

    def counting_destroy(handle):
        freed.append(handle)
        original(handle)

    monkeypatch.setattr(descriptor_module, "_destroy", counting_destroy)
    made = [Descriptor.build("float32", (2, 3)) for _ in range(200)]
    for d in made[:100]:
        d.close()
        d.close()
    assert len(freed) == 100
    del made, d
    gc.collect()
    assert len(freed) == 200
