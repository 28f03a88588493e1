"""Run the C blocks of the documentation under sybil.

A ```` ```c ```` block (or a MyST ```` ```{code-block} c ```` directive) is one
of three kinds, chosen by an HTML comment on the line just before it:

``<!-- c: declarations -->`` (the default, no comment needed)
    Compiled with ``-c -Werror`` after ``#include "hurray_io.h"`` (which
    includes hurray.h) and ``#include "hurray_gguf.h"``. A declaration that
    differs from the headers is a conflicting redeclaration and fails; a
    ``hurray_*`` function no header declares fails too.
``<!-- c: program -->`` or ``<!-- c: program NAME.c -->``
    A whole program: compiled and linked with the flags
    ``python -m hurray --cflags --libs`` prints (plus AddressSanitizer and
    UBSan, so a leak or an overrun in an example fails), run in the page's
    folder, and its stdout compared with the ```` ```text ```` block that
    follows it. ``NAME.c`` is the file name the page's build line uses.
``<!-- c: consumer NAME.c -->``
    Compiled into a shared object (``-shared -fPIC``) named ``NAME.so`` in the
    page's folder, where the Python blocks after it load it with ctypes
    (``ctypes.CDLL("./NAME.so")``), as a reader who ran the page's build line
    would.

Every source is preceded by ``#line N "docs/....md"`` so the compiler reports
the Markdown file and line. Everything is compiled in a fresh temporary
directory; nothing is cached between runs. The page's folder is
page_folder.py's; tests/test_docs_pages.py builds the same files with the
page's own build lines.
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
from sybil.parsers.myst.lexers import DirectiveLexer

import page_folder
from fenced import blocks, following_text

CC = os.environ.get("CC", "cc")
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
RUN_TIMEOUT = 60
KINDS = ("declarations", "program", "consumer")

# The comment must sit on the last non-blank line before the block.
KIND_COMMENT = re.compile(r"<!--\s*c:\s*(?P<words>[^>]*?)\s*-->[ \t]*\n(?:[ \t]*\n)*\Z")
FUNCTION_NAME = re.compile(r"\b(hurray_[a-z0-9_]+)\s*\(")


@dataclass
class CExample:
    kind: str
    source: str
    line: int  # line of the first source line in the Markdown file
    path: str  # the Markdown file, relative to the repository root
    file: Optional[str] = None  # the source's file name on the page (NAME.c), if it names one
    expected: Optional[str] = None  # program: the text block's content
    problem: Optional[str] = None  # a mistake in the page itself, reported when run


class Toolchain:
    """The compiler flags of the installed package, asked for once per run."""

    def __init__(self, root):
        self.root = root
        self._flags = None
        self._header_functions = None
        self.workdir = tempfile.mkdtemp(prefix="hurray-docs-c-")
        atexit.register(shutil.rmtree, self.workdir, ignore_errors=True)
        self._count = 0

    def flags(self):
        if self._flags is None:
            result = subprocess.run(
                [sys.executable, "-m", "hurray", "--cflags", "--libs"],
                capture_output=True, text=True, timeout=60,
            )
            if result.returncode != 0:
                raise RuntimeError(f"python -m hurray --cflags --libs failed:\n{result.stderr}")
            self._flags = shlex.split(result.stdout)
        return self._flags

    def header_functions(self):
        """The hurray_* functions the installed hurray.h, hurray_io.h and hurray_gguf.h declare."""
        if self._header_functions is None:
            include = [f[2:] for f in self.flags() if f.startswith("-I")]
            functions = set()
            for name in ("hurray.h", "hurray_io.h", "hurray_gguf.h"):
                with open(os.path.join(include[0], name), encoding="utf-8") as header:
                    functions |= set(FUNCTION_NAME.findall(header.read()))
            self._header_functions = functions
        return self._header_functions

    def fresh_dir(self):
        self._count += 1
        path = os.path.join(self.workdir, f"example{self._count}")
        os.mkdir(path)
        return path


def _run(command, cwd, timeout=RUN_TIMEOUT, env=None):
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _where(example):
    return f"{example.path}:{example.line}"


class CBlockParser:
    """Finds the C blocks of a document and evaluates each by its kind."""

    def __init__(self, root, toolchain=None):
        self.root = root
        self.toolchain = toolchain or Toolchain(root)
        self.lexers = LexerCollection([
            FencedCodeBlockLexer(language="c", mapping={"language": "arguments", "source": "source"}),
            DirectiveLexer(directive="code-block", arguments="c"),
        ])

    def __call__(self, document: Document):
        for region, source, line, rel in blocks(document, self.lexers, "c", self.root):
            example = CExample(kind="declarations", source=source, line=line, path=rel)
            match = KIND_COMMENT.search(document.text, 0, region.start)
            if match:
                words = match.group("words").split()
                example.kind = words[0] if words else ""
                example.file = words[1] if len(words) > 1 else None
                if example.kind not in KINDS:
                    example.problem = f"unknown C block kind {example.kind!r}; use one of {KINDS}"
                elif example.kind == "consumer" and not (example.file or "").endswith(".c"):
                    example.problem = "a C consumer block names its source file: <!-- c: consumer NAME.c -->"
                elif example.file is not None and (example.kind == "declarations" or not example.file.endswith(".c")):
                    example.problem = f"only program and consumer blocks name a file, NAME.c (not {example.file!r})"
            if example.kind == "program":
                example.expected, why_not = following_text(document.text, region.end)
                if why_not:
                    example.problem = f"a C program block must be followed by a ```text block holding its output ({why_not})"
            region.parsed = example
            region.evaluator = self.evaluate
            yield region

    def evaluate(self, sybil_example):
        example: CExample = sybil_example.parsed
        if example.problem:
            return f"{_where(example)}: {example.problem}"
        workdir = self.toolchain.fresh_dir()
        return getattr(self, "_" + example.kind)(example, workdir, sybil_example.namespace)

    @staticmethod
    def _source_file(example, workdir, prefix=""):
        path = os.path.join(workdir, "example.c")
        with open(path, "w", encoding="utf-8") as f:
            f.write(prefix)
            f.write(f'#line {example.line} "{example.path}"\n')
            f.write(example.source)
        return path

    @staticmethod
    def _compile_failure(example, result):
        return (f"{_where(example)}: the C {example.kind} block does not compile\n"
                f"{result.stderr.strip()}")

    def _declarations(self, example, workdir, namespace):
        unknown = sorted(set(FUNCTION_NAME.findall(example.source)) - self.toolchain.header_functions())
        if unknown:
            return f"{_where(example)}: no hurray header declares a function named {', '.join(unknown)}"
        src = self._source_file(example, workdir, prefix='#include "hurray_io.h"\n#include "hurray_gguf.h"\n')
        cflags = [f for f in self.toolchain.flags() if f.startswith("-I")]
        result = _run([CC, *STRICT, *cflags, "-c", src, "-o", "example.o"], cwd=workdir)
        if result.returncode != 0:
            return self._compile_failure(example, result)
        return None

    def _program(self, example, workdir, namespace):
        src = self._source_file(example, workdir)
        result = _run([CC, *STRICT, *SANITIZE, src, "-o", "example", *self.toolchain.flags()], cwd=workdir)
        if result.returncode != 0:
            return self._compile_failure(example, result)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
        result = _run([os.path.join(workdir, "example")], cwd=page_folder.folder(namespace), env=env)
        if result.returncode != 0:
            return (f"{_where(example)}: the C program exited with status {result.returncode}\n"
                    f"--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}")
        if result.stdout != example.expected:
            return (f"{_where(example)}: the C program's output differs from the text block after it\n"
                    f"--- expected ---\n{example.expected}--- actual ---\n{result.stdout}")
        return None

    def _consumer(self, example, workdir, namespace):
        src = self._source_file(example, workdir)
        so = os.path.join(page_folder.folder(namespace), library_name(example.file))
        result = _run([CC, *STRICT, "-shared", "-fPIC", src, "-o", so, *self.toolchain.flags()], cwd=workdir)
        if result.returncode != 0:
            return self._compile_failure(example, result)
        return None


def library_name(source_name):
    """consumer.c -> consumer.so: the shared library a consumer block's source becomes."""
    return source_name[:-len(".c")] + ".so"


def count_blocks(document: Document, parser: CBlockParser):
    """How many C blocks of each kind a parsed document has (for the docs' own tests)."""
    counts = {kind: 0 for kind in KINDS}
    for region in parser(document):
        counts[region.parsed.kind] = counts.get(region.parsed.kind, 0) + 1
    return counts


__all__ = ["CBlockParser", "CExample", "Toolchain", "count_blocks", "library_name"]
