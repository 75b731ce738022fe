"""``seq2spec correct``: one corrected line per input line, from files or standard input; the lines of fenced code
blocks (Markdown's ``` and ~~~) come back as written.

With ``--out`` the result is built in ``<out>.partial`` and renamed to ``<out>`` when complete, so an existing
``--out`` is replaced only by a finished result; a rerun over the same inputs and settings continues after the
lines already done. One run writes an output at a time, and ``--out`` may not be one of the inputs.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seq2spec.commands.flags import (
    add_ray_flags,
    add_runtime_flags,
    add_speculation_flags,
    add_spelling_flags,
    apply_process_settings,
    draft_keyword,
    plain_text,
    positive_int,
    speculation_changes,
    spelling_changes,
    torch_dtype,
)
from seq2spec.commands.outputs import OutputError, OutputLock, ResumableText, check_output_path, resolved_output
from seq2spec.commands.stopping import exit_status, stops_deferred

STDIN = "-"


@dataclass(frozen=True)
class Line:
    text: str
    source: str  # file name, or "standard input"
    number: int  # 1-based within its source
    end: str = "\n"  # written after the line's correction: "\r\n" where the input had it
    code: bool = False  # a line of a fenced code block (``fenced``), written as it was read


class InputError(RuntimeError):
    """Input that cannot be read; the message names it."""


# a line and its end (\n, \r\n or \r), or a last line without one
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_end(line: str) -> tuple[str, str]:
    """``(text, end)``: the line without its terminator, and the end its output line takes: ``"\r\n"`` kept,
    every other end (``"\n"``, a lone ``"\r"``, none) written as ``"\n"``."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    return (line[:-1] if line.endswith(("\n", "\r")) else line), "\n"


# byte-order marks of the Unicode encodings other than UTF-8 (Windows PowerShell 5 writes UTF-16 with `>`)
_BYTE_ORDER_MARKS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                     (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))  # fmt: skip


def encoding_of(start: bytes) -> str:
    """UTF-16 or UTF-32 for text that starts with its byte-order mark, else UTF-8 (a UTF-8 mark stays in the first
    line, and so in the output, as written)."""
    return next((encoding for mark, encoding in _BYTE_ORDER_MARKS if start.startswith(mark)), "utf-8")


def text_encoding(path: str) -> str:
    """The encoding of a file's text (``encoding_of`` its first bytes)."""
    with open(path, "rb") as handle:
        return encoding_of(handle.read(4))


def ended_file_lines(path: str) -> Iterator[tuple[str, str]]:
    """A text file's ``(line, end)`` pairs: split at line ends only (\\n, \\r\\n, \\r), never at form feeds or
    Unicode separators, so that every input line gets exactly one output line. UTF-8, or UTF-16/32 after a
    byte-order mark (``text_encoding``); the output is UTF-8."""
    with open(path, encoding=text_encoding(path), newline="") as handle:
        for line in handle:
            yield split_end(line)


def file_lines(path: str) -> Iterator[str]:
    """A text file's lines, without their ends (see ``ended_file_lines``)."""
    return (text for text, _ in ended_file_lines(path))


