"""The cffi build script for hurray._ffi: the cdef is derived from hurray.h, never kept by hand.

Only the text between the HURRAY_CDEF_BEGIN and HURRAY_CDEF_END markers is
read, with its comments removed, so the header stays the one source of truth.
"""
import os
import re

from cffi import FFI

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "hurray.h")


def cdef_from_header(text):
    """Return the cffi declarations found between the header's markers."""
    begin = text.index("/* HURRAY_CDEF_BEGIN */") + len("/* HURRAY_CDEF_BEGIN */")
    end = text.index("/* HURRAY_CDEF_END */")
    body = text[begin:end]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return re.sub(r"//[^\n]*", "", body)


ffibuilder = FFI()
with open(HEADER, encoding="utf-8") as f:
    ffibuilder.cdef(cdef_from_header(f.read()))
ffibuilder.set_source("hurray._ffi", '#include "hurray.h"')
