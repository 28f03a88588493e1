"""hurray.from_torch / hurray.to_torch, proved against torch's own code (ADR-061).

Every quantized case is made by torch's own quantizer (quantize_per_tensor,
quantize_per_channel) on CPU, brought in, and dequantized by Hurray; the
result must equal torch's own ``dequantize()`` bit for bit (float32 bit
patterns). The layer-7 C consumer reads the capsule and must see the
descriptor Hurray holds; ``to_torch`` must give back a tensor of the same
kind, over the same memory, whose ``dequantize()`` and ``int_repr()`` (its
state) equal the original's. Zero copy is shown by addresses.
"""
import sys
import warnings

import numpy as np
import pytest
import torch

import hurray
from hurray.errors import InvalidArgumentError, UnsupportedError
from support.bridge_checks import c_consumer_sees

warnings.filterwarnings("ignore", message=".*quantize_per_.*deprecated", category=UserWarning)


def same_bits(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    assert a.shape == b.shape, (a.shape, b.shape)
    differ = a.view(np.uint32) != b.view(np.uint32)
    assert not differ.any(), f"{int(differ.sum())} of {a.size} differ; first at {np.argwhere(differ)[:3].tolist()}"


def legacy_cases():
    g = torch.Generator().manual_seed(24)
    x = torch.randn(4, 5, 6, generator=g)
    cases = {}
    for qdtype in (torch.qint8, torch.quint8, torch.qint32):
        zero = 0 if qdtype is torch.qint32 else 3
        cases[f"{qdtype}-per-tensor"] = torch.quantize_per_tensor(x, 0.0625, zero, qdtype)
        # A float32 scale torch computed, as observers give it (float32 -> float64 exactly).
        cases[f"{qdtype}-per-tensor-observed"] = torch.quantize_per_tensor(
            x, float(torch.tensor(0.1, dtype=torch.float32)), zero, qdtype)
        for axis in (0, 1, 2):
            n = x.shape[axis]
            scales = torch.rand(n, generator=g, dtype=torch.float64) * 0.1 + 0.01
            zeros = torch.randint(-3, 4, (n,), generator=g) if qdtype is not torch.quint8 else \
                torch.randint(0, 7, (n,), generator=g)
            if qdtype is torch.qint32:
                zeros = torch.zeros(n, dtype=torch.int64)
            cases[f"{qdtype}-per-channel-axis{axis}"] = torch.quantize_per_channel(x, scales, zeros, axis, qdtype)
    for axis in (0, 1):
        m = torch.randn(6, 8, generator=g)
        n = m.shape[axis]
        scales = torch.rand(n, generator=g) * 0.1 + 0.01
        zeros = torch.rand(n, generator=g) * 4
        for qdtype in (torch.quint8, torch.quint4x2):
            cases[f"{qdtype}-float-qparams-axis{axis}"] = torch.quantize_per_channel(m, scales, zeros, axis, qdtype)
    for qdtype, shape in ((torch.quint4x2, (5, 7)), (torch.quint2x4, (5, 7)), (torch.quint4x2, (16,))):
        cases[f"{qdtype}-per-tensor-{shape}"] = torch.quantize_per_tensor(torch.rand(*shape, generator=g) * 2,
                                                                          0.15625, 1, qdtype)
    # Views (torch allows them per tensor only): strides and storage offset are kept.
    base = cases["torch.qint32-per-tensor"]
    cases["qint32-per-tensor-transposed"] = base.transpose(0, 2)
    cases["qint32-per-tensor-sliced"] = base[1:, :, 2:]
    # A per-tensor scale that is no float32 (0.1): torch stores the double and computes with its float32
    # rounding; a version-2 graph states both.
    for qdtype in (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4):
        source = x if qdtype not in (torch.quint4x2, torch.quint2x4) else torch.rand(5, 7, generator=g) * 2
        cases[f"{qdtype}-per-tensor-double-scale"] = torch.quantize_per_tensor(
            source, 0.1, 0 if qdtype is torch.qint32 else 2, qdtype)
    cases["qint8-per-tensor-double-scale-sliced"] = cases["torch.qint8-per-tensor-double-scale"][1:, ::2]
    return cases


LEGACY = legacy_cases()


@pytest.mark.parametrize("name", list(LEGACY))
def test_legacy_quantized_tensor_comes_in_and_goes_out_exact(name):
    q = LEGACY[name]
    t = hurray.from_torch(q)
    d = t.descriptor
    assert d.scheme == ("graph" if "double-scale" in name else "affine")
    assert t.buffers[0][0] == q.untyped_storage().data_ptr()          # the codes are torch's own storage
    offset = d.root.x.offset if d.scheme == "graph" else d.byte_offset   # a graph: where its stored codes start
    assert offset == q.storage_offset() * (1 if q.dtype in (torch.quint4x2, torch.quint2x4) else q.element_size())
    same_bits(t.dequantize(), q.dequantize().numpy())                 # torch's own dequantize, bit for bit
    c_consumer_sees(t)
    back = hurray.to_torch(t)
    assert back.dtype == q.dtype and back.qscheme() == q.qscheme()
    assert back.data_ptr() == q.data_ptr() and back.shape == q.shape and back.stride() == q.stride()
    assert torch.equal(back.int_repr(), q.int_repr())
    same_bits(back.dequantize().numpy(), q.dequantize().numpy())
    if q.qscheme() == torch.per_tensor_affine:
        assert (back.q_scale(), back.q_zero_point()) == (q.q_scale(), q.q_zero_point())
    else:
        assert torch.equal(back.q_per_channel_scales(), q.q_per_channel_scales())
        assert torch.equal(back.q_per_channel_zero_points(), q.q_per_channel_zero_points())
        assert back.q_per_channel_axis() == q.q_per_channel_axis()


def test_a_module_state_dict_round_trips():
    # A quantized weight in a state dict, out through Hurray and back: the state dict is torch's own.
    q = LEGACY["torch.qint8-per-channel-axis0"]
    state = {"weight": q}
    again = {k: hurray.to_torch(hurray.from_torch(v)) for k, v in state.items()}
    for k in state:
        assert torch.equal(again[k].int_repr(), state[k].int_repr())
        assert torch.equal(again[k].dequantize(), state[k].dequantize())


def test_the_codes_outlive_the_torch_tensor():
    q = torch.quantize_per_channel(torch.randn(3, 8), torch.rand(3, dtype=torch.float64) + 0.1,
                                   torch.zeros(3, dtype=torch.int64), 0, torch.qint8)
    expected = q.dequantize().numpy().copy()
    t = hurray.from_torch(q)
    del q
    same_bits(t.dequantize(), expected)


PLAIN = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
         "uint32", "uint64", "bool", "complex64", "complex128", "complex32", "float8_e4m3fn", "float8_e5m2",
         "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "uint1", "uint2", "uint4", "int1", "int2", "int4",
         "uint3", "uint5", "uint6", "uint7", "int3", "int5", "int6", "int7"]


