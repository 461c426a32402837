"""The caching allocator model against cases worked by hand from the rules of PyTorch's
c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size, get_free_block, should_split, free_block):
requests round up to 512 bytes; up to 1 MiB they share 2 MiB small segments; from 1 to 10 MiB a new segment is
20 MiB; beyond, the request rounded up to 2 MiB. Best fit reuses the smallest cached block; a large block is
split only when more than 1 MiB would remain; freed neighbours merge; nothing is given back."""

from __future__ import annotations

from gpuplan.tensors.allocator import CachingAllocator, allocation_size, round_size

MiB = 1 << 20


def test_sizes():
    assert round_size(1) == 512 and round_size(513) == 1024 and round_size(4096) == 4096
    assert allocation_size(512) == 2 * MiB and allocation_size(MiB) == 2 * MiB  # kSmallSize itself is small
    assert allocation_size(MiB + 512) == 20 * MiB and allocation_size(9 * MiB) == 20 * MiB
    assert allocation_size(10 * MiB) == 10 * MiB  # kMinLargeAlloc: rounded to 2 MiB, no 20 MiB buffer
    assert allocation_size(21 * MiB) == 22 * MiB


def test_a_1_5_mib_request_gets_a_20_mib_segment_and_splits_it():
    a = CachingAllocator()
    x = a.malloc(3 * MiB // 2)
    assert (a.reserved, a.segments, x.size) == (20 * MiB, 1, 3 * MiB // 2)
    assert a.free_bytes() == [20 * MiB - 3 * MiB // 2]  # 18.5 MiB left, more than 1 MiB: split off
    y = a.malloc(8 * MiB)  # fits in the rest: no new segment
    assert (a.reserved, a.allocated) == (20 * MiB, 3 * MiB // 2 + 8 * MiB)
    assert y.ptr == x.ptr + 3 * MiB // 2


def test_small_requests_share_a_2_mib_segment():
    a = CachingAllocator()
    a.malloc(100)  # 512 bytes
    a.malloc(1000)  # 1024 bytes, the same segment
    a.malloc(MiB)  # 1 MiB is still small
    assert (a.reserved, a.segments, a.allocated) == (2 * MiB, 1, 512 + 1024 + MiB)
    a.malloc(MiB)  # 2 MiB - 1536 bytes left: a second small segment
    assert (a.reserved, a.segments) == (4 * MiB, 2)


def test_large_block_left_whole_when_at_most_1_mib_would_remain():
    a = CachingAllocator()
    a.free(a.malloc(2 * MiB))  # a 20 MiB segment, cached whole
    x = a.malloc(19 * MiB + MiB // 2)  # 0.5 MiB would remain: not split, the whole block is handed out
    assert (x.size, a.allocated, a.reserved) == (20 * MiB, 20 * MiB, 20 * MiB)


def test_free_then_smaller_alloc_splits_and_a_later_big_request_needs_a_new_segment():
    """The fragmentation of torchao 0.1's init in small: a 64 MiB temporary is freed and cached; an 8 MiB
    persistent tensor takes the start of its block (split: 8 + 56 MiB); the next 64 MiB temporary fits nowhere
    and cudaMalloc gives a new 64 MiB segment: 128 MiB reserved for 72 MiB in use."""
    a = CachingAllocator()
    a.free(a.malloc(64 * MiB))
    kept = a.malloc(8 * MiB)
    assert a.free_bytes() == [56 * MiB] and a.reserved == 64 * MiB
    a.malloc(64 * MiB)
    assert (a.reserved, a.segments, a.allocated) == (128 * MiB, 2, 72 * MiB)
    a.free(kept)  # merges back with its free neighbour: one 64 MiB block again
    assert a.free_bytes() == [64 * MiB]


def test_best_fit_and_merging():
    a = CachingAllocator()
    a.free(a.malloc(100 * MiB))
    x, y = a.malloc(30 * MiB), a.malloc(30 * MiB)  # 30 + 30 + 40 MiB in the one segment
    assert a.free_bytes() == [40 * MiB]
    a.free(x)  # free: 30 (at the start) and 40 (at the end), not neighbours
    assert sorted(a.free_bytes()) == [30 * MiB, 40 * MiB]
    z = a.malloc(25 * MiB)  # best fit: the 30 MiB block, not the 40 MiB one (5 MiB remain: split)
    assert z.ptr == x.ptr and sorted(a.free_bytes()) == [5 * MiB, 40 * MiB]
    a.free(z)
    a.free(y)  # all three pieces merge
    assert a.free_bytes() == [100 * MiB]
    a.malloc(100 * MiB)
    assert a.reserved == 100 * MiB and a.segments == 1
