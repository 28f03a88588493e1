"""Layer 3: quantization. quantizers.py makes quantized tensors (affine, MX,
NVFP4), dequantizers.py decodes every scheme to float32, ggml.py wraps and
decodes GGML block bytes, library_graphs.py states the frameworks' own
layouts (MLX, torchao, bitsandbytes, torch) as version-2 graphs."""
