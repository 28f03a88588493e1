"""The cffi build script for hurray._ffi: the cdef is derived from the headers, never kept by hand.

Only the text between the HURRAY_CDEF_BEGIN and HURRAY_CDEF_END markers of
hurray.h and of hurray_io.h (which includes hurray.h: each region is read
once) is used, with its comments removed, so the headers stay the one
source of truth. The only declarations kept here are the two extern
"Python" callbacks through which hurray-io frames reach Python file objects.
"""
import os
import re

from cffi import FFI

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
HEADERS = ("hurray.h", "hurray_io.h", "hurray_gguf.h")  # in include order

# hurray-io frames over Python file objects (src/hurray/io/frames.py): C calls
# these with the stream handle it was given; they match HurrayWriteFn and
# HurrayReadFn of hurray_io.h.
PYTHON_CALLBACKS = """
extern "Python" int hurray_py_frame_write(void *stream, const void *data, uint64_t len);
extern "Python" int hurray_py_frame_read(void *stream, void *data, uint64_t len, uint64_t *out_read);
"""


def cdef_from_header(text):
    """Return the cffi declarations found between the header's markers."""
    begin = text.index("/* HURRAY_CDEF_BEGIN */") + len("/* HURRAY_CDEF_BEGIN */")
    end = text.index("/* HURRAY_CDEF_END */")
    body = text[begin:end]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return re.sub(r"//[^\n]*", "", body)


def cdef_from_headers():
    """The declarations of every header, in include order."""
    parts = []
    for name in HEADERS:
        with open(os.path.join(INCLUDE, name), encoding="utf-8") as f:
            parts.append(cdef_from_header(f.read()))
    return "\n".join(parts)


ffibuilder = FFI()
ffibuilder.cdef(cdef_from_headers() + PYTHON_CALLBACKS)
ffibuilder.set_source("hurray._ffi", '#include "hurray_io.h"\n#include "hurray_gguf.h"')
