"""hurray.nodes: the nodes of a version-2 descriptor (a graph of nodes, ADR-054).

Build a tree of them and hand its root to ``hurray.Descriptor.graph``; read
a decoded one back from ``Descriptor.nodes``. They live in
hurray/core/nodes.py; this module gives their public names.
"""
from .core.nodes import Bits, Constant, Gather, Ggml, Node, Step, Stored, Words

__all__ = ["Bits", "Constant", "Gather", "Ggml", "Node", "Step", "Stored", "Words"]
