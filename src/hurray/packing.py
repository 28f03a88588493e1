"""hurray.packing, the name the docs use for sub-byte packing (layer 2).

The functions live in hurray/core/packing.py; this module gives its public
names under the old name too.
"""
from .core.packing import *  # noqa: F401,F403
from .core.packing import __all__ as __all__
