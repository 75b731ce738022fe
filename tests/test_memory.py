import platform
import resource

import pytest
import torch

from seq2spec.memory import retain_freed_memory

glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def page_faults_of_filling(numel: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.empty(numel).fill_(1.0)  # allocated, every page written, freed
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not glibc, reason="glibc's allocator only")
def test_a_freed_block_is_reused_without_page_faults():
    assert retain_freed_memory()
    numel = 64 * 2**20 // 4  # 64 MiB: above glibc's largest default heap block, so it came from fresh mmap pages
    fresh_pages = numel * 4 // 4096
    faults = [page_faults_of_filling(numel) for _ in range(4)]  # glibc's default: every one of them faults
    assert min(faults) < fresh_pages // 10, faults


@pytest.mark.skipif(glibc, reason="other C libraries")
def test_elsewhere_nothing_changes():
    assert retain_freed_memory() is False
