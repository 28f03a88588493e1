"""The layer-7 C consumer of docs/cookbook/layer-7-c-ffi.md, built for tests that hand it capsules.

The page's ``<!-- c: consumer consumer_so -->`` block is the consumer a C
user copies; the tests compile exactly that text (one source of truth), with
the flags ``python -m hurray --cflags --libs`` prints, and call it through
ctypes. ``describe(capsule)`` is what it reports of a live capsule;
``buffer_addresses(capsule)`` reads, through hurray-ffi, where the capsule's
buffers point (the evidence that nothing was copied).
"""
import ctypes
import functools
import re
import tempfile
from pathlib import Path

from .cbuild import CC, ROOT, hurray_flags, run_checked

PAGE = ROOT / "docs" / "cookbook" / "layer-7-c-ffi.md"
BLOCK = re.compile(r"<!-- c: consumer consumer_so -->\s*\n```c\n(?P<source>.*?)\n```", re.DOTALL)

_api = ctypes.PyDLL(None)  # private function objects: argtypes of our own
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_get_context = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyCapsule_GetContext", _api))


@functools.lru_cache(maxsize=None)
def consumer():
    """The compiled consumer (ctypes.CDLL), built once per session."""
    match = BLOCK.search(PAGE.read_text(encoding="utf-8"))
    assert match, f"{PAGE} has no consumer block (<!-- c: consumer consumer_so -->)"
    workdir = Path(tempfile.mkdtemp(prefix="hurray-layer7-"))
    source = workdir / "consumer.c"
    source.write_text(match.group("source") + "\n", encoding="utf-8")
    so = workdir / "consumer.so"
    run_checked([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", str(source), "-o", str(so),
                 *hurray_flags("--cflags", "--libs")], timeout=120)
    lib = ctypes.CDLL(str(so))
    lib.describe_capsule.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.describe_capsule.restype = ctypes.c_int
    return lib


def handles(capsule):
    """(HurrayBufferList, HurrayTensorContext) addresses of a live capsule."""
    return _get_pointer(capsule, b"hurray_tensor"), _get_context(capsule)


def describe(capsule):
    """(status, text) of describe_capsule: 0 and what the consumer read, or -1 and why it refused."""
    text = ctypes.create_string_buffer(4096)
    status = consumer().describe_capsule(*handles(capsule), text, len(text))
    return status, text.value.decode()


@functools.lru_cache(maxsize=None)
def _library():
    import hurray

    lib = ctypes.CDLL(hurray.get_library())
    lib.hurray_buffer_list_get.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_buffer_data.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_uint64)]
    lib.hurray_buffer_list_len.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
    return lib


def buffer_addresses(capsule):
    """[(address, nbytes)] of the capsule's buffers, as hurray_buffer_data gives them."""
    lib = _library()
    pointer, _ = handles(capsule)
    count = ctypes.c_uint64()
    assert lib.hurray_buffer_list_len(pointer, ctypes.byref(count)) == 0
    spans = []
    for i in range(count.value):
        buf, data, size = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint64()
        assert lib.hurray_buffer_list_get(pointer, i, ctypes.byref(buf)) == 0
        assert lib.hurray_buffer_data(buf, ctypes.byref(data), ctypes.byref(size)) == 0
        spans.append((data.value or 0, size.value))
    return spans
