"""sybil: every ```python and ```c block of the documentation runs under pytest.

The pages are docs/**/*.md and the root COMPAT-MATRIX.md. Python blocks share
one namespace per document; C blocks are compiled (and programs run) by
tests/docs_support/c_examples.py, which explains the three kinds of C block.
"""
import os
import sys

from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tests", "docs_support"))

from c_examples import CBlockParser, Toolchain  # noqa: E402

_toolchain = Toolchain(ROOT)


def _parsers():
    return [PythonCodeBlockParser(), CBlockParser(ROOT, _toolchain)]


pytest_collect_file = (
    Sybil(parsers=_parsers(), path="docs", patterns=["*.md"], excludes=["_build/*"], name="docs")
    + Sybil(parsers=_parsers(), path=".", filenames=["COMPAT-MATRIX.md"], name="compat")
).pytest()
