"""Property tests: generated descriptors round-trip; no byte string crashes decode."""
import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hurray import Descriptor, Part, dtypes, from_numpy
from hurray.core import packing
from hurray._ffi import lib
from hurray.errors import HurrayError

from support.spec_encoding import row_major, spec_bytes

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALL = [d.name for d in dtypes.DTYPES]
BITS = {d.name: d.bits for d in dtypes.DTYPES}
CODE = {d.name: d.code for d in dtypes.DTYPES}
INTEGERS = [n for n in ALL if n.startswith(("int", "uint"))]
FP8 = [n for n in ALL if n.startswith("float8")]
WIDE_FLOATS = ["float16", "float32", "float64", "bfloat16"]
WHOLE_BYTE_NUMBERS = [n for n in INTEGERS + FP8 + WIDE_FLOATS if BITS[n] % 8 == 0]
GGML_BLOCK_ELEMENTS = {"q4_0": 32, "q4_1": 32, "q5_0": 32, "q5_1": 32, "q8_0": 32, "q4_k": 256, "q6_k": 256, "mxfp4": 32}
ROLE_CODE = {"values": 1, "scale": 2, "zero_point": 3, "global_scale": 4}
ENUMS = {
    "byte_order": {"little": 0, "big": 1},
    "packing": {"none": 0, "padded": 1, "lsb_first": 2, "ggml_split": 3},
    "scheme": {"none": 0, "affine": 1, "microscaling": 2, "ggml": 3},
    "granularity": {"none": 0, "per_tensor": 1, "per_axis": 2, "per_block": 3},
    "layout": {"row_major": 0, "swizzled_128x4": 1},
}


def packings_for(name):
    bits = BITS[name]
    if bits >= 8:
        return ["none"]
    return ["padded"] + (["lsb_first"] if bits in (1, 2, 4) else [])


@st.composite
def layouts(draw, min_rank=0, row_major_only=False):
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=min_rank, max_size=4)))
    if row_major_only or draw(st.booleans()):
        strides = row_major(shape)
    else:
        strides = tuple(draw(st.lists(st.integers(-40, 40), min_size=len(shape), max_size=len(shape))))
    return shape, strides


@st.composite
def descriptors(draw):
    """Keyword arguments of a valid Descriptor.build call, per docs/impl/descriptor-encoding.md."""
    scheme = draw(st.sampled_from(["none", "none", "affine", "microscaling", "ggml"]))
    kw = {"byte_order": draw(st.sampled_from(["little", "big"])), "scheme": scheme,
          "granularity": "none", "axis": 0, "block_size": 0, "ggml_type": None}
    parts = {}
    if scheme == "none":
        dtype = draw(st.sampled_from(ALL))
        if draw(st.integers(0, 7)) == 0:
            dtype = draw(st.sampled_from([n for n in ALL if BITS[n] == 4]))
            kw["packing"] = "ggml_split"
            shape, _ = draw(layouts(min_rank=1, row_major_only=True))
            shape = shape[:-1] + (32 * draw(st.integers(0, 3)),)
            strides = row_major(shape)
        else:
            kw["packing"] = draw(st.sampled_from(packings_for(dtype)))
            shape, strides = draw(layouts())
    elif scheme == "ggml":
        dtype = "uint8"
        kw.update(packing="none", byte_order="little", ggml_type=draw(st.sampled_from(sorted(GGML_BLOCK_ELEMENTS))))
        shape, _ = draw(layouts(min_rank=1, row_major_only=True))
        shape = shape[:-1] + (GGML_BLOCK_ELEMENTS[kw["ggml_type"]] * draw(st.integers(0, 3)),)
        strides = row_major(shape)
    elif scheme == "affine":
        dtype = draw(st.sampled_from(INTEGERS + FP8))
        kw["packing"] = draw(st.sampled_from(packings_for(dtype)))
        kw["granularity"] = draw(st.sampled_from(["per_tensor", "per_axis", "per_block"]))
        shape, strides = draw(layouts(min_rank=0 if kw["granularity"] == "per_tensor" else 1))
        if kw["granularity"] != "per_tensor":
            kw["axis"] = draw(st.integers(0, len(shape) - 1))
        if kw["granularity"] == "per_block":
            block = draw(st.integers(1, 4))
            shape = shape[: kw["axis"]] + (block * draw(st.integers(0, 3)),) + shape[kw["axis"] + 1:]
            kw["block_size"] = block
        parts["scale"] = draw(st.sampled_from(WIDE_FLOATS))
        if draw(st.booleans()):
            parts["zero_point"] = draw(st.sampled_from(WHOLE_BYTE_NUMBERS))
    else:  # microscaling
        nvfp4 = draw(st.booleans())
        if nvfp4:
            dtype, parts["scale"], kw["block_size"] = "float4_e2m1fn", "float8_e4m3fn", 16
        else:
            dtype = draw(st.sampled_from(FP8 + ["float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int8"]))
            parts["scale"], kw["block_size"] = "float8_e8m0fnu", 32
        kw["packing"] = draw(st.sampled_from(packings_for(dtype)))
        kw["granularity"] = "per_block"
        shape, strides = draw(layouts(min_rank=1))
        kw["axis"] = draw(st.integers(0, len(shape) - 1))
        shape = shape[: kw["axis"]] + (kw["block_size"] * draw(st.integers(0, 2)),) + shape[kw["axis"] + 1:]
        if nvfp4 and draw(st.booleans()):
            parts["global_scale"] = "float32"
    if len(shape) != len(strides):  # a dimension was replaced: keep the strides' count
        strides = row_major(shape)
    layouts_by_role = {role: "row_major" for role in parts}
    if scheme == "microscaling" and len(shape) == 2 and kw["axis"] == 1 and draw(st.booleans()):
        layouts_by_role["scale"] = "swizzled_128x4"
    # Buffer indices: any assignment without gaps.
    roles = ["values"] + list(parts)
    raw = [draw(st.integers(0, len(roles) - 1)) for _ in roles]
    dense = {b: i for i, b in enumerate(sorted(set(raw)))}
    built = {"values": Part(dtype, dense[raw[0]], draw(st.integers(0, 1 << 20)))}
    for (role, part_dtype), b in zip(parts.items(), raw[1:]):
        built[role] = Part(part_dtype, dense[b], draw(st.integers(0, 1 << 20)), layouts_by_role[role])
    kw.update(dtype=dtype, shape=shape, strides=strides, parts=built)
    return kw


