"""A Tensor subclass that records each read of its _buffers: the C hot
paths serve only exact Tensors, so a subclass must reach Python, which
reads its state through its attributes (the tests check that it did)."""
import numpy as np

import hurray
from hurray.core.tensor import Tensor


class Watched(Tensor):
    __slots__ = ()
    reads: list = []

    @property
    def _buffers(self):
        Watched.reads.append(1)
        return Tensor.__dict__["_buffers"].__get__(self)


def watched_arange():
    """A Watched tensor over float32 0..5, and the list its reads go to (emptied)."""
    t = hurray.from_numpy(np.arange(6, dtype=np.float32))
    w = object.__new__(Watched)
    for name, value in (("_descriptor", t.descriptor), ("_buffers", t.buffers), ("_owner", t),
                        ("_readonly", False), ("_view", None)):
        Tensor.__dict__[name].__set__(w, value)
    del Watched.reads[:]
    return w, Watched.reads
