"""The global batch, learning rate, schedule and clipping of the published recipes a training plan follows (the
recipe, :mod:`.recipe`, says them with the rest of the run; the layout, :mod:`.layout`, reaches the batch). Apart
from the recipe's records so that a plan without data reads its batch without making them (bench/results/startup.md,
session 10).

Published recipes, by kind of run:

- **LoRA / QLoRA fine-tuning**: the QLoRA paper (Dettmers et al. 2023, appendix B, Table 9, and its released
  ``scripts/finetune_guanaco_*.sh``): global batch 16 sequences, learning rate 2e-4 up to 13B and 1e-4 above,
  a constant schedule after a 3 % warm-up, gradient clipping 0.3;
- **full fine-tuning**: Stanford Alpaca (Taori et al. 2023, its README's hyperparameters): global batch 128,
  learning rate 2e-5 for 7B and 13B, cosine decay after a 3 % warm-up; Tulu 2 (Ivison et al. 2023, section 3)
  trains 70B at 1e-5 with the same batch;
- **pretraining** (a synthetic ``model_size``): GPT-3 (Brown et al. 2020, Table 2.1: batch in tokens and
  learning rate by size, 125M to 13B; 375M tokens of linear warm-up, appendix B; cosine decay to 10 %), and
  Llama 2 (Touvron et al. 2023, section 2.2: 4M-token batches, 1.5e-4 for 34B and 70B, 2,000 warm-up steps).
"""

from __future__ import annotations

import math

QLORA = "QLoRA paper (Dettmers et al. 2023, Table 9)"
ALPACA = "Stanford Alpaca's recipe (Taori et al. 2023)"
TULU = "Tulu 2 (Ivison et al. 2023)"
GPT3 = "GPT-3 (Brown et al. 2020, Table 2.1)"
LLAMA2 = "Llama 2 (Touvron et al. 2023, section 2.2)"
# GPT-3 Table 2.1: parameters -> (batch tokens, learning rate)
GPT3_TABLE = ((125e6, 0.5e6, 6.0e-4), (350e6, 0.5e6, 3.0e-4), (760e6, 0.5e6, 2.5e-4), (1.3e9, 1e6, 2.0e-4),
              (2.7e9, 1e6, 1.6e-4), (6.7e9, 2e6, 1.2e-4), (13e9, 2e6, 1.0e-4))
# a floor on optimizer steps: gpuplan's rule, not a paper's: the 3 % warm-up takes at least one step and the schedule
# has room to act (the published recipes run hundreds to thousands: QLoRA's Guanaco 1,875, Alpaca ~1,200)
MIN_STEPS = 50
# epochs by the number of examples: Stanford Alpaca (52k, 3 epochs, its README), Vicuna (FastChat's train script,
# 3 epochs of 70k conversations), QLoRA's Guanaco (1,875 steps x 16 on OASST1's 9,846: 3 epochs); Tulu 2 (Ivison
# et al. 2023, section 3: 2 epochs of its 326k mixture)
EPOCHS_BY_SIZE = ((100_000, 3.0, "under 100k examples: 3 epochs, as Alpaca (52k), Vicuna (70k) and QLoRA's Guanaco "
                                  "(9.8k) train"),
                  (None, 2.0, "100k examples or more: 2 epochs, as Tulu 2 trains its 326k"))


def kind_of(s) -> str:
    if s.method != "full":
        return "lora"
    return "pretraining" if s.model_size else "full fine-tuning"


def published(s, params: float) -> tuple[int, float, str, float, str]:
    """(global batch in sequences, learning rate, schedule, max grad norm, why) of the recipe for ``s``."""
    kind = kind_of(s)
    if kind == "lora":
        lr = 2e-4 if params <= 20e9 else 1e-4
        return 16, lr, "constant", 0.3, (f"{QLORA}: batch 16, lr 2e-4 up to 13B and 1e-4 for 33B-65B (here "
                                         f"{lr:g}), constant schedule, max grad norm 0.3")
    if kind == "full fine-tuning":
        lr = 2e-5 if params <= 20e9 else 1e-5
        return 128, lr, "cosine", 1.0, (f"{ALPACA}: batch 128, lr 2e-5 at 7B and 13B, cosine; " + (
            f"{TULU}: lr 1e-5 for its 70B, taken above 20B" if lr < 2e-5 else f"{TULU} the same up to 13B"))
    if params > 20e9:
        tokens, lr, why = 4e6, 1.5e-4, f"{LLAMA2}: 4M-token batches, lr 1.5e-4 at 34B and 70B, cosine to 10 %"
    else:
        _, tokens, lr = min(GPT3_TABLE, key=lambda r: abs(math.log(r[0] / params)))
        why = f"{GPT3}: {tokens / 1e6:g}M-token batches and lr {lr:g} at this size, cosine to 10 %"
    return max(1, round(tokens / s.seq_len)), lr, "cosine", 1.0, why


def suggested_epochs(examples: int) -> tuple[float, str]:
    """The epochs the published fine-tuning recipes run on a set of ``examples`` (:data:`EPOCHS_BY_SIZE`)."""
    for below, epochs, why in EPOCHS_BY_SIZE:
        if below is None or examples < below:
            return epochs, why
    raise AssertionError("EPOCHS_BY_SIZE ends with a catch-all")


def data_batch(s, params: float, examples: int, rows: int) -> tuple[int, int, str]:
    """(examples per step, rows per step, why) of a fine-tuning run on ``examples`` packed into ``rows`` per epoch:
    the recipe's batch in examples, at most one epoch, shrunk so the run makes :data:`MIN_STEPS` optimizer steps;
    the trainer's rows per step are those examples over the examples a row holds (at least one row)."""
    wanted, *_, why = published(s, params)
    epochs = s.epochs or 1.0
    batch = min(wanted, examples)
    said = f"the recipe's {wanted:,}, capped at the {examples:,} of one epoch; " if batch < wanted else ""
    if math.ceil(epochs * examples / batch) < MIN_STEPS:  # at least one example per data-parallel rank
        batch = max(s.dp, math.floor(epochs * examples / MIN_STEPS))
        said = (f"the recipe's {wanted:,} would make fewer than {MIN_STEPS} optimizer steps of {epochs:g} epoch(s) "
                f"of {examples:,} examples (gpuplan's floor); ")
    per_row = examples / rows
    rows_per_step = max(1, round(batch / per_row))
    if per_row > 1.01:
        said += f"{batch:,} examples are {rows_per_step:,} packed rows of {per_row:.1f} examples each; "
    return batch, rows_per_step, f"{said}{why}"
