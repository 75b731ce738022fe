"""Long files' log-mel features kept in a temporary file, so that memory holds only the frames in use.

Whisper's sequential long form takes the features of whole files (80 floats per 10 ms: 115 MB an hour) and cuts
30-s windows from them as it goes. ``FeatureFile`` maps a temporary file as the features tensor (``torch.from_file``,
shared): ``log_mel.BlockLogMel`` writes each block's frames into it and hands their pages back to the kernel
(``madvise``) once written, and the long form's progress callback hands back the pages of the frames every row has
passed (``release_before``). A page handed back is read from the file again when it is next touched, so the values
are the features' own, bit for bit. Where pages cannot be handed back (not Linux with glibc), features stay in memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import platform
import tempfile
from collections.abc import Sequence
from functools import cache

import torch

# features of more bytes than this (about 9 minutes of one file at 80 mel bins) are kept in a file
FILE_BYTES = 16 * 2**20
_MADV_DONTNEED = 4  # <sys/mman.h>


@cache
def _madvise():
    """libc's ``madvise``, or None where pages cannot be handed back this way."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return function


def worth_a_file(rows: int, bins: int, frames: int) -> bool:
    """Whether float32 features of this shape are large enough to keep in a file, where pages can be handed back."""
    return rows * bins * frames * 4 > FILE_BYTES and _madvise() is not None


class FeatureFile:
    """``tensor``: float32 ``[rows, bins, frames]`` mapped from a temporary file (in ``directory``, default the
    system's), zeros until written. ``close`` removes the file."""

    def __init__(self, rows: int, bins: int, frames: int, directory: str | None = None) -> None:
        self.shape = (rows, bins, frames)
        self._file = tempfile.NamedTemporaryFile(prefix="seq2spec-features-", suffix=".f32", dir=directory)
        self._file.truncate(rows * bins * frames * 4)
        self._file.flush()
        size = rows * bins * frames
        self.tensor: torch.Tensor | None = torch.from_file(self._file.name, shared=True, size=size, dtype=torch.float32)
        self.tensor = self.tensor.view(self.shape)

    def release(self, row: int, end: int) -> None:
        """Hand back the pages of ``row``'s frames before ``end`` (its bins' whole pages; written frames stay in the
        file and are read from it when next touched)."""
        madvise = _madvise()
        if madvise is None or self.tensor is None:
            return
        _, bins, frames = self.shape
        end = max(0, min(int(end), frames))
        page, base = mmap.PAGESIZE, self.tensor.data_ptr()
        for line in range(bins):  # from the line's start: a page that held a later frame last time goes now
            start = base + (row * bins + line) * frames * 4
            first, last = -(-start // page) * page, (start + end * 4) // page * page
            if last > first:
                madvise(first, last - first, _MADV_DONTNEED)

    def release_before(self, seeks: Sequence[int]) -> None:
        """``release`` each row's frames before its ``seeks`` entry (Whisper's long form: where its next window
        starts; no later window reads before it)."""
        for row, seek in enumerate(seeks[: self.shape[0]]):
            self.release(row, seek)

    def close(self) -> None:
        self.tensor = None
        self._file.close()
