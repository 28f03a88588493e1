"""The documentation stays whole: every C function documented, every MUST
registered with a test that exists, the compatibility matrix true, the
cross-references the seed ADR makes still true, and enough runnable blocks.

The blocks themselves run through sybil (conftest.py at the repository root);
these tests check the pages as a set.
"""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "tests" / "docs_support"))

from c_examples import CBlockParser, Toolchain  # noqa: E402

HEADER = ROOT / "native" / "include" / "hurray.h"
IO_HEADER = ROOT / "native" / "include" / "hurray_io.h"
C_FFI = DOCS / "impl" / "c-ffi.md"
C_IO = DOCS / "impl" / "c-io.md"
GGUF_HEADER = ROOT / "native" / "include" / "hurray_gguf.h"
C_GGUF = DOCS / "impl" / "c-gguf.md"
REGISTER = DOCS / "normative.md"
COMPAT = ROOT / "COMPAT-MATRIX.md"
NORMATIVE_DIRS = (DOCS / "adr", DOCS / "impl")

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
NODE_ID = re.compile(r"`(tests/[\w/.-]+\.(?:py|c))::([\w:]+)`")


def read(path):
    return path.read_text(encoding="utf-8")


# ---- prose and sentences ------------------------------------------------

def prose_paragraphs(markdown):
    """The prose paragraphs of a Markdown page, code blocks and markup removed."""
    paragraphs, current, fence = [], [], None
    for line in markdown.splitlines():
        opening = FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        stripped = line.strip()
        markup = stripped.startswith((":::", ":class:", "<!--", "#")) or re.match(r"^\(\S+\)=$", stripped)
        if not stripped or markup:
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        stripped = re.sub(r"^(>\s*)+", "", stripped)
        stripped = re.sub(r"^([-*+]|\d+[.)])\s+", "", stripped)
        stripped = re.sub(r"^:\s+", "", stripped)
        current.append(stripped)
    if current:
        paragraphs.append(" ".join(current))
    return [normalize(p) for p in paragraphs]


def normalize(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"\s+", " ", text).strip()


def sentences(paragraph):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z\[\"'(])", paragraph)


def must_sentences(path):
    """Every sentence of a page that states (or quotes) an RFC 2119 MUST."""
    found = []
    for paragraph in prose_paragraphs(read(path)):
        found += [s for s in sentences(paragraph) if re.search(r"\bMUST\b", s)]
    return found


def normative_sources():
    return sorted(p for d in NORMATIVE_DIRS for p in d.glob("*.md"))


