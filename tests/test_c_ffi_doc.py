"""docs/impl/c-ffi.md agrees with the comments of hurray.h, function by function.

Every function hurray.h declares carries a comment with a "Statuses:" line
(every non-OK status it can return, or "none") and an "Ownership:" line. The
reference page repeats both in its table "Every function"; this test holds
the two copies against each other, so neither can drift: a function added to
the header without a row, a row for a function that is gone, a status list
or an ownership that differs, each fails here.
"""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "native", "include", "hurray.h")
PAGE = os.path.join(ROOT, "docs", "impl", "c-ffi.md")
TABLE_HEADING = "## Every function: statuses and ownership"

_DECLARATION = re.compile(r"/\*((?:(?!\*/).)*)\*/\s*(?:[A-Za-z_][\w ]*\**\s*)\b(hurray_[a-z0-9_]+)\s*\(", re.S)


def _clean(text):
    """A comment's text on one line, without the leading " * " of each line."""
    return " ".join(re.sub(r"\n\s*\*(?!/)", " ", text).split())


def _statuses(text):
    text = text.strip().rstrip(".")
    return frozenset() if text == "none" else frozenset(s.strip() for s in text.split(","))


def header_contracts():
    """function -> (statuses, ownership), from the comment right above each declaration."""
    with open(HEADER, encoding="utf-8") as f:
        region = f.read().split("/* HURRAY_CDEF_BEGIN */")[1].split("/* HURRAY_CDEF_END */")[0]
    contracts = {}
    for comment, name in _DECLARATION.findall(region):
        text = _clean(comment)
        statuses = re.search(r"Statuses: (.*?\.)(?: Ownership:|$)", text)
        ownership = re.search(r"Ownership: (.*)$", text)
        assert statuses and ownership, f"hurray.h: the comment above {name} lacks Statuses: or Ownership:"
        contracts[name] = (_statuses(statuses.group(1)), ownership.group(1).strip())
    return contracts


def declared_functions():
    with open(HEADER, encoding="utf-8") as f:
        region = f.read().split("/* HURRAY_CDEF_BEGIN */")[1].split("/* HURRAY_CDEF_END */")[0]
    return set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", region))


def page_contracts():
    """function -> (statuses, ownership), from the page's table."""
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    assert TABLE_HEADING in text, f"c-ffi.md has no section {TABLE_HEADING!r}"
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`hurray_"):
            continue
        name = cells[0].strip("`")
        assert name not in rows, f"c-ffi.md lists {name} twice"
        statuses = frozenset(s.strip("` ") for s in cells[1].split(",")) if cells[1] != "none" else frozenset()
        rows[name] = (statuses, " ".join(cells[2].split()))
    return rows


def test_every_declared_function_has_its_contract_comment():
    assert set(header_contracts()) == declared_functions()


def test_every_status_named_exists():
    with open(HEADER, encoding="utf-8") as f:
        known = set(re.findall(r"\b(HURRAY_ERROR_[A-Z_]+) = \d+", f.read()))
    for name, (statuses, _) in header_contracts().items():
        assert statuses <= known, f"{name}: {sorted(statuses - known)} are not statuses"


def test_page_lists_every_function_once_and_nothing_else():
    assert set(page_contracts()) == declared_functions()


@pytest.mark.parametrize("name", sorted(declared_functions()))
def test_page_and_header_agree(name):
    header = header_contracts()[name]
    page = page_contracts()[name]
    assert page[0] == header[0], f"{name}: statuses differ: page {sorted(page[0])}, header {sorted(header[0])}"
    assert page[1] == header[1], f"{name}: ownership differs: page {page[1]!r}, header {header[1]!r}"


def test_checker_notices_a_difference(tmp_path, monkeypatch):
    """The comparison above can fail: a page with one status dropped is caught."""
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    broken = text.replace("| `hurray_buffer_list_get` | `HURRAY_ERROR_NULL_ARGUMENT`, `HURRAY_ERROR_OUT_OF_RANGE` |",
                          "| `hurray_buffer_list_get` | `HURRAY_ERROR_NULL_ARGUMENT` |")
    assert broken != text
    page = tmp_path / "c-ffi.md"
    page.write_text(broken, encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "PAGE", str(page))
    assert page_contracts()["hurray_buffer_list_get"][0] != header_contracts()["hurray_buffer_list_get"][0]
