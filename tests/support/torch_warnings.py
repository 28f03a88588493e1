"""The warnings torch gives for its quantized tensors, which the quantization
tests use as a reference: `pytestmark = QUIET_TORCH` silences them in a module."""
import pytest

QUIET_TORCH = [
    pytest.mark.filterwarnings("ignore:.*quantized tensor creation.*:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*quantize_per_.*deprecated:UserWarning"),
]