def spec_encoding(kw):
    """The spec's encoding of build() keyword arguments (names turned into codes)."""
    parts = sorted(kw["parts"].items(), key=lambda item: ROLE_CODE[item[0]])
    return spec_bytes(
        CODE[kw["dtype"]], kw["shape"], kw["strides"],
        byte_order=ENUMS["byte_order"][kw["byte_order"]], packing=ENUMS["packing"][kw["packing"]],
        scheme=ENUMS["scheme"][kw["scheme"]], granularity=ENUMS["granularity"][kw["granularity"]],
        axis=kw["axis"], block_size=kw["block_size"],
        ggml_type=0 if kw["ggml_type"] is None else getattr(lib, "HURRAY_GGML_" + kw["ggml_type"].upper()),
        parts=[(ROLE_CODE[role], CODE[p.dtype], ENUMS["layout"][p.layout], p.buffer_index, p.byte_offset)
               for role, p in parts],
    )


@SETTINGS
@given(descriptors())
def test_generated_descriptors_round_trip(kw):
    d = Descriptor.build(**kw)
    for field in ("dtype", "shape", "strides", "byte_order", "packing", "scheme", "granularity",
                  "axis", "block_size", "ggml_type"):
        assert getattr(d, field) == kw[field], field
    assert d.parts == kw["parts"]
    assert d.buffer_count == 1 + max(p.buffer_index for p in kw["parts"].values())
    encoded = d.encode()
    assert encoded == spec_encoding(kw)
    again = Descriptor.decode(encoded)
    assert again == d and hash(again) == hash(d)
    assert again.encode() == encoded
    assert again._encode_in_c() == encoded
    assert repr(again) == repr(d)
    assert pickle.loads(pickle.dumps(d)) == d


def mutate(data, edits):
    data = bytearray(data)
    for kind, where, value in edits:
        if kind == 0 and data:
            data[where % len(data)] = value
        elif kind == 1:
            del data[where % (len(data) + 1):]
        else:
            data[where % (len(data) + 1):where % (len(data) + 1)] = bytes([value])
    return bytes(data)


def decode_or_refuse(data):
    """Decoding either refuses with a HurrayError or yields the one canonical encoding."""
    try:
        d = Descriptor.decode(data)
    except HurrayError:
        return None
    assert d.encode() == data
    assert d._encode_in_c() == data
    return d


@SETTINGS
@given(descriptors(), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2000), st.integers(0, 255)), min_size=1, max_size=4))
def test_mutated_encodings_never_crash(kw, edits):
    decode_or_refuse(mutate(Descriptor.build(**kw).encode(), edits))


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data):
    decode_or_refuse(data)


