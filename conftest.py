"""sybil: every ```python, ```c and ```rust block of the documentation runs under pytest.

The pages are docs/**/*.md and the root COMPAT-MATRIX.md. Python blocks share
one namespace per document; C blocks are compiled (and programs run) by
tests/docs_support/c_examples.py, which explains the three kinds of C block;
Rust blocks are compiled against bindings/rust and run by
tests/docs_support/rust_examples.py. Each page runs in a fresh folder of its
own (tests/docs_support/page_folder.py).
"""
import os
import sys

from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tests", "docs_support"))
# Pages that read another page (frameworks.md builds layer 7's consumer) find the docs
# folder here: each page runs in a temporary folder of its own.
os.environ.setdefault("HURRAY_DOCS", os.path.join(ROOT, "docs"))

from c_examples import CBlockParser, Toolchain  # noqa: E402
from rust_examples import RustBlockParser, RustToolchain  # noqa: E402
import page_folder  # noqa: E402

_toolchain = Toolchain(ROOT)
_rust_toolchain = RustToolchain()


def _parsers():
    return [PythonCodeBlockParser(), CBlockParser(ROOT, _toolchain), RustBlockParser(ROOT, _rust_toolchain)]


def _sybil(**where):
    return Sybil(parsers=_parsers(), setup=page_folder.setup, teardown=page_folder.teardown, **where)


# The README's getting-started section is the front page's, and runs as well.
pytest_collect_file = (
    _sybil(path="docs", patterns=["*.md"], excludes=["_build/*"], name="docs")
    + _sybil(path=".", filenames=["COMPAT-MATRIX.md", "README.md"], name="root")
).pytest()
