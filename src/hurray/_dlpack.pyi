# Types of hurray._dlpack (src/hurray/_ext/_dlpack.c), the DLPack bridge's C side.
from typing import Any

CapsuleType: type
DLPACK_MAJOR: int
DLPACK_MINOR: int

class Owner:
    readonly: bool
    versioned: bool

def export(
    owner: Any, data: int, code: int, bits: int, shape: Any, strides: Any, flags: int, versioned: bool, /
) -> Any: ...
def inspect(capsule: Any, /) -> Any: ...
def take(capsule: Any, managed: int, data: int, /) -> Owner: ...
def _owner_counters() -> tuple[int, int]: ...
