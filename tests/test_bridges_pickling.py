"""Pickling and copying a Tensor in one process: protocol 5 out-of-band buffers
without copies, protocols 0-4 in-band, read-only kept, numpy's writability
rules, copy/deepcopy, and every kind of bad input refused with a HurrayError."""
import copy
import gc
import pickle
import sys
import weakref

import numpy as np
import pytest

import hurray
from hurray import Tensor
from hurray.errors import (
    AbiVersionError,
    BufferTooSmallError,
    CorruptError,
    HurrayError,
    InvalidDescriptorError,
    UnsupportedError,
)
from hurray.pickling import ENCODING_VERSION, ENCODING_VERSIONS, unpickle_tensor
from support.pickle_samples import affine_per_tensor, assert_same, raw, samples

SAMPLES = samples()


def address(buffer):
    """Where a buffer-protocol object's bytes are."""
    return np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8).__array_interface__["data"][0]


def dumps5(tensor):
    buffers = []
    data = pickle.dumps(tensor, protocol=5, buffer_callback=buffers.append)
    return data, buffers


class Crafted:
    """Pickles as unpickle_tensor called with a state we choose: a stream from a stranger."""

    def __init__(self, *state):
        self.state = state

    def __reduce__(self):
        return (unpickle_tensor, self.state)


def state_of(tensor, protocol=5):
    function, state = Tensor.__reduce_ex__(tensor, protocol)
    assert function is unpickle_tensor
    return list(state)


# ---- protocol 5, out-of-band --------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
def test_protocol5_sends_every_buffer_out_of_band_without_a_copy(name):
    tensor = SAMPLES[name]
    data, buffers = dumps5(tensor)
    assert len(buffers) == len(tensor.buffers)
    for buffer, (addr, nbytes) in zip(buffers, tensor.buffers):  # in buffer order, the tensor's own memory
        assert isinstance(buffer, pickle.PickleBuffer)
        view = buffer.raw()
        assert view.nbytes == nbytes
        if nbytes:
            assert address(view) == addr
        assert view.readonly == tensor.readonly
    received = pickle.loads(data, buffers=buffers)
    assert_same(received, tensor)
    # Handed back the same buffers, the received tensor is over the same memory.
    assert [a for a, n in received.buffers if n] == [a for a, n in tensor.buffers if n]


@pytest.mark.parametrize("name", SAMPLES)
def test_protocol5_in_band_and_protocols_0_to_4_round_trip(name):
    tensor = SAMPLES[name]
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        received = pickle.loads(pickle.dumps(tensor, protocol=protocol))
        assert_same(received, tensor)
        if not tensor.readonly:  # a copy, as numpy's in-band pickles are: writable, not shared
            assert not any(np.shares_memory(received.buffer(i), tensor.buffer(i)) for i in range(len(tensor.buffers)))


def test_the_state_is_small_versioned_and_in_band():
    tensor = SAMPLES["affine"]
    versions, encoded, readonly, nbytes, buffers = state_of(tensor)
    # C ABI 4: the last version that changed a state (ADR-059); this build is ABI 5.
    assert versions == (hurray._ffi.lib.HURRAY_C_ABI_MIN_VERSION, ENCODING_VERSION) == (4, 1)
    assert encoded == tensor.descriptor.encode()
    assert readonly is False
    assert nbytes == tuple(n for _, n in tensor.buffers)
    assert len(buffers) == 3
    # Protocols 0-4: the same, the buffers as the pickle's own bytes, and a flag to make them writable again.
    *same, inline, inband_copy = state_of(tensor, 4)
    assert same == [versions, encoded, readonly, nbytes] and inband_copy is True
    assert [type(b) for b in inline] == [bytes] * 3


def test_256_mib_in_band_part_stays_under_2_kib_and_no_buffer_is_copied():
    big = np.zeros(256 << 20, dtype=np.int8)  # calloc'd: the pages are never touched
    tensor = affine_per_tensor(big.nbytes, big)
    data, buffers = dumps5(tensor)
    assert len(data) < 2048
    assert len(buffers) == 3
    for buffer, (addr, nbytes) in zip(buffers, tensor.buffers):
        view = buffer.raw()
        assert view.nbytes == nbytes and address(view) == addr
    assert buffers[0].raw().nbytes == 256 << 20
    received = pickle.loads(data, buffers=buffers)
    assert received.buffers == tensor.buffers  # still the same memory on the way back
    assert received.descriptor == tensor.descriptor


