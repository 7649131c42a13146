#!/usr/bin/env python3
"""End-to-end tests of the `kiln` CLI contract (DESIGN.md): modules run with NumPy-made
inputs and are checked against NumPy-computed results; bad input gives one-line errors and
non-zero exits. Run by meson with: cli_test.py KILN EXAMPLE_PLUGIN_DIR TEST_PLUGIN_DIR.

A case whose module needs an evaluator opcode another branch has not delivered yet is
reported as SKIP (never as a pass); every other failure fails the test."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

KILN, EXAMPLE_DIR, TEST_PLUGIN_DIR = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix='kiln_cli_test_')
failures, skips, passes = [], [], []


class Skip(Exception):
    pass


def run(args, env_extra=None):
    env = dict(os.environ)
    env.pop('KILN_PLATFORMS', None)
    env.pop('KILN_PLUGIN_PATH', None)
    env['KILN_CONFIG'] = ''
    env['HOME'] = TMP  # no user config file
    env.update(env_extra or {})
    p = subprocess.run([KILN] + args, capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def save(name, array):
    path = os.path.join(TMP, name)
    np.save(path, array)
    return path


def run_ok(args, env_extra=None):
    rc, out, err = run(args, env_extra)
    if rc != 0:
        if 'not implemented yet' in err:
            raise Skip(err.strip())
        raise AssertionError('kiln %s exited %d: %s' % (' '.join(args), rc, err.strip()))
    return out, err


def outputs(outdir, n):
    files = sorted(f for f in os.listdir(outdir) if f.startswith('output_'))
    assert files == ['output_%d.npy' % i for i in range(n)], files
    return [np.load(os.path.join(outdir, f)) for f in files]


def close(got, want, rtol=1e-5, atol=1e-6):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got, want, rtol=rtol, atol=atol), (got, want)


def case(fn):
    try:
        fn()
        passes.append(fn.__name__)
    except Skip as e:
        skips.append('%s: %s' % (fn.__name__, e))
    except Exception as e:  # noqa: BLE001 - report every failure, keep going
        failures.append('%s: %s: %s' % (fn.__name__, type(e).__name__, e))


def one_line_error(rc, err, *phrases):
    assert rc != 0, 'expected a non-zero exit'
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, 'expected one error line, got: %r' % err
    for p in phrases:
        assert p in lines[0], '%r not in %r' % (p, lines[0])


rng = np.random.default_rng(1234)

DOT_BIAS_RELU = '''HloModule dot_bias_relu

ENTRY %main (x: f32[4,3], w: f32[3,5], b: f32[5]) -> f32[4,5] {
  %x = f32[4,3]{1,0} parameter(0)
  %w = f32[3,5]{1,0} parameter(1)
  %b = f32[5]{0} parameter(2)
  %dot = f32[4,5]{1,0} dot(f32[4,3]{1,0} %x, f32[3,5]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[4,5]{1,0} broadcast(f32[5]{0} %b), dimensions={1}
  %sum = f32[4,5]{1,0} add(f32[4,5]{1,0} %dot, f32[4,5]{1,0} %bb)
  %zero = f32[] constant(0)
  %zb = f32[4,5]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %relu = f32[4,5]{1,0} maximum(f32[4,5]{1,0} %sum, f32[4,5]{1,0} %zb)
}
'''

SOFTMAX = '''HloModule softmax

%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%add_f32 (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %c, f32[] %d)
}

ENTRY %main (x: f32[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[4]{0} reduce(f32[4,8]{1,0} %x, f32[] %ninf), dimensions={1}, to_apply=%max_f32
  %mxb = f32[4,8]{1,0} broadcast(f32[4]{0} %mx), dimensions={0}
  %sh = f32[4,8]{1,0} subtract(f32[4,8]{1,0} %x, f32[4,8]{1,0} %mxb)
  %e = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %sh)
  %zero = f32[] constant(0)
  %sum = f32[4]{0} reduce(f32[4,8]{1,0} %e, f32[] %zero), dimensions={1}, to_apply=%add_f32
  %sb = f32[4,8]{1,0} broadcast(f32[4]{0} %sum), dimensions={0}
  ROOT %out = f32[4,8]{1,0} divide(f32[4,8]{1,0} %e, f32[4,8]{1,0} %sb)
}
'''

REDUCE_TUPLE = '''HloModule reduce_tuple

%add_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(s32[] %a, s32[] %b)
}

ENTRY %main (x: s32[3,4]) -> (s32[4], (s32[3], s32[3,4])) {
  %x = s32[3,4]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %cols = s32[4]{0} reduce(s32[3,4]{1,0} %x, s32[] %zero), dimensions={0}, to_apply=%add_s32
  %rows = s32[3]{0} reduce(s32[3,4]{1,0} %x, s32[] %zero), dimensions={1}, to_apply=%add_s32
  %inner = (s32[3]{0}, s32[3,4]{1,0}) tuple(s32[3]{0} %rows, s32[3,4]{1,0} %x)
  ROOT %t = (s32[4]{0}, (s32[3]{0}, s32[3,4]{1,0})) tuple(s32[4]{0} %cols, (s32[3]{0}, s32[3,4]{1,0}) %inner)
}
'''

WHILE_LOOP = '''HloModule while_loop

%cond (s: (s32[], f32[3])) -> pred[] {
  %s = (s32[], f32[3]{0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[3]{0}) %s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

%body (t: (s32[], f32[3])) -> (s32[], f32[3]) {
  %t = (s32[], f32[3]{0}) parameter(0)
  %j = s32[] get-tuple-element((s32[], f32[3]{0}) %t), index=0
  %v = f32[3]{0} get-tuple-element((s32[], f32[3]{0}) %t), index=1
  %one = s32[] constant(1)
  %j1 = s32[] add(s32[] %j, s32[] %one)
  %two = f32[] constant(2)
  %twob = f32[3]{0} broadcast(f32[] %two), dimensions={}
  %onef = f32[] constant(1)
  %oneb = f32[3]{0} broadcast(f32[] %onef), dimensions={}
  %v2 = f32[3]{0} multiply(f32[3]{0} %v, f32[3]{0} %twob)
  %v3 = f32[3]{0} add(f32[3]{0} %v2, f32[3]{0} %oneb)
  ROOT %r = (s32[], f32[3]{0}) tuple(s32[] %j1, f32[3]{0} %v3)
}

ENTRY %main (x: f32[3]) -> (s32[], f32[3]) {
  %x = f32[3]{0} parameter(0)
  %i0 = s32[] constant(0)
  %init = (s32[], f32[3]{0}) tuple(s32[] %i0, f32[3]{0} %x)
  ROOT %w = (s32[], f32[3]{0}) while((s32[], f32[3]{0}) %init), condition=%cond, body=%body
}
'''

BF16 = '''HloModule bf16_add

ENTRY %main (x: bf16[4]) -> bf16[4] {
  %x = bf16[4]{0} parameter(0)
  ROOT %y = bf16[4]{0} add(bf16[4]{0} %x, bf16[4]{0} %x)
}
'''

ELEMENTWISE = '''HloModule ew

ENTRY %main (x: f32[2,3], y: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %y = f32[2,3]{1,0} parameter(1)
  %m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %x, f32[2,3]{1,0} %y)
  %e = f32[2,3]{1,0} exponential(f32[2,3]{1,0} %m)
  ROOT %s = f32[2,3]{1,0} subtract(f32[2,3]{1,0} %e, f32[2,3]{1,0} %x)
}
'''


def to_bf16(a):
    """Rounds float32 to bfloat16 (nearest even), returned as float32."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def test_dot_bias_relu():
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    mod = write('dot_bias_relu.hlo', DOT_BIAS_RELU)
    out = os.path.join(TMP, 'dbr')
    run_ok(['run', mod, '--input', save('x.npy', x), '--input', save('w.npy', w),
            '--input', save('b.npy', b), '--output-dir', out])
    (got,) = outputs(out, 1)
    close(got, np.maximum(x.astype(np.float64) @ w + b, 0).astype(np.float32))


