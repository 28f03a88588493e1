"""hurray.pickling.unpickle_tensor: the name every pickle of a Tensor carries.

Pickling lives in hurray/bridges/pickling.py; this module keeps the
reconstructor where every pickle ever written looks for it (its __module__
is this module's name), and the encoding version the pickles carry.
"""
from .bridges.pickling import ENCODING_VERSION, unpickle_tensor

__all__ = ["ENCODING_VERSION", "unpickle_tensor"]