def test_received_tensor_owns_the_received_buffers():
    payload = bytearray(np.arange(12, dtype=np.float32).tobytes())
    tensor = hurray.from_numpy(np.frombuffer(payload, dtype=np.float32).copy())
    data, _ = dumps5(tensor)
    received = pickle.loads(data, buffers=[payload])
    assert [view.obj for view in received.owner] == [payload]
    assert received.buffers[0] == (address(payload), 48)
    del payload, tensor
    gc.collect()
    assert np.asarray(received).tolist() == list(range(12))
    # The owner's export pins the bytearray: it cannot be resized under the tensor.
    with pytest.raises(BufferError):
        received.owner[0].obj.append(0)


# ---- the C halves (hurray._pickle) ---------------------------------------------


# Pickles written by the package before its modules moved into folders
# (hurray/pickling.py was then the pickling module itself): every pickle
# names hurray.pickling.unpickle_tensor, and must load for good.
OLD_PICKLES = {
    "int16 2x3, protocol 2": (
        "8002636875727261792e7069636b6c696e670a756e7069636b6c655f74656e736f720a7100284b044b01867101635f636f64"
        "6563730a656e636f64650a710258500000004852594401005000020000000001000000000000000000000000000000000000"
        "0200000000000000030000000000000003000000000000000100000000000000010300000000000000000000000000007103"
        "58060000006c6174696e317104867105527106894b0c8571076802580c000000000001000200030004000500710868048671"
        "0952710a85710b8874710c52710d2e"
    ),
    "int16 2x3, protocol 4": (
        "8004959c000000000000008c0f6875727261792e7069636b6c696e67948c0f756e7069636b6c655f74656e736f7294939428"
        "4b044b0186944350485259440100500002000000000100000000000000000000000000000000000002000000000000000300"
        "000000000000030000000000000001000000000000000103000000000000000000000000000094894b0c8594430c00000100"
        "020003000400050094859488749452942e"
    ),
}
OLD_AFFINE_PICKLE = (
    "800495e5000000000000008c0f6875727261792e7069636b6c696e67948c0f756e7069636b6c655f74656e736f7294939428"
    "4b044b0186944370485259440100700002000001020300000000000000000000000000000000000002000000000000000400"
    "0000000000000400000000000000010000000000000001020000000000000000000000000000021100000100000000000000"
    "000000000302000002000000000000000000000094894b088a08c6fea08e7450d22086944b088a093904e008afdc38bc0086"
    "944b028794430880c9125ba4ed367f9443088180803b8180803b9443027f8094879488749452942e"
)


@pytest.mark.parametrize("name", OLD_PICKLES)
def test_pickles_written_before_the_package_moved_still_load(name):
    data = bytes.fromhex(OLD_PICKLES[name])
    assert b"hurray.pickling" in data and b"unpickle_tensor" in data
    tensor = pickle.loads(data)
    assert type(tensor) is Tensor and tensor.descriptor == hurray.Descriptor.build("int16", (2, 3))
    assert np.asarray(tensor).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_a_quantized_pickle_written_before_the_package_moved_still_loads():
    tensor = pickle.loads(bytes.fromhex(OLD_AFFINE_PICKLE))
    again = hurray.quantize_affine(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), axis=0)
    assert tensor.descriptor == again.descriptor
    assert raw(tensor) == raw(again)


def test_both_halves_are_in_c_under_the_stable_names():
    assert type(Tensor.__dict__["__reduce_ex__"]).__name__ == "method_descriptor"  # hurray._pickle's
    assert type(unpickle_tensor).__name__ == "builtin_function_or_method"
    assert (unpickle_tensor.__module__, unpickle_tensor.__name__) == ("hurray.pickling", "unpickle_tensor")
    data, _ = dumps5(SAMPLES["plain"])
    assert b"hurray.pickling" in data and b"unpickle_tensor" in data  # what every pickle names
    assert pickle.loads(pickle.dumps(unpickle_tensor)) is unpickle_tensor


