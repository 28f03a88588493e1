"""Sphinx configuration for the Hurray site (built from docs/, configured here).

`make docs` runs: sphinx-build -n -W --keep-going -b html -c . docs _build/html
"""
project = "Hurray"
author = "the Hurray contributors"
copyright = "2026, the Hurray contributors"

# sphinx_copybutton: a copy button on every code block (the docs extra).
extensions = ["myst_parser", "sphinx_copybutton"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Code blocks are C or Python unless a fence says otherwise.
highlight_language = "none"

html_theme = "furo"
html_title = "Hurray"
html_static_path = ["docs/_static"]
html_css_files = ["hurray.css"]

# Every reference must resolve (-n); the C standard types the C domain meets
# in signatures are not ours to document.
nitpicky = True
nitpick_ignore = [
    ("c:identifier", name)
    for name in (
        "uint8_t", "uint16_t", "uint32_t", "uint64_t",
        "int8_t", "int16_t", "int32_t", "int64_t",
        "size_t", "PyObject",
    )
]

# The copy button copies a block as it stands; output blocks (```text) are
# what a program prints, not something to paste, so they get none.
copybutton_selector = "div.highlight:not(.highlight-text) pre"