def _plain(name):
    g = torch.Generator().manual_seed(7)
    raw = torch.randint(0, 256, (4, 6), generator=g, dtype=torch.uint8)
    dtype = getattr(torch, name)
    probe = torch.empty(0, dtype=dtype)
    if name.startswith(("uint", "int")) and name[-1] in "1234567" and probe.element_size() == 1 and name not in (
            "int8", "uint8"):
        bits = int(name.lstrip("uint").lstrip("int") or 8)
        mask = (1 << bits) - 1
        return (raw & mask).view(dtype) if name.startswith("u") else ((raw & mask).to(torch.int8) - (
            1 << (bits - 1))).clamp(-(1 << (bits - 1)), (1 << (bits - 1)) - 1).view(dtype)
    nbytes = probe.element_size()
    wide = torch.randint(0, 256, (4, 6 * nbytes), generator=g, dtype=torch.uint8)
    return wide.view(dtype)


@pytest.mark.parametrize("name", PLAIN)
def test_plain_tensor_of_every_dtype_both_ways_without_a_copy(name):
    a = _plain(name)[:, 1:]                      # a view: offset and strides kept
    t = hurray.from_torch(a)
    assert t.descriptor.dtype == name
    assert tuple(t.descriptor.shape) == tuple(a.shape) and tuple(t.descriptor.strides) == tuple(a.stride())
    back = hurray.to_torch(t)
    assert back.dtype == a.dtype and back.data_ptr() == a.data_ptr() and back.stride() == a.stride()
    # The same bytes under every element (view as bytes: NaN payloads and sub-byte codes compare exactly).
    assert torch.equal(back.view(torch.uint8), a.view(torch.uint8))


