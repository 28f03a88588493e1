"""Frames against streams that lie, fail or stall (issue 27, items 1, 4 and 5).

Each case runs in a child process, so that what the bugs did -- a heap
overflow from a read() that returned more than asked (SIGSEGV), a write()
that returned 0 (a loop at 100% CPU forever) -- fails the test instead of
taking pytest with it. Every case expects a HurrayError: FrameStreamError
(the stream's own exception as its cause, `frame_bytes` and the message
saying where the stream stands), FrameTimeoutError, or the CorruptError of
a truncated frame; or, for streams that are merely slow or short, the frame.
"""
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent("""
    import io, os, socket, sys, threading, time
    import numpy as np
    import hurray
    from hurray.errors import CorruptError, FrameStreamError, FrameTimeoutError, HurrayError

    TENSOR = np.arange(4096, dtype=np.float32)
    buf = io.BytesIO()
    hurray.write_frame(buf, TENSOR, name="w")
    FRAME = buf.getvalue()

    class Reader:
        # read(n) only, as a thin wrapper of a socket or a pipe is.
        def __init__(self, data, answer):
            self.data, self.at, self.answer = data, 0, answer
        def read(self, n):
            out = self.answer(self, n)
            return out

    def take(r, n):
        out = r.data[r.at:r.at + n]
        r.at += len(out)
        return out

    def expect(exc_type, fn, *words):
        try:
            fn()
        except exc_type as exc:
            text = str(exc)
            for w in words:
                assert w in text, (w, text)
            return exc
        raise AssertionError(f"no {exc_type.__name__}")
""")


def run_case(body, timeout=60):
    """Runs PRELUDE + body in a new interpreter; it must print OK and exit 0."""
    result = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body) + "\nprint('OK')\n"],
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), (
        f"exit {result.returncode}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")