def test_each_pickle_buffer_keeps_its_tensor_alive_and_lets_it_go():
    tensor = hurray.quantize_affine(np.linspace(-1, 1, 256, dtype=np.float32).reshape(16, 16), dtype="int8", axis=0)
    alive = weakref.ref(tensor)
    expected = raw(tensor)
    data, buffers = dumps5(tensor)
    del tensor
    gc.collect()
    assert alive() is not None  # the PickleBuffers hold it
    received = pickle.loads(data, buffers=buffers)
    del buffers
    gc.collect()
    assert alive() is not None and raw(received) == expected  # the received tensor's owner holds them
    del received
    gc.collect()
    assert alive() is None  # and nothing else did


def test_no_reference_is_leaked_or_dropped_twice_on_any_path():
    # Each object the C halves touch has the same reference count after a
    # thousand round trips, refusals included, as before them.
    tensor = SAMPLES["affine"]
    from hurray.bridges import pickling

    data, buffers = dumps5(tensor)
    received = [bytearray(b.raw()) for b in buffers]
    short = [received[0], received[1], received[2][:-1]]
    watched = [tensor, tensor.descriptor, tensor.descriptor.encode(), pickling._VERSIONS, *received, short[2]]

    def counts():
        gc.collect()
        return [sys.getrefcount(obj) for obj in watched]

    before = counts()
    for _ in range(1000):
        Tensor.__reduce_ex__(tensor, 5)
        Tensor.__reduce_ex__(tensor, 4)
        pickle.loads(data, buffers=received)
        for wrong in (short, [received[0], None, received[2]], received[::-1]):
            with pytest.raises(CorruptError):
                pickle.loads(data, buffers=wrong)
    del wrong  # the last list the loop made refers to the buffers
    assert counts() == before


def test_a_lazy_tensor_is_verified_before_it_is_pickled(tmp_path):
    path = tmp_path / "one.hurray"
    hurray.save(path, {"t": SAMPLES["affine"]})
    lazy = hurray.load(path)["t"]
    assert type(lazy) is not Tensor
    assert_same(pickle.loads(pickle.dumps(lazy, protocol=5)), SAMPLES["affine"])
    assert type(lazy) is Tensor  # verified, and a plain Tensor from then on


# ---- read-only, and numpy's writability rules -------------------------------


def _numpy_writeable(array, protocol, wrap):
    buffers = []
    kwargs = {"buffer_callback": buffers.append} if wrap else {}
    data = pickle.dumps(array, protocol=protocol, **kwargs)
    return pickle.loads(data, buffers=[wrap(b.raw()) for b in buffers] if wrap else None).flags.writeable


@pytest.mark.parametrize("source_readonly", [False, True])
@pytest.mark.parametrize(
    "protocol, wrap",
    [(4, None), (5, None), (5, bytes), (5, bytearray), (5, lambda view: view)],
    ids=["p4", "p5-in-band", "p5-bytes", "p5-bytearray", "p5-same-memory"],
)
def test_writability_follows_numpy_and_read_only_stays_read_only(source_readonly, protocol, wrap):
    array = np.arange(8, dtype=np.float32)
    array.flags.writeable = not source_readonly
    tensor = hurray.from_numpy(array)
    assert tensor.readonly == source_readonly
    buffers = []
    kwargs = {"buffer_callback": buffers.append} if wrap else {}
    data = pickle.dumps(tensor, protocol=protocol, **kwargs)
    received = pickle.loads(data, buffers=[wrap(b.raw()) for b in buffers] if wrap else None)
    if source_readonly:
        assert received.readonly
        assert not np.asarray(received).flags.writeable
    else:
        assert received.readonly == (not _numpy_writeable(array, protocol, wrap))
    assert np.asarray(received).tolist() == array.tolist()


def test_read_only_tensor_stays_read_only_over_writable_received_memory():
    tensor = SAMPLES["plain-readonly"]
    data, buffers = dumps5(tensor)
    received = pickle.loads(data, buffers=[bytearray(b.raw()) for b in buffers])
    assert received.readonly
    with pytest.raises(ValueError):
        np.asarray(received)[0, 0] = 1.0


