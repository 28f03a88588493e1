"""The package's face and its rooms (ADR-053): dir(hurray) is __all__, the
top folder stays small, every layer has its folder, and no module hides
behind a function of its name."""
import ast
import importlib
import os
import pkgutil
import types

import pytest

import hurray

PACKAGE = os.path.dirname(os.path.abspath(hurray.__file__))
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "hurray")
LAYER_FOLDERS = ("core", "quant", "bridges", "io", "formats", "cli")
TOP_LIMIT = 10


def _public(names):
    return {n for n in names if not n.startswith("_")}


def _modules():
    """Every Python module of the package, by dotted name."""
    names = ["hurray"]
    for info in pkgutil.walk_packages(hurray.__path__, "hurray."):
        names.append(info.name)
    return names


def test_dir_shows_exactly_all():
    assert _public(dir(hurray)) == _public(hurray.__all__)
    assert set(hurray.__all__) <= set(dir(hurray))
    assert len(hurray.__all__) == len(set(hurray.__all__))
    for name in hurray.__all__:
        assert hasattr(hurray, name), f"__all__ names {name}, which hurray lacks"


def _strays(package):
    """Public names in the namespace that are neither in __all__ nor one of the package's own submodules."""
    return {
        name for name, value in vars(package).items()
        if not name.startswith("_") and name not in package.__all__
        and not (isinstance(value, types.ModuleType) and value.__name__ == f"{package.__name__}.{name}")
    }


def test_what_all_leaves_out_is_only_the_package_s_own_modules():
    # Importing a submodule binds it on its package; nothing else public
    # may sit in the namespace (no helper import, no stray class).
    assert _strays(hurray) == set()


def test_the_face_checks_can_fail(monkeypatch):
    monkeypatch.setattr(hurray, "PackageNotFoundError", LookupError, raising=False)
    monkeypatch.setattr(hurray, "numpy", importlib.import_module("numpy"), raising=False)
    assert _strays(hurray) == {"PackageNotFoundError", "numpy"}  # numpy is a module, but not hurray's
    monkeypatch.setattr(hurray, "__all__", [*hurray.__all__, "PackageNotFoundError"])
    assert "PackageNotFoundError" in dir(hurray)  # dir follows __all__


@pytest.mark.parametrize("root", [SOURCE, PACKAGE], ids=["source", "installed"])
def test_top_folder_holds_few_python_modules_and_no_c(root):
    files = os.listdir(root)
    python = sorted(f for f in files if f.endswith(".py"))
    assert len(python) <= TOP_LIMIT, f"{len(python)} Python modules in {root}: {python}"
    c_sources = sorted(f for f in files if f.endswith((".c", ".h")))
    assert c_sources == [], f"C sources in the package's top folder: {c_sources} (they belong in _ext/)"


def test_every_layer_has_its_folder_and_the_c_sources_theirs():
    for folder in LAYER_FOLDERS:
        assert os.path.isfile(os.path.join(SOURCE, folder, "__init__.py")), folder
    ext = os.path.join(SOURCE, "_ext")
    assert not os.path.exists(os.path.join(ext, "__init__.py")), "_ext/ holds C sources, it is no package"
    assert {"_core.c", "_protocol.c", "_pickle.c", "_dlpack.c", "_pyruntime.c"} <= set(os.listdir(ext))


def test_the_documented_module_names_still_import():
    for name in ("hurray.errors", "hurray.io", "hurray.dtypes", "hurray.packing", "hurray.pickling"):
        importlib.import_module(name)
    assert hurray.pickling.unpickle_tensor.__module__ == "hurray.pickling"
    assert hurray.dtypes.dtype_bits("int4") == 4 and hurray.dtypes.DTYPES is hurray.DTYPES
    assert hurray.errors.DLPackError is hurray.DLPackError


def test_every_exception_class_is_in_errors():
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__.startswith("hurray"):
                assert value.__module__ == "hurray.errors", f"{name}.{attr} is defined in {value.__module__}"


def _defined_names(path):
    """The functions and classes a Python file defines at its top level."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_no_function_or_class_shares_a_name_with_a_module():
    modules = {name.rsplit(".", 1)[-1] for name in _modules()}
    clashes = []
    for root, _, files in os.walk(SOURCE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                clashes += [f"{os.path.relpath(path, SOURCE)}: {n}" for n in _defined_names(path) & modules]
    assert clashes == []
    # and no package attribute hides the submodule of its name
    for name in _modules():
        module = importlib.import_module(name)
        if hasattr(module, "__path__"):
            for info in pkgutil.iter_modules(module.__path__):
                value = getattr(module, info.name, None)
                assert value is None or isinstance(value, types.ModuleType), f"{name}.{info.name} hides its module"


def test_the_name_check_can_fail(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def convert():\n    pass\n\nclass dtypes:\n    pass\n")
    assert _defined_names(str(path)) & {"convert", "dtypes"} == {"convert", "dtypes"}


def test_old_names_are_aliases_of_the_new():
    assert hurray.from_gguf is hurray.from_ggml and hurray.to_gguf is hurray.to_ggml
    assert hurray.Tensor.to_gguf is hurray.Tensor.to_ggml
    tensor = hurray.from_gguf(bytes(34), "q8_0", (32,))
    assert tensor.to_gguf().tobytes() == hurray.to_ggml(tensor).tobytes() == bytes(34)
