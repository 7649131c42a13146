"""Timing shared by the benchmark scripts (cpu_workloads.py, gpu_workloads.py, jax_models.py,
compile_scaling.py)."""
import subprocess
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


def kiln_benchmark(kiln, hlo_path, device, runs, inputs=(), output_dir=None, env=None,
                   timeout=None):
    """`kiln run HLO --device D --benchmark N` (DESIGN.md contract): the fields of its last
    line ({'compile_ms': .., 'median_ms': .., 'min_ms': .., ...}, numbers as floats), or a
    reason string: `>Ts` on timeout, `failed: ` and kiln's last stderr line."""
    cmd = [kiln, 'run', hlo_path, '--device', device, '--benchmark', str(runs)]
    for p in inputs:
        cmd += ['--input', p]
    if output_dir:
        cmd += ['--output-dir', output_dir]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f'>{timeout:.0f}s'
    if out.returncode != 0:
        return 'failed: ' + (out.stderr.strip().splitlines() or ['?'])[-1]
    fields = dict(kv.split('=') for kv in out.stdout.strip().splitlines()[-1].split())
    return {k: float(v) if k.endswith('_ms') else v for k, v in fields.items()}