def test_float4_x2_counts_fp4_elements_and_matches_torchao_unpacking():
    from torchao.prototype.mx_formats.kernels import f4_unpacked_to_f32, unpack_uint4

    raw = torch.arange(256, dtype=torch.uint8).reshape(8, 32)
    f = raw.view(torch.float4_e2m1fn_x2)
    t = hurray.from_torch(f)
    assert tuple(t.descriptor.shape) == (8, 64) and t.descriptor.packing == "lsb_first"
    assert t.buffers[0][0] == f.data_ptr()
    reference = f4_unpacked_to_f32(unpack_uint4(raw)).reshape(8, 64)   # torchao's own fp4 decode
    same_bits(t.dequantize(), reference.numpy())
    back = hurray.to_torch(t)
    assert back.dtype == torch.float4_e2m1fn_x2 and back.shape == f.shape and back.data_ptr() == f.data_ptr()
    with pytest.raises(UnsupportedError, match="last axis must be contiguous"):
        hurray.from_torch(f.t())


def test_refusals_name_the_type_and_what_to_call():
    with pytest.raises(InvalidArgumentError, match=r"numpy\.ndarray is not a torch\.Tensor.*from_numpy"):
        hurray.from_torch(np.zeros(3))
    with pytest.raises(hurray.errors.CapsuleError, match=r"torch\.Tensor object .*hurray\.from_torch"):
        hurray.from_hurray(torch.zeros(3))
    with pytest.raises(InvalidArgumentError, match=r"not torch\.Tensor\. .*hurray\.from_torch"):
        hurray.from_numpy(torch.zeros(3))
    q = LEGACY["torch.qint8-per-tensor"]
    with pytest.raises(hurray.DLPackError, match=r"torch\.Tensor\.__dlpack__ refused: .*hurray\.from_torch"):
        hurray.from_dlpack(q)
    with pytest.raises(UnsupportedError, match=r"microscaling tensor has no torch type"):
        hurray.to_torch(hurray.quantize_mx(np.ones((2, 32), np.float32)))


def test_to_torch_refuses_read_only_memory(tmp_path):
    import safetensors.numpy

    path = tmp_path / "w.safetensors"
    safetensors.numpy.save_file({"w": np.ones((2, 2), np.float32)}, str(path))
    with pytest.raises(UnsupportedError, match="read-only"):
        hurray.to_torch(hurray.load_safetensors(path)["w"])


def test_import_hurray_imports_no_framework():
    import subprocess

    code = ("import sys, hurray; hurray.from_numpy; "
            "print(sorted(m for m in ('torch', 'torchao', 'bitsandbytes', 'mlx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_missing_framework_is_named_with_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # import torch now raises ImportError
    with pytest.raises(hurray.errors.MissingPackageError, match="pip install torch") as info:
        hurray.from_torch(object())
    assert isinstance(info.value, ImportError) and isinstance(info.value, hurray.HurrayError)


def test_a_tensor_subclass_hurray_does_not_know_is_refused_by_name():
    kind = type("Mystery", (torch.Tensor,), {"__module__": "somelib.tensors"})
    obj = torch.Tensor._make_subclass(kind, torch.zeros(3))
    with pytest.raises(UnsupportedError, match=r"somelib\.tensors\.Mystery is a tensor subclass whose layout"):
        hurray.from_torch(obj)
