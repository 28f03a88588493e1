"""Run the Rust blocks of the documentation under sybil.

Every ```` ```rust ```` block is a program against the crate in
bindings/rust: compiled with rustc, linked with the crate (built once per
session with ``cargo build --offline``, against the libhurray of the package
under test), run, and, when the next fenced block is ```` ```text ````, its
stdout compared with that block. A block without ``fn main`` is wrapped in
``fn main() -> Result<(), Box<dyn std::error::Error>>`` (ending in
``Ok(())``), so ``?`` works as it does in rustdoc examples.

A block preceded by ``<!-- rust: quoted -->`` is code quoted from another
project in a decision record (ADR-034 quotes one): it is not compiled, and
the comment is allowed only on pages under docs/adr/. A block preceded by
``<!-- file: PATH -->`` is one file of a project the page shows whole (a
crate that depends on this one): tests/test_rust_dependent.py writes the
page's file blocks into a folder and builds and runs that project.

The blocks of one page run one after another in the page's folder
(page_folder.py), the working directory of its Python blocks too, so a
Python block after a Rust block reads the file it wrote by its name.
"""
import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Optional

from sybil import Document
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

import page_folder
from fenced import blocks, following_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from support import rust  # noqa: E402

RUN_TIMEOUT = 60
COMPILE_TIMEOUT = 300
HAS_MAIN = re.compile(r"^\s*fn\s+main\s*\(", re.MULTILINE)
# The comment must sit on the last non-blank line before the block.
KIND_COMMENT = re.compile(r"<!--\s*rust:\s*(?P<kind>[^>]*?)\s*-->[ \t]*\n(?:[ \t]*\n)*\Z")
FILE_COMMENT = re.compile(r"<!--\s*file:\s*(?P<path>\S+)\s*-->[ \t]*\n(?:[ \t]*\n)*\Z")


@dataclass
class RustExample:
    source: str
    line: int  # line of the first source line in the Markdown file
    path: str  # the Markdown file, relative to the repository root
    expected: Optional[str] = None
    problem: Optional[str] = None  # a mistake in the page itself, reported when run


class RustToolchain:
    """The crate, built once; rustc flags to link a program with it."""

    def __init__(self):
        self._flags = None
        self.workdir = tempfile.mkdtemp(prefix="hurray-docs-rust-")
        atexit.register(shutil.rmtree, self.workdir, ignore_errors=True)
        self._count = 0

    def flags(self):
        if self._flags is None:
            rust.cargo("build", "--offline", "--lib")
            deps = rust.TARGET / "debug" / "deps"
            rlib = rust.TARGET / "debug" / "libhurray.rlib"
            result = subprocess.run([sys.executable, "-m", "hurray", "--libs"], capture_output=True, text=True,
                                    timeout=60)
            if result.returncode != 0:
                raise RuntimeError(f"python -m hurray --libs failed:\n{result.stderr}")
            lib_dirs = [f[2:] for f in shlex.split(result.stdout) if f.startswith("-L")]
            self._flags = ["--edition", "2021", "--extern", f"hurray={rlib}", "-L", f"dependency={deps}"]
            for d in lib_dirs:
                self._flags += ["-L", f"native={d}", "-C", f"link-arg=-Wl,-rpath,{d}"]
        return self._flags

    def rustc(self):
        cargo = rust.find_cargo()
        if cargo is None:
            raise RuntimeError("cargo is not on PATH nor in $HOME/.cargo/bin; the Rust blocks need it")
        beside = os.path.join(os.path.dirname(cargo), "rustc")
        return beside if os.path.exists(beside) else "rustc"

    def fresh_dir(self):
        self._count += 1
        path = os.path.join(self.workdir, f"build{self._count}")
        os.mkdir(path)
        return path


def _where(example):
    return f"{example.path}:{example.line}"


class RustBlockParser:
    """Finds the ```rust blocks of a document and compiles and runs each."""

    def __init__(self, root, toolchain=None):
        self.root = root
        self.toolchain = toolchain or RustToolchain()
        self.lexers = LexerCollection([
            FencedCodeBlockLexer(language="rust", mapping={"language": "arguments", "source": "source"}),
        ])

    def __call__(self, document: Document):
        for region, source, line, rel in blocks(document, self.lexers, "rust", self.root):
            example = RustExample(source=source, line=line, path=rel)
            if FILE_COMMENT.search(document.text, 0, region.start):
                continue  # a file of a whole project: tests/test_rust_dependent.py builds it
            match = KIND_COMMENT.search(document.text, 0, region.start)
            if match:
                kind = match.group("kind")
                if kind == "quoted" and rel.startswith(os.path.join("docs", "adr") + os.sep):
                    continue
                example.problem = (f"unknown Rust block kind {kind!r}" if kind != "quoted"
                                   else "only decision records (docs/adr/) may quote Rust that is not compiled")
            example.expected = following_text(document.text, region.end)[0]
            region.parsed = example
            region.evaluator = self.evaluate
            yield region

    def evaluate(self, sybil_example):
        example: RustExample = sybil_example.parsed
        if example.problem:
            return f"{_where(example)}: {example.problem}"
        build = self.toolchain.fresh_dir()
        source = example.source
        offset = 0
        if not HAS_MAIN.search(source):
            source = ("fn main() -> Result<(), Box<dyn std::error::Error>> {\n" + source + "\nOk(())\n}\n")
            offset = 1
        src = os.path.join(build, "main.rs")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        program = os.path.join(build, "example")
        result = subprocess.run([self.toolchain.rustc(), *self.toolchain.flags(), src, "-o", program],
                                cwd=build, capture_output=True, text=True, timeout=COMPILE_TIMEOUT,
                                env=rust.cargo_env())
        if result.returncode != 0:
            return (f"{_where(example)}: the Rust block does not compile (line n of main.rs is line "
                    f"{example.line - offset} + n - 1 of the page)\n{result.stderr.strip()}")
        workdir = page_folder.folder(sybil_example.namespace)
        result = subprocess.run([program], cwd=workdir, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        if result.returncode != 0:
            return (f"{_where(example)}: the Rust program exited with status {result.returncode}\n"
                    f"--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}")
        if example.expected is not None and result.stdout != example.expected:
            return (f"{_where(example)}: the Rust program's output differs from the text block after it\n"
                    f"--- expected ---\n{example.expected}--- actual ---\n{result.stdout}")
        return None


__all__ = ["RustBlockParser", "RustExample", "RustToolchain"]
