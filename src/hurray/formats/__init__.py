"""Model files as their libraries write them: GGUF (gguf_file.py reads,
gguf_write.py writes), safetensors (safetensors_file.py, both ways), and
conversion.py between those and .hurray files."""