def text_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(line, end)`` pairs of a text held in memory, split as ``ended_file_lines`` splits a file."""
    return (split_end(line) for line in _LINE.findall(text))


def stdin_lines() -> Iterator[tuple[str, str]]:
    """Standard input's ``(line, end)`` pairs, read as UTF-8 whatever the locale says (a POSIX locale would pass
    bytes that are not UTF-8 on as surrogates), or as UTF-16/32 after a byte-order mark: bytes that are not such text
    stop the run with a message naming the line."""
    stream = getattr(sys.stdin, "buffer", None)  # bytes underneath; a plain text stream is checked as text
    number = 0
    encoding = "utf-8"
    try:
        if hasattr(stream, "peek"):  # a byte-order mark, looked at without taking it from the stream
            encoding = encoding_of(stream.peek(4)[:4])
        if encoding != "utf-8":
            for line in io.TextIOWrapper(stream, encoding=encoding, newline=""):
                number += 1
                yield split_end(line)
            return
        for raw in stream if stream is not None else sys.stdin:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw.encode("utf-8").decode("utf-8")
            for line in _LINE.findall(text):
                number += 1
                yield split_end(line)
    except UnicodeError as error:
        reason = getattr(error, "reason", str(error))
        raise InputError(f"standard input is not {encoding.upper()} text after line {number} ({reason})") from None


@dataclass(frozen=True)
class Source:
    """One input: standard input (read as it comes), a regular file (read where needed: once to count its lines,
    once to correct them), or anything else a path names (a pipe, a FIFO, ``/dev/stdin``, a process substitution),
    whose bytes are read once when the run starts, since a second read would find nothing (or wait forever)."""

    name: str  # as the user gave it, or "standard input"
    path: str | None = None  # a regular file's
    text: str | None = None  # what was read once

    @property
    def replayable(self) -> bool:
        """Whether a rerun reads the same lines (what resuming an output needs)."""
        return self.path is not None

    def lines(self) -> Iterator[tuple[str, str]]:
        if self.path is not None:
            return ended_file_lines(self.path)
        if self.text is not None:
            return text_lines(self.text)
        return stdin_lines()


def open_sources(names: list[str]) -> tuple[list[Source], list[str], int | None]:
    """``(readable sources, unreadable names, their total lines)``: each file read through once as text, each pipe
    read whole; the total is None when standard input is among them (its length is known only at its end)."""
    sources, unreadable, total = [], [], 0
    for name in names:
        if name == STDIN:
            sources.append(Source("standard input"))
            total = None
            continue
        try:
            if Path(name).is_file():
                count = sum(1 for _ in ended_file_lines(name))
                source = Source(name, path=name)
            else:
                data = Path(name).read_bytes()
                source = Source(name, text=data.decode(encoding_of(data[:4])))
                count = sum(1 for _ in source.lines())
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            print(f"seq2spec correct: cannot read {name} as UTF-8 text ({reason}); skipped", file=sys.stderr)
            unreadable.append(name)
            continue
        sources.append(source)
        total = None if total is None else total + count
    return sources, unreadable, total


# a Markdown code fence: three or more backticks or tildes, indented by any whitespace (a fence inside a list item is
# indented as deep as the item, as MkDocs and GitHub read it), after a byte-order mark on a file's first line; a
# backtick fence's info string holds no backtick ("```code``` here" opens none)
_FENCE = re.compile(r"^\ufeff?[ \t]*(`{3,}(?=[^`]*$)|~{3,})")


class Fences:
    """Whether each line of a file, given in order, belongs to a fenced code block, fences included (Markdown's ```
    and ~~~; a fence left open runs to the end): code is written as it was read, where the speller, reading a file
    line by line, made "import mypackage" into "import my package" and a variable "resutl" into "result"."""

    def __init__(self) -> None:
        self.opening: str | None = None

    def code(self, text: str) -> bool:
        match = _FENCE.match(text)
        if self.opening is None:
            self.opening = match.group(1) if match else None
            return match is not None
        closing = match.group(1) if match else ""
        if closing[:1] == self.opening[:1] and len(closing) >= len(self.opening) and not text[match.end() :].strip():
            self.opening = None
        return True


def read_lines(sources: list[Source]) -> Iterator[Line]:
    for source in sources:
        fences = Fences()
        for number, (text, end) in enumerate(source.lines(), start=1):
            yield Line(text, source.name, number, end, fences.code(text))


def chunks(lines: Iterator[Line], size: int) -> Iterator[list[Line]]:
    """Lists of ``size`` lines; when reading fails part-way, the lines read before the fault come first."""
    chunk: list[Line] = []
    try:
        for line in lines:
            chunk.append(line)
            if len(chunk) == size:
                yield chunk
                chunk = []
    except InputError:
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def one_line(text: str) -> str:
    """Output keeps one line per input line: a line break (\\n, \\r\\n, \\r: what splits the input into lines)
    inside a correction becomes a space; form feeds, vertical tabs and Unicode's line and paragraph separators stay,
    as they were read."""
    return _LINE_BREAK.sub(" ", text)


def build_corrector(args: argparse.Namespace):
    """The speculator ``seq2spec correct`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    return Seq2SeqSpeculator(
        args.model,
        **draft_keyword(args.draft),
        device=args.device,
        dtype=torch_dtype(args.dtype),
        **speculation_changes(args),
    )


def output_identity(args: argparse.Namespace, files: list[str]) -> dict:
    """What a partial output was made from: the inputs as they were, and every setting that can change the text
    (not the batch or chunk sizes: they change how lines are grouped, not what each becomes)."""
    inputs = []
    for path in files:
        stat = Path(path).stat()
        inputs.append([str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns])
    settings = {key: getattr(args, key) for key in ("model", "prefix", "max_new_tokens", "device", "dtype")}
    settings.update(spelling_changes(args))
    return {"inputs": inputs, "settings": settings}


class StreamOutput:
    """Lines to standard output, flushed as they are made."""

    lines_done = 0
    resumed = False

    def write_lines(self, lines: list[str], ends: list[str] | None = None) -> None:
        sys.stdout.write("".join(line + end for line, end in zip(lines, ends or ["\n"] * len(lines), strict=True)))
        sys.stdout.flush()
        self.lines_done += len(lines)


def run(args: argparse.Namespace) -> int:
    apply_process_settings(args)
    inputs = list(args.inputs) or [STDIN]
    files = [path for path in inputs if path != STDIN]
    try:
        missing = [path for path in files if not Path(path).exists()]
        if missing:
            link = " (a symbolic link whose target is missing or that points back to itself)"
            raise InputError(f"no such file: {missing[0]}" + (link if Path(missing[0]).is_symlink() else ""))
        if args.out is not None:
            args.out = resolved_output(args.out)  # through a symbolic link: the file it names is replaced and locked
            check_output_path(args.out, [Path(path) for path in files])
        sources, unreadable, total = open_sources(inputs)
        if not sources:
            raise InputError("none of the inputs could be read")
        speculator = build_corrector(args)
        speculator.spelling.updated(**spelling_changes(args))  # settings that do not go together: refused before any
        if args.out is None:
            status = correct_lines(speculator, args, sources, StreamOutput(), total)
        else:
            with OutputLock(args.out):
                resumable = all(source.replayable for source in sources)
                replayable = [source.path for source in sources if source.path is not None]
                identity = output_identity(args, replayable) if resumable else {"stdin": True, "never": "resumed"}
                output = ResumableText(args.out, identity)
                done = output.open(resume=resumable)
                if done:
                    print(f"{args.out}: {done} lines already done, continuing after them", file=sys.stderr)
                status = correct_lines(speculator, args, sources, output, total)
                if status == 0:
                    output.finish()
                else:
                    output.close()
    except (InputError, OutputError, ValueError, OSError) as error:  # OSError: missing files, an unreachable hub
        print(f"seq2spec correct: {error}", file=sys.stderr)
        return 2
    return max(status, 1 if unreadable else 0)


def correct_lines(speculator, args: argparse.Namespace, sources: list[Source], output, total: int | None) -> int:
    """Correct every line after those ``output`` already holds, chunk by chunk, writing each chunk as it is done.
    Returns 0, 2 after a fault, or 130 / 143 when stopped by Ctrl-C / SIGTERM (the work before it is kept)."""
    from tqdm import tqdm

    from seq2spec import SpeculationStats
    from seq2spec.speculator import InputTooLongError

    skip = output.lines_done
    stats = SpeculationStats()
    lines = read_lines(sources)
    for _ in range(skip):
        next(lines, None)
    bar = tqdm(total=total, initial=skip, unit="line", desc="lines", dynamic_ncols=True, file=sys.stderr)
    try:
        for chunk in chunks(lines, args.chunk_size):
            prose = [line for line in chunk if not line.code]
            try:
                texts = [line.text for line in prose]
                corrected = iter(speculator.correct(texts, **correct_arguments(args)) if texts else [])
            except InputTooLongError as error:
                line = prose[error.index]
                print(
                    f"seq2spec correct: line {line.number} of {line.source} has {error.tokens} tokens, more than the "
                    f"model's {error.limit}: shorten it or pass --truncate; the {output.lines_done} lines before its "
                    "chunk are kept" + (" (rerun to continue)" if args.out else ""),
                    file=sys.stderr,
                )
                return 2
            written = [line.text if line.code else one_line(next(corrected)) for line in chunk]
            with stops_deferred():  # the chunk is written whole and counted, or not at all
                output.write_lines(written, [line.end for line in chunk])
            if prose:
                stats.merge(speculator.last_stats)
            bar.update(len(chunk))
    except InputError as error:
        print(f"seq2spec correct: {error}; the {output.lines_done} lines before it are kept", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        bar.close()
        where = f" in {output.partial}, rerun to continue" if isinstance(output, ResumableText) else ""
        print(f"seq2spec correct: stopped; {output.lines_done} lines kept{where}", file=sys.stderr)
        return exit_status(stop)
    finally:
        bar.close()
    print(
        f"{output.lines_done} lines ({output.lines_done - skip} corrected now), {stats.generated_tokens} tokens, "
        f"acceptance {stats.acceptance_rate:.2f}, {stats.tokens_per_big_forward:.2f} tokens per big forward"
        + (f"; results in {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    return 0


def correct_arguments(args: argparse.Namespace) -> dict:
    """``Seq2SeqSpeculator.correct``'s keywords from the command's flags."""
    arguments = {
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "prefix": args.prefix,
        "truncate": args.truncate,
    }
    return {**arguments, **spelling_changes(args)}  # unset: the model's own settings


def add_parser(commands) -> argparse.ArgumentParser:
    correct = commands.add_parser(
        "correct",
        help="correct lines of text from files or standard input",
        description=plain_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    correct.add_argument("inputs", nargs="*", help="text files, one input per line ('-' or none: standard input)")
    correct.add_argument("--model", help="big model: hub name or local path (default: the shipped speller)")
    correct.add_argument(
        "--draft",
        help="draft model: hub name or local path (a seq2spec distill-draft folder too), 'input-copy' to copy from "
        "each line instead, or 'none' "
        "(default without --model: input copy from a spell-checked source, the shipped speller's fastest; its "
        "distilled draft is the folder seq2spec/assets/speller/small of the installed package; with --model: none)",
    )
    correct.add_argument("--prefix", help="text put before every line, e.g. 'grammar: '")
    correct.add_argument(
        "--batch-size", type=positive_int, default=32, help="lines decoded together, sorted by length (default 32)"
    )
    correct.add_argument(
        "--chunk-size",
        type=positive_int,
        default=1024,
        help="lines sorted, corrected and written together (default 1024)",
    )
    correct.add_argument(
        "--max-new-tokens", type=positive_int, help="most tokens the model writes per line (default: the model's own)"
    )
    correct.add_argument("--truncate", action="store_true", help="cut inputs longer than the model accepts")
    correct.add_argument(
        "--out", type=Path, help="output file (default: standard output); a directory with --ray; resumable"
    )
    add_runtime_flags(correct)
    add_spelling_flags(correct)
    add_speculation_flags(correct)
    add_ray_flags(correct)
    correct.set_defaults(run=run)
    return correct
