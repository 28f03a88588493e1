"""Layers 1-4: element types, packing, layout facts, the descriptor and the Tensor.

dtypes.py (layer 1), packing.py (sub-byte packing, layer 2), _facts.py (what
the C library computes for layout and GGML blocks), _checks.py (integer
arguments), _views.py (zero-copy numpy views), descriptor.py (layer 4) and
tensor.py. Nothing here imports a folder above it; hurray/_wiring.py puts
the methods of the layers above on Tensor.
"""
