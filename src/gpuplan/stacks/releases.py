"""The releases each training stack's launch files follow and install (:meth:`gpuplan.stacks.base.Stack.packages`).

The launch tests read the files with these: ``tests/launchers/test_launch_readers.py`` parses ``trainer.yaml`` with
this TRL and transformers and ``ds_config.json`` with this DeepSpeed, Unsloth's files against its signatures; the
estimate's rules follow the same releases (transformers >= 4.46 loss, fused AdamW since torch 2.8).
"""

from __future__ import annotations

# the Hugging Face stack's packages (TRL's SFTTrainer over transformers, peft, accelerate and DeepSpeed)
TESTED = {"torch": "2.13.0", "transformers": "5.24.0", "accelerate": "1.15.0", "trl": "1.16.0", "datasets": "5.2.0",
          "peft": "0.21.2", "deepspeed": "0.19.8"}
TORCHTITAN_VERSION = "0.1.0"
AXOLOTL_VERSION = "0.18.0"
UNSLOTH_VERSION = "2026.10.9"
# Megatron-LM: the commit whose pretrain_gpt.py parser the tests read (tests/data/megatron/pretrain-args.json), run in
# the container its CI runs in (docker/Dockerfile.ci.dev FROM_IMAGE_NAME at that commit)
MEGATRON_REPO = "https://github.com/NVIDIA/Megatron-LM.git"
MEGATRON_COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
MEGATRON_IMAGE = "nvcr.io/nvidia/pytorch:26.06-py3"
