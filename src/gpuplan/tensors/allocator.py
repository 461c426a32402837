"""PyTorch's CUDA caching allocator, replayed on a sequence of allocations and frees: what it reserves.

``torch.cuda.max_memory_reserved`` is the sum of the segments the allocator got from ``cudaMalloc``; it gives
none back without ``empty_cache`` (or an out-of-memory retry). How much it reserves beyond the live tensors
depends on the order of the requests, which is why a formula cannot say it and a replay can. The rules below are
``DeviceCachingAllocator`` in pytorch/pytorch ``c10/cuda/CUDACachingAllocator.cpp``, read at commit
001074d25084fdb87a799823e395a50f5ec044d3 (today's; the torch 2.2 tag was not re-read, but the replay of torchtune
0.1's init on these rules gives the 9.13 GB its April-2024 tutorial printed), with the defaults (no
``PYTORCH_CUDA_ALLOC_CONF``: ``max_split_size`` unlimited, no power-of-two rounding, no expandable segments, one
stream):

- ``round_size``: a request is rounded up to a multiple of ``kMinBlockSize`` = 512 bytes;
- ``get_pool``: requests up to ``kSmallSize`` = 1 MiB go to the small pool, larger ones to the large pool;
- ``get_allocation_size``: a new segment is ``kSmallBuffer`` = 2 MiB for a small request, ``kLargeBuffer`` =
  20 MiB for one under ``kMinLargeAlloc`` = 10 MiB, else the request rounded up to ``kRoundLarge`` = 2 MiB;
- ``get_free_block``: best fit, the smallest free block of the pool that holds the request, ties to the lowest
  address (``BlockComparatorSize``: stream, size, pointer);
- ``should_split`` / ``alloc_found_block``: the block is split, the request at its start and the rest after it,
  when the rest is at least 512 bytes (small pool) or more than 1 MiB (large pool);
- ``free_block`` / ``try_merge_blocks``: a freed block merges with its free neighbours of the same segment;
- nothing is given back: segments are released only by ``empty_cache`` or after a failed ``cudaMalloc``, which
  this replay does not model (it has no card size).
"""

from __future__ import annotations

from bisect import bisect_left, insort

K_MIN_BLOCK_SIZE = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20


def round_size(nbytes: int) -> int:
    """``round_size``: at least 512 bytes, a multiple of 512."""
    return max(K_MIN_BLOCK_SIZE, -(-nbytes // K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE)


def allocation_size(size: int) -> int:
    """``get_allocation_size``: the segment ``cudaMalloc`` gets for a rounded request no cached block holds."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return -(-size // K_ROUND_LARGE) * K_ROUND_LARGE


class Block:
    """A piece of a segment: ``ptr`` and ``size`` in bytes, its neighbours in the segment, in use or free."""

    __slots__ = ("allocated", "next", "prev", "ptr", "size", "small")

    def __init__(self, ptr: int, size: int, small: bool):
        self.ptr, self.size, self.small = ptr, size, small
        self.prev: Block | None = None
        self.next: Block | None = None
        self.allocated = False


class CachingAllocator:
    """One device, one stream. ``malloc`` returns the block a tensor of ``nbytes`` gets; ``free`` gives it back
    to the cache. ``reserved`` (bytes in segments) only grows; ``allocated`` counts the blocks in use (rounded
    sizes, as ``memory_allocated`` does) and ``peak_allocated`` its maximum."""

    def __init__(self) -> None:
        self._free: dict[bool, list[tuple[int, int]]] = {True: [], False: []}  # pool -> sorted (size, ptr)
        self._by_ptr: dict[int, Block] = {}  # free blocks
        self._top = 0  # where the next segment's addresses start
        self.reserved = 0
        self.segments = 0
        self.allocated = 0
        self.peak_allocated = 0

    def malloc(self, nbytes: int) -> Block:
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        pool = self._free[small]
        i = bisect_left(pool, (size, -1))
        if i < len(pool):
            block = self._by_ptr.pop(pool.pop(i)[1])
        else:  # cudaMalloc a new segment
            seg = allocation_size(size)
            block = Block(self._top, seg, small)
            self._top += seg + K_ROUND_LARGE  # segments are never neighbours
            self.reserved += seg
            self.segments += 1
        rest = block.size - size
        if rest >= K_MIN_BLOCK_SIZE if small else rest > K_SMALL_SIZE:
            remaining = Block(block.ptr + size, rest, small)
            remaining.prev, remaining.next = block, block.next
            if block.next:
                block.next.prev = remaining
            block.next, block.size = remaining, size
            self._insert(remaining)
        block.allocated = True
        self.allocated += block.size
        if self.allocated > self.peak_allocated:
            self.peak_allocated = self.allocated
        return block

    def free(self, block: Block) -> None:
        block.allocated = False
        self.allocated -= block.size
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove(neighbour)
                if neighbour is block.prev:
                    block.ptr, block.prev = neighbour.ptr, neighbour.prev
                    if block.prev:
                        block.prev.next = block
                else:
                    block.next = neighbour.next
                    if block.next:
                        block.next.prev = block
                block.size += neighbour.size
        self._insert(block)

    def free_bytes(self) -> list[int]:
        """The cached free blocks' sizes, both pools."""
        return [size for pool in self._free.values() for size, _ in pool]

    def _insert(self, block: Block) -> None:
        insort(self._free[block.small], (block.size, block.ptr))
        self._by_ptr[block.ptr] = block

    def _remove(self, block: Block) -> None:
        pool = self._free[block.small]
        del pool[bisect_left(pool, (block.size, block.ptr))]
        del self._by_ptr[block.ptr]
