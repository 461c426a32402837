"""Per-sample token counts and their statistics: from a tokenized file, or from the stated shorthand
``samples`` x ``mean_tokens`` (up to ``max_tokens``).

A :class:`Lengths` holds the counts of the records tokenized (all of them, or a regular sample of a huge file,
then ``scale`` records stand for each one). The shorthand has no file: its lengths are the quantiles of a
log-normal distribution with the stated mean, cut at ``max_tokens`` (:func:`shorthand`); the report says the shape
is assumed (:data:`gpuplan.overheads.SHORTHAND_LENGTH_SIGMA`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

from .. import overheads as oh

SHORTHAND_POINTS = 2000  # quantiles that stand for the shorthand's samples


@dataclass(frozen=True, kw_only=True, eq=False)  # hashed by identity: the caches hold one per file or shorthand
class Lengths:
    """Tokens per record: ``content`` (the tokenizer's count of its own text), ``special`` (BOS, EOS, template
    tokens the stack adds), ``loss`` (tokens the loss is computed on); each record stands for ``scale``."""

    content: tuple[int, ...]
    special: tuple[int, ...]
    loss: tuple[int, ...]
    scale: float = 1.0  # records of the dataset each counted record stands for (sampling, shorthand)
    samples: int = 0  # records in the dataset
    kind: str = ""  # messages | prompt-completion | text | shorthand
    no_reply: int = 0  # chat records of the dataset with no reply turn (scaled as the counts are)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sequences(self) -> list[int]:
        """Each record's tokens as the model sees it (content + what the stack adds), before truncation."""
        return [c + s for c, s in zip(self.content, self.special, strict=True)]


def shorthand(samples: int, mean_tokens: float, max_tokens: int | None) -> Lengths:
    """``samples`` records whose lengths follow a log-normal distribution of mean ``mean_tokens`` (after the cut at
    ``max_tokens``, found by bisection on the log-mean), as :data:`SHORTHAND_POINTS` quantiles."""
    sigma = oh.SHORTHAND_LENGTH_SIGMA
    n = min(samples, SHORTHAND_POINTS)
    z = [NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]

    def draw(mu: float) -> list[int]:
        values = [max(1, round(math.exp(mu + sigma * x))) for x in z]
        return [min(v, max_tokens) for v in values] if max_tokens else values

    lo, hi = math.log(max(mean_tokens, 1.0)) - 4 * sigma, math.log(max(mean_tokens, 1.0)) + 4 * sigma
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(draw(mid)) / n < mean_tokens else (lo, mid)
    lengths = tuple(sorted(draw((lo + hi) / 2)))
    shape = (f"lengths assumed log-normal (sigma {sigma:g} of log-length) with mean {mean_tokens:,.0f}"
             + (f", cut at {max_tokens:,}" if max_tokens else "") + ": pass --dataset for the real lengths")
    return Lengths(content=lengths, special=(0,) * n, loss=lengths, scale=samples / n, samples=samples,
                   kind="shorthand", notes=(shape,))


def quantile(sorted_values: list[int], q: float) -> int:
    """The nearest-rank ``q`` quantile of sorted values (numpy's ``inverted_cdf``)."""
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


@dataclass(frozen=True, kw_only=True)
class Statistics:
    samples: int
    tokens_total: int  # the records' own tokens (content): exactly what the tokenizer gives
    special_tokens: int  # BOS/EOS/template tokens the stack adds, counted apart
    mean_tokens: float  # per record, content + special
    p50_tokens: int
    p95_tokens: int
    max_tokens: int
    truncated: int  # records longer than seq_len
    tokens_trained: int  # tokens through the model per epoch: content + special, truncated at seq_len
    loss_tokens: int  # of those, the tokens the loss is on (prompts masked or not)
    prompt_masked: bool


def statistics(lengths: Lengths, seq_len: int) -> Statistics:
    seqs = lengths.sequences
    ordered = sorted(seqs)
    k = lengths.scale
    trained = sum(min(x, seq_len) for x in seqs)
    # the loss sits at the end of a record (the completion): truncation cuts it last
    loss = sum(min(lo, max(seq_len - (x - lo), 0)) for x, lo in zip(seqs, lengths.loss, strict=True))
    return Statistics(
        samples=lengths.samples, tokens_total=round(k * sum(lengths.content)),
        special_tokens=round(k * sum(lengths.special)), mean_tokens=sum(seqs) / len(seqs) if seqs else 0.0,
        p50_tokens=quantile(ordered, 0.5), p95_tokens=quantile(ordered, 0.95), max_tokens=ordered[-1] if ordered
        else 0, truncated=round(k * sum(1 for x in seqs if x > seq_len)), tokens_trained=round(k * trained),
        loss_tokens=round(k * loss), prompt_masked=lengths.loss != tuple(seqs))
