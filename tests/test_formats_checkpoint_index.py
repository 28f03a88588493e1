"""The shards of a checkpoint directory: the index and config read once, each
shard opened once, and every way an index can lie refused by name."""
import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

import hurray
from hurray.formats.checkpoint import load_checkpoint


def _sharded(tmp_path, shards=4, per=8):
    weight_map = {}
    expected = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {f"layer.{s}.{k}.weight": np.full((2, 3), s * per + k, np.float32) for k in range(per)}
        save_file(tensors, tmp_path / file)
        weight_map.update({name: file for name in tensors})
        expected.update(tensors)
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    return index, expected


def test_a_directory_of_shards_is_one_mapping(tmp_path):
    _, expected = _sharded(tmp_path)
    with load_checkpoint(tmp_path) as ck:
        assert sorted(ck) == sorted(expected)
        for name, value in expected.items():
            assert np.array_equal(np.asarray(ck[name]), value)
            assert ck.convention(name) == "plain" and ck.scheme(name) == "plain"
        assert len(ck._sources._files) == 4  # each shard opened once


def test_each_shard_is_opened_once(tmp_path, monkeypatch):
    _sharded(tmp_path)
    from hurray.formats.checkpoint import sources

    opened = []
    real = sources.load_safetensors
    monkeypatch.setattr(sources, "load_safetensors", lambda p: opened.append(os.path.basename(p)) or real(p))
    load_checkpoint(tmp_path)
    assert sorted(opened) == sorted(set(opened)) and len(opened) == 4


def _rewrite(tmp_path, index):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))


def test_an_index_that_points_at_a_missing_shard(tmp_path):
    index, _ = _sharded(tmp_path)
    index["weight_map"]["layer.0.0.weight"] = "model-00009-of-00004.safetensors"
    _rewrite(tmp_path, index)
    with pytest.raises(hurray.HurrayError, match="lists shard 'model-00009-of-00004.safetensors'"):
        load_checkpoint(tmp_path)


def test_a_tensor_listed_twice_in_the_index(tmp_path):
    index, _ = _sharded(tmp_path)
    text = json.dumps(index)
    text = text.replace('"weight_map": {', '"weight_map": {"layer.0.0.weight": "model-00002-of-00004.safetensors", ')
    (tmp_path / "model.safetensors.index.json").write_text(text)
    with pytest.raises(hurray.HurrayError, match="'layer.0.0.weight' is listed twice"):
        load_checkpoint(tmp_path)


def test_a_tensor_in_two_shards(tmp_path):
    index, _ = _sharded(tmp_path, shards=2)
    second = {f"layer.1.{k}.weight": np.zeros(2, np.float32) for k in range(8)}
    save_file({**second, "layer.0.0.weight": np.zeros(2, np.float32)}, tmp_path / "model-00002-of-00002.safetensors")
    with pytest.raises(hurray.HurrayError, match="'layer.0.0.weight'"):
        load_checkpoint(tmp_path)


def test_an_index_that_puts_a_tensor_in_the_wrong_shard(tmp_path):
    index, _ = _sharded(tmp_path, shards=2)
    index["weight_map"]["layer.0.0.weight"] = "model-00002-of-00002.safetensors"
    _rewrite(tmp_path, index)
    with pytest.raises(hurray.HurrayError, match="'layer.0.0.weight'"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("shard", ["../escape.safetensors", "/etc/passwd", "", 7, "sub/x.safetensors", [1], {"a": 1}, ".", ".."])
def test_a_shard_name_that_is_not_a_file_beside_the_index(tmp_path, shard):
    index, _ = _sharded(tmp_path, shards=1)
    index["weight_map"]["layer.0.0.weight"] = shard
    _rewrite(tmp_path, index)
    with pytest.raises(hurray.HurrayError, match="not a file name in the checkpoint's directory"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("text", ["[" * 100000, "{\"weight_map\": 3}", "\xff", "{}"])
def test_an_index_that_is_not_one(tmp_path, text):
    _sharded(tmp_path, shards=1)
    (tmp_path / "model.safetensors.index.json").write_text(text, errors="surrogateescape")
    with pytest.raises(hurray.HurrayError):
        load_checkpoint(tmp_path)


def test_an_unknown_quant_method_is_refused_by_name(tmp_path):
    _sharded(tmp_path, shards=1)
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "hqq"}}))
    with pytest.raises(hurray.HurrayError, match="quant_method 'hqq' is not a convention"):
        load_checkpoint(tmp_path)


