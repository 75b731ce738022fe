"""Running ``seq2spec`` commands as real processes that tests can kill, starve of disk or feed bad input.

Each command runs in a child forked from a ``multiprocessing`` forkserver that imported seq2spec, torch and
transformers once, so a start costs a fork instead of an interpreter start with those imports.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import resource
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

PRELOAD = ["torch", "transformers", "seq2spec.commands.main", "seq2spec.speculator", "seq2spec.whisper.transcription"]


class _PipeWriter(io.TextIOBase):
    """The child's standard output and error, sent to the parent through a pipe (a file-size limit does not apply
    to pipes, and what was sent survives a kill)."""

    def __init__(self, connection) -> None:
        self.connection = connection

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.connection.send_bytes(text.encode("utf-8", "backslashreplace"))
        return len(text)


def _piped_stdin(data: bytes) -> None:
    """Standard input (descriptor 0 and ``sys.stdin``) made a pipe that a thread fills with ``data`` and closes, as
    a shell's ``printf ... |`` does: what is read from it is gone."""
    reader, writer = os.pipe()

    def fill() -> None:
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(data)

    threading.Thread(target=fill, daemon=True).start()
    os.dup2(reader, 0)
    os.close(reader)
    sys.stdin = io.TextIOWrapper(os.fdopen(0, "rb", closefd=False), encoding="utf-8")


def _command(argv: list[str], log, stdin, file_size_limit: int | None, threads: int) -> None:
    """The child: the command, its output sent through ``log`` (and optionally its standard input from a file, or
    from a pipe given ``bytes``)."""
    if file_size_limit is not None:  # a full disk: writes past this size fail with EFBIG instead of a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))
    import torch

    torch.set_num_threads(threads)
    from seq2spec.commands.main import main

    sys.stdout = sys.stderr = _PipeWriter(log)
    if isinstance(stdin, bytes):
        _piped_stdin(stdin)
    elif stdin is not None:
        sys.stdin = io.TextIOWrapper(open(stdin, "rb"), encoding="utf-8")
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    os._exit(code)


@dataclass
class Finished:
    code: int | None  # the exit status; None when the test killed it
    log: str


class Launcher:
    """Starts commands in forked children; ``run`` waits, ``start`` returns the process to kill."""

    def __init__(self) -> None:
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(PRELOAD)

    def start(
        self,
        argv: list[str],
        *,
        stdin: Path | bytes | None = None,
        file_size_limit: int | None = None,
        threads: int = 1,
    ):
        """``stdin``: a file to read as standard input, or bytes that come through a pipe."""
        reader, writer = self.context.Pipe(duplex=False)
        given = stdin if stdin is None or isinstance(stdin, bytes) else str(stdin)
        process = self.context.Process(target=_command, args=(argv, writer, given, file_size_limit, threads))
        process.start()
        writer.close()  # the child holds its own end: the reader sees the end when the child is gone
        chunks: list[bytes] = []

        def collect() -> None:
            try:
                while True:
                    chunks.append(reader.recv_bytes())
            except (EOFError, OSError):
                pass

        process.collector = threading.Thread(target=collect, daemon=True)
        process.collector.start()
        process.chunks = chunks
        return process

    @staticmethod
    def _finished(process) -> Finished:
        process.collector.join(30)
        code = None if process.exitcode == -signal.SIGKILL else process.exitcode
        return Finished(code, b"".join(process.chunks).decode("utf-8", "replace"))

    def run(self, argv: list[str], timeout: float = 300, **options) -> Finished:
        process = self.start(argv, **options)
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
            raise TimeoutError(f"seq2spec {' '.join(argv)} did not finish in {timeout} s")
        return self._finished(process)

    def kill(self, process) -> Finished:
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
        process.join()
        return self._finished(process)
