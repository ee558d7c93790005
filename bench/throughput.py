"""Throughput, side by side in one run: the variants are interleaved (a b c d a b c d ...) in chunks of
`chunk` steps and the median steps/s of each is reported, so that a noisy, shared machine slows all of
them alike instead of skewing one."""
from __future__ import annotations

import statistics
import time


def measure_throughput(variants: list, chunk: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {v.name: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            t = time.perf_counter()
            v.run(chunk)
            rates[v.name].append(chunk / (time.perf_counter() - t))
    return {name: statistics.median(r) for name, r in rates.items()}
