"""A crate of one's own depends on bindings/rust as docs/bindings/rust.md says, and builds offline.

The page shows a whole project in blocks marked ``<!-- file: PATH -->``
(Cargo.toml, .cargo/config.toml, build.rs, src/main.rs). This writes exactly
those blocks into ``my-tensors/`` in a fresh folder, beside ``hurray``, a
link to this repository (the page's project sits beside a clone of Hurray),
runs ``cargo run --offline`` there, and compares the program's output with
the ```text block after the last file. The dependency builds in a target
folder of its own under bindings/rust/target, kept between runs.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "docs_support"))

from fenced import following_text  # noqa: E402
from support import rust  # noqa: E402

PAGE = ROOT / "docs" / "bindings" / "rust.md"
FILE_BLOCK = re.compile(r"^<!--\s*file:\s*(?P<path>\S+)\s*-->[ \t]*\n```(?P<language>\w+)[ \t]*\n(?P<body>.*?)^```[ \t]*$",
                        re.MULTILINE | re.DOTALL)
TARGET = rust.TARGET / "dependent-project"


def file_blocks(text):
    """[(path, body, end offset)] of the page's file blocks, in order."""
    return [(m.group("path"), m.group("body"), m.end()) for m in FILE_BLOCK.finditer(text)]


def write_project(text, folder):
    """The page's project in folder/my-tensors, beside folder/hurray (this repository); the expected output."""
    blocks = file_blocks(text)
    assert [path for path, _, _ in blocks] == ["Cargo.toml", ".cargo/config.toml", "build.rs", "src/main.rs"]
    (folder / "hurray").symlink_to(ROOT, target_is_directory=True)
    project = folder / "my-tensors"
    for path, body, _ in blocks:
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(body, encoding="utf-8")
    expected, why_not = following_text(text, blocks[-1][2])
    assert expected is not None, f"the page's src/main.rs block is {why_not}"
    return project, expected


def cargo_run(project):
    cargo = rust.find_cargo()
    if cargo is None:
        raise RuntimeError("cargo is not on PATH nor in $HOME/.cargo/bin; the Rust binding needs it")
    env = {k: v for k, v in os.environ.items() if k not in ("HURRAY_PYTHON", "CARGO_TARGET_DIR")}
    env["PATH"] = str(Path(cargo).parent) + os.pathsep + env.get("PATH", "")
    env["CARGO_TARGET_DIR"] = str(TARGET)
    return subprocess.run([cargo, "run", "--offline", "--quiet"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=rust.BUILD_TIMEOUT)


def test_the_page_project_builds_and_runs_against_the_crate(tmp_path):
    assert (ROOT / ".venv" / "bin" / "python").exists(), "the page's project asks ../hurray/.venv: run make install"
    project, expected = write_project(PAGE.read_text(encoding="utf-8"), tmp_path)
    result = cargo_run(project)
    assert result.returncode == 0, f"cargo run failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout == expected


def test_without_the_build_script_environment_the_build_says_what_is_missing(tmp_path):
    """The page's config.toml is what makes it work: without HURRAY_PYTHON the crate asks a python3
    that has no hurray, and its build script says so."""
    project, _ = write_project(PAGE.read_text(encoding="utf-8"), tmp_path)
    (project / ".cargo" / "config.toml").write_text('[env]\nHURRAY_PYTHON = "/nonexistent/python"\n',
                                                    encoding="utf-8")
    result = cargo_run(project)
    assert result.returncode != 0
    assert "cannot run `/nonexistent/python -m hurray`" in result.stderr


def test_without_the_build_rs_the_program_cannot_find_libhurray(tmp_path):
    """Why the page's build.rs is there: the crate's own rpath covers the crate's programs only."""
    project, _ = write_project(PAGE.read_text(encoding="utf-8"), tmp_path)
    (project / "build.rs").unlink()
    result = cargo_run(project)
    assert result.returncode != 0 and "libhurray.so" in result.stderr


@pytest.mark.parametrize("missing", ["Cargo.toml", "src/main.rs"])
def test_the_page_check_fails_when_a_file_block_is_missing(missing, tmp_path):
    text = PAGE.read_text(encoding="utf-8").replace(f"<!-- file: {missing} -->", "")
    with pytest.raises(AssertionError):
        write_project(text, tmp_path)
