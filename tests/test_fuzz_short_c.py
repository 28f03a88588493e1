"""A short run of the descriptor and hurray-io fuzzers (fuzz/run.sh) as part of the suite.

fuzz/descriptor_fuzz.c is a libFuzzer target built with ASan and UBSan over
native/src/*.c; run.sh replays the saved reproducers in
tests/vectors/regressions/ first, then fuzzes from the seed vectors. A finding
makes it exit non-zero. HURRAY_FUZZ_SECONDS sets the length (default 60).
The second test plants a finding to prove that one fails the run. The
third runs fuzz/io_fuzz.c, the hurray-io file and frame readers, from the
seed files in fuzz/io_seeds/; the fourth fuzz/dequant_fuzz.c, the
dequantizer's scalar path against its AVX2 one, from fuzz/dequant_seeds/.
"""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECONDS = int(os.environ.get("HURRAY_FUZZ_SECONDS", "60"))
MIN_EXECUTIONS = 100_000 if SECONDS >= 60 else 1_000


def run_fuzzer(seconds, tmp_path, **env):
    return subprocess.run(
        ["bash", "fuzz/run.sh", str(seconds)], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "HURRAY_FUZZ_BUILD": str(tmp_path / "build"), **env},
        timeout=seconds + 600,  # the build, and clang's install on a fresh machine
    )


def test_fuzzer_finds_nothing(tmp_path):
    result = run_fuzzer(SECONDS, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    done = re.search(r"^#(\d+)\s+DONE\s+cov: (\d+)", result.stdout, re.M)
    assert done, result.stdout
    executions = int(re.search(r"^stat::number_of_executed_units:\s+(\d+)", result.stdout, re.M)[1])
    assert executions == int(done[1])
    assert executions >= MIN_EXECUTIONS, f"only {executions} executions in {SECONDS}s"
    assert int(done[2]) > 300, "coverage this low means the seeds did not decode"


def test_a_finding_fails_the_run(tmp_path):
    result = run_fuzzer(5, tmp_path, HURRAY_FUZZ_CFLAGS="-DHURRAY_FUZZ_SELF_TEST")
    assert result.returncode != 0
    assert "self-test finding" in result.stderr
    assert "FINDING" in result.stderr
    assert any(name.startswith("crash-") for name in os.listdir(tmp_path / "build" / "artifacts"))


def test_io_fuzzer_finds_nothing(tmp_path):
    seconds = max(SECONDS // 2, 5)
    result = run_fuzzer(seconds, tmp_path, HURRAY_FUZZ_TARGET="io")
    assert result.returncode == 0, result.stdout + result.stderr
    done = re.search(r"^#(\d+)\s+DONE\s+cov: (\d+)", result.stdout, re.M)
    assert done, result.stdout
    assert int(done[1]) >= MIN_EXECUTIONS // 2, f"only {done[1]} executions in {seconds}s"
    assert int(done[2]) > 500, "coverage this low means the seed files did not parse"


def test_dequant_fuzzer_finds_nothing(tmp_path):
    seconds = max(SECONDS // 2, 5)
    result = run_fuzzer(seconds, tmp_path, HURRAY_FUZZ_TARGET="dequant")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replaying" in result.stdout  # the saved reproducers ran first
    done = re.search(r"^#(\d+)\s+DONE\s+cov: (\d+)", result.stdout, re.M)
    assert done, result.stdout
    assert int(done[1]) >= MIN_EXECUTIONS // 4, f"only {done[1]} executions in {seconds}s"
    assert int(done[2]) > 800, "coverage this low means the seeds did not reach the schemes"
