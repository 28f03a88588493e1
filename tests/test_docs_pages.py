"""Every page runs as a reader copies it: in order, into files, in a folder of its own.

Sybil (conftest.py) runs each block in one namespace with the harness's help;
this runs each page again the way a reader would, with no harness at all:

- the page's Python blocks, concatenated in order into one file, run in a
  fresh interpreter (so a name a block uses must be defined by an earlier
  block of the page, not by the test harness);
- its C consumer and program blocks are saved under the names the page gives
  them and built with the page's own build line (```sh, ``cc ... NAME.c ...``),
  or the line the page's note gives for programs; programs run and print what
  the page shows;
- its Rust blocks compile and run against the crate;
- its C declaration blocks, concatenated, compile as one file.

Blocks of other languages that stand before the page's last Python block run
first (the libraries Python loads, the files it reads); the rest run after
the Python file, as they read what it wrote. Everything runs in one fresh
folder per page, with ``python`` on PATH meaning this interpreter.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from sybil import Document
from sybil.parsers.myst import PythonCodeBlockParser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "docs_support"))

import page_folder  # noqa: E402
from c_examples import CC, CBlockParser, CExample, Toolchain, library_name  # noqa: E402
from rust_examples import RustBlockParser, RustExample, RustToolchain  # noqa: E402

PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts) + [
    ROOT / "README.md", ROOT / "COMPAT-MATRIX.md"]
NOTE = "Copied in order into one file, this page's Python blocks run as they stand"
DEFAULT_PROGRAM_LINE = "cc {file} $(python -m hurray --cflags --libs) -o {stem}"
DEFAULT_CONSUMER_LINE = "cc -shared -fPIC {file} $(python -m hurray --cflags --libs) -o {stem}.so"
SH_FENCE = re.compile(r"^```(?:sh|bash|console)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
RUN_TIMEOUT = 600

_toolchain = Toolchain(str(ROOT))
_rust = RustToolchain()


def rel(path):
    return path.relative_to(ROOT).as_posix()


def page_blocks(path):
    """Every Python, C and Rust block of the page, in page order: (language, region)."""
    document = Document.parse(str(path), PythonCodeBlockParser(), CBlockParser(str(ROOT), _toolchain),
                              RustBlockParser(str(ROOT), _rust))
    languages = {CExample: "c", RustExample: "rust"}
    return [(languages.get(type(region.parsed), "python"), region) for _, region in document.regions]


def build_lines(text):
    """{source file: [the page's build lines for it]}, from the ``cc`` lines of its ```sh blocks."""
    lines = {}
    for block in SH_FENCE.findall(text):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line.startswith("cc "):
                continue
            sources = [word for word in shlex.split(line) if word.endswith(".c")]
            assert len(sources) == 1, f"a build line names one source file: {line}"
            lines.setdefault(sources[0], []).append(line)
    return lines


def line_for(example, lines):
    """The page's line that builds the block (a library's has -shared), or the default line."""
    name = example.file or "example.c"
    consumer = example.kind == "consumer"
    if name not in lines:
        default = DEFAULT_CONSUMER_LINE if consumer else DEFAULT_PROGRAM_LINE
        return default.format(file=name, stem=name[:-len(".c")])
    fitting = [line for line in lines[name] if ("-shared" in shlex.split(line)) == consumer]
    assert fitting, (f"the page builds {name} with {lines[name]}, but it is a "
                     f"{'library: it needs -shared -fPIC' if consumer else 'program: it must not be -shared'}")
    return fitting[0]


def shell_env():
    """`python` (and `python3`) on PATH is this interpreter, as in an activated environment."""
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


def run(command, folder, **kwargs):
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=shell_env(), **kwargs)


def check(result, what):
    assert result.returncode == 0, (f"{what} failed with status {result.returncode}\n"
                                    f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")


def run_c(example, lines, folder, page):
    """Saves a C consumer or program block as the page names it, builds it with the page's line, runs a program."""
    name = example.file or "example.c"
    stem = name[:-len(".c")]
    (folder / name).write_text(example.source, encoding="utf-8")
    line = line_for(example, lines)
    check(run(["sh", "-c", line], folder), f"{page}:{example.line}: the build line `{line}`")
    if example.kind == "consumer":
        assert (folder / library_name(name)).is_file(), f"{page}: `{line}` did not make {library_name(name)}"
        return
    result = run([str(folder / stem)], folder)
    check(result, f"{page}:{example.line}: the program {stem}")
    assert result.stdout == example.expected, f"{page}:{example.line}: the program's output differs from the page"


def run_other(language, region, lines, folder, page):
    if language == "c":
        if region.parsed.kind != "declarations":
            run_c(region.parsed, lines, folder, page)
        return
    failure = RustBlockParser(str(ROOT), _rust).evaluate(
        SimpleNamespace(parsed=region.parsed, namespace={page_folder.FOLDER: str(folder)}))
    assert failure is None, failure


def pages_with(language):
    return [p for p in PAGES if any(lang == language for lang, _ in page_blocks(p))]


PYTHON_PAGES = pages_with("python")


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=rel)
def test_page_runs_copied_into_one_file(page, tmp_path):
    blocks = page_blocks(page)
    lines = build_lines(page.read_text(encoding="utf-8"))
    last_python = max(i for i, (language, _) in enumerate(blocks) if language == "python")
    for language, region in blocks[:last_python]:
        if language != "python":
            run_other(language, region, lines, tmp_path, rel(page))
    source = "\n\n".join(str(region.parsed) for language, region in blocks if language == "python")
    (tmp_path / "page.py").write_text(source, encoding="utf-8")
    check(run([sys.executable, "page.py"], tmp_path), f"{rel(page)}'s Python blocks, as one file")
    for language, region in blocks[last_python + 1:]:
        run_other(language, region, lines, tmp_path, rel(page))


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=rel)
def test_page_says_its_blocks_run_as_one_file(page):
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert NOTE in text, f"{rel(page)} has Python blocks but does not say: {NOTE}."


