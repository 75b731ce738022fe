"""Requests that arrive together, decoded as one speculative batch.

Each kind of work (lines of text, audio files) has a ``Batcher``: a worker thread that takes the jobs waiting in its
bounded queue, up to ``max_rows`` rows of jobs that can share a call (the same options), and decodes them in one call of
its ``decode`` function; each job's future gets its own rows' results. Clients answered by one batch send their next
requests while the answers go out, one after another: so that those do not start the next batch a few rows wide (the
others would wait while it decodes, and a wide batch costs less per row), after a batch of R rows, while W more rows
came, the next batch waits for up to R + W rows until ``refill_share`` of that batch's decoding time (at most
``max_refill_seconds``) has passed since it ended (in turn, two halves of the clients would each keep their own
batches); a single client's requests (R = 1, W = 0) never wait, nor does a request that comes later. Per-row speculation
lets every row keep its own accepted tokens and leave when done, so a row's result does not depend on its batch mates. A
job whose client has gone (its future cancelled) before its batch starts is dropped; one whose rows are being decoded
finishes with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

POLL_SECONDS = 0.001  # the shortest wait for a job: how often requests being read are looked at


class QueueFull(RuntimeError):
    """More rows wait than the batcher takes: the client should retry later."""


@dataclass
class Job:
    """Rows of one request, the options they are decoded with, and where their results go."""

    rows: list[Any]
    options: Hashable
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop

    def done(self, results: list[Any] | None, error: BaseException | None = None) -> None:
        def settle() -> None:
            if self.future.done():
                return  # the client went away
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(results)

        self.loop.call_soon_threadsafe(settle)


@dataclass
class BatcherStats:
    """What a batcher did: calls of ``decode``, rows and jobs decoded, jobs dropped before decoding, seconds spent in
    ``decode``."""

    batches: int = 0
    rows: int = 0
    jobs: int = 0
    dropped: int = 0
    largest_batch: int = 0
    decode_seconds: float = 0.0


@dataclass
class Batcher:
    """``decode(rows, options) -> results`` run on a worker thread over the rows of jobs that wait together."""

    decode: Callable[[list[Any], Hashable], list[Any]]
    max_rows: int = 32
    max_waiting_rows: int = 1024
    gather_seconds: float = 0.005  # after the first job, how long to wait for others to join its batch
    refill_share: float = 0.1  # of the last batch's seconds: the longest wait for as many rows as it had
    max_refill_seconds: float = 0.25  # and never longer than this (the answers go out in milliseconds each)
    arrival_seconds: float = 0.05  # after the first job, the longest wait for requests still being read
    stats: BatcherStats = field(default_factory=BatcherStats)

    def __post_init__(self) -> None:
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._waiting_rows = 0
        self._lock = threading.Lock()
        self._held: list[Job] = []  # taken from the queue but left for a later batch (other options)
        self._refill_rows, self._refill_until = 0, 0.0  # rows the next batch may wait for, and until when
        self._arriving = 0  # requests being read that will submit rows (``arriving``)
        self._thread = threading.Thread(target=self._run, name="seq2spec-batcher", daemon=True)
        self._thread.start()

    async def submit(self, rows: list[Any], options: Hashable = None) -> list[Any]:
        """The results of ``rows``, decoded in a batch with whatever else waits; ``QueueFull`` when too many rows
        wait already."""
        return await self.enqueue(rows, options)

    def enqueue(self, rows: list[Any], options: Hashable = None) -> asyncio.Future:
        """``submit``'s job, queued now: the future of its results (cancel it to drop the job)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if not rows:
            future.set_result([])
            return future
        with self._lock:
            if self._waiting_rows + len(rows) > self.max_waiting_rows:
                raise QueueFull(f"{self._waiting_rows} rows are waiting (at most {self.max_waiting_rows})")
            self._waiting_rows += len(rows)
        self._jobs.put(Job(rows, options, future, loop))
        return future

    @contextlib.contextmanager
    def arriving(self) -> Iterator[None]:
        """Around reading a request that will ``enqueue`` rows: a batch that starts meanwhile waits for them (at
        most ``arrival_seconds``), so that requests sent together are decoded together."""
        with self._lock:
            self._arriving += 1
        try:
            yield
        finally:
            with self._lock:
                self._arriving -= 1

    @property
    def waiting_rows(self) -> int:
        return self._waiting_rows

    def close(self) -> None:
        """Stop the worker after the jobs already queued."""
        self._jobs.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._decode(batch)

    def _next_batch(self) -> list[Job] | None:
        """The first waiting job and those after it with the same options, up to ``max_rows`` rows; the others
        wait for the next batch, in their order."""
        pending, self._held = self._held, []
        first = pending.pop(0) if pending else self._jobs.get()
        if first is None:
            return None
        batch, rows, kept = [first], len(first.rows), []
        refill, patience = min(self.max_rows, self._refill_rows), time.monotonic() + self.arrival_seconds
        while rows < self.max_rows:
            if pending:
                job = pending.pop(0)
            else:
                wait = self._refill_until - time.monotonic() if rows < refill else 0.0
                try:
                    job = self._jobs.get(timeout=max(wait, self.gather_seconds, POLL_SECONDS))
                except queue.Empty:
                    if self._arriving and time.monotonic() < patience:
                        continue
                    break
                if job is None:  # closing: after this batch
                    self._jobs.put(None)
                    break
            if job.options == first.options and rows + len(job.rows) <= self.max_rows:
                batch.append(job)
                rows += len(job.rows)
            else:
                kept.append(job)
        self._held = kept + pending
        return batch

    def _decode(self, batch: list[Job]) -> None:
        live = [job for job in batch if not job.future.cancelled()]
        with self._lock:
            self._waiting_rows -= sum(len(job.rows) for job in batch)
        self.stats.dropped += len(batch) - len(live)
        if not live:
            return
        rows = [row for job in live for row in job.rows]
        started = time.monotonic()
        try:
            results = self.decode(rows, live[0].options)
        except BaseException as error:  # noqa: BLE001 - every job of the batch hears of its failure
            for job in live:
                job.done(None, error)
            return
        finally:
            ended = time.monotonic()
            self._refill_rows = len(rows) + self._waiting_rows  # its clients back, and the rows that came meanwhile
            self._refill_until = ended + min(self.refill_share * (ended - started), self.max_refill_seconds)
        self.stats.batches += 1
        self.stats.decode_seconds += ended - started
        self.stats.rows += len(rows)
        self.stats.jobs += len(live)
        self.stats.largest_batch = max(self.stats.largest_batch, len(rows))
        at = 0
        for job in live:
            job.done(results[at : at + len(job.rows)])
            at += len(job.rows)