def register_rules():
    """{rule heading: section text} of the register."""
    text = read(REGISTER)
    parts = re.split(r"^### (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


# ---- the C reference ------------------------------------------------------

def header_functions():
    text = read(HEADER)
    return sorted(set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", text)))


def c_blocks(markdown):
    blocks, lines, fence = [], None, None
    for line in markdown.splitlines():
        opening = FENCE.match(line)
        if lines is not None:
            if opening and opening.group(1) == fence and not line.strip()[len(fence):].strip():
                blocks.append("\n".join(lines))
                lines = None
            else:
                lines.append(line)
            continue
        if opening and line.strip()[len(opening.group(1)):].strip() in ("c", "{code-block} c"):
            fence, lines = opening.group(1), []
    return blocks


def test_header_has_the_functions_the_design_fixes():
    functions = header_functions()
    for name in ("hurray_c_abi_version", "hurray_buffer_from_ptr", "hurray_buffer_list_get",
                 "hurray_descriptor_decode", "hurray_tensor_context_abi_version"):
        assert name in functions
    assert len(functions) > 30


def test_every_header_function_is_declared_in_c_ffi():
    declared = "\n".join(c_blocks(read(C_FFI)))
    missing = [f for f in header_functions() if not re.search(rf"\b{f}\s*\(", declared)]
    assert not missing, f"docs/impl/c-ffi.md has no C declaration block for: {', '.join(missing)}"


def test_every_header_function_is_explained_in_c_ffi():
    prose = " ".join(prose_paragraphs(read(C_FFI)))
    text = read(C_FFI)
    # A function is explained when its name appears outside its declaration,
    # in prose or in the definition list of its section.
    unexplained = [f for f in header_functions() if f not in prose and text.count(f) < 2]
    assert not unexplained, f"docs/impl/c-ffi.md declares but never explains: {', '.join(unexplained)}"


def assert_header_declared_and_explained(header, page, at_least):
    """Every function `header` declares has a C declaration block on `page`, and is explained there."""
    functions = sorted(set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", read(header))))
    assert len(functions) >= at_least
    text = read(page)
    declared = "\n".join(c_blocks(text))
    prose = " ".join(prose_paragraphs(text))
    undeclared = [f for f in functions if not re.search(rf"\b{f}\s*\(", declared)]
    unexplained = [f for f in functions if f not in prose and text.count(f) < 2]
    where = page.relative_to(ROOT)
    assert not undeclared, f"{where} has no C declaration block for: {', '.join(undeclared)}"
    assert not unexplained, f"{where} declares but never explains: {', '.join(unexplained)}"


def test_every_io_header_function_is_declared_and_explained_in_c_io():
    assert_header_declared_and_explained(IO_HEADER, C_IO, 17)


def test_every_gguf_header_function_is_declared_and_explained_in_c_gguf():
    assert_header_declared_and_explained(GGUF_HEADER, C_GGUF, 7)


def test_c_ffi_has_the_abi_version_table():
    text = read(C_FFI).split("## ABI versions", 1)[1]
    rows = re.findall(r"^\| (\d+) \|", text, flags=re.MULTILINE)
    import hurray

    assert [int(r) for r in rows if int(r) <= 4] == [1, 2, 3, 4]
    assert max(int(r) for r in rows) >= hurray.C_ABI_VERSION


# ---- the compatibility matrix -------------------------------------------

def test_compat_matrix_minimum_is_the_abi_version():
    import hurray

    match = re.search(r"^Minimum `HURRAY_C_ABI_VERSION`: \*\*(\d+)\*\*", read(COMPAT), flags=re.MULTILINE)
    assert match, "COMPAT-MATRIX.md must state: Minimum `HURRAY_C_ABI_VERSION`: **N**"
    # The oldest context version the package still makes and reads (ADR-059).
    assert int(match.group(1)) == hurray._ffi.lib.HURRAY_C_ABI_MIN_VERSION == 4
    assert hurray.C_ABI_VERSION == 5


def test_compat_matrix_lists_this_package():
    import hurray

    rows = re.findall(r"^\| (\d+\.\d+\.\d+) \| (\d+) \|", read(COMPAT), flags=re.MULTILINE)
    assert (hurray.__version__, str(hurray.C_ABI_VERSION)) in rows


def test_compat_matrix_page_includes_the_root_file():
    assert re.search(r"```\{include\} \.\./COMPAT-MATRIX\.md", read(DOCS / "compat-matrix.md"))


# ---- the register of normative statements -------------------------------

def test_every_must_is_registered():
    register = " ".join(prose_paragraphs(read(REGISTER)))
    missing = []
    for path in normative_sources():
        for sentence in must_sentences(path):
            if sentence not in register:
                missing.append(f"{path.relative_to(ROOT)}: {sentence}")
    assert not missing, "MUST statements not in docs/normative.md:\n" + "\n".join(missing)


def test_the_sources_have_musts():
    count = sum(len(must_sentences(p)) for p in normative_sources())
    assert count >= 8


def test_every_registered_rule_is_still_stated():
    """A rule whose sentence left the sources must leave the register too."""
    stated = " ".join(" ".join(prose_paragraphs(read(p))) for p in normative_sources())
    stale = []
    for heading, body in register_rules().items():
        quotes = [normalize(q) for q in re.findall(r"^> (.+(?:\n> .+)*)", body, flags=re.MULTILINE)]
        quotes = [normalize(re.sub(r"\n> ", " ", q)) for q in quotes]
        assert quotes, f"register rule {heading!r} quotes no statement"
        stale += [f"{heading}: {q}" for q in quotes if q not in stated]
    assert not stale, "register quotes that no page states any more:\n" + "\n".join(stale)


def _test_exists(path, name):
    source = ROOT / path
    if not source.is_file():
        return False
    text = read(source)
    function = name.split("::")[-1]
    if path.endswith(".py"):
        return re.search(rf"^\s*def {re.escape(function)}\(", text, flags=re.MULTILINE) is not None
    defined = re.search(rf"^(static\s+)?void\s+{re.escape(function)}\s*\(", text, flags=re.MULTILINE)
    runners = [p for p in (ROOT / "tests").glob("test_*.py") if Path(path).name in read(p)]
    return defined is not None and bool(runners)


def test_every_registered_rule_names_tests_that_exist():
    rules = register_rules()
    assert len(rules) >= 8
    problems = []
    for heading, body in rules.items():
        ids = NODE_ID.findall(body)
        if not ids:
            problems.append(f"{heading}: names no test")
        problems += [f"{heading}: {p}::{n} does not exist" for p, n in ids if not _test_exists(p, n)]
    assert not problems, "\n".join(problems)


def test_the_register_check_can_fail():
    assert _test_exists("tests/test_docs_whole.py", "test_the_register_check_can_fail")
    assert not _test_exists("tests/test_docs_whole.py", "test_that_was_never_written")
    assert not _test_exists("tests/c/test_core.c", "test_that_was_never_written")
    assert not _test_exists("tests/c/nowhere.c", "test_status")
    assert "It MUST hold." not in " ".join(prose_paragraphs(read(REGISTER)))
    assert must_sentences(ROOT / "docs" / "impl" / "python-bindings.md")


# ---- what the seed ADR says of the other pages --------------------------

PAIRS = ("hurray-python ↔ hurray-python, hurray-python ↔ hurray-ffi consumer, "
         "and hurray-python ↔ another binding built on hurray-ffi")


def test_adr023_names_the_three_pairs_twice_and_amends_5_and_8():
    text = read(DOCS / "adr" / "ADR-023-native-protocol.md")
    prose = " ".join(prose_paragraphs(text))
    assert prose.count(PAIRS) == 2
    assert "## Context" in text
    assert "### 5. Capsule lifetime" in text and "### 8. The ABI version check" in text
    for section in ("5. Capsule lifetime", "8. The ABI version check"):
        body = text.split(f"### {section}", 1)[1].split("\n### ", 1)[0]
        assert "Amended by ADR-034" in body and "ADR-034-capsule-context-c-handle.md" in body


def test_adr023_section5_states_what_the_code_does():
    from hurray.bridges import protocol

    text = read(DOCS / "adr" / "ADR-023-native-protocol.md")
    body = text.split("### 5. Capsule lifetime", 1)[1].split("\n### ", 1)[0]
    assert f'`"{protocol.CAPSULE_NAME}"`' in body and f'`"{protocol.USED_CAPSULE_NAME}"`' in body
    assert "the list and then the context" in body
    assert protocol.CAPSULE_NAME == "hurray_tensor" and protocol.USED_CAPSULE_NAME == "used_hurray_tensor"


def test_adr030_section2_fixes_the_pointer():
    text = read(DOCS / "adr" / "ADR-030-capsule-pointer.md")
    assert "### 2. The capsule pointer is a `HurrayBufferList`" in text


def test_adr033_defers_the_c_naming_question_resolved_by_adr034():
    text = read(DOCS / "adr" / "ADR-033-protocol-rename.md")
    deferred = text.split("## Open Questions Deferred", 1)[1]
    assert "Resolved by ADR-034 § 5" in deferred
    assert "`__hurray_buffers__`" in text and "`__hurray__`" in text


def test_index_states_the_first_principle_and_maps_seven_layers():
    text = read(DOCS / "index.md")
    assert "## The first principle: the format is language-agnostic" in text
    for n, page in enumerate(sorted((DOCS / "cookbook").glob("layer-*.md")), start=1):
        assert page.name.startswith(f"layer-{n}-")
        assert f"](cookbook/{page.name})" in text
    assert n == 7


def test_python_bindings_states_the_rule_the_seed_quotes():
    text = read(DOCS / "impl" / "python-bindings.md")
    section = text.split("## ABI version", 1)[1]
    prose = " ".join(prose_paragraphs(section))
    assert ("The capsule context MUST include the HURRAY_C_ABI_VERSION constant from the "
            "producing hurray-ffi build.") in prose
    assert "the consumer MUST verify it before dereferencing the handle." in prose
    assert "## Native Interchange Protocol" in text


def test_layer1_table_matches_the_library():
    import hurray

    text = read(DOCS / "cookbook" / "layer-1-element-types.md")
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (\d+) \|", text, flags=re.MULTILINE)
    assert [(int(c), n, int(b)) for c, n, b in rows] == [(d.code, d.name, d.bits) for d in hurray.DTYPES]


# ---- enough of it runs ----------------------------------------------------

def _documents():
    from sybil import Document
    from sybil.parsers.myst import PythonCodeBlockParser

    c_parser = CBlockParser(str(ROOT), Toolchain(str(ROOT)))
    python_parser = PythonCodeBlockParser()
    for path in sorted(DOCS.rglob("*.md")) + [COMPAT]:
        yield path, Document.parse(str(path), python_parser), Document.parse(str(path), c_parser)


def test_enough_blocks_run():
    python_blocks = c_kinds = 0
    kinds = {}
    per_page = {}
    for path, python_doc, c_doc in _documents():
        p = len(list(python_doc.examples()))
        c = [e.parsed.kind for e in c_doc.examples()]
        python_blocks += p
        c_kinds += len(c)
        for kind in c:
            kinds[kind] = kinds.get(kind, 0) + 1
        per_page[path.relative_to(ROOT).as_posix()] = (p, c)
    assert python_blocks >= 30, per_page
    assert c_kinds >= 12, per_page
    assert kinds.get("program", 0) >= 5 and kinds.get("consumer", 0) >= 1 and kinds.get("declarations", 0) >= 5
    for n in range(1, 8):
        page = next(k for k in per_page if k.startswith(f"docs/cookbook/layer-{n}-"))
        assert sum(len(x) if isinstance(x, list) else x for x in per_page[page]) >= 1, page
    assert "consumer" in per_page["docs/cookbook/layer-7-c-ffi.md"][1]
    assert "program" in per_page["docs/cookbook/layer-7-c-ffi.md"][1]


@pytest.mark.parametrize("page", ["docs/cookbook/layer-7-c-ffi.md"])
def test_layer7_consumer_checks_version_then_descriptor_then_buffers(page):
    consumer = next(b for b in c_blocks(read(ROOT / page)) if "describe_capsule" in b)
    order = [consumer.index(call) for call in (
        "hurray_tensor_context_abi_version", "hurray_tensor_context_descriptor",
        "hurray_descriptor_decode", "hurray_descriptor_check_buffers", "hurray_buffer_list_get")]
    assert order == sorted(order)
