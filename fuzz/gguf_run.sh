#!/usr/bin/env bash
# fuzz/gguf_run.sh [SECONDS] -- build the GGUF index fuzzer (fuzz/gguf_fuzz.c)
# with ASan + UBSan and run it for SECONDS (default 60). Seeds are GGUF files
# made by tests/support/gguf_bytes.py; a finding exits non-zero and leaves its
# reproducer under $HURRAY_FUZZ_BUILD/artifacts/ (default build/fuzz-gguf).
# CLANG picks the compiler (default clang).
set -euo pipefail

main() {
    cd "$(dirname "$0")/.."
    seconds="${1:-60}"
    case "$seconds" in
        ''|*[!0-9]*) echo "fuzz/gguf_run.sh: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;;
    esac
    build="${HURRAY_FUZZ_BUILD:-build/fuzz-gguf}"
    mkdir -p "$build/artifacts" "$build/corpus"
    "${CLANG:-clang}" -std=c11 -g -O1 -Wall -Wextra -pthread -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -fno-omit-frame-pointer -Inative/include -Inative/src \
        fuzz/gguf_fuzz.c native/src/*.c -o "$build/gguf_fuzz"
    python3 - "$build/corpus" <<'PY'
import os, struct, sys
sys.path.insert(0, "tests")
from support import gguf_bytes as gb
corpus = sys.argv[1]
seeds = {
    "f32": gb.f32_file(),
    "q8": gb.gguf([gb.kv_u32("general.alignment", 64), gb.kv_string("general.architecture", "x"),
                   gb.string("arr") + struct.pack("<IIQ", 9, 8, 2) + gb.string("a") + gb.string("b")],
                  [gb.tensor_info("q", [32, 1], 8, 0), gb.tensor_info("f", [4], 0, 64)],
                  bytes(34) + bytes(30) + bytes(16), alignment=64),
}
for name, data in seeds.items():
    open(os.path.join(corpus, name), "wb").write(data)
PY
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    status=0
    "$build/gguf_fuzz" "$build/corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/" >"$build/fuzz.log" 2>&1 || status=$?
    grep -E '^#[0-9]+[[:space:]]+DONE' "$build/fuzz.log" || true
    grep -E '^stat::number_of_executed_units' "$build/fuzz.log" || true
    if ((status != 0)); then
        tail -n 60 "$build/fuzz.log" >&2
        echo "fuzz/gguf_run.sh: FINDING (libFuzzer exit $status); reproducer in $build/artifacts/" >&2
        exit 1
    fi
    echo "fuzz/gguf_run.sh: no findings in ${seconds}s"
}

main "$@"; exit $?
