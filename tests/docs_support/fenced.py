"""What the C and Rust block runners share: walking a page's blocks of one
language, and reading the ```text block that holds a program's expected output."""
import os
import re
from typing import Iterator, NamedTuple, Optional

from sybil import Document, Region
from sybil.parsers.markdown.lexers import FENCE


class Block(NamedTuple):
    region: Region
    source: str
    line: int  # the 1-based line of the page where the source starts
    path: str  # the page, relative to the root


def blocks(document: Document, lexers, language: str, root: str) -> Iterator[Block]:
    """Each region `lexers` find in `document` whose language is `language`."""
    path = os.path.relpath(document.path, root)
    for region in lexers(document):
        if region.lexemes.get("arguments") != language:
            continue
        source = region.lexemes["source"]
        line = document.text.count("\n", 0, region.start + source.offset) + 1
        yield Block(region, str(source), line, path)


def following_text(text: str, after: int) -> tuple[Optional[str], Optional[str]]:
    """(content, None) of the fenced block after offset `after` when it is ```text;
    else (None, why not)."""
    opening = FENCE.search(text, after)
    if opening is None or opening.group("trailing").strip() != "text":
        return None, "not followed by a ```text block"
    closing = re.compile(r"^" + re.escape(opening.group("prefix")) + opening.group("fence") + r"[ \t]*$",
                         re.MULTILINE).search(text, opening.end())
    if closing is None:
        return None, "the ```text block after it is not closed"
    return text[opening.end() + 1:closing.start()], None
