"""Layer 6: a Tensor to and from the rest of Python, without copies.

numpy.py (from_numpy, np.asarray), protocol.py (the native protocol:
__hurray__ and from_hurray), dlpack.py (DLPack both ways), pickling.py
(pickle and copy, ADR-043/049), dask.py (Dask's own serializer), and the
frameworks' quantized tensors (ADR-061): torch.py, torchao.py,
bitsandbytes.py and mlx.py, imported on call, sharing _graphs.py.
"""