def test_softmax():
    x = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    out = os.path.join(TMP, 'softmax')
    run_ok(['run', write('softmax.hlo', SOFTMAX), '--input', save('sx.npy', x), '--output-dir', out])
    (got,) = outputs(out, 1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    close(got, (e / e.sum(axis=1, keepdims=True)).astype(np.float32))


def test_reduce_and_nested_tuple_flattening():
    x = rng.integers(-50, 50, size=(3, 4)).astype(np.int32)
    out = os.path.join(TMP, 'reduce')
    run_ok(['run', write('reduce.hlo', REDUCE_TUPLE), '--input', save('rx.npy', x), '--output-dir', out])
    cols, rows, same = outputs(out, 3)  # depth-first: cols, (rows, x)
    assert np.array_equal(cols, x.sum(axis=0).astype(np.int32)) and cols.dtype == np.int32
    assert np.array_equal(rows, x.sum(axis=1).astype(np.int32))
    assert np.array_equal(same, x)


def test_while_loop():
    x = np.array([0.5, -1.0, 3.0], dtype=np.float32)
    out = os.path.join(TMP, 'while')
    run_ok(['run', write('while.hlo', WHILE_LOOP), '--input', save('wx.npy', x), '--output-dir', out])
    i, v = outputs(out, 2)
    want = x.copy()
    for _ in range(5):
        want = want * 2 + 1
    assert i.dtype == np.int32 and i.shape == () and int(i) == 5, i
    close(v, want.astype(np.float32))


def test_bf16_travels_as_float32():
    x = np.array([1.0, 1.00390625, -3.14159, 1e-3], dtype=np.float32)
    out = os.path.join(TMP, 'bf16')
    run_ok(['run', write('bf16.hlo', BF16), '--input', save('bx.npy', x), '--output-dir', out])
    (got,) = outputs(out, 1)
    assert got.dtype == np.float32
    assert np.array_equal(got, to_bf16(to_bf16(x) * 2)), (got, to_bf16(x) * 2)


def test_generated_inputs_are_deterministic():
    mod = write('ew.hlo', ELEMENTWISE)
    a, b = os.path.join(TMP, 'gen_a'), os.path.join(TMP, 'gen_b')
    run_ok(['run', mod, '--output-dir', a])
    run_ok(['run', mod, '--output-dir', b])
    (ga,), (gb,) = outputs(a, 1), outputs(b, 1)
    assert np.array_equal(ga, gb)
    assert ga.dtype == np.float32 and ga.shape == (2, 3)


def test_third_party_plugin_is_picked_and_agrees():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    mod = write('ew.hlo', ELEMENTWISE)
    env = {'KILN_PLUGIN_PATH': EXAMPLE_DIR}
    out = os.path.join(TMP, 'tp')
    stdout, _ = run_ok(['run', mod, '--input', save('ex.npy', x), '--input', save('ey.npy', y),
                        '--output-dir', out, '--benchmark', '3', '--compare', 'interpreter'], env)
    last = stdout.strip().splitlines()[-1]
    assert re.fullmatch(r'compile_ms=[0-9.]+ median_ms=[0-9.]+ min_ms=[0-9.]+ runs=3 '
                        r'device=elementwise-example', last), last
    assert 'ok' in stdout and 'MISMATCH' not in stdout, stdout
    (got,) = outputs(out, 1)
    close(got, (np.exp(x * y) - x).astype(np.float32))
    # KILN_PLATFORMS restricts the choice back to the interpreter.
    env['KILN_PLATFORMS'] = 'interpreter'
    stdout, _ = run_ok(['run', mod, '--benchmark', '1'], env)
    assert stdout.strip().splitlines()[-1].endswith('runs=1 device=interpreter'), stdout
    # A module with a dot is beyond the example: auto falls back to a host plugin
    # (cpu-llvm when LLVM was found at build time, else the interpreter).
    env.pop('KILN_PLATFORMS')
    stdout, _ = run_ok(['run', write('dot_bias_relu.hlo', DOT_BIAS_RELU), '--benchmark', '1'], env)
    last = stdout.strip().splitlines()[-1]
    assert last.endswith('device=interpreter') or last.endswith('device=cpu-llvm'), stdout


def test_input_errors_are_one_line():
    mod = write('dot_bias_relu.hlo', DOT_BIAS_RELU)
    x = save('ok_x.npy', np.zeros((4, 3), np.float32))
    w = save('ok_w.npy', np.zeros((3, 5), np.float32))
    b = save('ok_b.npy', np.zeros(5, np.float32))
    rc, _, err = run(['run', mod, '--input', x, '--input', w])
    one_line_error(rc, err, 'takes 3 parameters', 'got 2')
    rc, _, err = run(['run', mod, '--input', x, '--input', save('bad_w.npy', np.zeros((5, 3), np.float32)),
                      '--input', b])
    one_line_error(rc, err, "parameter 1 'w'", 'f32[3,5]', 'f32[5,3]')
    rc, _, err = run(['run', mod, '--input', save('bad_x.npy', np.zeros((4, 3), np.float64)),
                      '--input', w, '--input', b])
    one_line_error(rc, err, "parameter 0 'x'", 'f64[4,3]')
    junk = write('junk.npy', 'this is not numpy')
    rc, _, err = run(['run', mod, '--input', junk, '--input', w, '--input', b])
    one_line_error(rc, err, 'junk.npy', 'bad magic', "parameter 0 'x'")
    trunc = os.path.join(TMP, 'trunc.npy')
    with open(x, 'rb') as f, open(trunc, 'wb') as g:
        g.write(f.read()[:-8])  # header intact, data short
    rc, _, err = run(['run', mod, '--input', trunc, '--input', w, '--input', b])
    one_line_error(rc, err, 'trunc.npy', 'data size mismatch')
    huge = write('huge.hlo', 'HloModule huge\nENTRY %main (x: f32[100000000000]) -> f32[100000000000] {\n'
                 '  %x = f32[100000000000]{0} parameter(0)\n'
                 '  ROOT %n = f32[100000000000]{0} negate(f32[100000000000]{0} %x)\n}\n')
    rc, _, err = run(['run', huge, '--device', 'interpreter'])
    one_line_error(rc, err, 'out of memory', "parameter 0 'x', f32[100000000000], 372.5 GiB")
    elided = write('elided.hlo', 'HloModule m\nENTRY %e () -> f32[3] {\n'
                   '  ROOT %c = f32[3]{0} constant({...})\n}\n')
    for device in ['interpreter', 'cpu-llvm']:
        rc, _, err = run(['run', elided, '--device', device])
        if device == 'cpu-llvm' and 'no plugin named' in err:
            continue  # built without LLVM
        one_line_error(rc, err, 'has no value', 'elided')
    token = write('token.hlo', 'HloModule t\nENTRY e {\n  p = f32[2] parameter(0)\n'
                  '  a = token[] after-all()\n  ROOT r = (f32[2], token[]) tuple(p, a)\n}\n')
    rc, _, err = run(['run', token, '--device', 'interpreter'])
    one_line_error(rc, err, 'returns a token (result leaf 1 of (f32[2], token[]))', 'arrays only')
    rc, _, err = run(['run', os.path.join(TMP, 'missing.hlo')])
    one_line_error(rc, err, 'missing.hlo')
    rc, _, err = run(['run', mod, '--device', 'no-such-device'])
    one_line_error(rc, err, "no plugin named 'no-such-device'")
    rc, _, err = run(['run', mod, '--benchmark', '0'])
    one_line_error(rc, err, '--benchmark')
    assert rc == 2
    rc, _, err = run(['run', mod, '--frobnicate'])
    one_line_error(rc, err, "unknown flag '--frobnicate'")
    rc, _, err = run(['run', mod], {'KILN_CONFIG': write('bad.conf', 'platforms = x\nwhat\n')})
    one_line_error(rc, err, 'bad.conf:2')


def test_print_is_canonical_and_errors_are_located():
    mod = write('softmax.hlo', SOFTMAX)
    once, _ = run_ok(['print', mod])
    again, _ = run_ok(['print', write('printed.hlo', once)])
    assert once == again, 'printing the printed text changed it'
    bad = write('bad.hlo', 'HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] frobnicate()\n}\n')
    rc, out, err = run(['print', bad])
    assert rc != 0
    assert re.match(r'^.*bad\.hlo:\d+:\d+: ', err), err
    assert len(err.strip().splitlines()) == 1, err


def test_hostile_sizes_are_rejected():
    """Attributes and shapes near INT64_MAX: every size computation is checked, so the module
    is rejected with one located line (file, computation, instruction, attribute) by print and
    by run on each device, never accepted with a wrapped size (issue #16)."""
    add = 'add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n'
    cases = [
        ('pad_edges', '  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n'
         '  ROOT p = f32[2] pad(x, z), padding=9223372036854775807_9223372036854775807\n',
         ['verifier: in %e, %p: pad: padding 9223372036854775807_9223372036854775807_0 of '
          'dimension 0 (size 4) overflows 64 bits']),
        ('pad_interior', '  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n'
         '  ROOT p = f32[4] pad(x, z), padding=0_0_9223372036854775807\n',
         ['%p: pad: padding 0_0_9223372036854775807 of dimension 0 (size 4) overflows 64 bits']),
        # f32[9223372036854775807] cannot even be written (the parser rejects it), so the
        # declared shape differs: the inferred one is rejected first.
        ('pad_bytes', '  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n'
         '  ROOT p = f32[1] pad(x, z), padding=0_9223372036854775803\n',
         ['%p: pad: result shape f32[9223372036854775807] is too large (its byte size overflows '
          '64 bits)']),
        ('window_dilation', '  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n'
         '  ROOT r = f32[1] reduce-window(x, z), window={size=1 lhs_dilate=9223372036854775807}, '
         'to_apply=add\n',
         ['%r: reduce-window: window dimension 0: lhs_dilate=9223372036854775807 and pad=0_0 of '
          'the input size 4 overflow 64 bits']),
        ('window_pad', '  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n'
         '  ROOT r = f32[1] reduce-window(x, z), window={size=2 pad=9223372036854775807_0}, '
         'to_apply=add\n',
         ['%r: reduce-window: window dimension 0', 'pad=9223372036854775807_0', 'overflow 64 bits']),
        ('concatenate', '  x = pred[6000000000000000000] parameter(0)\n'
         '  ROOT c = pred[1] concatenate(x, x), dimensions={0}\n',
         ['%c: concatenate: concatenated dimension 0 overflows 64 bits at operand 1']),
        ('tuple_bytes', '  ROOT x = (pred[6000000000000000000], pred[6000000000000000000]) '
         'parameter(0)\n',
         ['%x: parameter: shape (pred[6000000000000000000], pred[6000000000000000000]) is too '
          'large (its byte size overflows 64 bits)']),
        ('absurd_dims', '  ROOT x = f32[9223372036854775807,4] parameter(0)\n',
         ['absurd_dims.hlo:3:', 'shape is too large (its byte size overflows 64 bits)']),
    ]
    rc, out, err = run(['devices'])
    devices = ['interpreter'] + (['cpu-llvm'] if 'cpu-llvm' in out else [])
    for name, body, phrases in cases:
        path = write(name + '.hlo', 'HloModule %s\n\n%sENTRY e {\n%s}\n' % (name, add, body))
        if name == 'absurd_dims':  # the parser rejects it: the location is a line and column
            path = write(name + '.hlo', 'HloModule %s\nENTRY e {\n%s}\n' % (name, body))
        for args in [['print', path]] + [['run', path, '--device', d] for d in devices]:
            rc, _, err = run(args)
            try:
                one_line_error(rc, err, name + '.hlo', *phrases)
                assert rc == 1, 'exit status %d' % rc
            except AssertionError as e:
                raise AssertionError('kiln %s: %s' % (' '.join(args[:1] + args[2:]), e))


def test_devices_lists_rejections():
    rc, out, err = run(['devices'], {'KILN_PLUGIN_PATH': TEST_PLUGIN_DIR + ':' + EXAMPLE_DIR})
    assert rc == 0, err
    for phrase in ['interpreter', 'elementwise-example', 'available', 'rejected',
                   'ABI major version 99', 'initialize failed', 'missing entry symbol',
                   "duplicate plugin name 'dup-test'", 'unavailable', 'no accelerator found']:
        assert phrase in out, '%r missing from:\n%s' % (phrase, out)
    rc, out, err = run(['devices', 'extra'])
    assert rc == 2 and out == '' and "unexpected argument 'extra'" in err, (rc, out, err)


def test_plugins_that_crash_while_loading_do_not_take_commands_down():
    # tests/plugins/hostile: plugins that segfault in KILN_GetApi or initialize, exit, or hang.
    hostile = os.path.join(TEST_PLUGIN_DIR, 'hostile')
    env = {'KILN_PLUGIN_PATH': hostile, 'KILN_PLUGIN_DEADLINE_S': '0.5'}
    module = write('hostile_neighbours.hlo', 'HloModule m\nENTRY %main (a: f32[3]) -> f32[3] {\n'
                   '  %a = f32[3] parameter(0)\n  ROOT %n = f32[3] negate(%a)\n}\n')
    for extra in ({'KILN_ISOLATE': 'all'}, {'KILN_PLATFORMS': 'interpreter'}):
        rc, out, err = run(['devices'], dict(env, **extra))
        assert rc == 0, 'kiln devices with %s: exit %d %s' % (extra, rc, err)
        isolated = 'KILN_ISOLATE' in extra
        for phrase in ['crashed: signal 11' if isolated else 'crashed while loading: signal 11',
                       'exited with code 3',
                       'did not answer initialize within 0.5 s' if isolated
                       else 'did not finish loading within 0.5 s']:
            assert phrase in out, '%r missing with %s from:\n%s' % (phrase, extra, out)
        rc, out, err = run(['run', module, '--device', 'interpreter'],
                           dict(env, **extra))
        assert rc == 0 and 'output_0' in out, 'kiln run with %s: %d %s' % (extra, rc, err)


def test_isolated_plugin_that_misbehaves_at_run_time():
    # tests/plugins/misbehave: crashes, aborts, exits, hangs or returns garbage by module name.
    env = {'KILN_PLUGIN_PATH': os.path.join(TEST_PLUGIN_DIR, 'misbehave'),
           'KILN_PLUGIN_DEADLINE_S': '1', 'KILN_ISOLATE': 'test-misbehave'}

    def module(word):
        return write('mis_%s.hlo' % word, 'HloModule %s_mod\nENTRY %%main (a: f32[5]) -> f32[5] {\n'
                     '  %%a = f32[5] parameter(0)\n  ROOT %%n = f32[5] negate(%%a)\n}\n' % word)

    want, _ = run_ok(['run', module('fine'), '--device', 'interpreter'])
    got, _ = run_ok(['run', module('fine'), '--device', 'test-misbehave'], env)
    assert got == want, (got, want)
    for word, phrase in [('crash', 'crashed: signal 11 (Segmentation fault) during execute'),
                         ('abort', 'crashed: signal 6'), ('exit', 'exited with code 7'),
                         ('hang', 'did not answer execute within 1 s')]:
        rc, out, err = run(['run', module(word), '--device', 'test-misbehave'], env)
        assert rc == 1 and phrase in err, (word, rc, err)
        # auto, with the plugin first in line: the next plugin runs the module.
        conf = write('misbehave.conf', 'priority.test-misbehave = 500\n')
        rc, out, err = run(['run', module(word), '--device', 'auto'], dict(env, KILN_CONFIG=conf))
        assert rc == 0 and 'compiling for the next plugin' in err, (word, rc, err)
        assert out.replace('%s_mod' % word, '') == want.replace('fine_mod', ''), (word, out, want)
    # The same at compile time: the compile fails with what happened; auto compiles elsewhere.
    for word, phrase in [('crash_oncompile', 'crashed: signal 11 (Segmentation fault) during compile'),
                         ('exit_oncompile', 'exited with code 7 during compile'),
                         ('hang_oncompile', 'did not answer compile within 1 s')]:
        rc, out, err = run(['run', module(word), '--device', 'test-misbehave'], env)
        assert rc == 1 and phrase in err, (word, rc, err)
        conf = write('misbehave.conf', 'priority.test-misbehave = 500\n')
        rc, out, err = run(['run', module(word), '--device', 'auto'], dict(env, KILN_CONFIG=conf))
        assert rc == 0 and 'compiling for the next plugin' in err, (word, rc, err)
    # Garbage, isolated and in process: the host cannot tell, and says the wrong numbers.
    got, _ = run_ok(['run', module('garbage'), '--device', 'test-misbehave'], env)
    assert '12345' in got, got
    got, _ = run_ok(['run', module('garbage'), '--device', 'test-misbehave'],
                    {'KILN_PLUGIN_PATH': env['KILN_PLUGIN_PATH']})
    assert '12345' in got, got
    # Out of memory: a plugin that allocates without end, under the helper's memory limit, and
    # one allocation too large for any machine, in process. Both are RESOURCE_EXHAUSTED from
    # the plugin (its kit turns std::bad_alloc into that), and the host reports it.
    rc, out, err = run(['run', module('hog'), '--device', 'test-misbehave'],
                       dict(env, KILN_PLUGIN_MEMORY_MB='1024', KILN_PLUGIN_DEADLINE_S='60'))
    assert rc == 1 and ('out of host memory' in err or 'memory limit of 1024 MiB' in err), (rc, err)
    in_process = {'KILN_PLUGIN_PATH': env['KILN_PLUGIN_PATH']}
    if open('/proc/sys/vm/overcommit_memory').read().strip() != '1':  # 1: every allocation succeeds
        rc, out, err = run(['run', module('huge'), '--device', 'test-misbehave'], in_process)
        assert rc == 1 and 'out of host memory' in err, (rc, err)
    for var, value, phrase in [('KILN_PLUGIN_RESTARTS', '-1', 'plugin_restarts needs a whole number'),
                               ('KILN_PLUGIN_MEMORY_MB', '1.5', 'plugin_memory_mb needs a whole')]:
        rc, out, err = run(['devices'], {var: value})
        assert rc == 1 and var in err and phrase in err, (var, rc, err)


def test_timeout_cancels_a_loop_that_never_ends():
    forever = write('forever.hlo', '''HloModule forever
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %t = pred[] constant(true)
}
%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] add(%s, %one)
}
ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body
}
''')
    import time
    start = time.monotonic()
    rc, out, err = run(['run', forever, '--device', 'interpreter', '--timeout', '1'])
    assert rc == 1 and 'did not answer execute within 1 s' in err, (rc, err)
    assert time.monotonic() - start < 30, 'the timeout did not cut the run short'
    rc, out, err = run(['run', forever, '--timeout', 'soon'])
    assert rc == 2 and '--timeout needs a positive number' in err, (rc, err)


def test_nested_custom_call_refused_before_compile():
    # A custom-call inside a fusion: every host plugin refuses it, naming it, with one error
    # line and exit 1 (cpu-llvm before compiling, not after).
    path = write('nested_cc.hlo', """HloModule nested_cc
%fused (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %cc = f32[4] custom-call(f32[4] %p), custom_call_target="vendor_op"
  ROOT %e = f32[4] exponential(f32[4] %cc)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %f = f32[4] fusion(f32[4] %x), kind=kLoop, calls=%fused
}
""")
    rc, out, err = run(['devices'])
    devices = ['interpreter'] + (['cpu-llvm'] if 'cpu-llvm' in out else [])
    for device in devices:
        rc, out, err = run(['run', path, '--device', device])
        assert rc == 1 and err.count('error:') == 1, (device, rc, err)
        assert 'vendor_op' in err and ('%cc' in err or "'cc'" in err), (device, err)
        if device == 'cpu-llvm':
            assert 'compile:' in err, err


for t in [test_nested_custom_call_refused_before_compile, test_dot_bias_relu, test_softmax, test_reduce_and_nested_tuple_flattening,
          test_while_loop, test_bf16_travels_as_float32, test_generated_inputs_are_deterministic,
          test_third_party_plugin_is_picked_and_agrees, test_input_errors_are_one_line,
          test_print_is_canonical_and_errors_are_located, test_hostile_sizes_are_rejected,
          test_devices_lists_rejections, test_plugins_that_crash_while_loading_do_not_take_commands_down,
          test_isolated_plugin_that_misbehaves_at_run_time, test_timeout_cancels_a_loop_that_never_ends]:
    case(t)

shutil.rmtree(TMP, ignore_errors=True)
for p in passes:
    print('PASS', p)
for s in skips:
    print('SKIP', s)
for f in failures:
    print('FAIL', f)
print('%d passed, %d skipped, %d failed' % (len(passes), len(skips), len(failures)))
sys.exit(1 if failures else 0)