@st.composite
def near_valid_bytes(draw):
    """Well-framed encodings whose fields are mostly legal, one by one.

    Magic, version and length are right, and each field is drawn from its
    legal range except now and then, so decode gets past the framing into
    the semantic rules and the reach arithmetic.
    """
    def field(legal, wild):
        return draw(wild if draw(st.integers(0, 11)) == 11 else legal)

    rank = draw(st.integers(0, 4))
    roles = sorted(field(st.sets(st.integers(1, 4), min_size=1, max_size=4).map(lambda r: r | {1}),
                         st.sets(st.integers(0, 6), min_size=1, max_size=4)))
    header = dict(
        byte_order=field(st.integers(0, 1), st.integers(0, 255)),
        packing=field(st.integers(0, 3), st.integers(0, 255)),
        scheme=field(st.integers(0, 3), st.integers(0, 255)),
        granularity=field(st.integers(0, 3), st.integers(0, 255)),
        reserved=field(st.just(0), st.integers(0, 65535)),
        axis=field(st.integers(0, max(rank - 1, 0)), st.integers(0, (1 << 32) - 1)),
        ggml_type=field(st.sampled_from([0, 0, 0, 2, 3, 6, 7, 8, 12, 14, 39]), st.integers(0, (1 << 32) - 1)),
        block_size=field(st.sampled_from([0, 0, 0, 1, 2, 16, 32]), st.integers(0, (1 << 64) - 1)),
    )
    shape = [field(st.sampled_from([0, 1, 2, 3, 16, 32, 64, 256]), st.integers(0, (1 << 64) - 1))
             for _ in range(rank)]
    strides = [field(st.integers(-64, 64), st.integers(-(1 << 63), (1 << 63) - 1)) for _ in range(rank)]
    parts = []
    for role in roles:
        dtype = field(st.integers(1, 34), st.integers(0, 255))
        layout = field(st.integers(0, 1), st.integers(0, 255))
        reserved = field(st.just(0), st.integers(0, 255))
        buffer_index = field(st.integers(0, len(roles) - 1), st.integers(0, (1 << 32) - 1))
        byte_offset = field(st.integers(0, 4096), st.integers(0, (1 << 64) - 1))
        parts.append((role, dtype, layout, buffer_index, byte_offset, reserved))
    return spec_bytes(None, shape, strides, parts=parts, **header)


@SETTINGS
@given(near_valid_bytes())
def test_near_valid_bytes_never_crash(data):
    decode_or_refuse(data)


NUMPY_DTYPES = [d.numpy for d in dtypes.DTYPES if d.numpy is not None]


@st.composite
def strided_arrays(draw):
    dt = draw(st.sampled_from(NUMPY_DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    base = np.frombuffer(draw(st.binary(min_size=int(np.prod(shape)) * dt.itemsize,
                                        max_size=int(np.prod(shape)) * dt.itemsize)), np.uint8).copy()
    info = dtypes.dtype_info(dt)
    if info.sub_byte:
        base &= (1 << info.bits) - 1
    if dt.kind == "b":
        base &= 1
    array = base.view(dt).reshape(shape)
    index = tuple(slice(draw(st.integers(-6, 6)), draw(st.integers(-6, 6)), draw(st.sampled_from([-3, -2, -1, 1, 2, 3])))
                  for _ in shape)
    array = array[index + (Ellipsis,)]  # Ellipsis: a 0-d view, not a scalar
    if array.ndim > 1 and draw(st.booleans()):
        array = array.transpose(draw(st.permutations(range(array.ndim))))
    if draw(st.integers(0, 4)) == 0:
        array = np.broadcast_to(array, (draw(st.integers(0, 3)),) + array.shape)
    if dt.itemsize > 1 and dtypes.dtype_info(dt).name not in ("complex32", "bcomplex32") and draw(st.booleans()):
        array = array.astype(dt.newbyteorder("S"))
    return array


@SETTINGS
@given(strided_arrays())
def test_from_numpy_views_are_the_same_memory(array):
    t = from_numpy(array)
    back = np.asarray(t)
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes()
    if array.size:
        assert np.shares_memory(back, array)
        assert back.__array_interface__["data"][0] == array.__array_interface__["data"][0]
        for n, b, a in zip(array.shape, back.strides, array.strides):
            assert n <= 1 or a == b
    assert Descriptor.decode(t.descriptor.encode()) == t.descriptor


@SETTINGS
@given(st.sampled_from([(1, "lsb_first"), (2, "lsb_first"), (4, "lsb_first"), (4, "ggml_split")]), st.data())
def test_pack_unpack_round_trip(layout, data):
    width, kind = layout
    count = data.draw(st.integers(0, 4)) * 32 if kind == "ggml_split" else data.draw(st.integers(0, 100))
    codes = np.array(data.draw(st.lists(st.integers(0, (1 << width) - 1), min_size=count, max_size=count)), np.uint8)
    packed = packing.pack(codes, width, kind)
    assert packed.size == packing.packed_nbytes(count, width, kind)
    assert packing.unpack(packed, width, count, kind).tolist() == codes.tolist()