# ---- copy and deepcopy -------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_copy_and_deepcopy_copy_the_memory_like_numpy(name, how):
    tensor = SAMPLES[name]
    duplicate = how(tensor)
    assert duplicate.descriptor == tensor.descriptor
    assert raw(duplicate) == raw(tensor)
    for i in range(len(tensor.buffers)):
        assert not np.shares_memory(duplicate.buffer(i), tensor.buffer(i))
    # numpy: a copy of a read-only array is writable.
    frozen = np.ones(2)
    frozen.flags.writeable = False
    assert how(frozen).flags.writeable
    assert not duplicate.readonly
    # Writing the copy leaves the original as it was: every byte flipped in
    # one must stay unflipped in the other, which shared memory cannot do
    # (an empty buffer has no byte to share).
    before = tensor.buffer(0).tobytes()
    flipped = ~np.frombuffer(before, np.uint8)
    duplicate.buffer(0)[:] = flipped
    assert tensor.buffer(0).tobytes() == before
    assert duplicate.buffer(0).tobytes() == flipped.tobytes()


def test_deepcopy_of_a_container_copies_each_tensor_once():
    tensor = SAMPLES["affine"]
    pair = copy.deepcopy([tensor, tensor])
    assert pair[0] is pair[1] and pair[0] is not tensor
    assert copy.copy([tensor])[0] is tensor  # a shallow copy of a list copies no element


# ---- bad input ---------------------------------------------------------------


def test_missing_out_of_band_buffers():
    tensor = SAMPLES["affine"]
    data, buffers = dumps5(tensor)
    # Too few or none at all: pickle itself stops at the first buffer it cannot take, before it
    # calls unpickle_tensor, and no opcode lets a reconstructor see that; the docs name these errors.
    with pytest.raises(pickle.UnpicklingError, match="refers to out-of-band data but no [*]buffers[*] argument"):
        pickle.loads(data)
    for fewer in (buffers[:2], []):
        with pytest.raises(pickle.UnpicklingError, match="^not enough out-of-band buffers$"):
            pickle.loads(data, buffers=fewer)
    # Extra buffers are not pickle's concern; the tensor takes its own, in order.
    assert_same(pickle.loads(data, buffers=buffers + [b"spare"]), tensor)
    # A placeholder where a buffer should be reaches Hurray, which refuses it.
    with pytest.raises(CorruptError, match="buffer 1 is a NoneType, not a usable buffer"):
        pickle.loads(data, buffers=[buffers[0], None, buffers[2]])
    released = pickle.PickleBuffer(bytearray(buffers[1].raw()))
    released.release()
    with pytest.raises(CorruptError, match="buffer 1 is a pickle.PickleBuffer, not a usable buffer"):
        pickle.loads(data, buffers=[buffers[0], released, buffers[2]])
    # A state that lists fewer buffers than it checks.
    state = state_of(tensor)
    state[4] = state[4][:2]
    with pytest.raises(CorruptError, match="do not pair up"):
        pickle.loads(pickle.dumps(Crafted(*state), protocol=5))
    # A state with an item missing or one too many.
    for items in (state[:4], state + [False, None]):
        with pytest.raises(CorruptError, match=f"the state has {len(items)} items, not 5 or 6"):
            pickle.loads(pickle.dumps(Crafted(*items), protocol=5))


def test_too_short_buffers():
    tensor = SAMPLES["mx"]
    data, buffers = dumps5(tensor)
    for i in range(len(buffers)):
        cut = [b.raw() for b in buffers]
        cut[i] = cut[i][:-1]
        with pytest.raises(CorruptError, match=f"buffer {i} holds"):
            pickle.loads(data, buffers=cut)
    # Lengths recorded to match short buffers: the C check of the spans still refuses them.
    state = state_of(tensor)
    short = [b.raw().tobytes()[:-8] for b in state[4]]
    state[3] = tuple(len(b) for b in short)
    state[4] = tuple(short)
    with pytest.raises(BufferTooSmallError):
        pickle.loads(pickle.dumps(Crafted(*state), protocol=5))


def test_reordered_buffers_of_different_sizes():
    tensor = SAMPLES["affine"]  # int8 values, float32 scales, int8 zero points
    data, buffers = dumps5(tensor)
    with pytest.raises(CorruptError, match="out of order"):
        pickle.loads(data, buffers=buffers[::-1])


