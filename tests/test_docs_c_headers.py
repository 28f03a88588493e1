"""Each public header agrees with its reference page, function by function.

hurray.h with docs/impl/c-ffi.md, hurray_io.h with docs/impl/c-io.md and
hurray_gguf.h with docs/impl/c-gguf.md. Every function a header declares
carries a comment with a "Statuses:" line (every non-OK status it can
return, or "none") and an "Ownership:" line. The page repeats both in its
table "Every function"; this test holds the two copies against each other,
so neither can drift: a function added to the header without a row, a row
for a function that is gone, a status list or an ownership that differs,
each fails here.
"""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "native", "include")
STATUS_HEADER = os.path.join(INCLUDE, "hurray.h")  # where HurrayStatus is declared
# Each header beside its page.
PAIRS = {
    "hurray.h": os.path.join(ROOT, "docs", "impl", "c-ffi.md"),
    "hurray_io.h": os.path.join(ROOT, "docs", "impl", "c-io.md"),
    "hurray_gguf.h": os.path.join(ROOT, "docs", "impl", "c-gguf.md"),
}
TABLE_HEADING = "## Every function: statuses and ownership"

_DECLARATION = re.compile(r"/\*((?:(?!\*/).)*)\*/\s*(?:[A-Za-z_][\w ]*\**\s*)\b(hurray_[a-z0-9_]+)\s*\(", re.S)


def _clean(text):
    """A comment's text on one line, without the leading " * " of each line."""
    return " ".join(re.sub(r"\n\s*\*(?!/)", " ", text).split())


def _statuses(text):
    text = text.strip().rstrip(".")
    return frozenset() if text == "none" else frozenset(s.strip() for s in text.split(","))


def _region(header):
    """The declarations of `header` (hurray.h, ...): its text between HURRAY_CDEF_BEGIN and _END."""
    with open(os.path.join(INCLUDE, header), encoding="utf-8") as f:
        return f.read().split("/* HURRAY_CDEF_BEGIN */")[1].split("/* HURRAY_CDEF_END */")[0]


def header_contracts(header):
    """function -> (statuses, ownership), from the comment right above each declaration."""
    region = _region(header)
    contracts = {}
    for comment, name in _DECLARATION.findall(region):
        text = _clean(comment)
        statuses = re.search(r"Statuses: (.*?\.)(?: Ownership:|$)", text)
        ownership = re.search(r"Ownership: (.*)$", text)
        assert statuses and ownership, f"{header}: the comment above {name} lacks Statuses: or Ownership:"
        contracts[name] = (_statuses(statuses.group(1)), ownership.group(1).strip())
    return contracts


def declared_functions(header):
    return set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", _region(header)))


def page_contracts(page):
    """function -> (statuses, ownership), from the page's table."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    where = os.path.basename(page)
    assert TABLE_HEADING in text, f"{where} has no section {TABLE_HEADING!r}"
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`hurray_"):
            continue
        name = cells[0].strip("`")
        assert name not in rows, f"{where} lists {name} twice"
        statuses = frozenset(s.strip("` ") for s in cells[1].split(",")) if cells[1] != "none" else frozenset()
        rows[name] = (statuses, " ".join(cells[2].split()))
    return rows


CASES = [(header, name) for header in PAIRS for name in sorted(declared_functions(header))]


@pytest.mark.parametrize("header", PAIRS)
def test_every_declared_function_has_its_contract_comment(header):
    assert set(header_contracts(header)) == declared_functions(header)


@pytest.mark.parametrize("header", PAIRS)
def test_every_status_named_exists(header):
    with open(STATUS_HEADER, encoding="utf-8") as f:
        known = set(re.findall(r"\b(HURRAY_ERROR_[A-Z_]+) = \d+", f.read()))
    for name, (statuses, _) in header_contracts(header).items():
        assert statuses <= known, f"{name}: {sorted(statuses - known)} are not statuses"


@pytest.mark.parametrize("header", PAIRS)
def test_page_lists_every_function_once_and_nothing_else(header):
    assert set(page_contracts(PAIRS[header])) == declared_functions(header)


@pytest.mark.parametrize("header,name", CASES, ids=[f"{h}:{n}" for h, n in CASES])
def test_page_and_header_agree(header, name):
    declared = header_contracts(header)[name]
    page = page_contracts(PAIRS[header])[name]
    assert page[0] == declared[0], f"{name}: statuses differ: page {sorted(page[0])}, header {sorted(declared[0])}"
    assert page[1] == declared[1], f"{name}: ownership differs: page {page[1]!r}, header {declared[1]!r}"


@pytest.mark.parametrize("header,row,dropped", [
    ("hurray.h", "| `hurray_buffer_list_get` | `HURRAY_ERROR_NULL_ARGUMENT`, `HURRAY_ERROR_OUT_OF_RANGE` |",
     "| `hurray_buffer_list_get` | `HURRAY_ERROR_NULL_ARGUMENT` |"),
    ("hurray_io.h", "| `hurray_reader_name` | `HURRAY_ERROR_NULL_ARGUMENT`, `HURRAY_ERROR_OUT_OF_RANGE` |",
     "| `hurray_reader_name` | `HURRAY_ERROR_NULL_ARGUMENT` |"),
    ("hurray_gguf.h", "| `hurray_gguf_index_kv` | `HURRAY_ERROR_NULL_ARGUMENT`, `HURRAY_ERROR_OUT_OF_RANGE` |",
     "| `hurray_gguf_index_kv` | `HURRAY_ERROR_NULL_ARGUMENT` |"),
])
def test_checker_notices_a_difference(tmp_path, header, row, dropped):
    """The comparison above can fail: a page with one status dropped is caught."""
    with open(PAIRS[header], encoding="utf-8") as f:
        text = f.read()
    broken = text.replace(row, dropped)
    assert broken != text
    page = tmp_path / os.path.basename(PAIRS[header])
    page.write_text(broken, encoding="utf-8")
    name = row.split("`")[1]
    assert page_contracts(str(page))[name][0] != header_contracts(header)[name][0]
