"""The bytes of each kind of tensor a job keeps on a GPU, the arithmetic the stacks, shardings and engines share.

- :mod:`.breakdown`: the ``Estimate`` every estimator returns (parts that add up), and memory outside the
  allocator;
- :mod:`.state`: weights in their storage format, LoRA adapters and optimizer states;
- :mod:`.activations`: the tensors autograd saves and the temporaries ops allocate, per layer;
- :mod:`.kv`: the KV cache and the recurrent states of each layer kind, per token and per sequence.
"""
