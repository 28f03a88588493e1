"""The Rust crate's own tests under valgrind memcheck: every handle the
binding wraps is destroyed exactly once (no invalid free, no read of a
destroyed handle) and none is leaked, in its success and error paths alike.

Only definite and indirect leaks count: the Rust test harness keeps
per-thread allocations that memcheck reports as "possibly lost".
"""
import shutil
import subprocess

import pytest

from support import rust


@pytest.fixture(scope="module")
def binaries():
    return rust.test_binaries()


@pytest.mark.parametrize("name", ["api", "files"])
def test_the_crate_tests_are_clean_under_memcheck(binaries, name):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.fail("valgrind is required for this test and is not installed")
    assert name in binaries, binaries
    result = subprocess.run(
        [valgrind, "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
         binaries[name], "--test-threads=1", "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test result: ok." in result.stdout
    assert "ERROR SUMMARY: 0 errors" in result.stderr, result.stderr
