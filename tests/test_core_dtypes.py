"""hurray.dtypes: the element-type table agrees with the header and with numpy."""
import sys

import ml_dtypes
import numpy as np
import pytest

import hurray
from hurray import dtypes
from hurray._ffi import lib
from hurray.errors import HurrayError, InvalidArgumentError, UnsupportedError

# Widths as the encoding spec lists them, written out independently of the C table.
EXPECTED_BITS = {
    "bool": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "int1": 1, "int2": 2, "int4": 4, "uint1": 1, "uint2": 2, "uint4": 4,
    "float16": 16, "float32": 32, "float64": 64, "bfloat16": 16,
    "complex32": 32, "complex64": 64, "complex128": 128,
    "float8_e3m4": 8, "float8_e4m3": 8, "float8_e4m3b11fnuz": 8, "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8, "float8_e5m2": 8, "float8_e5m2fnuz": 8, "float8_e8m0fnu": 8,
    "float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4, "bcomplex32": 32,
}
NUMPY_NATIVE = {
    "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "complex64": np.complex64, "complex128": np.complex128,
}


def test_table_matches_header_constants():
    constants = {n[len("HURRAY_DTYPE_"):].lower(): getattr(lib, n) for n in dir(lib) if n.startswith("HURRAY_DTYPE_")}
    assert {d.name: d.code for d in dtypes.DTYPES} == constants
    assert len({d.code for d in dtypes.DTYPES}) == len(dtypes.DTYPES)


def test_widths_match_the_spec():
    assert {d.name: d.bits for d in dtypes.DTYPES} == EXPECTED_BITS


@pytest.mark.parametrize("info", dtypes.DTYPES, ids=lambda d: d.name)
def test_numpy_dtype_of_every_type(info):
    expected = NUMPY_NATIVE.get(info.name) or getattr(ml_dtypes, info.name)
    assert info.numpy == np.dtype(expected)
    assert info.numpy.itemsize == max(1, info.bits // 8)
    assert dtypes.numpy_dtype(info.code) == info.numpy
    # Every spelling leads back to the same code.
    assert dtypes.dtype_code(info.name) == info.code
    assert dtypes.dtype_code(info.code) == info.code
    assert dtypes.dtype_code(info.numpy) == info.code
    assert dtypes.dtype_code(expected) == info.code
    assert dtypes.dtype_name(info.numpy) == info.name
    assert dtypes.dtype_bits(info.name) == info.bits
    assert info.sub_byte == (info.bits < 8)


def test_numpy_aliases_resolve():
    assert dtypes.dtype_code("f4") == lib.HURRAY_DTYPE_FLOAT32
    assert dtypes.dtype_code(">i2") == lib.HURRAY_DTYPE_INT16
    assert dtypes.dtype_code(np.intc) == lib.HURRAY_DTYPE_INT32
    assert dtypes.dtype_code(np.longlong) == lib.HURRAY_DTYPE_INT64
    assert dtypes.dtype_code(bool) == lib.HURRAY_DTYPE_BOOL
    assert dtypes.dtype_code(np.uint64) == lib.HURRAY_DTYPE_UINT64
    assert hurray.dtype_name(np.cdouble) == "complex128"


@pytest.mark.parametrize(
    "bad, error",
    [
        (object, UnsupportedError),
        ("U3", UnsupportedError),
        ("S4", UnsupportedError),
        ("datetime64[ns]", UnsupportedError),
        (np.dtype([("a", "f4"), ("b", "i4")]), UnsupportedError),
        (np.dtype(("f4", (2,))), UnsupportedError),
        ("V4", UnsupportedError),
        (np.longdouble if np.dtype(np.longdouble).itemsize > 8 else "V16", UnsupportedError),
        (0, UnsupportedError),
        (35, UnsupportedError),
        (-1, UnsupportedError),
        ("no_such_type", InvalidArgumentError),
        (3.5, InvalidArgumentError),
        (True, InvalidArgumentError),
    ],
)
def test_unknown_types_raise(bad, error):
    with pytest.raises(error):
        dtypes.dtype_code(bad)
    assert issubclass(error, HurrayError)


def test_byte_orders():
    other = "big" if sys.byteorder == "little" else "little"
    flip = ">" if other == "big" else "<"
    assert dtypes.numpy_dtype("float32", other) == np.dtype(flip + "f4")
    assert dtypes.numpy_dtype("float32", sys.byteorder) == np.dtype("f4")
    assert not dtypes.numpy_dtype("bfloat16", other).isnative
    # Single bytes have no byte order.
    assert dtypes.numpy_dtype("int8", other) == np.dtype("i1")
    assert dtypes.numpy_dtype("float8_e4m3fn", other) == np.dtype(ml_dtypes.float8_e4m3fn)
    # ml_dtypes swaps complex32 whole, not per half: no numpy dtype for it.
    assert dtypes.numpy_dtype("complex32", other) is None
    assert dtypes.numpy_dtype("bcomplex32", other) is None
    with pytest.raises(InvalidArgumentError):
        dtypes.numpy_dtype("float32", "middle")


def test_big_endian_bfloat16_reads_its_value():
    other = "big" if sys.byteorder == "little" else "little"
    swapped = np.array([1.5, -2.0], ml_dtypes.bfloat16).view(np.uint8).reshape(-1, 2)[:, ::-1].copy()
    back = swapped.reshape(-1).view(dtypes.numpy_dtype("bfloat16", other))
    assert back.astype(np.float32).tolist() == [1.5, -2.0]


def test_from_numpy_dtype():
    assert dtypes.from_numpy_dtype(np.dtype(">f8")) == (lib.HURRAY_DTYPE_FLOAT64, "big")
    assert dtypes.from_numpy_dtype(np.dtype("<f8")) == (lib.HURRAY_DTYPE_FLOAT64, "little")
    assert dtypes.from_numpy_dtype(np.dtype(">i1")) == (lib.HURRAY_DTYPE_INT8, "little")
    assert dtypes.from_numpy_dtype(np.dtype(ml_dtypes.int4)) == (lib.HURRAY_DTYPE_INT4, "little")
    non_native = np.dtype(ml_dtypes.complex32).newbyteorder("S")
    with pytest.raises(UnsupportedError, match="complex32"):
        dtypes.from_numpy_dtype(non_native)
    with pytest.raises(UnsupportedError, match="object"):
        dtypes.from_numpy_dtype(np.dtype(object))
    with pytest.raises(UnsupportedError, match="structured"):
        dtypes.from_numpy_dtype(np.dtype([("a", "u1")]))
