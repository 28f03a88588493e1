"""The Rust page and the Rust block evaluator: the page is linked where the
issue says, has at least three Rust blocks, and the evaluator fails a block
whose code or output is wrong (so renaming a function in one of them fails
the suite)."""
import re
import sys
from pathlib import Path

import pytest
from sybil import Document

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "docs_support"))

import page_folder  # noqa: E402
from rust_examples import RustBlockParser, RustToolchain  # noqa: E402

PAGE = ROOT / "docs" / "bindings" / "rust.md"


@pytest.fixture(scope="module")
def parser():
    return RustBlockParser(str(ROOT), RustToolchain())


def blocks(parser, path):
    return list(Document.parse(str(path), parser).examples())


def test_the_page_has_three_rust_blocks_or_more(parser):
    assert len(blocks(parser, PAGE)) >= 3


def test_the_page_is_linked_from_the_index_and_layer_7():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert re.search(r"```\{toctree\}[^`]*\nbindings/rust\n", index)
    layer7 = (ROOT / "docs" / "cookbook" / "layer-7-c-ffi.md").read_text(encoding="utf-8")
    assert "](../bindings/rust.md)" in layer7


def test_adr034_consequence_notes_what_the_binding_found():
    text = (ROOT / "docs" / "adr" / "ADR-034-capsule-context-c-handle.md").read_text(encoding="utf-8")
    after = text[text.index("No consumer exists to prove the design"):]
    section = after[: after.index("\n## ")]  # up to the next heading
    assert "What the first binding found" in section and "ADR-042-read-only-buffers.md" in section


def _mutated_page(tmp_path, old, new):
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    page = tmp_path / "docs" / "bindings" / "rust.md"
    page.parent.mkdir(parents=True)
    page.write_text(text.replace(old, new), encoding="utf-8")
    return page


def _first_block_only(parser, page, folder):
    """The page's first block, run in `folder` (sybil's setup gives each page one; see page_folder.py)."""
    example = blocks(parser, page)[0]
    example.namespace[page_folder.FOLDER] = str(folder)
    return parser.evaluate(example)


def test_the_first_block_passes_as_written(parser, tmp_path):
    assert _first_block_only(parser, PAGE, tmp_path) is None


def test_a_renamed_function_fails(parser, tmp_path):
    page = _mutated_page(tmp_path, "descriptor.set_strides(&[1, 2])?;", "descriptor.set_stride(&[1, 2])?;")
    outcome = _first_block_only(parser, page, tmp_path)
    assert outcome and "does not compile" in outcome and "set_stride" in outcome


def test_wrong_output_fails(parser, tmp_path):
    page = _mutated_page(tmp_path, "float32 [2, 3] strides [1, 2]\n", "float32 [2, 3] strides [2, 1]\n")
    outcome = _first_block_only(parser, page, tmp_path)
    assert outcome and "output differs" in outcome


def test_a_quoted_block_is_allowed_only_in_decision_records(parser, tmp_path):
    page = tmp_path / "docs" / "notes.md"
    page.parent.mkdir(parents=True)
    page.write_text("<!-- rust: quoted -->\n```rust\nfn not_compiled( {\n```\n", encoding="utf-8")
    (example,) = blocks(parser, page)
    assert "only decision records" in parser.evaluate(example)
