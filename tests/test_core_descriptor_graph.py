"""Descriptors of encoding version 2 (a graph of nodes, ADR-054) in Python.

hurray.nodes builds the tree, Descriptor.graph numbers it in canonical order
and builds it through the C builder, Descriptor.nodes reads it back; every
golden vector of tests/vectors (graph_*) is built here from its statement
and must give the hand-written bytes. A Tensor of a version-2 descriptor is
proved against its buffers by the C library (index values included) and
travels through every carrier the package has: the capsule, pickle,
hurray-io files and frames, safetensors; numpy and DLPack, which cannot hold
it, refuse it by name.
"""
import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import hurray
from hurray import Descriptor, Tensor
from hurray.errors import DLPackError, InvalidArgumentError, InvalidDescriptorError, OutOfRangeError, UnsupportedError
from hurray.nodes import Bits, Constant, Gather, Ggml, Step, Stored, Words

VECTORS = Path(__file__).resolve().parent / "vectors"
GRAPH_VECTORS = sorted(p.stem for p in VECTORS.glob("graph_*.json"))


def read_hex(path):
    digits = "".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    return bytes.fromhex("".join(digits.split()))


def tree_of(statement):
    """The statement's nodes as hurray.nodes objects (from the last, so that
    every reference is made before the node that names it); node 0 returned."""
    made = {}

    def ref(i):
        return None if i == 0 else made[i]

    for i in reversed(range(len(statement["nodes"]))):
        n = statement["nodes"][i]
        kind = n["kind"]
        if kind == "stored":
            words = None
            if n["addressing"] == "words":
                words = Words(n["container_bits"], n["packed_axis"], n["packing"], n["chunk_containers"],
                              bool(n["slot_flags"]), n["chunk_stride"], tuple(n["order"]))
            made[i] = Stored(n["dtype"], n["shape"], n["buffer"], n["offset"], tuple(n["strides"]), n["byte_order"],
                             words or n["packing"], n["layout"], n["code_offset"], ref(n["codebook"]),
                             n["value_rule"])
        elif kind == "constant":
            made[i] = Constant.from_bits(n["dtype"], int(n["value"], 16))
        elif kind == "step":
            made[i] = Step(n["form"], n["arithmetic"], n["shape"], ref(n["x"]), ref(n["scale"]), ref(n["offset"]),
                           tuple(n["blocks"]), bool(n["flags"]), n["indexed_axis"], ref(n["group_index"]))
        elif kind == "ggml":
            made[i] = Ggml(n["type"], n["shape"], n["buffer"], n["offset"])
        elif kind == "bits":
            made[i] = Bits(n["shape"], tuple(ref(k) for k in n["inputs"]), tuple(n["shifts"]), n["offset"])
        else:
            made[i] = Gather(n["shape"], ref(n["x"]), ref(n["index"]), n["axis"])
    return made[0]


def vector(name):
    statement = json.loads((VECTORS / f"{name}.json").read_text())
    return statement, read_hex(VECTORS / f"{name}.hex")


def test_there_are_graph_vectors():
    assert len(GRAPH_VECTORS) >= 10


@pytest.mark.parametrize("name", GRAPH_VECTORS)
def test_building_the_statement_gives_the_bytes(name):
    statement, encoded = vector(name)
    built = Descriptor.graph(statement["shape"], tree_of(statement), result_dtype=statement["result_dtype"])
    assert built.encode() == encoded


@pytest.mark.parametrize("name", GRAPH_VECTORS)
def test_decoded_nodes_build_the_same_bytes(name):
    statement, encoded = vector(name)
    d = Descriptor.decode(encoded)
    assert d.encoding_version == 2 and d.scheme == "graph"
    assert d.shape == tuple(statement["shape"]) and d.result_dtype == statement["result_dtype"]
    assert [type(n).__name__.lower() for n in d.nodes] == [n["kind"] for n in statement["nodes"]]
    assert d.root is d.nodes[0]
    assert d.parts == {} and d.buffer_count == len(statement["buffer_sizes"])
    assert d.nodes == Descriptor.decode(encoded).nodes  # structural equality of the trees
    again = Descriptor.graph(d.shape, d.root, result_dtype=d.result_dtype)
    assert again.encode() == encoded and again == d


