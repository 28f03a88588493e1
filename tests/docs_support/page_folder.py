"""Each page's blocks run in a folder of their own, in order, as a reader runs them.

conftest.py hands ``setup`` and ``teardown`` to sybil: before a page's first
block, a fresh temporary folder becomes the working directory, so a Python
block that writes ``model.hurray`` or loads ``./consumer.so`` means the same
file a C or Rust block of that page builds, writes or reads there (the C and
Rust runners take the folder from the namespace). ``__name__`` is
``"__main__"``, as in a script the page's blocks are pasted into, so a
block may guard what only a main module does (starting spawn workers).
tests/test_docs_pages.py runs each page again that way, as one file.
"""
import os
import shutil
import tempfile

FOLDER = "__page_folder__"
_PREVIOUS = "__page_previous_cwd__"


def setup(namespace: dict) -> None:
    folder = tempfile.mkdtemp(prefix="hurray-docs-page-")
    namespace[FOLDER] = folder
    namespace[_PREVIOUS] = os.getcwd()
    namespace["__name__"] = "__main__"
    os.chdir(folder)


def teardown(namespace: dict) -> None:
    os.chdir(namespace.pop(_PREVIOUS))
    shutil.rmtree(namespace.pop(FOLDER), ignore_errors=True)


def folder(namespace: dict) -> str:
    """The page's folder; an error naming the cause when sybil was set up without page_folder."""
    try:
        return namespace[FOLDER]
    except KeyError:
        raise RuntimeError("the page has no working folder: give sybil page_folder.setup and "
                           "page_folder.teardown (see conftest.py)") from None