C_DECLARATION_PAGES = [p for p in PAGES if any(
    lang == "c" and region.parsed.kind == "declarations" for lang, region in page_blocks(p))]


@pytest.mark.parametrize("page", C_DECLARATION_PAGES, ids=rel)
def test_page_declarations_compile_as_one_file(page, tmp_path):
    declarations = [region.parsed.source for lang, region in page_blocks(page)
                    if lang == "c" and region.parsed.kind == "declarations"]
    source = tmp_path / "declarations.c"
    source.write_text('#include "hurray_io.h"\n#include "hurray_gguf.h"\n' + "\n".join(declarations), encoding="utf-8")
    include = [f for f in _toolchain.flags() if f.startswith("-I")]
    check(run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", *include, "-c", str(source), "-o", "d.o"], tmp_path),
          f"{rel(page)}'s C declarations, as one file")


def test_every_build_line_builds_a_block_of_its_page():
    """A build line names a C block the page has, or (the README's) one a docs page has, with the same line."""
    generic = {DEFAULT_PROGRAM_LINE.format(file="example.c", stem="example"),
               DEFAULT_CONSUMER_LINE.format(file="example.c", stem="example")}
    docs_lines = set()
    for page in PAGES:
        if page.name != "README.md":
            blocks = {region.parsed.file or "example.c" for lang, region in page_blocks(page) if lang == "c"}
            for name, page_lines in build_lines(page.read_text(encoding="utf-8")).items():
                for line in page_lines:
                    assert name in blocks or line in generic, (
                        f"{rel(page)}: `{line}` builds {name}, which no C block of the page is")
                    docs_lines.add(line)
    readme = ROOT / "README.md"
    own = {region.parsed.file for lang, region in page_blocks(readme) if lang == "c"}
    for name, readme_lines in build_lines(readme.read_text(encoding="utf-8")).items():
        for line in readme_lines:
            assert name in own or line in docs_lines, (
                f"README.md: `{line}` is neither for one of its own blocks nor a line a docs page tests")


def test_the_checks_fail_on_a_page_that_does_not_stand_alone(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- c: consumer lib.c -->\n```c\nint f(void) { return 1; }\n```\n\n"
                    "```sh\ncc -shared -fPIC lib.c -o wrong_name.so\n```\n\n"
                    "```python\nprint(defined_elsewhere)\n```\n", encoding="utf-8")
    blocks = page_blocks(page)
    lines = build_lines(page.read_text(encoding="utf-8"))
    with pytest.raises(AssertionError, match="did not make lib.so"):
        run_other(*blocks[0], lines, tmp_path, "page.md")
    (tmp_path / "page.py").write_text(str(blocks[1][1].parsed), encoding="utf-8")
    with pytest.raises(AssertionError, match="NameError"):
        check(run([sys.executable, "page.py"], tmp_path), "page.md")


def test_a_consumer_block_names_its_source_file(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- c: consumer consumer_so -->\n```c\nint f(void) { return 1; }\n```\n\n"
                    "<!-- c: declarations x.c -->\n```c\nint g(void);\n```\n", encoding="utf-8")
    (consumer, declarations) = [region.parsed for _, region in page_blocks(page)]
    assert consumer.problem == "a C consumer block names its source file: <!-- c: consumer NAME.c -->"
    assert declarations.problem == "only program and consumer blocks name a file, NAME.c (not 'x.c')"


def getting_started(text):
    """The '## Getting started' section of a page, up to the next '## ' heading."""
    match = re.search(r"^## Getting started\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert match, "no '## Getting started' section followed by another '## ' section"
    return match.group(1)


def test_readme_and_front_page_get_started_in_the_same_words():
    readme = getting_started((ROOT / "README.md").read_text(encoding="utf-8"))
    front = getting_started((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert readme == front, "README.md and docs/index.md must share one Getting started section, word for word"
    for step in ("make install", ". .venv/bin/activate", ".venv/bin/python", "**Make a tensor.**",
                 "**Hand it to C.**", "**Read a file.**"):
        assert step in front


def test_the_front_page_starts_with_getting_started():
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert re.findall(r"^## .*", text, re.MULTILINE)[0] == "## Getting started"


def test_readme_opens_with_make_docs_and_make_test():
    """CI runs the README's first two commands; they stay first, and stay these."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = SH_FENCE.search(text)
    assert first_block and text.index(first_block.group(0)) < text.index("\n## ")
    commands = [line.split("#", 1)[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make docs", "make test"]
