"""The model-file routes the interop page lists: who writes a GGUF or safetensors file, who reads it.

tests/test_interop_model_files.py runs every (route, ggml type) pair below;
matrix.render_tables() renders the same constants into docs/interop.md, so a
row or column there is exactly a test here.
"""

# The types the issue names: plain arrays GGUF holds, and Hurray's eight GGML block types.
TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4", "Q4_K", "Q6_K")

# (id, writer -> reader, what is compared)
ROUTES = (
    ("gguf-writer", "gguf-py `GGUFWriter` → `hurray.load_gguf`",
     "bytes equal gguf-py's reader; `dequantize()` bit-identical to `gguf.quants.dequantize`"),
    ("safetensors-writer", "`safetensors.numpy.save_file` (+ ADR-041 record) → `hurray.load_safetensors`",
     "`dequantize()` bit-identical to `gguf.quants.dequantize`"),
    ("gguf-to-safetensors", "`hurray.load_gguf` → `hurray.save_safetensors` → `hurray.load_safetensors`",
     "same descriptor and bytes; `safe_open` reads the file"),
    ("gguf-to-hurray", "`hurray.load_gguf` → `hurray.save` → `hurray.load`",
     "same descriptor and bytes"),
    ("hurray-to-gguf", "`hurray.load_gguf` → `hurray.save_gguf` → gguf-py `GGUFReader`",
     "gguf-py reads the same shape and bytes"),
)
ROUTE_IDS = tuple(route[0] for route in ROUTES)
