"""A short run of the frame-stream fuzzer (fuzz/frame_stream_fuzz.c through fuzz/run.sh: libFuzzer, ASan + UBSan).

The target drives hurray_frame_read and hurray_frame_write through callbacks
that read short, claim more bytes than asked for, fail, end early and
refuse writes (issue 27). HURRAY_FRAME_STREAM_FUZZ_SECONDS sets the length
(default 15); `HURRAY_FUZZ_TARGET=frame_stream bash fuzz/run.sh 600` runs longer.
"""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECONDS = int(os.environ.get("HURRAY_FRAME_STREAM_FUZZ_SECONDS", "15"))


def test_frame_stream_fuzzer_finds_nothing(tmp_path):
    env = {**os.environ, "HURRAY_FUZZ_TARGET": "frame_stream", "HURRAY_FUZZ_BUILD": str(tmp_path / "build")}
    result = subprocess.run(["bash", "fuzz/run.sh", str(SECONDS)], cwd=ROOT, capture_output=True, text=True,
                            env=env, timeout=SECONDS + 600)
    assert result.returncode == 0, result.stdout + result.stderr
    done = re.search(r"^#(\d+)\s+DONE\s+cov: (\d+)", result.stdout, re.M)
    assert done, result.stdout
    executions = int(re.search(r"^stat::number_of_executed_units:\s+(\d+)", result.stdout, re.M)[1])
    assert executions >= 10_000, f"only {executions} executions in {SECONDS}s"
    assert int(done[2]) > 500, "coverage this low means the seed frames did not parse"
