"""The performance page's plot, docs/_static/bench.svg, drawn from rows (no plotting dependency).

A row is one measured case: its group (a panel of the plot: "exchange", "C",
"files", "dequantization", whatever a bench module reports), a label, a
value with its unit, and its kind: "hurray" (a Hurray call), "peer" (another
library doing the same job) or "baseline" (the floor a target compares
Hurray with). Every group given gets a panel, in the order the rows first
name it, with a logarithmic axis of its own, so a slow peer does not flatten
the fast rows beside it. Times ("ns", "us", "ms", "s") are lower-is-better;
a rate ("GB/s") panel says it is higher-is-better.

`make bench` (bench/run.py) saves the rows of its run in docs/performance.json
and draws the plot; `python bench/plot.py` draws it again from that file.
"""
import argparse
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(ROOT, "docs", "performance.json")
CHART = os.path.join(ROOT, "docs", "_static", "bench.svg")

KINDS = {  # kind: (colour, legend text); Okabe-Ito colours, safe for colour-blind readers
    "hurray": ("#0072b2", "Hurray"),
    "peer": ("#e69f00", "another library doing the same job"),
    "baseline": ("#8c8c8c", "baseline: the floor a target compares Hurray with"),
}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
RATE_UNITS = {"GB/s": 1e9, "MB/s": 1e6}

# Geometry, in pixels: near the width of the page's text column, so the
# plot shows at about its own size. Labels are monospace (they are code), so
# their width is known without a font engine: CHAR_W per character.
WIDTH = 760
MARGIN = 12
LABEL_FONT = 11
CHAR_W = 6.82  # 0.62 em of an 11 px monospace font (0.6 em) with a little room
WRAP = 46  # characters per label line
LINE_H = 14
ROW_GAP = 6
BAR_H = 11
VALUE_W = 76  # room right of the longest bar for its value
LEGEND_CHAR_W = 7.44  # 0.62 em of 12 px sans-serif text: more than any common font needs
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"


@dataclass(frozen=True)
class Row:
    group: str
    label: str
    value: float
    unit: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"row {self.label!r}: kind {self.kind!r} is none of {sorted(KINDS)}")
        if self.unit not in TIME_UNITS and self.unit not in RATE_UNITS:
            raise ValueError(f"row {self.label!r}: unit {self.unit!r} is none of "
                             f"{sorted(TIME_UNITS) + sorted(RATE_UNITS)}")
        if not (self.value > 0 and math.isfinite(self.value)):
            raise ValueError(f"row {self.label!r}: a log axis needs a positive value, not {self.value!r}")

    @property
    def is_rate(self) -> bool:
        return self.unit in RATE_UNITS

    @property
    def base(self) -> float:
        """The value in seconds, or in bytes per second for a rate."""
        return self.value * (RATE_UNITS[self.unit] if self.is_rate else TIME_UNITS[self.unit])


def save(path, rows, **about):
    """Writes the rows (and what `about` says of the run) as JSON, one row per line."""
    head = json.dumps(about, ensure_ascii=False)[1:-1]
    lines = ",\n".join("  " + json.dumps(asdict(r), ensure_ascii=False) for r in rows)
    with open(path, "w", encoding="utf-8") as f:
        f.write("{" + (head + ", " if head else "") + '"rows": [\n' + lines + "\n]}\n")


def load(path):
    with open(path, encoding="utf-8") as f:
        return [Row(**r) for r in json.load(f)["rows"]]