@pytest.mark.parametrize("name", GRAPH_VECTORS)
def test_the_c_adder_and_the_python_one_build_the_same(name, monkeypatch):
    """hurray._core.add_nodes (Stored and Step nodes in one C call) builds exactly what
    nodes.add_nodes does; it takes every graph of only those kinds, and leaves the rest."""
    import hurray.core.descriptor as descriptor
    from hurray._core import add_nodes
    from hurray.core import nodes

    statement, encoded = vector(name)
    root = tree_of(statement)
    taken = []

    def watched(address, order, tables):
        taken.append(add_nodes(address, order, tables))
        return taken[-1]

    monkeypatch.setattr(descriptor, "_core_add_nodes", watched)
    assert Descriptor.graph(statement["shape"], root, result_dtype=statement["result_dtype"]).encode() == encoded
    assert taken == [all(type(n) in (Stored, Step) for n in nodes.number(root))]
    monkeypatch.setattr(descriptor, "_core_add_nodes", lambda *args: False)  # the Python adder alone
    assert Descriptor.graph(statement["shape"], root, result_dtype=statement["result_dtype"]).encode() == encoded


def test_the_c_adder_leaves_what_it_does_not_expect_to_python():
    """A field of another type, or a value the builder refuses, is False from C (the descriptor
    half built), and Descriptor.graph then names the field as Python does."""
    from hurray._core import add_nodes
    from hurray.core import nodes
    from hurray.core.descriptor import _new_graph

    def in_c(shape, root):
        raw = _new_graph(list(shape))
        try:
            return add_nodes(int(hurray._ffi.ffi.cast("uintptr_t", raw)), nodes.number(root), nodes.C_TABLES)
        finally:
            hurray.core.descriptor._destroy(raw)

    good = Step("mul", "float32", (256,), Stored("uint4", (256,), packing="lsb_first", code_offset=-8),
                Stored("float16", (8,), buffer=1), blocks=(32,))
    assert in_c((256,), good) is True
    assert in_c((1,), Constant("float32", 1.0)) is False  # another kind: nothing added
    big = Stored("int8", (4,), offset=np.uint64(4))  # a numpy integer, not an int
    assert in_c((4,), big) is False
    assert Descriptor.graph((4,), big).nodes[0].offset == 4
    wide = Stored("int8", (4,), code_offset=1 << 31)
    assert in_c((4,), wide) is False
    with pytest.raises(InvalidArgumentError, match="code_offset 2147483648 does not fit"):
        Descriptor.graph((4,), wide)
    untiled = Step("mul", "float32", (200,), Stored("int8", (200,)), Stored("float32", (2,), buffer=1), blocks=(128,))
    with pytest.raises(InvalidDescriptorError, match=r"blocks\[0\] = 128 does not tile shape\[0\] = 200"):
        Descriptor.graph((200,), untiled)
    with pytest.raises(TypeError, match="the tables"):
        add_nodes(0, [], ())

def test_a_shared_node_is_one_object_both_ways():
    # Every reference points to a later node, so a node is shared by a node
    # and the nodes it leads to: here the constant is the inner step's offset
    # and the outer step's scale.
    c = Constant("float32", 0.5)
    codes = Stored("uint8", (8,), codebook=Stored("float32", (256,), buffer=1))
    inner = Step("mul_add", "float32", (8,), codes, Stored("float32", (8,), buffer=2), c)
    d = Descriptor.graph((8,), Step("mul", "float32", (8,), inner, c))
    # 0 outer, 1 inner, 2 codes, 3 the table, 4 the scale, 5 the constant
    assert [type(n).__name__ for n in d.nodes] == ["Step", "Step", "Stored", "Stored", "Stored", "Constant"]
    assert d.nodes[0].scale is d.nodes[1].offset is d.nodes[5]
    assert d.nodes[5].value == 0.5 and d.nodes[5].value_bits == 0x3F000000
    # Two nodes side by side cannot share: the second would name an earlier node.
    table = Stored("float32", (16,), buffer=1)
    a, b = Stored("uint4", (8,), codebook=table), Stored("uint4", (8,), offset=4, codebook=table)
    with pytest.raises(InvalidDescriptorError, match="codebook refers to node 2, which is not after it"):
        Descriptor.graph((8,), Step("mul", "float32", (8,), a, Step("mul", "float32", (8,), b, c)))


