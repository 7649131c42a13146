#!/usr/bin/env python3
"""`kiln run --replicas N`: collective modules on several devices, in one process and under
mpirun over Open MPI, checked against NumPy; the same run on the interpreter and on cpu-llvm
agree; bad runs (a rank count that does not match, a module whose groups name missing
devices, a rank that fails or never comes, a rank killed mid-run) end with a clear error,
never a hang. Run by meson with: collectives_cli_test.py KILN SOURCE_ROOT DEVICE...

Real modules too: jaxdecomp's distributed 3D FFT (8 partitions, all-to-all) against NumPy's
FFT of the whole array, and torch-xla's data-parallel, tensor-parallel, pipeline and FSDP
steps on 2 ranks under mpirun (cpu-llvm) against the same on 2 in-process devices
(interpreter)."""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

KILN = sys.argv[1]
CORPUS = os.path.join(sys.argv[2], 'tests', 'hlo_corpus')
DEVICES = sys.argv[3:]
TMP = tempfile.mkdtemp(prefix='kiln_collectives_test_')
# Each run writes about 440 MB (dumps of the torch-xla steps): never leave it behind.
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
MPIRUN = subprocess.run(['which', 'mpirun'], capture_output=True, text=True).stdout.strip()
failures, passes = [], []

ENV = dict(os.environ)
ENV.update({'KILN_CONFIG': '', 'HOME': TMP,
            # CI runs as root; four ranks share two cores.
            'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
            'OMPI_MCA_rmaps_base_oversubscribe': '1'})


def run(args, ranks=None, env_extra=None, timeout=180):
    cmd = [KILN] + args
    if ranks:
        cmd = [MPIRUN, '-np', str(ranks)] + cmd
    env = dict(ENV)
    env.update(env_extra or {})
    # A session of its own, so that a hung job is killed whole (mpirun and its ranks).
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError('%s hung for %d s' % (' '.join(cmd), timeout))
    return p.returncode, out, err


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def case(fn):
    try:
        fn()
        passes.append(fn.__name__)
        print('PASS', fn.__name__)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failures.append('%s: %s' % (fn.__name__, e))
        print('FAIL', fn.__name__, e)


SUM = """
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%max (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] maximum(%x, %y)
}
"""

# Every collective kind, with compute around them, on n devices: a is f32[R,8] per device
# (R = 4/n rows), so the all-gather has 4 rows; reduce-scatter and all-to-all split the 8
# columns; the permute sends each device's sum to the next.
MIXED_ENTRY = """
ENTRY %main (a: f32[{R},8], w: f32[8,4]) -> {SIG} {{
  %a = f32[{R},8] parameter(0)
  %w = f32[8,4] parameter(1)
  %d = f32[{R},4] dot(%a, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %ar = f32[{R},4] all-reduce(%d), replica_groups={{}}, to_apply=%sum
  %t = f32[{R},8] tanh(%a)
  %mx = f32[{R},8] all-reduce(%t), replica_groups={{}}, to_apply=%max
  %ag = f32[4,8] all-gather(%a), replica_groups={{}}, dimensions={{0}}
  %rs = f32[{R},{C}] reduce-scatter(%a), replica_groups={{}}, dimensions={{1}}, to_apply=%sum
  %a2a = f32[{R},8] all-to-all(%a), replica_groups={{}}, dimensions={{1}}
  %cp = f32[{R},4] collective-permute(%ar), source_target_pairs={PAIRS}
  ROOT %out = {SIG} tuple(%ar, %ag, %rs, %a2a, %cp, %mx)
}}
"""


def mixed_module(n):
    rows, cols = 4 // n, 8 // n
    sig = '(f32[%d,4], f32[4,8], f32[%d,%d], f32[%d,8], f32[%d,4], f32[%d,8])' % (
        rows, rows, cols, rows, rows, rows)
    pairs = '{' + ','.join('{%d,%d}' % (i, (i + 1) % n) for i in range(n)) + '}'
    text = MIXED_ENTRY.format(R=rows, C=cols, SIG=sig, PAIRS=pairs)
    return write('mixed_%d.hlo' % n, 'HloModule mixed_%d\n' % n + SUM + text)


