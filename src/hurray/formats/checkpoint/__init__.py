"""Checkpoints as their libraries write them (ADR-063): one module per convention
(compressed_tensors, gptq, awq, fp8_block, bitsandbytes, mlx), the shard and
index reader (sources), the ONNX reader (onnx_wire, the protobuf walk; onnx,
its DequantizeLinear nodes), load_checkpoint (reader) and save_checkpoint (writer)."""
from .reader import Checkpoint, load_checkpoint
from .writer import FORMATS, save_checkpoint

__all__ = ["FORMATS", "Checkpoint", "load_checkpoint", "save_checkpoint"]
