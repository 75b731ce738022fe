"""Ctrl-C and SIGTERM end a command with one line and the shell's exit status (130, 143), never a traceback; the
commands keep what they finished and say so."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises KeyboardInterrupt."""


def exit_status(stop: KeyboardInterrupt) -> int:
    """128 + the signal's number, as a shell reports a process the signal ended."""
    return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Terminated`` (only the main thread can take signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM wait for its end and are then raised as usual: output written and counted
    inside it is never cut in two or left uncounted. Only the main thread can take signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda number, frame: received.append(number)) for number in stops}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if received:
            signal.raise_signal(received[0])  # under the handler that was there before: KeyboardInterrupt, Terminated