def human(base, rate=False):
    """12.3 ns, 5.21 µs, 102 ms, 1.2 s; or 12.3 GB/s."""
    units = ((1e9, "GB/s"), (1e6, "MB/s"), (1.0, "B/s")) if rate else (
        (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
    for scale, name in units:
        if base >= scale * 0.9995 or scale == units[-1][0]:
            return f"{base / scale:.3g} {name}"
    raise AssertionError("unreachable")


def wrap(text, width=WRAP):
    """Lines of at most `width` characters, broken after spaces; a longer word is
    broken after its last '(' that fits (it is code), else its last '.' or '_', else cut."""
    lines, line = [], ""
    for word in re.findall(r"\S+\s*", text):
        while len(word.rstrip()) > width:
            if line:
                lines.append(line.rstrip())
                line = ""
            marks = [word.rfind(mark, width // 3, width) for mark in "(._"]
            cut = next((m + 1 for m in marks if m >= 0), width)
            lines.append(word[:cut])
            word = word[cut:]
        if line and len(line) + len(word.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += word
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


def groups(rows):
    """[(group, [rows])] in the order the rows first name each group."""
    found = {}
    for row in rows:
        found.setdefault(row.group, []).append(row)
    for name, members in found.items():
        if len({r.is_rate for r in members}) > 1:
            raise ValueError(f"group {name!r} mixes times and rates; give each its own group")
    return list(found.items())


def _decades(members):
    lo = math.floor(math.log10(min(r.base for r in members)))
    hi = math.ceil(math.log10(max(r.base for r in members)))
    return lo, max(hi, lo + 1)


def _text(x, y, content, size=12, anchor="start", weight=None, family=FONT, fill="#222"):
    extra = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-family="{family}" fill="{fill}" '
            f'text-anchor="{anchor}"{extra}>{escape(content)}</text>')


def draw(rows, title="Hurray benchmarks"):
    """The SVG of every group in `rows`, one panel each."""
    rows = list(rows)
    if not rows:
        raise ValueError("nothing to draw: no rows")
    panels = groups(rows)
    label_w = CHAR_W * max(len(line) for r in rows for line in wrap(r.label)) + 10
    x0 = MARGIN + label_w
    x1 = WIDTH - MARGIN - VALUE_W
    if x1 - x0 < 200:
        raise ValueError("labels too wide for the plot; shorten them or lower WRAP")
    parts = []
    y = MARGIN + 16
    parts.append(_text(MARGIN, y, title, size=17, weight="bold"))
    y += 20
    if any(not r.is_rate for r in rows):
        parts.append(_text(MARGIN, y, "Time per call: lower is better.", size=12, fill="#444"))
        y += 16
    parts.append(_text(MARGIN, y, "Each panel has a logarithmic axis of its own: compare bars within a panel.",
                       size=12, fill="#444"))
    y += 20
    x = MARGIN
    for kind, (colour, legend) in KINDS.items():
        if any(r.kind == kind for r in rows):
            item_w = 16 + LEGEND_CHAR_W * len(legend)
            if x > MARGIN and x + item_w > WIDTH - MARGIN:  # no room on this line: start the next
                x, y = MARGIN, y + 18
            parts.append(f'<rect x="{x}" y="{y - 9}" width="11" height="11" fill="{colour}"/>')
            parts.append(_text(x + 16, y, legend, size=12))
            x += item_w + 20
    y += 14
    for name, members in panels:
        y += 22
        rate = members[0].is_rate
        parts.append(_text(MARGIN, y, name, size=14, weight="bold"))
        y += 8
        lo, hi = _decades(members)

        def at(base, lo=lo, hi=hi):
            return x0 + (x1 - x0) * (math.log10(base) - lo) / (hi - lo)

        top = y
        heights = [len(wrap(r.label)) * LINE_H + ROW_GAP for r in members]
        bottom = top + sum(heights)
        for d in range(lo, hi + 1):  # decade gridlines, labelled below the panel
            gx = at(10.0 ** d)
            parts.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{bottom}" stroke="#dddddd"/>')
            parts.append(_text(gx, bottom + 13, human(10.0 ** d, rate), size=10, anchor="middle", fill="#555"))
        for row, h in zip(members, heights):
            colour = KINDS[row.kind][0]
            lines = wrap(row.label)
            text_top = y + ROW_GAP / 2 + LINE_H - 3
            for i, line in enumerate(lines):
                parts.append(_text(x0 - 8, text_top + i * LINE_H, line, size=LABEL_FONT, anchor="end",
                                   family=MONO))
            bar_y = y + h / 2 - BAR_H / 2
            end = max(at(row.base), x0 + 1.0)
            shown = human(row.base, rate)
            parts.append(f'<g><title>{escape(row.label)}: {escape(shown)} ({escape(row.kind)})</title>'
                         f'<rect x="{x0:.1f}" y="{bar_y:.1f}" width="{end - x0:.1f}" height="{BAR_H}" '
                         f'fill="{colour}"/></g>')
            parts.append(_text(end + 4, bar_y + BAR_H - 1.5, shown, size=11))
            y += h
        parts.append(f'<line x1="{x0}" y1="{top}" x2="{x0}" y2="{bottom}" stroke="#888888"/>')
        axis = ("rate, higher is better" if rate else "time per call, lower is better") + " (log scale)"
        parts.append(_text((x0 + x1) / 2, bottom + 27, axis, size=11, anchor="middle", fill="#555"))
        y = bottom + 30
    height = math.ceil(y + MARGIN)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img">')
    return "\n".join([head, f"<title>{escape(title)}</title>",
                      f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>', *parts, "</svg>"]) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=RESULTS, help="the rows, as make bench saved them")
    parser.add_argument("--out", default=CHART, help="the SVG to write")
    args = parser.parse_args(argv)
    chart = draw(load(args.results))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(chart)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