def test_version_1_has_no_nodes():
    d = Descriptor.build("float32", (2, 3))
    assert d.encoding_version == 1 and d.nodes == () and d.root is None and d.result_dtype is None


def test_the_dtype_of_a_graph():
    plain = Descriptor.graph((2, 3), Stored("int16", (2, 3)))
    assert plain.dtype == "int16" and plain.byte_offset == 0
    assert Descriptor.graph((2, 3), Stored("int16", (2, 3), code_offset=1)).dtype == "float32"
    coded = Descriptor.graph((4,), Step("mul", "float16", (4,), Stored("int8", (4,)), Constant("float16", 2.0)),
                             result_dtype="bfloat16")
    assert coded.dtype == "bfloat16"
    assert "Descriptor.graph(shape=(4,)" in repr(coded)


def test_refusals_name_the_node_and_field():
    short = Stored("uint4", (8,), codebook=Stored("float32", (15,), buffer=1))
    with pytest.raises(InvalidDescriptorError, match="node 0 .stored.: a codebook shorter than its code width needs"):
        Descriptor.graph((8,), short)
    with pytest.raises(InvalidDescriptorError, match=r"blocks\[0\] = 128 does not tile shape\[0\] = 200"):
        Descriptor.graph((200,), Step("mul", "float32", (200,), Stored("int8", (200,)),
                                      Stored("float32", (2,), buffer=1), blocks=(128,)))
    with pytest.raises(InvalidArgumentError, match="needs its strides, counted in containers"):
        Stored("uint4", (8,), packing=Words(8))
    with pytest.raises(InvalidArgumentError, match="a node must be a hurray.nodes node, not str"):
        Descriptor.graph((1,), "a node")
    with pytest.raises(InvalidArgumentError, match="form 'pow'"):
        Step("pow", "float32", (1,), Constant("float32", 1.0), Constant("float32", 1.0))
    with pytest.raises(InvalidArgumentError, match="constant dtype 'uint8'"):
        Constant("uint8", 1)


# ---- tensors --------------------------------------------------------------

def gptq(g_idx):
    """The GPTQ act-order vector over zeroed buffers, with this g_idx."""
    statement, encoded = vector("graph_gptq_act_order")
    buffers = [np.zeros(n, np.uint8) for n in statement["buffer_sizes"]]
    buffers[3] = np.asarray(g_idx, np.int32).view(np.uint8)
    return Descriptor.decode(encoded), buffers


def tensor_of(desc, buffers):
    return Tensor(desc, [(b.ctypes.data, b.nbytes) for b in buffers], owner=buffers)


def test_a_tensor_checks_its_group_index_values():
    desc, buffers = gptq(np.arange(64) % 2)
    t = tensor_of(desc, buffers)
    assert t.descriptor is desc and t.dtype == "float16" and t.shape == (16, 64)
    bad = np.arange(64) % 2
    bad[9] = 2
    desc, buffers = gptq(bad)
    with pytest.raises(OutOfRangeError, match="group index of node 0.: element 9 is 2, not in .0, 2."):
        tensor_of(desc, buffers)