def inputs(n, tag):
    """Per-device inputs a_<r>.npy, w_<r>.npy, different on each device."""
    rows = 4 // n
    rng = np.random.default_rng(7)
    a = [rng.standard_normal((rows, 8)).astype(np.float32) for _ in range(n)]
    w = [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(n)]
    for r in range(n):
        np.save(os.path.join(TMP, '%s_a_%d.npy' % (tag, r)), a[r])
        np.save(os.path.join(TMP, '%s_w_%d.npy' % (tag, r)), w[r])
    args = ['--input', os.path.join(TMP, tag + '_a_{rank}.npy'),
            '--input', os.path.join(TMP, tag + '_w_{rank}.npy')]
    return a, w, args


def expected(n, a, w):
    """What XLA's definitions give device r, computed with NumPy."""
    d = [a[r] @ w[r] for r in range(n)]
    ar = sum(d)
    mx = np.maximum.reduce([np.tanh(x) for x in a])
    ag = np.concatenate(a, axis=0)
    total = sum(a)
    c = 8 // n
    out = []
    for r in range(n):
        rs = total[:, r * c:(r + 1) * c]
        # all-to-all along dimension 1: chunk r of every device, joined in device order.
        a2a = np.concatenate([a[j][:, r * c:(r + 1) * c] for j in range(n)], axis=1)
        out.append([ar, ag, rs, a2a, ar, mx])  # the permuted value: the sum, from r-1
    return out


def check_outputs(outdir, n, want, what):
    for r in range(n):
        for i, e in enumerate(want[r]):
            got = np.load(os.path.join(outdir, 'rank_%d' % r, 'output_%d.npy' % i))
            if got.shape != e.shape or not np.allclose(got, e, rtol=1e-5, atol=1e-5):
                raise AssertionError('%s: rank %d output %d differs: got %s want %s' %
                                     (what, r, i, got.ravel()[:6], e.ravel()[:6]))


def run_mixed(n, device, ranks):
    a, w, args = inputs(n, 'm%d' % n)
    outdir = os.path.join(TMP, 'out_%s_%d_%s' % (device, n, 'mpi' if ranks else 'local'))
    rc, out, err = run(['run', mixed_module(n), '--device', device, '--output-dir', outdir] +
                       args + ([] if ranks else ['--replicas', str(n)]), ranks=ranks)
    if rc != 0:
        raise AssertionError('exit %d: %s' % (rc, err.strip()[-400:]))
    if out.count('wrote') != 6 * n:
        raise AssertionError('expected %d "wrote" lines, got: %s' % (6 * n, out[-400:]))
    check_outputs(outdir, n, expected(n, a, w), '%s %s' % (device, 'mpirun' if ranks else 'local'))
    return outdir


def make_cases():
    for device in DEVICES:
        for n in (2, 4):
            def local(device=device, n=n):
                run_mixed(n, device, None)
            local.__name__ = 'local_%s_%d_devices' % (device, n)
            yield local
            if MPIRUN:
                def mpi(device=device, n=n):
                    run_mixed(n, device, n)
                mpi.__name__ = 'mpirun_%s_%d_ranks' % (device, n)
                yield mpi


def launch_wrapper():
    # kiln run --launch 2 starts mpirun itself: the same outputs as mpirun -np 2.
    if not MPIRUN:
        return
    a, w, args = inputs(2, 'launch')
    outdir = os.path.join(TMP, 'out_launch')
    rc, out, err = run(['run', mixed_module(2), '--device', DEVICES[0], '--output-dir', outdir,
                        '--launch', '2'] + args)
    if rc != 0:
        raise AssertionError('exit %d: %s' % (rc, err.strip()[-400:]))
    check_outputs(outdir, 2, expected(2, a, w), '--launch 2')


GROUPS = """HloModule groups
""" + SUM + """
ENTRY %main (a: f32[2,4]) -> (f32[2,4], f32[4,4], f32[2,4], f32[2,4], u32[]) {
  %a = f32[2,4] parameter(0)
  %ar = f32[2,4] all-reduce(%a), replica_groups={{0,2},{1,3}}, to_apply=%max
  %ag = f32[4,4] all-gather(%a), replica_groups={{1,0},{3,2}}, dimensions={0}
  %x = f32[2,4] all-to-all(%a), replica_groups={{3,2,1,0}}, dimensions={1}
  %cp = f32[2,4] collective-permute(%a), source_target_pairs={{0,3},{3,0},{1,2}}
  %id = u32[] replica-id()
  ROOT %t = (f32[2,4], f32[4,4], f32[2,4], f32[2,4], u32[]) tuple(%ar, %ag, %x, %cp, %id)
}
"""