def _same_length_scales_and_zero_points():
    """Per-axis int8 with float32 scales and int32 zero points: 32 bytes each."""
    rng = np.random.default_rng(1)
    arrays = (
        rng.integers(-128, 128, (8, 8), dtype=np.int8),
        rng.uniform(0.1, 1.0, 8).astype(np.float32),
        rng.integers(-5, 5, 8, dtype=np.int32),
    )
    descriptor = hurray.Descriptor.build(
        "int8", (8, 8), scheme="affine", granularity="per_axis", axis=0,
        parts={"values": ("int8", 0), "scale": ("float32", 1), "zero_point": ("int32", 2)},
    )
    tensor = Tensor(descriptor, [(a.__array_interface__["data"][0], a.nbytes) for a in arrays], owner=arrays)
    assert tensor.buffers[1][1] == tensor.buffers[2][1]
    return tensor, arrays


def test_reordered_buffers_of_the_same_size_are_told_apart_by_their_fingerprints():
    tensor, _ = _same_length_scales_and_zero_points()
    # Buffers whose length no other buffer of the tensor shares carry their
    # length only; the two of one length carry (length, fingerprint).
    nbytes = state_of(tensor)[3]
    assert nbytes[0] == 64 and [type(c) for c in nbytes] == [int, tuple, tuple]
    assert [c[0] for c in nbytes[1:]] == [32, 32] and nbytes[1][1] != nbytes[2][1]
    assert pickle.loads(pickle.dumps(tensor, protocol=5)).dequantize().tobytes() == tensor.dequantize().tobytes()
    data, buffers = dumps5(tensor)
    with pytest.raises(CorruptError, match="buffer 1 does not match the one pickled"):
        pickle.loads(data, buffers=[buffers[0], buffers[2], buffers[1]])
    # Of different lengths, the same swap is refused by the lengths.
    with pytest.raises(CorruptError, match="buffer 0 holds 32 bytes, but 64 were pickled"):
        pickle.loads(data, buffers=[buffers[1], buffers[0], buffers[2]])
    # A fingerprint that is not the buffer's, or not a 64-bit int, matches nothing.
    for fingerprint in (nbytes[1][1] ^ 1, -1, 1 << 64):
        state = state_of(tensor, 4)
        state[3] = (state[3][0], (32, fingerprint), state[3][2])
        with pytest.raises(CorruptError, match="buffer 1 does not match"):
            pickle.loads(pickle.dumps(Crafted(*state), protocol=5))


def _same_length_buffers(first, second):
    """uint8 values (600 bytes) with a float32 scale and an int32 zero point of
    600 bytes each per axis, the two given as byte arrays."""
    values = np.zeros(600, dtype=np.uint8)
    scale, zero = first.view(np.float32), second.view(np.int32)
    descriptor = hurray.Descriptor.build(
        "uint8", (150, 4), scheme="affine", granularity="per_axis", axis=0,
        parts={"values": ("uint8", 0), "scale": ("float32", 1), "zero_point": ("int32", 2)},
    )
    arrays = (values, scale, zero)
    return Tensor(descriptor, [(a.__array_interface__["data"][0], a.nbytes) for a in arrays], owner=arrays)


def test_every_byte_counts_in_the_fingerprint():
    # ADR-049 § 2 as amended (issue 27): the fingerprint hashes the whole
    # buffer, not its first and last 256 bytes; a flip anywhere is refused.
    first, second = np.zeros(600, dtype=np.uint8), np.zeros(600, dtype=np.uint8)
    tensor = _same_length_buffers(first, second)
    data, buffers = dumps5(tensor)
    for index in (0, 255, 256, 300, 343, 344, 599):
        first[index] ^= 1
        with pytest.raises(CorruptError, match="buffer 1 does not match"):
            pickle.loads(data, buffers=buffers)
        first[index] ^= 1
    pickle.loads(data, buffers=buffers)


def test_same_length_buffers_with_equal_edges_cannot_pass_swapped():
    # Issue 27, item 12: equal first and last 256 bytes, different middles.
    # Edge fingerprints let the swap through and gave a different tensor.
    first, second = np.zeros(600, dtype=np.uint8), np.zeros(600, dtype=np.uint8)
    first[256:344] = 1
    second[256:344] = 2
    tensor = _same_length_buffers(first, second)
    data, buffers = dumps5(tensor)
    assert pickle.loads(data, buffers=buffers).dequantize().tobytes() == tensor.dequantize().tobytes()
    with pytest.raises(CorruptError, match="buffer 1 does not match the one pickled"):
        pickle.loads(data, buffers=[buffers[0], buffers[2], buffers[1]])


