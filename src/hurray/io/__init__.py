"""hurray-io (layer 5): named tensors in files and as frames on byte streams.

The format and every check on it live in C (libhurray, hurray_io.h); this
package turns the C reader's and writer's (context, buffer list) pairs into
:class:`hurray.Tensor` objects and back. See docs/impl/io-format.md.
"""
from .file import File, load
from .frames import read_frame, write_frame
from .writer import save

__all__ = ["File", "load", "read_frame", "save", "write_frame"]
