# Types of hurray._protocol (src/hurray/_ext/_protocol.c), the native protocol's C side.
from typing import Any

CAPSULE_NAME: str
USED_CAPSULE_NAME: str
C_ABI_VERSION: int
C_ABI_MIN_VERSION: int
CapsuleType: type

class Holder: ...

def export(
    descriptor_bytes: bytes, spans: tuple[tuple[int, int], ...], owner: Any, abi_version: int = ..., readonly: bool = ..., /
) -> Any: ...
def consume(
    capsule: Any, /
) -> tuple[int, bytes, tuple[tuple[int, int], ...], Holder, tuple[int, Any], bool]: ...
def _owner_counters() -> tuple[int, int]: ...
