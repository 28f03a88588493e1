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


# ---- the performance page's plot (bench/plot.py) -------------------------

SVG = "{http://www.w3.org/2000/svg}"


def _bench_module(name, monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))  # run.py imports its sibling modules
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def plot(monkeypatch):
    return _bench_module("plot", monkeypatch)


def _texts(chart):
    return [t.text for t in ET.fromstring(chart).iter(f"{SVG}text")]


def assert_nothing_clipped(chart):
    """Every rectangle, line and (at a generous 0.62 em per character) every text lies inside the viewBox."""
    root = ET.fromstring(chart)
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    for rect in root.iter(f"{SVG}rect"):
        x, y, w, h = (float(rect.get(k, 0)) for k in ("x", "y", "width", "height"))
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height, f"rect outside: {rect.attrib}"
    for text in root.iter(f"{SVG}text"):
        x, y, size = float(text.get("x")), float(text.get("y")), float(text.get("font-size"))
        extent = 0.62 * size * len(text.text or "")
        left = {"start": x, "middle": x - extent / 2, "end": x - extent}[text.get("text-anchor", "start")]
        assert 0 <= left and left + extent <= width, f"text {text.text!r} runs off the plot ({left:.0f}..{left + extent:.0f})"
        assert size <= y <= height, f"text {text.text!r} above or below the plot"


def test_bench_chart_escapes_case_names(plot):
    name = "cffi: f(d, &out) < g\"'"
    chart = plot.draw([plot.Row("C", name, 10.0, "ns", "hurray"), plot.Row("C", "from_hurray, x", 5.0, "ns", "peer")])
    check_svg(chart.encode())
    assert name in _texts(chart)


def test_plot_draws_every_group_it_is_given(plot):
    """Groups no one told the plot about (a dequantization panel, a rate) get a panel each."""
    rows = [
        plot.Row("exchange", "np.from_dlpack(a)", 227, "ns", "baseline"),
        plot.Row("exchange", "torch.from_dlpack(tensor)", 5207, "ns", "peer"),
        plot.Row("exchange", "hurray.from_numpy(a)", 318, "ns", "hurray"),
        plot.Row("files", "save: hurray.save", 0.1, "s", "hurray"),
        plot.Row("dequantization", "Q4_0, 1 Mi elements", 3.5, "GB/s", "hurray"),
        plot.Row("dequantization", "gguf.quants.dequantize, the same", 0.8, "GB/s", "peer"),
    ]
    chart = plot.draw(rows)
    check_svg(chart.encode())
    texts = _texts(chart)
    for group in ("exchange", "files", "dequantization"):
        assert group in texts
    assert "time per call, lower is better (log scale)" in texts
    assert "rate, higher is better (log scale)" in texts
    assert any("lower is better" in t for t in texts[:3]), "the title block says lower is better"
    for _, legend in plot.KINDS.values():
        assert legend in texts
    for value in ("227 ns", "5.21 µs", "100 ms", "3.5 GB/s"):
        assert value in texts
    assert_nothing_clipped(chart)


def test_plot_wraps_long_labels_and_clips_nothing(plot):
    long = "exchange through a capsule, 3 buffers: hurray.from_hurray(producer of affine int8 64x64)"
    chart = plot.draw([plot.Row("exchange", long, 599, "ns", "hurray"),
                       plot.Row("exchange", "x" * 200, 1e9, "ns", "peer")])
    texts = _texts(chart)
    assert long not in texts and "exchange through a capsule, 3 buffers:" in texts
    assert_nothing_clipped(chart)


def test_plot_refuses_rows_it_cannot_draw(plot):
    with pytest.raises(ValueError, match="kind"):
        plot.Row("C", "x", 1.0, "ns", "ours")
    with pytest.raises(ValueError, match="unit"):
        plot.Row("C", "x", 1.0, "furlongs", "hurray")
    with pytest.raises(ValueError, match="positive"):
        plot.Row("C", "x", 0.0, "ns", "hurray")
    with pytest.raises(ValueError, match="mixes times and rates"):
        plot.draw([plot.Row("C", "x", 1.0, "ns", "hurray"), plot.Row("C", "y", 1.0, "GB/s", "hurray")])
    with pytest.raises(ValueError, match="no rows"):
        plot.draw([])


def test_the_clipping_check_can_fail():
    with pytest.raises(AssertionError, match="runs off"):
        assert_nothing_clipped('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50">'
                               '<text x="90" y="20" font-size="12">xchange through a capsule</text></svg>')


def test_the_site_plot_is_drawn_from_the_saved_results(plot, tmp_path):
    """docs/_static/bench.svg is what bench/plot.py draws from docs/performance.json, every row of
    which is on the page, and every group of the page's tables has a panel."""
    rows = plot.load(plot.RESULTS)
    with open(plot.CHART, encoding="utf-8") as f:
        assert f.read() == plot.draw(rows), "run: .venv/bin/python bench/plot.py"
    with open(os.path.join(DOCS, "performance.md"), encoding="utf-8") as f:
        page = f.read().replace("`", "")
    missing = [r.label for r in rows if r.label not in page]
    assert not missing, f"rows in docs/performance.json that docs/performance.md does not show: {missing}"
    assert {"exchange", "C", "files"} <= {r.group.split(":")[0] for r in rows}
    assert_nothing_clipped(plot.draw(rows))
    out = tmp_path / "again.svg"
    assert plot.main(["--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == plot.draw(rows)


def test_bench_rows_come_from_every_table(monkeypatch):
    """run.py hands the plot the Python, pickle, C and file rows, each file row with a kind."""
    run = _bench_module("run", monkeypatch)
    files = ("| case | seconds | GB/s |\n|---|---:|---:|\n| save: hurray.save (x) | 0.10 | 2.6 |\n"
             "| save: np.save, one file per array | 0.09 | 2.9 |\n"
             "| save (for the record): raw write of the bytes | 0.17 | 1.5 |\n\n"
             "| target | measured | limit | met |\n|---|---:|---:|---|\n| hurray.save / np.save | 1.1 | 1.0 | NO |\n")
    rows = run.plot_rows({run.BASELINE: 227.0, "torch.from_dlpack(tensor)": 5207.0, run.FROM_NUMPY: 318.0},
                         {"dlmanaged_tensor_baseline": 8.7, "decode_destroy_plain": 10.3},
                         {"pickle 5 out-of-band, numpy 64 MiB": 8227.0, "pickle 5 out-of-band, Tensor 64 MiB": 3910.0},
                         files)
    kinds = {(r.group, r.label): (r.kind, r.value, r.unit) for r in rows}
    assert kinds[(run.EXCHANGE, run.BASELINE)] == ("baseline", 227.0, "ns")
    assert kinds[(run.EXCHANGE, "torch.from_dlpack(tensor)")][0] == "peer"
    assert kinds[(run.C_CALLS, "dlmanaged_tensor_baseline")][0] == "baseline"
    assert kinds[(run.PROCESSES, "pickle 5 out-of-band, Tensor 64 MiB")][0] == "hurray"
    assert kinds[(run.FILES, "save: hurray.save (x)")] == ("hurray", 0.10, "s")
    assert kinds[(run.FILES, "save: np.save, one file per array")][0] == "peer"
    assert kinds[(run.FILES, "save (for the record): raw write of the bytes")][0] == "baseline"
    assert len(rows) == 10, "the target table is not plotted"
