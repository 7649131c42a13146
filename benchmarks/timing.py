"""Timing shared by the benchmark scripts (cpu_workloads.py, gpu_workloads.py)."""
import time


def median_ms(fn, runs):
    """Median wall time of `runs` calls of fn() in ms, after one warm-up call."""
    fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return sorted(t)[len(t) // 2]
