"""bitsandbytes' FP4 reference with code 8 as its state's own table holds it.

bnb's CPU kernels disagree on one sign (ADR-061): FP4's code 8 is +0.0 in the
table a QuantState carries (its ``code``, saved as ``quant_map``), and the
AVX-512 kernel and the Python fallback give +0.0; the scalar C kernel -- on
every CPU without AVX-512, and for I % 16 != 0 on one with it -- gives -0.0.
Hurray reads the stored table, so it gives +0.0. A test comparing with
``dequantize_4bit`` takes its result through this function: every element
stays as bnb computed it, except that a zero at code 8 is +0.0, and that
code 8 is a zero on every path is checked, not assumed.
"""
from typing import Any


def state_table_zero(reference: Any, packed: Any) -> Any:
    """`reference` (bnb's dequantization, a torch tensor) with +0.0 wherever the code was 8.

    `packed` is the weight's bytes as bnb stores them: two codes a byte, high nibble first."""
    import torch

    flat = packed.reshape(-1).view(torch.uint8)
    codes = torch.stack([flat >> 4, flat & 15], dim=1).reshape(-1)[: reference.numel()].reshape(reference.shape)
    at8 = codes == 8
    assert bool((reference[at8] == 0).all()), "bnb gave code 8 a value other than zero"
    return torch.where(at8, torch.zeros_like(reference), reference)
