"""Serving plans: a request stream under latency targets, the engine's step time, and the GPUs that carry it.

- :mod:`.workload`: arrival rate, length distributions, shared prefix and SLOs (validated at the boundary);
- :mod:`.steptime`: the time of one continuous-batching step (prefill chunks and decodes mixed), on the
  speed primitives;
- :mod:`.simulate`: a discrete-event simulation of vLLM's scheduler and SGLang's (numpy, imported on demand);
- :mod:`.capacity`: the highest rate each setup sustains within the SLOs, its cost, the Pareto front;
- :mod:`.load`: one setup under a load (users, a rate, or its batch at once), reported as ``vllm bench serve``
  reports a run;
- :mod:`.calibrate`: corrections fitted on the user's own `vllm bench serve` / GuideLLM / AIPerf results.
"""
