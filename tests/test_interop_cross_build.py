"""A peer with its own static copy of hurray-ffi interoperates with the package's libhurray.

c_peer_static compiles native/src/*.c into itself with -fvisibility=hidden:
it neither links the package's libhurray nor exports a hurray_* symbol, so
every handle it makes comes from its own copy and every handle it reads is
read by its own copy. Same ABI version, same sources: the frozen context
header (ADR-034 section 4) lets each copy read the other's contexts.
"""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import cases, matrix, session  # noqa: E402
from peers.checks import run_pair  # noqa: E402


def _dynamic_symbols(path):
    result = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return {line.split()[-1] for line in result.stdout.splitlines() if line.strip()}


def _needed(path):
    result = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if "(NEEDED)" in line]


def test_static_peer_hides_its_copy_and_does_not_link_libhurray():
    path = session.c_peer_static_path()
    exported = _dynamic_symbols(path)
    assert "PyInit_c_peer_static" in exported
    leaked = sorted(name for name in exported if name.startswith("hurray"))
    assert leaked == [], f"the static copy exports {leaked}"
    assert not [line for line in _needed(path) if "libhurray" in line]


def test_static_peer_calls_its_own_copy():
    """Both builds report ABI 5, through different functions: the static one's own."""
    linked, static = session.c_peer_module(), session.c_peer_static_module()
    assert linked.linked_abi_version() == static.linked_abi_version() == 5
    assert static.HEADER_ABI_VERSION == linked.HEADER_ABI_VERSION == 5
    assert linked.library_address() != static.library_address()


@pytest.mark.parametrize("case_id", matrix.CASE_IDS)
@pytest.mark.parametrize("producer,consumer", matrix.CROSS_PAIRS, ids=[f"{p}->{c}" for p, c in matrix.CROSS_PAIRS])
def test_cross_build_pair(producer, consumer, case_id):
    peers = dict(session.peers())
    peers[matrix.STATIC_PEER] = session.static_peer()
    run_pair(peers[producer], peers[consumer], cases.BY_ID[case_id])