def replica_groups_in_every_order():
    # Subgroups, groups listed out of order and a permute that leaves device 1 without a
    # source: under mpirun (a communicator per group) and in one process, against NumPy.
    module = write('groups.hlo', GROUPS)
    rng = np.random.default_rng(11)
    a = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(4)]
    for r in range(4):
        np.save(os.path.join(TMP, 'g_%d.npy' % r), a[r])
    want = []
    for r in range(4):
        pair = [0, 2] if r in (0, 2) else [1, 3]
        ag = [1, 0] if r in (0, 1) else [3, 2]
        order = [3, 2, 1, 0]
        me = order.index(r)
        x = np.concatenate([a[j][:, me:me + 1] for j in order], axis=1)
        src = {3: 0, 0: 3, 2: 1}.get(r)
        cp = a[src] if src is not None else np.zeros((2, 4), np.float32)
        want.append([np.maximum(a[pair[0]], a[pair[1]]), np.concatenate([a[i] for i in ag]), x,
                     cp, np.array(r, np.uint32)])
    for ranks in ([None, 4] if MPIRUN else [None]):
        out = os.path.join(TMP, 'groups_%s' % ranks)
        rc, _, err = run(['run', module, '--device', DEVICES[0], '--output-dir', out,
                          '--input', os.path.join(TMP, 'g_{rank}.npy')] +
                         ([] if ranks else ['--replicas', '4']), ranks=ranks)
        if rc != 0:
            raise AssertionError('exit %d: %s' % (rc, err[-400:]))
        check_outputs(out, 4, want, 'mpirun' if ranks else 'one process')


def log_partition_once():
    # --log-partition says once (rank 0) how the module the devices run is split.
    for ranks in ([None, 2] if MPIRUN else [None]):
        rc, out, err = run(['run', mixed_module(2), '--log-partition', '--device', DEVICES[0]] +
                           ([] if ranks else ['--replicas', '2']), ranks=ranks)
        if rc != 0 or err.count('kiln run: cluster 0: %s' % DEVICES[0]) != 1:
            raise AssertionError('rc=%d err=%s' % (rc, err[-400:]))


def rank_count_mismatch():
    rc, out, err = run(['run', mixed_module(2), '--replicas', '2'], ranks=3)
    if rc == 0 or 'mpirun started 3 rank(s), but the run has 2 device(s)' not in err:
        raise AssertionError('rc=%d err=%s' % (rc, err[-400:]))


def groups_naming_missing_devices():
    module = write('four.hlo', "HloModule four\n" + SUM + """
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  ROOT %ar.5 = f32[2] all-reduce(%a), replica_groups={{0,1,2,3}}, to_apply=%sum
}
""")
    rc, out, err = run(['run', module, '--replicas', '2', '--device', 'interpreter'])
    if rc == 0 or 'name replica 2' not in err or '%ar.5' not in err or '--replicas' not in err:
        raise AssertionError('rc=%d err=%s' % (rc, err[-400:]))
    # Without --replicas the run has one device, and groups of four are an error too.
    rc, out, err = run(['run', module, '--device', 'interpreter'])
    if rc == 0 or 'name replica 1' not in err or '%ar.5' not in err:
        raise AssertionError('rc=%d err=%s' % (rc, err[-400:]))


