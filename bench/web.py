"""Time the page's API calls for one keystroke and the heavier searches (no assertions: numbers to read).

    python bench/web.py

Each endpoint is called through the ASGI app in process (FastAPI's TestClient), so the figures are the server's
work plus JSON, without a network: what the page waits for on localhost.
"""

from __future__ import annotations

import statistics
import time

from fastapi.testclient import TestClient

from gpuplan.web.app import create_app

SCENARIOS = {
    "QLoRA 8B on 4090": {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"},
    "LoRA 8B on 4090 (no fit)": {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "rtx-4090"},
    "serve 70B vLLM tp2": {"model": "llama-3.1-70b", "task": "infer", "engine": "vllm", "num_gpus": 2, "tp": 2,
                           "gpu": "h100-sxm", "batch_size": 32},
}
CALLS = {
    "estimate": lambda s: ("/api/estimate", s),
    "explain": lambda s: ("/api/explain", s),
    "export": lambda s: ("/api/export", s),
    "recommend": lambda s: ("/api/recommend", {"scenario": s}),
    "fit-grid": lambda s: ("/api/fit-grid", {"scenario": s}),
}


def timed(client: TestClient, path: str, body, repeat: int = 7) -> float:
    client.post(path, json=body).raise_for_status()  # warm the caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        client.post(path, json=body).raise_for_status()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main() -> None:
    client = TestClient(create_app(), base_url="http://127.0.0.1")
    print(f"{'scenario':26s}" + "".join(f"{name + ' ms':>15s}" for name in CALLS))
    for label, scenario in SCENARIOS.items():
        row = [timed(client, *call(scenario)) for call in CALLS.values()]
        print(f"{label:26s}" + "".join(f"{ms:15.1f}" for ms in row))


if __name__ == "__main__":
    main()