def test_a_missing_path_is_a_file_not_found_error(tmp_path):
    for missing in (tmp_path / "nothing.safetensors", tmp_path / "nothing", tmp_path / "no" / "config.json"):
        with pytest.raises(hurray.errors.HurrayFileNotFoundError):  # the path policy's, a FileNotFoundError
            load_checkpoint(missing)


def test_a_directory_with_no_checkpoint_is_a_directory_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(hurray.errors.HurrayIsADirectoryError, match="no .safetensors file"):
        load_checkpoint(tmp_path / "empty")
    with pytest.raises(hurray.HurrayError, match="NUL"):
        load_checkpoint(str(tmp_path / "empty") + "\0x")


def test_other_files_pass_through(tmp_path):
    hurray.save(tmp_path / "x.hurray", {"a": np.arange(3, dtype=np.int32)})
    assert np.array_equal(np.asarray(load_checkpoint(tmp_path / "x.hurray")["a"]), np.arange(3))
    q = hurray.quantize_affine(np.ones((2, 32), np.float32), dtype="int8", axis=0)
    hurray.save_safetensors(tmp_path / "q.safetensors", {"q": q})
    ck = load_checkpoint(tmp_path / "q.safetensors")
    assert sorted(ck) == ["q"] and ck["q"].descriptor == q.descriptor


def test_json_reader_bounds_and_duplicate_keys(tmp_path):
    """The config and index reader: every duplicate key named at any depth, the size cap held
    whether the file is read whole at once or has grown since its size was taken."""
    import os

    from hurray.errors import CorruptError
    from hurray.formats.checkpoint import sources

    for text, key in (('{"a": 1, "a": 2}', "a"), ('{"q": {"x": 1, "y": 2, "x": 3}}', "x"),
                      ('[{"k": 1}, {"k": 1, "k": 1}]', "k")):
        with pytest.raises(CorruptError, match=f"the key '{key}' is listed twice"):
            sources.parse_json(text.encode(), "t")
    assert sources.parse_json(b'{"a": {"b": [1, {"c": 2}]}, "d": {}}', "t") == {"a": {"b": [1, {"c": 2}]}, "d": {}}
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "llama"}')
    fd = os.open(path, os.O_RDONLY)
    try:
        assert sources._read_bounded(fd, 4, 1 << 20) == b'{"model_type": "llama"}'  # grown since: read on
        os.lseek(fd, 0, os.SEEK_SET)
        assert sources._read_bounded(fd, 23, 1 << 20) == b'{"model_type": "llama"}'  # its size: one read
        os.lseek(fd, 0, os.SEEK_SET)
        assert sources._read_bounded(fd, 4, 10) == b'{"model_ty'  # never past the limit
        os.lseek(fd, 0, os.SEEK_SET)
        assert sources._read_bounded(fd, 100, 10) == b'{"model_ty'
    finally:
        os.close(fd)
    assert sources.read_json(str(path), "t") == {"model_type": "llama"}
    path.write_bytes(b" " * (sources.MAX_JSON + 1) + b"{}")
    with pytest.raises(CorruptError, match="more than the"):
        sources.read_json(str(path), "t")
    with pytest.raises(FileNotFoundError):
        sources.read_json(str(tmp_path / "absent.json"), "t")
