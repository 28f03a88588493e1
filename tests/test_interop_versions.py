"""Contexts of another ABI version, or no context at all, are refused by every peer.

ADR-034 section 4: hurray_tensor_context_abi_version works on a context of
any version and is called first; a consumer refuses a version it does not
read, and a pointer without the magic, before reading anything else. The
forged contexts sit behind guard pages in a child process
(tests/peers/forged.py), so reading one byte past the 8-byte header, or
touching the capsule's buffer list before the version is judged, crashes
the child and fails every test here.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import matrix, session  # noqa: E402

FORGED_SCRIPT = Path(__file__).resolve().parent / "peers" / "forged.py"


@pytest.fixture(scope="module")
def outcome():
    import hurray

    result = subprocess.run(
        [sys.executable, str(FORGED_SCRIPT), str(session.c_peer_module().__file__),
         str(session.c_peer_static_path()), hurray.get_library(), session.rust_peer_path()],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, (
        f"the forged-context child exited with {result.returncode} (a negative code is a signal: "
        f"something read past a header or touched the list)\n{result.stderr}"
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("consumer", matrix.CONSUMERS_OF_FORGED)
@pytest.mark.parametrize("forged_id,status", [(f, s) for f, _, s in matrix.FORGED], ids=[f for f, _, _ in matrix.FORGED])
def test_forged_context_is_refused(outcome, forged_id, status, consumer):
    seen = outcome["refusals"][forged_id][consumer]
    assert not seen["accepted"], f"{consumer} accepted a {forged_id} context"
    assert seen["status"] == status, seen
    assert seen["unchanged"], f"{consumer} changed a capsule it refused: {seen}"


def test_hurray_python_names_the_refusal(outcome):
    refusals = outcome["refusals"]
    for forged_id, _, status in matrix.FORGED:
        seen = refusals[forged_id]["hurray-python"]
        expected = "AbiVersionError" if status == matrix.ABI_VERSION else "NotAContextError"
        assert seen["error"] == expected, seen
    for version in ("3", "6"):
        assert f"version {version}" in refusals[f"version_{version}"]["hurray-python"]["message"]


@pytest.mark.parametrize("consumer", matrix.CONSUMERS_OF_FORGED)
def test_capsule_without_context_is_refused(outcome, consumer):
    seen = outcome["refusals"]["null_context"][consumer]
    assert not seen["accepted"] and seen["status"] != 0 and seen["unchanged"], seen


def test_the_header_is_readable_at_any_version(outcome):
    """hurray_tensor_context_abi_version reports 3 and 6 (the consumer judges), refuses no magic."""
    ok = 0
    assert outcome["headers"] == {
        "version_3": [ok, 3],
        "version_6": [ok, 6],
        "no_magic": [matrix.NOT_A_CONTEXT, 12345],  # out untouched on failure
        "dead_magic": [matrix.NOT_A_CONTEXT, 12345],
    }
