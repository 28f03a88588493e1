"""python -m hurray convert with checkpoints: a library's checkpoint to .hurray and back,
and --format from one convention to another, lossless only (refused by name)."""
import subprocess
import sys

import numpy as np
import torch
from compressed_tensors.quantization import QuantizationArgs

import hurray
from support.checkpoint_checks import same_values, torch_bits
from support.checkpoint_makers import ct_decompress_file, ct_linear, ct_write, gptq_write


def _run(*args):
    return subprocess.run([sys.executable, "-m", "hurray", "convert", "--quiet", *map(str, args)],
                          capture_output=True, text=True)


def test_a_checkpoint_through_a_hurray_file_and_back(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group", group_size=32)
    stored, reference, scheme, fmt = ct_linear(16, 64, args, torch.bfloat16)
    src = tmp_path / "src"
    src.mkdir()
    ct_write(str(src), {"layer": stored}, scheme, fmt,
             extra={"norm.weight": torch.ones(64, dtype=torch.bfloat16)})
    assert _run(src, tmp_path / "model.hurray").returncode == 0
    with hurray.load(tmp_path / "model.hurray") as f:
        assert f["layer.weight"].descriptor == hurray.load_checkpoint(src)["layer.weight"].descriptor
        same_values(f["layer.weight"], *torch_bits(reference))
    done = _run(tmp_path / "model.hurray", tmp_path / "out", "--format", "compressed-tensors")
    assert done.returncode == 0, done.stderr
    back = ct_decompress_file(str(tmp_path / "out"), "layer")
    assert torch.equal(back.view(torch.int16), reference.view(torch.int16))
    norm = hurray.load_checkpoint(tmp_path / "out")["norm.weight"]
    assert np.array_equal(np.asarray(norm).view(np.uint16), np.full(64, 0x3F80, np.uint16))


def test_a_conversion_that_would_lose_something_is_refused_by_name(tmp_path):
    (tmp_path / "src").mkdir()
    gptq_write(str(tmp_path / "src"), "proj", 4, 32, True, True)
    done = _run(tmp_path / "src", tmp_path / "out", "--format", "mlx")
    assert done.returncode == 1
    assert "tensor 'proj.weight': MLX cannot state it" in done.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()