# Replica 1 spins in a loop of `iterations` steps before the all-reduce the others wait in.
SLOW = "HloModule slow\n" + SUM + """
%cond (s: (s32[], f32[64])) -> pred[] {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(ITERATIONS)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[64])) -> (s32[], f32[64]) {
  %s = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %v = f32[64] get-tuple-element(%s), index=1
  %w = f32[64] sine(%v)
  ROOT %t = (s32[], f32[64]) tuple(%j, %w)
}
%spin (a: f32[64]) -> f32[64] {
  %a = f32[64] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(%zero, %a)
  %loop = (s32[], f32[64]) while(%init), condition=%cond, body=%body
  ROOT %v = f32[64] get-tuple-element(%loop), index=1
}
%pass (a: f32[64]) -> f32[64] {
  ROOT %a = f32[64] parameter(0)
}
ENTRY %main (a: f32[64]) -> f32[64] {
  %a = f32[64] parameter(0)
  %id = u32[] replica-id()
  %one = u32[] constant(1)
  %slow = pred[] compare(%id, %one), direction=EQ
  %x = f32[64] conditional(%slow, %a, %a), true_computation=%spin, false_computation=%pass
  ROOT %r = f32[64] all-reduce(%x), replica_groups={}, to_apply=%sum
}
"""


def a_rank_that_never_comes_times_out():
    # Replica 1 spins far longer than the collective deadline: the others fail with
    # DEADLINE_EXCEEDED naming the op, and the job ends well before the spin would.
    module = write('slow.hlo', SLOW.replace('ITERATIONS', '2000000000'))
    for ranks in ([None, 2] if MPIRUN else [None]):
        start = time.time()
        args = ['run', module, '--device', 'interpreter'] + ([] if ranks else ['--replicas', '2'])
        if not ranks:
            # In one process the spinning thread cannot be stopped; only check the mpirun
            # case end to end, and here that the waiting device reports the deadline.
            continue
        rc, out, err = run(args, ranks=ranks, env_extra={'KILN_COLLECTIVE_TIMEOUT_S': '2'},
                           timeout=120)
        took = time.time() - start
        if rc == 0 or 'waited 2 s for the others' not in err or took > 60:
            raise AssertionError('rc=%d after %.0f s, err=%s' % (rc, took, err[-600:]))


def a_rank_that_fails_ends_the_job():
    # Rank 1's input does not exist: it fails before the collective and ends the job; rank 0
    # must not wait for it.
    a = np.ones(64, np.float32)
    np.save(os.path.join(TMP, 'ok_0.npy'), a)
    module = write('fast.hlo', SLOW.replace('ITERATIONS', '1'))
    if not MPIRUN:
        return
    start = time.time()
    rc, out, err = run(['run', module, '--input', os.path.join(TMP, 'ok_{rank}.npy')], ranks=2,
                       timeout=120)
    if rc == 0 or 'rank 1' not in err or 'ok_1.npy' not in err or time.time() - start > 60:
        raise AssertionError('rc=%d err=%s' % (rc, err[-600:]))


