#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] -- build a fuzzer with ASan + UBSan and run it for
# SECONDS (default 60; env HURRAY_FUZZ_SECONDS when no argument).
#
# HURRAY_FUZZ_TARGET picks the target: "descriptor" (the default,
# fuzz/descriptor_fuzz.c), "io" (fuzz/io_fuzz.c, the hurray-io file and
# frame readers, built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION),
# "frame_stream" (fuzz/frame_stream_fuzz.c, hurray_frame_read and
# hurray_frame_write behind callbacks that lie, fail and stall, built the
# same way), "gguf" (fuzz/gguf_fuzz.c, the GGUF index of hurray_gguf.h) or
# "dequant" (fuzz/dequant_fuzz.c, the dequantizer, its scalar path against
# its AVX2 one).
#
# Seeds: descriptor, tests/vectors/*.hex, converted to binary in a temporary
# corpus; the others, fuzz/TARGET_seeds/*. Every saved reproducer
# (descriptor: tests/vectors/regressions/*.bin, others:
# fuzz/TARGET_regressions/*.bin) is replayed first.
# Prints libFuzzer's final "#N DONE cov: ..." line and its final stats;
# exits non-zero on any finding (crash, sanitizer report, abort, leak,
# timeout). A crashing input is kept under $HURRAY_FUZZ_BUILD/artifacts/.
#
# Environment: CLANG (compiler, default clang), HURRAY_FUZZ_BUILD (build
# directory, default build/fuzz), HURRAY_FUZZ_CORPUS (a corpus directory to
# keep and grow across runs, default a temporary one), HURRAY_FUZZ_LOG
# (where libFuzzer's output goes, default $HURRAY_FUZZ_BUILD/fuzz.log),
# HURRAY_FUZZ_CFLAGS (extra compile flags; -DHURRAY_FUZZ_SELF_TEST plants a
# finding, to prove that findings fail the run), HURRAY_FUZZ_SANITIZE
# (default address,undefined; "memory" builds with MemorySanitizer instead),
# HURRAY_FUZZ_RUNS (stop after this many executions, libFuzzer's -runs;
# SECONDS stays the cap: whichever comes first ends the run).
set -euo pipefail

# All in one function, called and followed by exit on one line: bash has
# read all of it before the run starts, so editing this file while a long
# run is going cannot derail that run.
main() {
    cd "$(dirname "$0")/.."

    seconds="${1:-${HURRAY_FUZZ_SECONDS:-60}}"
    case "$seconds" in
        ''|*[!0-9]*) echo "fuzz/run.sh: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;;
    esac
    target="${HURRAY_FUZZ_TARGET:-descriptor}"
    case "$target" in
        descriptor) max_len=2048; target_flags=""; regression_dir=tests/vectors/regressions ;;
        io) max_len=8192; target_flags="-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"; regression_dir=fuzz/io_regressions ;;
        frame_stream) max_len=8192; target_flags="-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"; regression_dir=fuzz/frame_stream_regressions ;;
        gguf) max_len=4096; target_flags=""; regression_dir=fuzz/gguf_regressions ;;
        dequant) max_len=8192; target_flags=""; regression_dir=fuzz/dequant_regressions ;;
        *) echo "fuzz/run.sh: HURRAY_FUZZ_TARGET must be descriptor, io, frame_stream, gguf or dequant, got '$target'" >&2; exit 2 ;;
    esac
    runs="${HURRAY_FUZZ_RUNS:--1}"
    case "$runs" in
        -1) ;;
        ''|*[!0-9]*) echo "fuzz/run.sh: HURRAY_FUZZ_RUNS must be a whole number, got '$runs'" >&2; exit 2 ;;
    esac
    build="${HURRAY_FUZZ_BUILD:-build/fuzz}"
    clang="${CLANG:-clang}"
    mkdir -p "$build/artifacts"
    log="${HURRAY_FUZZ_LOG:-$build/fuzz.log}"

    # libFuzzer ships with clang's compiler-rt; a clang without it fails here.
    has_libfuzzer() {
        command -v "$clang" >/dev/null 2>&1 || return 1
        local probe="$build/probe"
        printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe.c"
        "$clang" -fsanitize=fuzzer "$probe.c" -o "$probe" >/dev/null 2>&1
    }
    if ! has_libfuzzer; then
        echo "fuzz/run.sh: no clang with libFuzzer; installing clang" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >&2
        clang=clang
        has_libfuzzer || { echo "fuzz/run.sh: clang still cannot link libFuzzer" >&2; exit 2; }
    fi

    binary="$build/${target}_fuzz"
    "$clang" -std=c11 -g -O1 -Wall -Wextra -pthread -ffp-contract=off \
        -fsanitize="fuzzer,${HURRAY_FUZZ_SANITIZE:-address,undefined}" -fno-sanitize-recover=all \
        -fno-omit-frame-pointer -Inative/include -Inative/src $target_flags ${HURRAY_FUZZ_CFLAGS:-} \
        "fuzz/${target}_fuzz.c" native/src/*.c -o "$binary"

    # Sanitizer reports end the run with a failing status.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

    # Replay saved reproducers: each must now pass.
    shopt -s nullglob
    regressions=("$regression_dir"/*.bin)
    if ((${#regressions[@]})); then
        echo "fuzz/run.sh: replaying ${#regressions[@]} regression input(s)"
        "$binary" "${regressions[@]}" >"$build/regressions.log" 2>&1 || {
            cat "$build/regressions.log" >&2
            echo "fuzz/run.sh: a regression input fails again" >&2
            exit 1
        }
    fi

    if [[ -n "${HURRAY_FUZZ_CORPUS:-}" ]]; then
        corpus="$HURRAY_FUZZ_CORPUS"
        mkdir -p "$corpus"
    else
        corpus="$(mktemp -d "${TMPDIR:-/tmp}/hurray-fuzz-corpus.XXXXXX")"
        trap 'rm -rf "$corpus"' EXIT
    fi
    if [[ "$target" != descriptor ]]; then
        cp "fuzz/${target}_seeds/"* "$corpus"/
        echo "fuzz/run.sh: $(ls "fuzz/${target}_seeds" | wc -l) $target seed(s)"
    else
    # Hex vectors to binary: '#' starts a comment, whitespace is ignored.
    python3 - "$corpus" tests/vectors/*.hex <<'EOF'
import os, re, sys
corpus, paths = sys.argv[1], sys.argv[2:]
for path in paths:
    text = "".join(line.split("#", 1)[0] for line in open(path, encoding="utf-8").read().splitlines())
    digits = re.sub(r"\s+", "", text)
    name = os.path.splitext(os.path.basename(path))[0]
    with open(os.path.join(corpus, "seed-" + name), "wb") as out:
        out.write(bytes.fromhex(digits))
print(f"fuzz/run.sh: {len(paths)} seed vector(s)")
EOF
    fi

    status=0
    "$binary" "$corpus" -max_total_time="$seconds" -runs="$runs" -max_len="$max_len" -len_control=0 -timeout=10 -rss_limit_mb=2048 \
        -dict="fuzz/${target}.dict" -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
        >"$log" 2>&1 || status=$?

    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" || true
    grep -E '^stat::' "$log" || true
    if ((status != 0)); then
        tail -n 60 "$log" >&2
        echo "fuzz/run.sh: FINDING (libFuzzer exit $status); reproducer in $build/artifacts/" >&2
        exit 1
    fi
    echo "fuzz/run.sh: no findings (cap ${seconds}s)"
}

main "$@"; exit $?
