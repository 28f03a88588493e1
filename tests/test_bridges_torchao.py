"""torchao's quantized tensors through hurray.from_torch / to_torch, proved against torchao 0.18 (ADR-061).

Every case is made by torchao's own quantizer on CPU (Float8Tensor.from_hp,
MXTensor.to_mx, NVFP4Tensor.to_nvfp4, quantize_ with IntxWeightOnlyConfig
and Int8WeightOnlyConfig), comes in as a version-2 graph over torchao's own
tensors (the addresses are compared), dequantizes to torchao's own
``dequantize()`` bit for bit (a NaN as any NaN: torch makes every bfloat16
NaN positive), goes to the layer-7 C consumer and libhurray's dequantizer
through the capsule, and comes back as the same class over the same memory,
its parts and its dequantize() equal. The int4 family cannot be made on CPU
(torchao needs mslk or CUDA), so only its refusal is tested.
"""
import warnings

import numpy as np
import pytest
import torch

import hurray
from hurray.errors import UnsupportedError
from support.bridge_checks import c_consumer_sees, same_bits

from torchao.prototype.mx_formats.mx_tensor import MXTensor
from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale
from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
from torchao.quantization.granularity import PerAxis, PerBlock, PerGroup, PerRow, PerTensor
from torchao.quantization.quantize_.workflows.float8.float8_tensor import Float8Tensor

warnings.filterwarnings("ignore")


def as_numpy(t):
    """A float torch tensor as numpy with 16-bit floats as ml_dtypes' (their bits kept)."""
    import ml_dtypes

    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def weight(shape, dtype=torch.bfloat16, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def linear_weight(config, dtype=torch.bfloat16, shape=(24, 128)):
    torch.manual_seed(5)
    m = torch.nn.Sequential(torch.nn.Linear(shape[1], shape[0], bias=False, dtype=dtype))
    quantize_(m, config)
    return m[0].weight


def cases():
    out = {}
    hp = weight((256, 384))
    for name, g in (("tensor", PerTensor()), ("row", PerRow()), ("block128", PerBlock([128, 128])),
                    ("block1x128", PerBlock([1, 128]))):
        for dtype in (torch.bfloat16, torch.float32):
            out[f"Float8-{name}-{dtype}"] = lambda g=g, dtype=dtype: Float8Tensor.from_hp(hp.to(dtype), granularity=g)
    out["Float8-e5m2-row"] = lambda: Float8Tensor.from_hp(hp, float8_dtype=torch.float8_e5m2, granularity=PerRow())
    for elem in (torch.float8_e4m3fn, torch.float8_e5m2, "fp6_e2m3", "fp6_e3m2", torch.float4_e2m1fn_x2):
        for swizzled in (False, True):
            for dtype in (torch.bfloat16, torch.float32):
                out[f"MX-{elem}-{'swizzled' if swizzled else 'plain'}-{dtype}"] = (
                    lambda elem=elem, swizzled=swizzled, dtype=dtype:
                    MXTensor.to_mx(weight((200, 128), dtype, 3), elem, block_size=32, is_swizzled_scales=swizzled))
    for M in (128, 200):
        for swizzled in (False, True):
            for pts in (False, True):
                def make(M=M, swizzled=swizzled, pts=pts):
                    h = weight((M, 128), seed=4)
                    scale = per_tensor_amax_to_scale(h.abs().amax()) if pts else None
                    return NVFP4Tensor.to_nvfp4(h, per_tensor_scale=scale, is_swizzled_scales=swizzled)
                out[f"NVFP4-{M}-{'swizzled' if swizzled else 'plain'}-{'pts' if pts else 'nopts'}"] = make
    for bits in (1, 2, 3, 4, 5, 6, 7, 8):
        out[f"Intx-int{bits}-group32"] = lambda bits=bits: linear_weight(
            IntxWeightOnlyConfig(weight_dtype=getattr(torch, f"int{bits}"), granularity=PerGroup(32)))
    out["Intx-int4-axis0-float32"] = lambda: linear_weight(
        IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerAxis(0)), torch.float32)
    out["Int8"] = lambda: linear_weight(Int8WeightOnlyConfig())
    out["Int8-float16"] = lambda: linear_weight(Int8WeightOnlyConfig(), torch.float16)
    return out


CASES = cases()


def parts_of(t):
    """The tensors and attributes of a torchao tensor (its flattening: what its state dict holds)."""
    names, attributes = t.__tensor_flatten__()
    return {n: getattr(t, n) for n in names}, attributes


