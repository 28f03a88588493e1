"""A one-line progress bar for the command line, drawn only on a terminal."""
import sys
import time
from typing import Optional, TextIO

__all__ = ["Bar"]


class Bar:
    """Call with (done, total); draws at most ten times a second, and a last time on close()."""

    WIDTH = 30

    def __init__(self, label: str, stream: Optional[TextIO] = None) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._label = label
        self._shown = 0.0
        self._last: Optional[tuple[int, int]] = None
        isatty = getattr(self._stream, "isatty", None)
        self.enabled = bool(isatty and isatty())

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        now = time.monotonic()
        if self.enabled and now - self._shown >= 0.1:
            self._shown = now
            self._draw(done, total)

    def _draw(self, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        filled = int(fraction * self.WIDTH)
        self._stream.write(f"\r{self._label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                           f"{fraction:4.0%} {done / 2**20:.1f}/{total / 2**20:.1f} MiB")
        self._stream.flush()

    def close(self) -> None:
        if self.enabled and self._last is not None:
            self._draw(*self._last)
            self._stream.write("\n")
            self._stream.flush()
