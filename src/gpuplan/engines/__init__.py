"""Serving engines (design.md, "One plan, three words"): what each engine allocates at start-up and how it sizes
its KV cache, from its own code per release, checked against public start-up logs.

- :mod:`.vllm`: vLLM's memory profiling, ``gpu_memory_utilization`` budget, paged KV blocks and scheduler limits;
- :mod:`.sglang`: SGLang's ``mem_fraction_static`` token pool;
- :mod:`.llama_cpp`: llama.cpp's layer split between the GPU and the CPU, and its compute buffers;
- :mod:`.trtllm`: TensorRT-LLM's paged KV cache from ``free_gpu_memory_fraction`` of the memory left free.

transformers' own ``generate`` (the ``transformers`` engine) is the default path of
:mod:`gpuplan.memory.inference`; the KV and recurrent-state arithmetic every engine uses is
:mod:`gpuplan.tensors.kv`.
"""