@pytest.mark.parametrize("name", list(CASES))
def test_torchao_tensor_comes_in_exact_and_goes_back_over_the_same_memory(name):
    t = CASES[name]()
    h = hurray.from_torch(t)
    d = h.descriptor
    assert d.encoding_version == 2 and tuple(d.shape) == tuple(t.shape)
    tensors, _ = parts_of(t)
    addresses = {p.data_ptr() for p in tensors.values()}
    assert {address for address, _ in h.buffers} <= addresses        # torchao's own memory, no copy
    assert h.buffers[0][0] == t.qdata.data_ptr()
    reference = t.dequantize()                                          # torchao's own
    assert d.result_dtype == str(reference.dtype).rsplit(".", 1)[-1]
    same_bits(h.dequantize(d.result_dtype), as_numpy(reference), name, nan_any_sign=True)
    c_consumer_sees(h)
    back = hurray.to_torch(h)
    assert type(back) is type(t)
    back_tensors, back_attributes = parts_of(back)
    assert back_tensors.keys() == tensors.keys()
    for key, part in tensors.items():
        assert back_tensors[key].data_ptr() == part.data_ptr(), key
        assert back_tensors[key].dtype == part.dtype and back_tensors[key].shape == part.shape, key
        assert torch.equal(back_tensors[key].reshape(-1).view(torch.uint8), part.reshape(-1).view(torch.uint8)), key
    _, attributes = parts_of(t)
    for key in ("block_size", "dtype", "orig_dtype", "elem_dtype", "is_swizzled_scales", "target_dtype"):
        if key in attributes:
            assert back_attributes[key] == attributes[key] or list(back_attributes[key]) == list(attributes[key]), key
    same_bits(as_numpy(back.dequantize()), as_numpy(reference), name, nan_any_sign=True)


def test_every_mx_code_with_every_e8m0_scale_and_nvfp4_with_every_e4m3_scale():
    # MXTensor built from its parts: every fp8 code byte under every scale byte (255 is NaN for torchao).
    codes = torch.arange(256, dtype=torch.uint8).repeat(256, 1).view(torch.float8_e4m3fn)   # [256, 256]
    scales = torch.arange(256, dtype=torch.uint8).repeat_interleave(8).reshape(256, 8).view(torch.float8_e8m0fnu)
    from torchao.quantization.quantize_.common.kernel_preference import KernelPreference

    mx = MXTensor(codes, scales, torch.float8_e4m3fn, 32, torch.float32, KernelPreference.EMULATED, None, False)
    h = hurray.from_torch(mx)
    same_bits(h.dequantize(), as_numpy(mx.dequantize()), "mx every byte", nan_any_sign=True)
    c_consumer_sees(h)
    fp4 = torch.arange(256, dtype=torch.uint8).repeat(256, 1)[:, :64].contiguous()          # every fp4 pair
    e4m3 = torch.arange(256, dtype=torch.uint8).repeat_interleave(8).reshape(256, 8).view(torch.float8_e4m3fn)
    nv = NVFP4Tensor(fp4, e4m3, 16, torch.float32)
    h = hurray.from_torch(nv)
    same_bits(h.dequantize(), as_numpy(nv.dequantize()), "nvfp4 every byte", nan_any_sign=True)


def test_a_torchao_layout_that_changed_is_refused_by_name(monkeypatch):
    t = Float8Tensor.from_hp(weight((128, 128)), granularity=PerRow())
    monkeypatch.setattr(Float8Tensor, "tensor_data_names", ["qdata", "scale", "extra"])
    with pytest.raises(UnsupportedError, match=r"Float8Tensor has parts other than torchao 0\.18's.*refused"):
        hurray.from_torch(t)


def test_what_hurray_does_not_state_is_refused_by_name():
    plain = torch.zeros(4)
    for module, name, why in (("torchao.quantization", "Int4Tensor", "int4 family"),
                              ("torchao.quantization", "Int4TilePackedTo4dTensor", "int4 family"),
                              ("torchao.prototype", "SomethingNewTensor", "torchao tensor hurray does not know")):
        kind = type(name, (torch.Tensor,), {"__module__": module})
        obj = torch.Tensor._make_subclass(kind, plain)
        with pytest.raises(UnsupportedError, match=f"{name} .*{why}"):
            hurray.from_torch(obj)
    nv = NVFP4Tensor.to_nvfp4(weight((2, 64, 128)))                    # 3-D
    with pytest.raises(UnsupportedError, match=r"NVFP4Tensor of shape \(2, 64, 128\)"):
        hurray.from_torch(nv)
    mx = MXTensor.to_mx(weight((64, 128)), torch.float8_e4m3fn, block_size=16)
    with pytest.raises(UnsupportedError, match="in blocks of 16; hurray states fp8, fp6 and fp4 in blocks of 32"):
        hurray.from_torch(mx)


def test_to_torch_refuses_a_graph_that_is_no_layout_it_makes():
    q = np.zeros((4, 32), np.int16)
    s = np.ones((4, 1), np.float32)
    graph = hurray.Tensor(hurray.Descriptor.graph((4, 32), hurray.nodes.Step(
        "mul", "float32", (4, 32), hurray.nodes.Stored("int16", (4, 32), 0), hurray.nodes.Stored("float32", (4, 1), 1),
        blocks=(1, 32)), result_dtype="float32"), [(q.ctypes.data, q.nbytes), (s.ctypes.data, s.nbytes)], owner=(q, s))
    with pytest.raises(UnsupportedError, match="none of the layouts from_torch makes"):
        hurray.to_torch(graph)


def test_intx_of_int8_with_a_float32_scale_per_row_comes_back_as_int8tensor():
    # One descriptor for both classes: it comes back as Int8Tensor, dequantizing alike (ADR-061 § 7).
    from torchao.quantization import Int8Tensor

    t = linear_weight(IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)), torch.float32)
    assert type(t).__name__ == "IntxUnpackedToInt8Tensor" and t.scale.dtype == torch.float32
    back = hurray.to_torch(hurray.from_torch(t))
    assert type(back) is Int8Tensor and back.qdata.data_ptr() == t.qdata.data_ptr()
    same_bits(as_numpy(back.dequantize()), as_numpy(t.dequantize()), "int8 as Int8Tensor")