CASES = {
    # Item 1: recv(65536) answering read(48). Used to copy 65536 bytes into 48.
    "read returns more than asked": """
        r = Reader(FRAME + b"\\xff" * 70000, lambda r, n: take(r, 65536))
        exc = expect(FrameStreamError, lambda: hurray.read_frame(r), "returned 65536 bytes, more than asked",
                     "no byte of the frame was read")
        assert exc.frame_bytes == 0 and isinstance(exc, HurrayError) and isinstance(exc, OSError)
    """,
    "readinto claims more than asked": """
        class Into:
            def readinto(self, b):
                return len(b) + 1
        expect(FrameStreamError, lambda: hurray.read_frame(Into()), "readinto() returned")
    """,
    "read returns a little at a time": """
        r = Reader(FRAME, lambda r, n: take(r, min(n, 1 if r.at % 3 else 7)))
        name, t = hurray.read_frame(r)
        assert name == "w" and np.array_equal(np.asarray(t), TENSOR)
        assert hurray.read_frame(r) is None
    """,
    "read returns nothing mid-frame": """
        r = Reader(FRAME[:1000], lambda r, n: take(r, n))
        exc = expect(CorruptError, lambda: hurray.read_frame(r), "truncated", "1000 bytes of the frame were read",
                     "cannot be used for frames any more")
        assert hurray.read_frame(Reader(b"", lambda r, n: take(r, n))) is None  # a clean end
    """,
    "readinto returns a negative count": """
        class Into:
            def readinto(self, b):
                return -1
        expect(FrameStreamError, lambda: hurray.read_frame(Into()), "returned -1")
    """,
    "read returns something that is not bytes": """
        expect(FrameStreamError, lambda: hurray.read_frame(Reader(b"", lambda r, n: 12)), "not bytes")
    """,
    "read raises": """
        def fail(r, n):
            if r.at >= 200:
                raise ConnectionResetError(104, "Connection reset by peer")
            return take(r, min(n, 100))
        r = Reader(FRAME, fail)
        exc = expect(FrameStreamError, lambda: hurray.read_frame(r), "ConnectionResetError", "Connection reset",
                     "bytes of the frame were read", "stands inside a frame")
        assert isinstance(exc.__cause__, ConnectionResetError) and exc.frame_bytes == r.at >= 200
        assert f"{r.at} bytes of the frame were read" in str(exc)
    """,
    "a KeyboardInterrupt from the stream goes through as it is": """
        def interrupt(r, n):
            raise KeyboardInterrupt
        try:
            hurray.read_frame(Reader(FRAME, interrupt))
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("swallowed")
    """,
    # Item 4: write() returning 0 or -1 used to loop forever.
    "write returns 0": """
        class Stuck:
            def write(self, b):
                return 0
        exc = expect(FrameStreamError, lambda: hurray.write_frame(Stuck(), TENSOR), "wrote nothing",
                     "no byte of the frame was written")
    """,
    "write returns a negative count": """
        class Negative:
            def write(self, b):
                return -5
        expect(FrameStreamError, lambda: hurray.write_frame(Negative(), TENSOR), "returned -5")
    """,
    "write claims more than it was given": """
        class Boastful:
            def write(self, b):
                return len(b) + 10
        expect(FrameStreamError, lambda: hurray.write_frame(Boastful(), TENSOR), "returned")
    """,
    "write raises mid-frame": """
        class Full:
            def __init__(self):
                self.n = 0
            def write(self, b):
                if self.n >= 4096:
                    raise OSError(28, "No space left on device")
                self.n += len(b)
                return len(b)
        exc = expect(FrameStreamError, lambda: hurray.write_frame(Full(), TENSOR), "No space left",
                     "bytes of the frame were written", "stands inside a frame")
        assert isinstance(exc.__cause__, OSError) and exc.frame_bytes > 0
    """,
    "write takes a little at a time": """
        class Slow:
            def __init__(self):
                self.out = bytearray()
            def write(self, b):
                self.out += bytes(b[:3])
                return min(3, len(b))
        s = Slow()
        hurray.write_frame(s, TENSOR, name="w")
        assert bytes(s.out) == FRAME
    """,
    # Item 5: a peer that trickles bytes held the reader as long as it liked.
    "a trickling peer is cut off by the timeout": """
        def trickle(r, n):
            time.sleep(0.01)
            return take(r, 1)
        t0 = time.monotonic()
        exc = expect(FrameTimeoutError, lambda: hurray.read_frame(Reader(FRAME, trickle), timeout=0.3),
                     "within the timeout", "bytes of the frame were read")
        assert time.monotonic() - t0 < 5 and isinstance(exc, TimeoutError) and exc.frame_bytes > 0
    """,
    "a silent peer on a raw socket stream is cut off by the timeout": """
        a, b = socket.socketpair()
        a.sendall(FRAME[:100])
        stream = b.makefile("rb", buffering=0)
        t0 = time.monotonic()
        exc = expect(FrameTimeoutError, lambda: hurray.read_frame(stream, timeout=0.3), "100 bytes of the frame")
        assert 0.25 < time.monotonic() - t0 < 5
    """,
    "a socket's own timeout is a FrameTimeoutError": """
        a, b = socket.socketpair()
        a.sendall(FRAME[:100])
        b.settimeout(0.2)
        stream = b.makefile("rb")
        exc = expect(FrameTimeoutError, lambda: hurray.read_frame(stream), "timed out")
        assert isinstance(exc.__cause__, TimeoutError)
    """,
    "a timeout that is not needed changes nothing": """
        a, b = socket.socketpair()
        threading.Thread(target=lambda: (a.sendall(FRAME * 3), a.close())).start()
        for stream in (b.makefile("rb"), ):
            for _ in range(3):
                name, t = hurray.read_frame(stream, timeout=30)
                assert name == "w" and np.array_equal(np.asarray(t), TENSOR)
            assert hurray.read_frame(stream, timeout=30) is None
        for bad in (0, -1, "1", True):
            expect(HurrayError, lambda: hurray.read_frame(io.BytesIO(FRAME), timeout=bad), "timeout")
    """,
}


@pytest.mark.parametrize("case", CASES)
def test_hostile_stream(case):
    run_case(CASES[case])
