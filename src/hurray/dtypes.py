"""hurray.dtypes, the name the docs use for the element-type table (layer 1).

The table lives in hurray/core/dtypes.py; this module gives its public names
under the old name too.
"""
from .core.dtypes import *  # noqa: F401,F403
from .core.dtypes import __all__ as __all__