def test_mismatched_versions_in_the_state():
    tensor = SAMPLES["plain"]
    state = state_of(tensor, 4)
    for versions, error in (
        ((3, ENCODING_VERSION), AbiVersionError),
        ((5, ENCODING_VERSION), AbiVersionError),
        ((4, max(ENCODING_VERSIONS) + 1), UnsupportedError),
        ((4, 2), CorruptError),  # a version this build reads, not the bytes' one
        ((4, 0), UnsupportedError),
        ((4,), CorruptError),
        ("4.1", CorruptError),
        (("4", "1"), CorruptError),
        ((np.array([4, 4]), 1), CorruptError),
        (None, CorruptError),
    ):
        state[0] = versions
        with pytest.raises(error):
            pickle.loads(pickle.dumps(Crafted(*state), protocol=5))


def test_descriptor_bytes_of_another_encoding_version_or_malformed():
    tensor = SAMPLES["plain"]
    state = state_of(tensor, 4)
    encoded = bytearray(state[1])
    encoded[4:6] = (3).to_bytes(2, "little")  # a descriptor encoding this build does not read (it reads 1 and 2)
    state[1] = bytes(encoded)
    with pytest.raises(UnsupportedError, match="encoding version 3"):
        pickle.loads(pickle.dumps(Crafted(*state), protocol=5))
    state[1] = b"HRYD" + ENCODING_VERSION.to_bytes(2, "little") + bytes(38)  # total length 0
    with pytest.raises(InvalidDescriptorError):
        pickle.loads(pickle.dumps(Crafted(*state), protocol=5))
    state[1] = None
    with pytest.raises(HurrayError):
        pickle.loads(pickle.dumps(Crafted(*state), protocol=5))


def test_malformed_state_fields():
    tensor = SAMPLES["affine"]
    for field, value in (
        (2, 1), (2, None), (3, [1, 2, 3]), (3, ((1, 2),) * 3), (3, (1.0, 2, 3)), (3, (True, 2, 3)), (3, (-1, 2, 3)),
        (3, (2**64, 2, 3)), (4, list("abc")), (5, 1), (5, None),
    ):
        state = state_of(tensor, 4)
        state[field] = value
        with pytest.raises(CorruptError):
            pickle.loads(pickle.dumps(Crafted(*state), protocol=5))


def test_memory_changed_after_pickling_in_a_fingerprinted_buffer_is_refused():
    # The price of telling same-length buffers apart (ADR-049 § 2): for those
    # buffers only, a change anywhere between dumps and loads is refused.
    tensor, arrays = _same_length_scales_and_zero_points()
    data, buffers = dumps5(tensor)
    arrays[2][3] += 1
    with pytest.raises(CorruptError, match="changed after pickling"):
        pickle.loads(data, buffers=buffers)


def test_memory_changed_after_pickling_arrives_as_it_is_then_like_numpy():
    # Out-of-band buffers are references: what arrives is the memory when it
    # is read, for a Tensor as for an ndarray (shared memory relies on it).
    array = np.arange(1000, dtype=np.int32)
    tensor = hurray.from_numpy(array)
    data, buffers = dumps5(tensor)
    numpy_buffers = []
    numpy_data = pickle.dumps(array, protocol=5, buffer_callback=numpy_buffers.append)
    array[0] = array[-1] = -1
    assert np.asarray(pickle.loads(data, buffers=buffers)).tolist() == array.tolist()
    assert pickle.loads(numpy_data, buffers=numpy_buffers).tolist() == array.tolist()


def test_strided_received_buffer_is_compacted_once():
    array = np.arange(16, dtype=np.uint8)
    tensor = hurray.from_numpy(array)
    data, _ = dumps5(tensor)
    spread = np.zeros(32, dtype=np.uint8)
    spread[::2] = array
    received = pickle.loads(data, buffers=[memoryview(spread)[::2]])
    assert np.asarray(received).tolist() == list(range(16))
    assert not np.shares_memory(received.buffer(0), spread)
    assert isinstance(received, Tensor)
