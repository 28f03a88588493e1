"""Checkpoints as their libraries write them (ADR-063): one module per convention
(compressed_tensors, gptq, awq, fp8_block, bitsandbytes, mlx), the shard and
index reader (sources), the ONNX reader (onnx_wire, the protobuf walk; onnx,
its DequantizeLinear nodes), the Checkpoint mapping (reader), load_checkpoint (opening) and save_checkpoint (writer)."""
from .opening import load_checkpoint
from .reader import Checkpoint
from .writer import FORMATS, save_checkpoint

__all__ = ["FORMATS", "Checkpoint", "load_checkpoint", "save_checkpoint"]
