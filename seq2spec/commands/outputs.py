"""Output files that a killed, failing or concurrent run can never corrupt, and that never cost a user's file.

- ``OutputLock``: one writer per output; a second run stops with a message naming the first.
- ``JsonlRecords``: a JSONL file of records that this tool appends to. A file that is not such a file is refused;
  a record cut off by a killed run is removed; a corrupt line is skipped (its input is done again). Every record is
  written whole and synced, or not at all: a failed write is cut back to the last complete record.
- ``ResumableText``: line-per-input text written to ``<out>.partial`` beside a note of what it is for, and renamed
  to ``<out>`` only when complete; a rerun over the same inputs and settings continues after the finished lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class OutputError(RuntimeError):
    """An output that cannot be used or written; the message names the file, the reason and what to do."""


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def resolved_output(out: Path) -> Path:
    """The file ``out`` names once its symbolic links are followed (itself when it has none): the output is locked,
    built and replaced there, so a link to it stays a link and two names of one output share one lock."""
    return Path(os.path.realpath(out))


def check_output_path(out: Path, inputs: Iterable[Path] = ()) -> None:
    """Refuse an output that is an input, a directory, or in a directory that cannot be made or written."""
    for source in inputs:
        if same_file(out, source) or out.resolve() == source.resolve():
            raise OutputError(f"--out {out} is also an input: choose another output file")
    if out.is_dir():
        raise OutputError(f"--out {out} is a directory: name a file")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create the folder of --out {out}: {error.strerror or error}") from error
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write into {out.parent} (permission denied): choose another --out")
    if out.exists() and not os.access(out, os.W_OK):
        raise OutputError(f"cannot write to {out} (permission denied): choose another --out")


class OutputLock:
    """An exclusive lock on ``<out>.lock`` for the duration of a run (held by the process, so a killed run leaves
    no stale lock: the kernel drops it)."""

    def __init__(self, out: Path) -> None:
        self.path = out.with_name(out.name + ".lock")
        self.handle = None

    def __enter__(self) -> OutputLock:
        handle = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise OutputError(
                f"another seq2spec run ({holder}) is writing {self.path.with_suffix('')}: wait for it to finish, or "
                "choose another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        self.handle = handle
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.handle is not None:
            try:
                self.path.unlink()
            except OSError:
                pass
            self.handle.close()  # closing releases the lock
            self.handle = None


def encode_record(record: dict[str, Any]) -> bytes:
    """One JSON line, UTF-8. A file name that is not valid UTF-8 (Python keeps its bytes as surrogates) is written
    with JSON escapes instead, so the line stays valid and reads back as the same name."""
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")


def _append_whole(handle, data: bytes, path: Path) -> None:
    """Append ``data`` to the unbuffered ``handle`` and sync it, or leave the file as it was: a failed or short
    write (a full disk) is cut back to the size before it."""
    size = handle.seek(0, os.SEEK_END)
    view = memoryview(data)
    try:
        while view:
            written = handle.write(view)
            if not written:
                raise OSError(28, "No space left on device")
            view = view[written:]
        os.fsync(handle.fileno())
    except OSError as error:
        try:
            handle.truncate(size)
        except OSError:
            pass
        reason = error.strerror or str(error)
        raise OutputError(f"cannot write to {path}: {reason}; what was written before is kept") from error


class JsonlRecords:
    """The records of a JSONL output that this tool appends to, keyed by ``key`` (``"file"``)."""

    def __init__(self, path: Path, key: str = "file") -> None:
        self.path = path
        self.key = key
        self.records: list[dict[str, Any]] = []
        self.corrupt_lines = 0
        self.handle = None

    def read(self) -> list[dict[str, Any]]:
        """Read (and repair) the existing records; refuse a file this tool did not write.

        Records are written whole, each starting with the key, so a cut-off record of ours is a last line without
        its newline that starts like one: it is removed. A corrupt line elsewhere is skipped and its input done
        again. A file none of whose lines is a record is not ours and is refused.
        """
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: empty, a record missing its newline, or a cut-off record
        records = [record for record in map(self._parse, lines) if record is not None]
        corrupt = sum(1 for line in lines if line.strip()) - len(records)
        tail_record = self._parse(tail) if tail else None
        ours = b'{"' + self.key.encode() + b'"'
        if not records and tail_record is None and data.strip() and not (tail.startswith(ours) and not lines):
            raise OutputError(
                f"--out {self.path} exists and is not a seq2spec results file (JSON lines with a {self.key!r} "
                "field): choose another --out"
            )
        if tail_record is not None:
            records.append(tail_record)
            self._append_raw(b"\n")
        elif tail.startswith(ours):  # our record, cut off by a killed run
            with open(self.path, "r+b") as handle:
                handle.truncate(len(data) - len(tail))
        elif tail:  # not ours to delete: end the line, and skip it like any corrupt line
            self._append_raw(b"\n")
            corrupt += 1
        self.records, self.corrupt_lines = records, corrupt
        return records

    def _append_raw(self, data: bytes) -> None:
        with open(self.path, "ab") as handle:
            handle.write(data)

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return None
        return record if isinstance(record, dict) and self.key in record else None

    def done(self) -> set:
        return {record[self.key] for record in self.records}

    def drop(self, keys: set) -> None:
        """Remove the records of ``keys`` (every other line is kept as it is), replacing the file in one step."""
        self.drop_where(lambda record: record[self.key] in keys)

    def drop_where(self, dropped) -> None:  # noqa: ANN001 - a predicate over records
        """Remove the records ``dropped(record)`` says (every other line is kept as it is), replacing the file in one
        step."""
        kept = []
        for line in self.path.read_bytes().splitlines(keepends=True):
            record = self._parse(line)
            if record is None or not dropped(record):
                kept.append(line)
        staging = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(staging, "wb") as handle:
                handle.write(b"".join(kept))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(staging, self.path)
        except OSError as error:
            staging.unlink(missing_ok=True)
            raise OutputError(f"cannot rewrite {self.path}: {error.strerror or error}; it is as it was") from error
        self.records = [record for record in self.records if not dropped(record)]

    def __enter__(self) -> JsonlRecords:
        self.handle = open(self.path, "ab", buffering=0)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def append(self, record: dict[str, Any]) -> None:
        _append_whole(self.handle, encode_record(record), self.path)
        self.records.append(record)


class ResumableText:
    """Text output built in ``<out>.partial`` (with ``<out>.partial.json`` saying which inputs and settings it is
    for) and renamed to ``<out>`` when complete."""

    def __init__(self, out: Path, identity: dict[str, Any]) -> None:
        self.out = out
        self.partial = out.with_name(out.name + ".partial")
        self.note = out.with_name(out.name + ".partial.json")
        self.identity = json.loads(json.dumps(identity))  # as it reads back: tuples are lists
        self.handle = None
        self.lines_done = 0
        self.resumed = False

    def open(self, resume: bool = True) -> int:
        """Open the partial output; returns how many input lines are already done (0 for a fresh start).
        ``resume=False`` starts afresh even over a matching partial output (standard input cannot be re-read)."""
        if self.partial.exists() and not self.note.exists():
            raise OutputError(
                f"{self.partial} exists but was not written by seq2spec (no {self.note.name} beside it): move it away"
            )
        previous = None
        if self.note.exists():
            try:
                previous = json.loads(self.note.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                previous = None
        if resume and previous == self.identity and self.partial.exists():
            data = self.partial.read_bytes()
            complete = data.rfind(b"\n") + 1
            if complete < len(data):
                with open(self.partial, "r+b") as handle:  # a line cut off by a killed run
                    handle.truncate(complete)
            self.lines_done = data[:complete].count(b"\n")
            self.resumed = True
        else:  # the note first: a partial output without its note would not be recognised as ours
            write_file_atomically(self.note, json.dumps(self.identity) + "\n")
            self.partial.write_bytes(b"")
        self.handle = open(self.partial, "ab", buffering=0)
        return self.lines_done

    def write_lines(self, lines: list[str], ends: list[str] | None = None) -> None:
        """Append ``lines``, each followed by its end in ``ends`` (``"\\n"`` or ``"\\r\\n"``; None: ``"\\n"``)."""
        ends = ends or ["\n"] * len(lines)
        text = "".join(line + end for line, end in zip(lines, ends, strict=True))
        _append_whole(self.handle, text.encode("utf-8"), self.partial)
        self.lines_done += len(lines)

    def finish(self) -> None:
        """The output is complete: it replaces ``<out>`` in one step."""
        self.close()
        os.replace(self.partial, self.out)
        self.note.unlink(missing_ok=True)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def write_file_atomically(path: Path, text: str) -> None:
    """``path`` holds either its old content or all of ``text``, never a part."""
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # a file in the way of a folder is reported as any failure
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except OSError as error:
        with contextlib.suppress(OSError):  # nothing to remove where its folder could not be made
            staging.unlink()
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from error
