"""DPO (train_objective dpo): the estimate against the fake-tensor simulation (real transformers and TRL 1.16's
head), one GPU, full depth (bench/results/dpo_s24.md). Usage: python bench/dpo_simcheck.py [model]"""
import sys
import time

from gpuplan import overheads as oh
from gpuplan.memory.training import training_memory
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.sim.simulate import simulate
from gpuplan.tensors.breakdown import GIB

model = sys.argv[1] if len(sys.argv) > 1 else "qwen2.5-0.5b"
rows = []
for method, extra in [("full", {}), ("full", {"precompute_ref_log_probs": True}), ("lora", {}), ("qlora", {}),
                      ("full", {"grad_checkpointing": "full"}), ("lora", {"grad_checkpointing": "full"})]:
    for obj in ("sft", "dpo"):
        if obj == "sft" and extra.get("precompute_ref_log_probs"):
            continue
        d = dict(model=model, task="train", method=method, micro_batch_size=2, seq_len=512, gpu="h100",
                 train_objective=obj, **extra)
        s = scenario_from(d)
        t = time.time()
        sim = simulate(s, layers=load_model(s.model).num_layers)
        e = training_memory(s, load_model(s.model))
        est = e.allocated / GIB - oh.CUBLAS_WORKSPACE_GIB
        print(f"{method:5} {obj:3} {extra} sim {sim.allocated_peak_gib:.3f} ({sim.peak_phase}) est {est:.3f} "
              f"({e.peak_phase}) err {100*(est/sim.allocated_peak_gib-1):+.1f}%  [{time.time()-t:.0f}s]", flush=True)
