"""Every image the site ships parses: a broken file shows as a broken image in a browser.

The site ships docs/_static/* and every image a page references. SVG must be
well-formed XML with an <svg> root; PNG must have its signature and intact
chunk CRCs. Any other image type fails here until this test learns to read it.
"""
import importlib.util
import os
import re
import struct
import xml.etree.ElementTree as ET
import zlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
STATIC = os.path.join(DOCS, "_static")
IMAGE_SUFFIXES = (".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp")
SVG_ROOT = "{http://www.w3.org/2000/svg}svg"

# Markdown images, HTML <img>, and MyST {image}/{figure} directives.
_REFERENCES = (
    re.compile(r"!\[[^\]]*\]\(([^)\s]+)"),
    re.compile(r"<img[^>]*\ssrc=[\"']([^\"']+)"),
    re.compile(r"^[`:]{3,}\{(?:image|figure)\}\s+(\S+)", re.MULTILINE),
)


def _pages():
    for folder, dirs, files in os.walk(DOCS):
        dirs[:] = [d for d in dirs if not d.startswith("_")]
        for name in files:
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def referenced_images():
    """(page, path) for every image reference in a page."""
    found = []
    for page in _pages():
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for pattern in _REFERENCES:
            for target in pattern.findall(text):
                found.append((page, os.path.normpath(os.path.join(os.path.dirname(page), target))))
    return found


def shipped_images():
    static = [os.path.join(STATIC, n) for n in sorted(os.listdir(STATIC)) if n.lower().endswith(IMAGE_SUFFIXES)]
    return sorted(set(static) | {path for _, path in referenced_images()})


def check_svg(data):
    root = ET.fromstring(data)  # raises ParseError on an unescaped '&' or '<'
    assert root.tag == SVG_ROOT, f"root element is {root.tag}, not an SVG root"


def check_png(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, kinds = 8, []
    while pos < len(data):
        assert pos + 12 <= len(data), "truncated chunk"
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        assert len(body) == length, f"truncated {kind!r} chunk"
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r} chunk"
        kinds.append(kind)
        pos += 12 + length
    assert kinds and kinds[0] == b"IHDR" and kinds[-1] == b"IEND", "PNG chunks out of order"


CHECKS = {".svg": check_svg, ".png": check_png}


def test_pages_reference_images_that_exist():
    refs = referenced_images()
    assert refs, "the performance page's plot should be found as a reference"
    for page, path in refs:
        assert os.path.isfile(path), f"{os.path.relpath(page, ROOT)} references missing {os.path.relpath(path, ROOT)}"


@pytest.mark.parametrize("path", shipped_images(), ids=lambda p: os.path.relpath(p, ROOT))
def test_shipped_image_is_well_formed(path):
    suffix = os.path.splitext(path)[1].lower()
    assert suffix in CHECKS, f"no well-formedness check for {suffix} images; add one"
    with open(path, "rb") as f:
        CHECKS[suffix](f.read())


def test_checks_reject_what_a_browser_rejects():
    with pytest.raises(ET.ParseError):
        check_svg(b'<svg xmlns="http://www.w3.org/2000/svg"><text>f(d, &out)</text></svg>')
    with pytest.raises(AssertionError):
        check_svg(b"<html/>")
    with pytest.raises(AssertionError):
        check_png(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x00IEND\x00\x00\x00\x00")


def test_bench_chart_escapes_case_names(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))  # run.py imports its sibling modules
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "bench", "run.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    name = "cffi: f(d, &out) < g\"'"
    chart = bench.svg({name: 10.0, "from_hurray, x": 5.0})
    check_svg(chart.encode())
    texts = [t.text for t in ET.fromstring(chart).iter("{http://www.w3.org/2000/svg}text")]
    assert name in texts
