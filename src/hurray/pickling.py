"""hurray.pickling.unpickle_tensor: the name every pickle of a Tensor carries.

Pickling lives in hurray/bridges/pickling.py; this module keeps the
reconstructor where every pickle ever written looks for it (its __module__
is this module's name), and the encoding versions the pickles carry
(ENCODING_VERSION, version 1; ENCODING_VERSIONS, all this build reads).
"""
from .bridges.pickling import ENCODING_VERSION, ENCODING_VERSIONS, unpickle_tensor

__all__ = ["ENCODING_VERSION", "ENCODING_VERSIONS", "unpickle_tensor"]
