"""ADR-023's three peer pairs, proved with peers that are not hurray-python.

Every producer in {hurray-python, the C peer, the ctypes binding, the Rust
peer} hands every consumer in the same set each tensor of
tests/peers/cases.py. For each pair
and tensor the consumer must see exactly the descriptor bytes and buffer
bytes the producer meant, read the descriptor's fields as the spec's
encoding table says, and walk the buffers to the expected elements (or, for
hurray-python, dequantize to the expected real values); the producer's
memory must stay alive while the consumer holds it, and every buffer and
owner must then be released exactly once, whoever consumed them.

docs/interop.md shows this matrix as tables; test_docs_table_matches_matrix
keeps them identical (regenerate with
``.venv/bin/python tests/test_interop_matrix.py --write``).
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import adapters, cases, matrix, session  # noqa: E402
from peers.checks import run_pair  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS_PAGE = ROOT / "docs" / "interop.md"
PEERS = matrix.PEERS
CASE_IDS = matrix.CASE_IDS


@pytest.mark.parametrize("case_id", CASE_IDS)
@pytest.mark.parametrize("consumer", PEERS)
@pytest.mark.parametrize("producer", PEERS)
def test_pair(producer, consumer, case_id):
    peers = session.peers()
    run_pair(peers[producer], peers[consumer], cases.BY_ID[case_id])


@pytest.mark.parametrize("producer", PEERS)
def test_unconsumed_capsule_is_freed_by_its_producer(producer):
    """A capsule nobody takes is freed by its own destructor, exactly once."""
    peer = session.peers()[producer]
    adapters.settle()
    produced = peer.produce(cases.BY_ID["affine_per_axis"])
    tracker = produced.tracker
    capsule = produced.source.__hurray__()
    del produced
    adapters.settle()
    tracker.assert_alive()
    del capsule
    adapters.released_once(tracker)


@pytest.mark.parametrize("consumer", PEERS)
def test_consumed_capsule_cannot_be_taken_again(consumer):
    """After a consumer renamed the capsule, nobody (itself included) takes it a second time."""
    peers = session.peers()
    adapters.settle()
    produced = peers["c-peer"].produce(cases.BY_ID["float32"])
    tracker = produced.tracker
    capsule = produced.source.__hurray__()
    del produced
    held = peers[consumer].take(adapters.CapsuleSource(capsule))
    for other in PEERS:
        with pytest.raises(session.refusal_types()):
            peers[other].take(adapters.CapsuleSource(capsule))
    peers[consumer].release(held)
    del held, capsule
    adapters.released_once(tracker)


BUFFER_TOO_SMALL = 10


@pytest.mark.parametrize("consumer", PEERS)
@pytest.mark.parametrize("producer", ["c-peer", "ctypes-binding"])
def test_buffers_too_small_for_their_descriptor_are_refused(producer, consumer):
    """A producer whose buffer is 4 bytes short is refused by every consumer, which leaves the
    capsule to its producer: no consumer trusts a producer."""
    import hurray

    peers = session.peers()
    adapters.settle()
    honest = cases.BY_ID["float32"]
    short = cases.Case(**{**honest.__dict__, "buffers": (honest.buffers[0][:-4],)})
    produced = peers[producer].produce(short)
    tracker = produced.tracker
    capsule = produced.source.__hurray__()
    del produced
    with pytest.raises(session.refusal_types()) as info:
        peers[consumer].take(adapters.CapsuleSource(capsule))
    error = info.value
    status = error.status if isinstance(error, (hurray.HurrayError, session.ctypes_binding_module().HurrayCtypesError)) \
        else error.args[0]
    assert status == BUFFER_TOO_SMALL, error
    assert repr(capsule).startswith('<capsule object "hurray_tensor"'), "a refused capsule was changed"
    tracker.assert_alive()
    del capsule, info, error  # the traceback's frames hold the capsule too
    adapters.released_once(tracker)


def test_case_oracles_agree_with_independent_references():
    """The cases' expected values, checked against references outside this project."""
    import gguf
    import ml_dtypes

    q8 = cases.BY_ID["ggml_q8_0"]
    reference = gguf.quants.dequantize(np.frombuffer(q8.buffers[0], np.uint8), gguf.GGMLQuantizationType.Q8_0)
    np.testing.assert_array_equal(reference.reshape(q8.shape), q8.real)
    int4 = cases.BY_ID["int4_lsb_first"]
    codes = np.frombuffer(int4.elements["values"], np.uint8).astype(np.int8)
    np.testing.assert_array_equal(np.where(codes > 7, codes - 16, codes).reshape(int4.shape), int4.real)
    fp8 = cases.BY_ID["fp8_e4m3fn"]
    np.testing.assert_array_equal(
        np.frombuffer(fp8.buffers[0], ml_dtypes.float8_e4m3fn).astype(np.float32).reshape(fp8.shape), fp8.real)


def test_ctypes_binding_stands_without_hurray(tmp_path):
    """The binding loads libhurray by path and round-trips a tensor with hurray never imported."""
    import hurray

    script = tmp_path / "standalone.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(session.HERE / 'ctypes_binding')!r})\n"
        "import hurray_ctypes\n"
        "b = hurray_ctypes.Binding(sys.argv[1])\n"
        "data = bytes(range(24))\n"
        "capsule, desc = b.produce(17, (2, 3), buffers=[data])\n"
        "taken = b.consume(capsule)\n"
        "report = taken.report()\n"
        "assert report['descriptor'] == desc and report['buffers'] == [data], report\n"
        "assert report['elements'][1] == data and report['fields']['shape'] == (2, 3)\n"
        "taken.release(); del taken, capsule\n"
        "assert b.counters == {'buffers_made': 1, 'buffers_released': 1, 'owners_made': 1,\n"
        "                      'owners_released': 1, 'bad_releases': 0}, b.counters\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hurray', 'numpy', 'cffi')))\n"
    )
    result = subprocess.run([sys.executable, str(script), hurray.get_library()],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_without_cargo_the_rust_peer_fails_loudly(monkeypatch, tmp_path):
    """The rust-peer's build fails (its tests fail, never skip) with a message naming cargo."""
    from support import rust

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"cargo is not on PATH nor in \$HOME/\.cargo/bin"):
        rust.Examples().path("rust_peer")


# ---- the docs page ------------------------------------------------------

def _page_section(text):
    start = text.index(matrix.BEGIN) + len(matrix.BEGIN)
    return text[start:text.index(matrix.END)].strip("\n")


def test_docs_table_matches_matrix():
    text = DOCS_PAGE.read_text(encoding="utf-8")
    assert matrix.BEGIN in text and matrix.END in text, f"{DOCS_PAGE} lacks the generated-table markers"
    assert _page_section(text) == matrix.render_tables(), (
        "docs/interop.md is out of date: run .venv/bin/python tests/test_interop_matrix.py --write")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    page = DOCS_PAGE.read_text(encoding="utf-8")
    head, rest = page.split(matrix.BEGIN, 1)
    tail = rest.split(matrix.END, 1)[1]
    DOCS_PAGE.write_text(f"{head}{matrix.BEGIN}\n{matrix.render_tables()}\n{matrix.END}{tail}", encoding="utf-8")
    print(f"wrote {DOCS_PAGE}")
