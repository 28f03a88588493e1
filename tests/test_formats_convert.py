"""convert and save_gguf: files cross formats exactly, or are refused by name before the target is touched;
`python -m hurray convert` and `inspect` on model files."""
import io
import subprocess
import sys

import gguf
import ml_dtypes
import numpy as np
import pytest
from gguf import GGMLQuantizationType

import hurray
from hurray.cli._progress import Bar
from hurray import convert
from hurray.errors import InvalidArgumentError, UnsupportedError
from hurray.formats.gguf_write import save_gguf
from support.tensor_kinds import GGML_NAMES, ggml_blocks, kinds, reached_bytes, weights

GGUF_HOLDS = ["float32", "float64_3d", "int64", "scalar", "bfloat16", "float16"] + \
    [f"ggml_{n.lower()}" for n in GGML_NAMES]
GGUF_REFUSES = {  # kind -> words of the refusal
    "affine_per_axis": "affine per_axis", "mx_fp4": "microscaling per_block", "nvfp4": "microscaling",
    "strided": "strides", "big_endian": "big-endian", "uint16": "dtype uint16", "bool": "dtype bool",
    "float8_e4m3fn": "dtype float8_e4m3fn", "int4_packed": "dtype int4",
}


def write_with_gguf_py(path):
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_int32("llama.signed", -3)
    writer.add_float64("llama.precise", 1 / 3)
    writer.add_array("tokenizer.ggml.tokens", ["a", "b"])
    writer.add_tensor("w", weights("w", (2, 32)))
    for name in GGML_NAMES:
        blocks, _ = ggml_blocks(name)
        writer.add_tensor(f"q.{name}", blocks, raw_dtype=GGMLQuantizationType[name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def assert_same_tensors(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].descriptor == b[name].descriptor, name
        assert reached_bytes(a[name]) == reached_bytes(b[name]), name


def test_gguf_to_safetensors_to_gguf_is_exact(tmp_path):
    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    convert(source, tmp_path / "mid.safetensors")
    convert(tmp_path / "mid.safetensors", tmp_path / "out.gguf")
    convert(source, tmp_path / "same.gguf")
    original = hurray.load_gguf(source)
    assert_same_tensors(original, hurray.load_safetensors(tmp_path / "mid.safetensors"))
    assert_same_tensors(original, hurray.load_gguf(tmp_path / "out.gguf"))
    # gguf -> gguf keeps each key's value type as well as its value.
    same = hurray.load_gguf(tmp_path / "same.gguf")
    assert same.metadata == original.metadata
    assert same.metadata_types == original.metadata_types
    assert original.metadata_types["llama.signed"] == 5 and original.metadata_types["llama.precise"] == 12
    # safetensors metadata is strings: other values travel as JSON text.
    assert hurray.load_safetensors(tmp_path / "mid.safetensors").metadata["llama.block_count"] == "2"


def test_gguf_py_reads_what_save_gguf_writes(tmp_path):
    tensors = {k: kinds()[k]() for k in GGUF_HOLDS}
    path = tmp_path / "ours.gguf"
    save_gguf(path, tensors, metadata={"general.architecture": "llama", "n": 5, "xs": [1.5, 2.5], "ok": True})
    reader = gguf.GGUFReader(str(path))
    theirs = {t.name: t for t in reader.tensors}
    assert sorted(theirs) == sorted(tensors)
    for name, tensor in tensors.items():
        ref = theirs[name]
        assert tuple(reversed(ref.shape.tolist())) == tuple(tensor.shape) or tensor.shape == ()
        raw = np.asarray(ref.data).reshape(-1).view(np.uint8).tobytes()
        if tensor.descriptor.scheme == "ggml":
            assert raw == tensor.to_gguf().tobytes()
        else:
            assert raw == np.ascontiguousarray(np.asarray(tensor)).view(np.uint8).tobytes()
    fields = reader.fields
    assert fields["n"].contents() == 5 and fields["xs"].contents() == [1.5, 2.5] and fields["ok"].contents() is True
    assert_same_tensors(tensors, hurray.load_gguf(path))


def test_an_empty_array_needs_no_layout(tmp_path):
    save_gguf(tmp_path / "e.gguf", {"e": kinds()["empty"]()})
    assert hurray.load_gguf(tmp_path / "e.gguf")["e"].shape == (0, 4)


@pytest.mark.parametrize("kind", sorted(GGUF_REFUSES))
def test_what_gguf_cannot_hold_is_refused_by_name(tmp_path, kind):
    target = tmp_path / "x.gguf"
    with pytest.raises(UnsupportedError, match=f"tensor '{kind}'.*{GGUF_REFUSES[kind]}"):
        save_gguf(target, {"fine": np.ones(2, np.float32), kind: kinds()[kind]()})
    assert not target.exists()


def test_convert_refuses_before_touching_the_target(tmp_path):
    source = tmp_path / "q.safetensors"
    hurray.save_safetensors(source, {"ok": np.ones(3, np.float32),
                                     "q": hurray.quantize_affine(weights("q", (2, 32)), axis=0)})
    target = tmp_path / "q.gguf"
    target.write_bytes(b"old")
    with pytest.raises(UnsupportedError, match="tensor 'q'"):
        convert(source, target)
    assert target.read_bytes() == b"old"
    with pytest.raises(InvalidArgumentError, match="'.npz'"):
        convert(source, tmp_path / "q.npz")


def test_through_hurray_files_is_exact(tmp_path):
    """gguf -> .hurray -> safetensors -> .hurray -> gguf: every tensor as it was, GGML blocks included."""
    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    convert(source, tmp_path / "a.hurray")
    convert(tmp_path / "a.hurray", tmp_path / "b.safetensors")
    convert(tmp_path / "b.safetensors", tmp_path / "c.hurray")
    convert(tmp_path / "c.hurray", tmp_path / "d.gguf")
    original = hurray.load_gguf(source)
    for path in ("a.hurray", "c.hurray"):
        assert_same_tensors(original, hurray.load(tmp_path / path))
    assert_same_tensors(original, hurray.load_gguf(tmp_path / "d.gguf"))
    assert hurray.load(tmp_path / "a.hurray").metadata["llama.block_count"] == "2"


def test_every_kind_crosses_hurray_and_safetensors_files(tmp_path):
    tensors = {name: make() for name, make in kinds().items()}
    hurray.save(tmp_path / "all.hurray", tensors)
    convert(tmp_path / "all.hurray", tmp_path / "all.safetensors")
    convert(tmp_path / "all.safetensors", tmp_path / "back.hurray")
    back = hurray.load(tmp_path / "back.hurray")
    # safetensors states a plain array's values, not its layout (ADR-064): these come back
    # contiguous and little-endian, with the same values.
    by_value = {"big_endian", "strided", "empty"}
    for name in by_value:
        expected = np.asarray(tensors[name])
        assert back[name].descriptor == hurray.Descriptor.build(expected.dtype.name, expected.shape), name
        assert np.asarray(back[name]).tobytes() == \
            np.ascontiguousarray(expected, expected.dtype.newbyteorder("<")).tobytes(), name
    assert_same_tensors({k: v for k, v in tensors.items() if k not in by_value},
                        {k: back[k] for k in back if k not in by_value})


def test_a_type_hurray_lacks_stops_the_conversion_by_name(tmp_path):
    source = tmp_path / "k.gguf"
    writer = gguf.GGUFWriter(str(source), "llama")
    # Q8_K: ggml's dot-product intermediate, a block type no descriptor states.
    writer.add_tensor("q8", np.zeros((1, 292), np.uint8), raw_dtype=GGMLQuantizationType.Q8_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(UnsupportedError, match="'q8'.*Q8_K"):
        convert(source, tmp_path / "k.safetensors")
    assert not (tmp_path / "k.safetensors").exists()
    shown = run_cli("inspect", source)
    assert shown.returncode == 1
    assert "q8\trefused: " in shown.stdout and "Q8_K" in shown.stdout


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    shown, hidden = FakeTerminal(), io.StringIO()
    for stream in (shown, hidden):
        bar = Bar("copy", stream)
        bar(1 << 20, 4 << 20)
        bar(4 << 20, 4 << 20)
        bar.close()
    assert hidden.getvalue() == ""
    text = shown.getvalue()
    assert text.startswith("\rcopy [") and "100%" in text and "4.0/4.0 MiB" in text and text.endswith("\n")


def test_cli_convert_draws_its_bar_on_a_terminal(tmp_path):
    from hurray.cli import convert_files as cli_convert

    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    terminal = FakeTerminal()
    args = type("Args", (), {"source": str(source), "target": str(tmp_path / "out.safetensors"), "quiet": False})
    assert cli_convert.run(args, stderr=terminal) == 0
    assert "100%" in terminal.getvalue()


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "hurray", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_cli_convert_and_inspect(tmp_path):
    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    done = run_cli("convert", source, tmp_path / "out.safetensors")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not a terminal: no bar
    shown = run_cli("inspect", tmp_path / "out.safetensors")
    assert shown.returncode == 0, shown.stderr
    assert "q.Q4_K\tuint8\t2x512\tggml:q4_k\t576\n" in shown.stdout
    assert "w\tfloat32\t2x32\t-\t256\n" in shown.stdout
    shown = run_cli("inspect", source)
    assert shown.returncode == 0 and "# llama.block_count = 2\n" in shown.stdout


def test_cli_refusals_have_exit_status_one(tmp_path):
    source = tmp_path / "q.safetensors"
    hurray.save_safetensors(source, {"q": hurray.quantize_mx(weights("m", (2, 32)))})
    refused = run_cli("convert", source, tmp_path / "q.gguf")
    assert refused.returncode == 1
    assert "GGUF cannot hold tensor 'q'" in refused.stderr
    assert not (tmp_path / "q.gguf").exists()
    missing = run_cli("inspect", tmp_path / "nope.gguf")
    assert missing.returncode == 1 and "cannot open" in missing.stderr
    assert run_cli("convert", source).returncode == 2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_convert_dequantizes_every_quantized_tensor(tmp_path, dtype):
    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    target = tmp_path / "out.safetensors"
    convert(source, target, dtype=dtype)
    kind = {"float16": np.float16, "float32": np.float32}.get(dtype, ml_dtypes.bfloat16)
    reader = gguf.GGUFReader(str(source))
    with hurray.load_safetensors(target) as out:
        assert sorted(out) == sorted(t.name for t in reader.tensors)
        for ref in reader.tensors:
            tensor = out[ref.name]
            assert tensor.descriptor.scheme == "none"
            if ref.name == "w":  # plain: crosses as it is
                assert tensor.dtype == "float32"
                continue
            assert np.asarray(tensor).dtype == kind
            with np.errstate(over="ignore", invalid="ignore"):
                expected = gguf.quants.dequantize(np.asarray(ref.data), ref.tensor_type).astype(kind)
            assert np.array_equal(np.asarray(tensor).view(np.uint8), expected.reshape(tensor.shape).view(np.uint8))


def test_cli_convert_dtype(tmp_path):
    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    done = run_cli("convert", source, tmp_path / "out.hurray", "--dtype", "bfloat16")
    assert done.returncode == 0, done.stderr
    with hurray.load(tmp_path / "out.hurray") as f:
        assert f["q.Q4_K"].dtype == "bfloat16" and f["q.Q4_K"].shape == (2, 512)
        assert f["w"].dtype == "float32"
    bad = run_cli("convert", source, tmp_path / "x.hurray", "--dtype", "int8")
    assert bad.returncode == 2 and "--dtype" in bad.stderr
    with pytest.raises(InvalidArgumentError, match="dtype"):
        convert(source, tmp_path / "y.hurray", dtype="int8")


def test_cli_convert_dtype_draws_its_bar(tmp_path):
    from hurray.cli import convert_files as cli_convert

    source = tmp_path / "in.gguf"
    write_with_gguf_py(source)
    terminal = FakeTerminal()
    args = type("Args", (), {"source": str(source), "target": str(tmp_path / "out.gguf"), "quiet": False,
                             "dtype": "float16"})
    assert cli_convert.run(args, stderr=terminal) == 0
    assert "100%" in terminal.getvalue()
    with hurray.load_gguf(tmp_path / "out.gguf") as f:
        assert f.ggml_type("q.Q6_K") == "F16"
