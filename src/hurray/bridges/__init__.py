"""Layer 6: a Tensor to and from the rest of Python, without copies.

numpy.py (from_numpy, np.asarray), protocol.py (the native protocol:
__hurray__ and from_hurray), dlpack.py (DLPack both ways), pickling.py
(pickle and copy, ADR-043/049) and dask.py (Dask's own serializer).
"""
