"""How the stacks batch variable-length records, and what that costs: rows per epoch, padding, the longest row.

- ``none``: padding per batch to its longest record (TRL's and the HF Trainer's default collators; torchtune and
  axolotl without packing): the expected padded length of a micro-batch of ``b`` records drawn at random is the
  expectation of the largest of ``b`` draws, ``sum_v v (F(v)^b - F(v-)^b)`` over the length distribution ``F``;
  the peak is the batch that holds the longest record;
- ``bucket``: length-grouped batches (the Trainer's ``group_by_length``: megabatches of 50 micro-batches, each
  sorted by length, ``trainer_pt_utils.get_length_grouped_indices``), simulated with a fixed seed;
- ``bfd``: best-fit-decreasing packing into rows of ``seq_len`` tokens, records whole, no attention across them
  (TRL ``packing_strategy="bfd"`` with padding-free batches and position ids; axolotl ``sample_packing``'s
  multipack with FlashAttention varlen; torchtune ``packed: True`` with its block-causal mask, each pack padded
  to ``max_seq_len``);
- ``wrapped``: every record concatenated and cut into rows of ``seq_len`` (TRL ``packing_strategy="wrapped"``,
  torchtitan's pretraining loader): no padding, attention across record boundaries.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

GROUP_BY_LENGTH_MEGABATCH = 50  # transformers trainer_pt_utils.get_length_grouped_indices(mega_batch_mult=50)
PACKING = ("none", "bucket", "bfd", "wrapped")


@dataclass(frozen=True, kw_only=True)
class Batching:
    packing: str
    rows: int  # sequences (rows) per epoch: records, or packs
    real_tokens: int  # per epoch
    padded_tokens: int  # per epoch, padding included: what the GPUs process
    longest_row: int  # tokens of the longest row: the memory peak's sequence length
    row_lengths: tuple[tuple[int, float], ...]  # (row length, share of micro-batches) for the time at the mix
    fill: float  # packing: real tokens / (rows x seq_len)
    attention_ratio: float  # attention work / that of full causal rows of the row length (packing masks)

    @property
    def waste(self) -> float:
        """Share of processed tokens that are padding."""
        return 1 - self.real_tokens / self.padded_tokens if self.padded_tokens else 0.0


def _max_distribution(ordered: list[int], b: int) -> list[tuple[int, float]]:
    """Distribution of the largest of ``b`` draws from the empirical distribution of ``ordered``."""
    n = len(ordered)
    out: list[tuple[int, float]] = []
    i = 0
    while i < n:
        j = bisect.bisect_right(ordered, ordered[i])
        p = (j / n) ** b - (i / n) ** b
        if p > 0:
            out.append((ordered[i], p))
        i = j
    return out


def expected_longest(row_lengths: tuple[tuple[int, float], ...], draws: int) -> float:
    """The expected longest of ``draws`` micro-batches drawn from ``row_lengths`` (length, share) pairs: what the
    caching allocator holds once that many steps ran since it was emptied."""
    out, below = 0.0, 0.0
    for length, share in sorted(row_lengths):
        upto = min(below + share, 1.0)
        out += length * (upto**draws - below**draws)
        below = upto
    return out


def _bins(lengths: list[int], seq_len: int) -> list[list[int]]:
    """Best-fit decreasing: each record (longest first) into the fullest row it still fits, else a new row."""
    free: list[tuple[int, int]] = []  # (room left, row index), sorted
    rows: list[list[int]] = []
    for x in sorted(lengths, reverse=True):
        at = bisect.bisect_left(free, (x, -1))
        if at < len(free):
            room, row = free.pop(at)
        else:
            room, row = seq_len, len(rows)
            rows.append([])
        rows[row].append(x)
        if room - x > 0:
            bisect.insort(free, (room - x, row))
    return rows


def batching(sequences: list[int], scale: float, seq_len: int, micro_batch: int, packing: str,
             pad_packs: bool = False) -> Batching:
    """The rows, padding and longest row of one epoch of ``sequences`` (each standing for ``scale`` records),
    truncated at ``seq_len``. ``pad_packs``: packs padded to ``seq_len`` (torchtune)."""
    seqs = [min(x, seq_len) for x in sequences]
    real = sum(seqs)
    n = len(seqs)
    if packing == "none":
        dist = _max_distribution(sorted(seqs), micro_batch)
        expected = sum(v * p for v, p in dist)
        return Batching(packing=packing, rows=round(n * scale), real_tokens=round(real * scale),
                        padded_tokens=round(n * expected * scale), longest_row=max(seqs, default=0),
                        row_lengths=tuple(dist), fill=1.0, attention_ratio=1.0)
    if packing == "bucket":
        order = list(range(n))
        random.Random(0).shuffle(order)
        mega = GROUP_BY_LENGTH_MEGABATCH * micro_batch
        lengths: dict[int, int] = {}
        padded = 0
        batches = 0
        for start in range(0, n, mega):
            group = sorted((seqs[i] for i in order[start:start + mega]), reverse=True)
            for b in range(0, len(group), micro_batch):
                top = group[b]
                lengths[top] = lengths.get(top, 0) + 1
                padded += top * len(group[b:b + micro_batch])
                batches += 1
        dist = tuple(sorted((v, c / batches) for v, c in lengths.items()))
        return Batching(packing=packing, rows=round(n * scale), real_tokens=round(real * scale),
                        padded_tokens=round(padded * scale), longest_row=max(seqs, default=0), row_lengths=dist,
                        fill=1.0, attention_ratio=1.0)
    if packing == "wrapped":
        rows = math.ceil(real * scale / seq_len)
        return Batching(packing=packing, rows=rows, real_tokens=round(real * scale), padded_tokens=round(real * scale),
                        longest_row=seq_len, row_lengths=((seq_len, 1.0),), fill=1.0, attention_ratio=1.0)
    packs = _bins(seqs, seq_len)
    fill = real / (len(packs) * seq_len) if packs else 1.0
    squares = sum(x * x for x in seqs)
    ratio = squares / (len(packs) * seq_len * seq_len) if packs else 1.0
    padded = len(packs) * seq_len if pad_packs else real
    return Batching(packing=packing, rows=round(len(packs) * scale), real_tokens=round(real * scale),
                    padded_tokens=round(padded * scale), longest_row=seq_len, row_lengths=((seq_len, 1.0),),
                    fill=fill, attention_ratio=ratio)