def test_numpy_refuses_a_graph_naming_dequantize():
    desc, buffers = gptq(np.zeros(64))
    t = tensor_of(desc, buffers)
    for call in (np.asarray, Tensor.stored_values, Tensor.unpack):
        with pytest.raises(UnsupportedError, match=r"a graph of nodes .*use Tensor.dequantize\(\)"):
            call(t)
    values = t.dequantize()  # what the refusals point at reads it (the C dequantizer's graph scheme)
    assert values.shape == tuple(t.shape) and values.dtype == np.float32


def test_numpy_views_a_plain_stored_node_0():
    data = np.arange(12, dtype=np.float32)
    t = Tensor(Descriptor.graph((3, 4), Stored("float32", (3, 4))), [(data.ctypes.data, data.nbytes)], data)
    view = np.asarray(t)
    assert np.shares_memory(view, data) and view.shape == (3, 4) and view[2, 3] == 11
    # node 0 reshaped to the tensor's shape, row-major
    t = Tensor(Descriptor.graph((2, 6), Stored("float32", (12,))), [(data.ctypes.data, data.nbytes)], data)
    assert np.shares_memory(np.asarray(t), data) and np.asarray(t).shape == (2, 6)
    # a strided node 0 of another shape: the reshape would be a copy
    t = Tensor(Descriptor.graph((6,), Stored("float32", (2, 3), strides=(1, 2))), [(data.ctypes.data, 24)], data)
    with pytest.raises(UnsupportedError, match="reshapes"):
        np.asarray(t)


def graph_tensor():
    statement, encoded = vector("graph_bnb_nf4_nested")
    buffers = [np.random.default_rng(7).integers(0, 255, n, dtype=np.uint8) for n in statement["buffer_sizes"]]
    return tensor_of(Descriptor.decode(encoded), buffers), buffers


def assert_same(t, buffers):
    _, encoded = vector("graph_bnb_nf4_nested")
    assert t.descriptor.encode() == encoded and t.descriptor.scheme == "graph"
    assert [bytes(t.buffer(i)) for i in range(len(buffers))] == [b.tobytes() for b in buffers]


def test_a_graph_crosses_the_native_protocol():
    t, buffers = graph_tensor()
    assert_same(hurray.from_hurray(t.__hurray__()), buffers)
    assert_same(hurray.from_hurray(t), buffers)


def test_a_graph_pickles():
    t, buffers = graph_tensor()
    for protocol in (4, 5):
        assert_same(pickle.loads(pickle.dumps(t, protocol=protocol)), buffers)
        # the state names the descriptor's encoding version: a build that reads only 1 refuses it
        assert t.__reduce_ex__(protocol)[1][0] == (4, 2)  # pickles state C ABI 4 (ADR-059)
    d = t.descriptor
    assert pickle.loads(pickle.dumps(d)) == d
    state = list(t.__reduce_ex__(5)[1])
    state[0] = (4, 1)
    with pytest.raises(hurray.errors.CorruptError, match="the state says descriptor encoding version 1"):
        hurray.pickling.unpickle_tensor(*state)


def test_a_graph_is_saved_and_loaded(tmp_path):
    t, buffers = graph_tensor()
    hurray.save(tmp_path / "w.hurray", {"w": t})
    with hurray.load(tmp_path / "w.hurray") as f:
        assert_same(f["w"], buffers)


def test_a_graph_travels_in_frames():
    t, buffers = graph_tensor()
    stream = io.BytesIO()
    hurray.write_frame(stream, t, name="w")
    stream.seek(0)
    name, back = hurray.read_frame(stream)
    assert name == "w"
    assert_same(back, buffers)


def test_a_graph_is_kept_in_safetensors(tmp_path):
    t, buffers = graph_tensor()
    hurray.save_safetensors(tmp_path / "w.safetensors", {"w": t})
    with hurray.load_safetensors(tmp_path / "w.safetensors") as f:
        assert_same(f["w"], buffers)


def test_dlpack_refuses_a_graph_by_name():
    t, _ = graph_tensor()
    with pytest.raises(DLPackError, match="a graph of nodes .descriptor encoding version 2: 8 nodes"):
        np.from_dlpack(t)
