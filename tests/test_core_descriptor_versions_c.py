"""A library that predates encoding version 2 refuses version-2 bytes by name,
and this one reads every version-1 vector exactly as that one did.

The older library is built from the repository's own history: the sources
of native/ and tests/c/vectors_check.c at the last commit before encoding
version 2 (PRE_GRAPH_COMMIT), taken with `git archive` into a temporary
directory (a worktree would change the repository's metadata under a
running suite). Its vectors_check and this tree's are built the same way,
with the library sources compiled in, so the two differ only in the
library's version.
"""
import json
import subprocess
import tarfile

import pytest

from support.cbuild import C_TESTS, CC, NATIVE, ROOT, run_checked

# main before the version-2 descriptor (ADR-054): the library of C ABI 4
# that reads encoding version 1 only.
PRE_GRAPH_COMMIT = "67cc6f12e26fb3d8df793f20fe6fe62c870b2c51"
VECTORS = ROOT / "tests" / "vectors"
FLAGS = ["-std=c11", "-O1", "-pthread"]


def _archive(tmp_path):
    """The pre-version-2 sources under tmp_path/old, from git."""
    try:
        listing = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-t", PRE_GRAPH_COMMIT],
                                 capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.fail("git is required to build the pre-version-2 library from history (install git)")
    if listing.returncode != 0 or listing.stdout.strip() != "commit":
        pytest.fail(f"commit {PRE_GRAPH_COMMIT} is not in this checkout ({listing.stderr.strip()}); "
                    "this test needs the repository's history (a full clone, not a shallow one)")
    tar = tmp_path / "old.tar"
    run_checked(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(tar), PRE_GRAPH_COMMIT,
                 "native", "tests/c/vectors_check.c"], timeout=120)
    old = tmp_path / "old"
    with tarfile.open(tar) as archive:
        archive.extractall(old, filter="data")
    return old


def _vectors_check(root, c_tests, out):
    run_checked([CC, *FLAGS, "-I", str(root / "native" / "include"), "-I", str(c_tests),
                 str(c_tests / "vectors_check.c"), *sorted(str(p) for p in (root / "native" / "src").glob("*.c")),
                 "-o", str(out)], timeout=300)
    return out


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("versions")
    old_root = _archive(tmp)
    old_header = (old_root / "native" / "include" / "hurray.h").read_text()
    assert "HURRAY_MAX_NODES" not in old_header and "HURRAY_C_ABI_VERSION 4" in old_header
    old = _vectors_check(old_root, old_root / "tests" / "c", tmp / "old_vectors_check")
    new = _vectors_check(NATIVE.parent, C_TESTS, tmp / "new_vectors_check")
    return old, new


def _names(version):
    return sorted(p.stem for p in VECTORS.glob("*.json")
                  if json.loads(p.read_text()).get("encoding_version", 1) == version)


V1_VECTORS = _names(1)
V2_VECTORS = _names(2)


def test_there_are_vectors_of_both_versions():
    assert len(V1_VECTORS) >= 15 and len(V2_VECTORS) >= 7


@pytest.mark.parametrize("name", V2_VECTORS)
def test_an_older_library_refuses_version_2_by_name(builds, name):
    old, _ = builds
    result = subprocess.run([str(old), "decode", str(VECTORS / f"{name}.hex")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    assert ("decode: HURRAY_ERROR_UNSUPPORTED: descriptor: encoding version 2 is unsupported "
            "(this build reads 1)") in result.stderr


@pytest.mark.parametrize("name", V1_VECTORS)
def test_version_1_reads_as_it_did(builds, name):
    old, new = builds
    path = str(VECTORS / f"{name}.hex")
    before = run_checked([str(old), "decode", path], timeout=60).stdout
    after = run_checked([str(new), "decode", path], timeout=60).stdout
    assert after == before and before.endswith("reencoded identical\n")