def a_rank_killed_mid_run_does_not_hang_the_rest():
    if not MPIRUN:
        return
    module = write('spin.hlo', SLOW.replace('ITERATIONS', '2000000000'))
    env = dict(ENV)
    p = subprocess.Popen([MPIRUN, '-np', '2', KILN, 'run', module, '--device', 'interpreter'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    # Find rank 1 (the one spinning) among mpirun's children and kill it.
    victim = None
    deadline = time.time() + 60
    while victim is None and time.time() < deadline:
        time.sleep(0.5)
        for pid in os.listdir('/proc'):
            if not pid.isdigit():
                continue
            try:
                with open('/proc/%s/environ' % pid, 'rb') as f:
                    environ = f.read().split(b'\0')
                with open('/proc/%s/cmdline' % pid, 'rb') as f:
                    cmdline = f.read()
            except OSError:
                continue
            if b'OMPI_COMM_WORLD_RANK=1' in environ and module.encode() in cmdline:
                victim = int(pid)
    if victim is None:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError('rank 1 never started')
    time.sleep(1)
    os.kill(victim, signal.SIGKILL)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError('the job hung after rank 1 was killed')
    if p.returncode == 0:
        raise AssertionError('the job succeeded after rank 1 was killed')


def corpus_fft_on_8_partitions():
    # The input is sharded along dimension 1 (sharding={devices=[1,8,1]<=[8]}); jaxdecomp's
    # result on device r is slab r (dimension 1) of the FFT of the whole array, transposed
    # to (1, 2, 0).
    rng = np.random.default_rng(0)
    whole = rng.standard_normal((256, 256, 256))
    for r in range(8):
        np.save(os.path.join(TMP, 'fft_in_%d.npy' % r), whole[:, 32 * r:32 * (r + 1), :])
    out = os.path.join(TMP, 'fft_out')
    device = 'cpu-llvm' if 'cpu-llvm' in DEVICES else DEVICES[0]
    rc, _, err = run(['run', os.path.join(CORPUS, '004_jax_fft3d_f64_slab.hlo'), '--partitions',
                      '8', '--device', device, '--input', os.path.join(TMP, 'fft_in_{rank}.npy'),
                      '--output-dir', out], timeout=600)
    if rc != 0:
        raise AssertionError('exit %d: %s' % (rc, err[-400:]))
    want = np.transpose(np.fft.fftn(whole), (1, 2, 0))
    got = np.concatenate([np.load(os.path.join(out, 'rank_%d' % r, 'output_0.npy'))
                          for r in range(8)], axis=1)
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    if not err < 1e-9:
        raise AssertionError('relative error %g against NumPy' % err)


def corpus_torch_xla_steps_on_2_ranks():
    # The interpreter over Open MPI and in one process must agree bit for bit (a sum of two
    # is the same in either order); cpu-llvm under mpirun within a tolerance scaled to each
    # output's largest value (its thread pool splits reductions by the cores a rank gets, and
    # the dots' sums cancel: an element near zero of a vocabulary projection carries the
    # rounding of terms near 50).
    if not MPIRUN or 'cpu-llvm' not in DEVICES:
        return
    for name in ('008_torchxla_mlp_data_parallel', '011_torchxla_llama_tensor_parallel',
                 '012_torchxla_pipeline_rank1_adamw', 'gh_misc_sharding_fsdp'):
        module = os.path.join(CORPUS, name + '.hlo')
        outs = {}
        for how, device, ranks in (('mpi', 'interpreter', 2), ('reference', 'interpreter', None),
                                   ('llvm', 'cpu-llvm', 2)):
            outs[how] = os.path.join(TMP, '%s_%s' % (name, how))
            extra = [] if ranks else ['--replicas', '2']
            rc, _, err = run(['run', module, '--device', device, '--output-dir', outs[how]] +
                             extra, ranks=ranks)
            if rc != 0:
                raise AssertionError('%s (%s): exit %d: %s' % (name, how, rc, err[-400:]))
        for r in range(2):
            files = sorted(os.listdir(os.path.join(outs['reference'], 'rank_%d' % r)))
            if not files:
                raise AssertionError('%s: rank %d wrote nothing' % (name, r))
            for f in files:
                a, b, ref = (np.load(os.path.join(outs[h], 'rank_%d' % r, f)).astype(np.float64)
                             for h in ('llvm', 'mpi', 'reference'))
                if not np.array_equal(b, ref, equal_nan=True):
                    raise AssertionError('%s rank %d %s: the interpreter under mpirun and in one '
                                         'process differ' % (name, r, f))
                if a.shape != ref.shape or not np.array_equal(np.isnan(a), np.isnan(ref)):
                    raise AssertionError('%s rank %d %s: NaNs differ from the interpreter\'s'
                                         % (name, r, f))
                a, ref = np.nan_to_num(a), np.nan_to_num(ref)  # the generated inputs make some
                scale = np.max(np.abs(ref)) if ref.size else 0
                if np.any(np.abs(a - ref) > 1e-5 * scale + 1e-3 * np.abs(ref)):
                    raise AssertionError('%s rank %d %s: cpu-llvm and the interpreter differ'
                                         % (name, r, f))


def main():
    cases = list(make_cases()) + [launch_wrapper, replica_groups_in_every_order, log_partition_once,
                                  rank_count_mismatch, groups_naming_missing_devices,
                                  a_rank_that_never_comes_times_out,
                                  a_rank_that_fails_ends_the_job,
                                  a_rank_killed_mid_run_does_not_hang_the_rest,
                                  corpus_fft_on_8_partitions, corpus_torch_xla_steps_on_2_ranks]
    if not MPIRUN:
        print('NOTE: no mpirun on PATH: the cases across processes are left out')
    for c in cases:
        if c.__name__.startswith('rank_count') and not MPIRUN:
            continue
        case(c)
    print('%d passed, %d failed' % (len(passes), len(failures)))
    for f in failures:
        print('FAILED', f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
