#!/usr/bin/env python3
"""Writes the LSTM workload modules as HLO text, unrolled the way JAX lowers a Python loop:
  lstm_cell.hlo     one LSTM cell step, batch 64, input 256, hidden 256;
  lstm_stacked.hlo  a 3-deep, 60-wide stacked LSTM over 20 steps, batch 64 (input width 60);
  lstm_stacked_while.hlo  the same as one while loop over the steps (like jax.lax.scan).
Gates are PyTorch's (i, f, g, o) column blocks of x@W + h@U + b; c' = s(f)c + s(i)tanh(g),
h' = s(o)tanh(c'). The stacked module starts from h = c = 0 and returns (ys[T,B,H], h_n[L,B,H],
c_n[L,B,H]) like torch.nn.LSTM. Usage: gen_lstm.py [OUT_DIR] (default: this folder)."""
import os
import sys

ADD = """%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
"""


def cell(p, batch, width, hidden, x, h, c, w, u, b):
    """Lines of one cell step named with prefix `p`; returns (lines, new_h, new_c)."""
    bh, g4 = f'f32[{batch},{hidden}]', f'f32[{batch},{4 * hidden}]'
    lines = [
        f'  %{p}xw = {g4} dot(f32[{batch},{width}] {x}, f32[{width},{4 * hidden}] {w}), '
        'lhs_contracting_dims={1}, rhs_contracting_dims={0}',
        f'  %{p}hu = {g4} dot({bh} {h}, f32[{hidden},{4 * hidden}] {u}), '
        'lhs_contracting_dims={1}, rhs_contracting_dims={0}',
        f'  %{p}bb = {g4} broadcast(f32[{4 * hidden}] {b}), dimensions={{1}}',
        f'  %{p}s = {g4} add({g4} %{p}xw, {g4} %{p}hu)',
        f'  %{p}gates = {g4} add({g4} %{p}s, {g4} %{p}bb)',
    ]
    for k, gate in enumerate('ifgo'):
        lines.append(f'  %{p}{gate}_pre = {bh} slice({g4} %{p}gates), '
                     f'slice={{[0:{batch}], [{k * hidden}:{(k + 1) * hidden}]}}')
        act = 'tanh' if gate == 'g' else 'logistic'
        lines.append(f'  %{p}{gate} = {bh} {act}({bh} %{p}{gate}_pre)')
    lines += [
        f'  %{p}fc = {bh} multiply({bh} %{p}f, {bh} {c})',
        f'  %{p}ig = {bh} multiply({bh} %{p}i, {bh} %{p}g)',
        f'  %{p}c_new = {bh} add({bh} %{p}fc, {bh} %{p}ig)',
        f'  %{p}tc = {bh} tanh({bh} %{p}c_new)',
        f'  %{p}h_new = {bh} multiply({bh} %{p}o, {bh} %{p}tc)',
    ]
    return lines, f'%{p}h_new', f'%{p}c_new'


def lstm_cell(batch=64, width=256, hidden=256):
    bh, bx = f'f32[{batch},{hidden}]', f'f32[{batch},{width}]'
    w, u, b = f'f32[{width},{4 * hidden}]', f'f32[{hidden},{4 * hidden}]', f'f32[{4 * hidden}]'
    lines, h, c = cell('', batch, width, hidden, '%x', '%h', '%c', '%w', '%u', '%b')
    return '\n'.join([
        f'// One LSTM cell step (batch {batch}, input {width}, hidden {hidden}); written by gen_lstm.py.',
        '// Outputs (h\', c\'). Gates (i, f, g, o) are column blocks of x@W + h@U + b.',
        'HloModule lstm_cell', '',
        f'ENTRY %main (x: {bx}, h: {bh}, c: {bh}, w: {w}, u: {u}, b: {b}) -> ({bh}, {bh}) {{',
        f'  %x = {bx} parameter(0)', f'  %h = {bh} parameter(1)', f'  %c = {bh} parameter(2)',
        f'  %w = {w} parameter(3)', f'  %u = {u} parameter(4)', f'  %b = {b} parameter(5)',
        *lines,
        f'  ROOT %out = ({bh}, {bh}) tuple({bh} {h}, {bh} {c})',
        '}', ''])


def lstm_stacked(layers=3, hidden=60, steps=20, batch=64, width=60):
    bh = f'f32[{batch},{hidden}]'
    params, body = [], []
    for l in range(layers):
        fan_in = width if l == 0 else hidden
        params += [(f'w{l}', f'f32[{fan_in},{4 * hidden}]'), (f'rw{l}', f'f32[{hidden},{4 * hidden}]'),
                   (f'b{l}', f'f32[{4 * hidden}]')]
    params.insert(0, ('xs', f'f32[{steps},{batch},{width}]'))
    body += [f'  %{n} = {t} parameter({i})' for i, (n, t) in enumerate(params)]
    body += ['  %zero = f32[] constant(0)', f'  %zeros = {bh} broadcast(f32[] %zero), dimensions={{}}']
    h = ['%zeros'] * layers
    c = ['%zeros'] * layers
    ys = []
    for t in range(steps):
        body += [f'  %x{t}_s = f32[1,{batch},{width}] slice(f32[{steps},{batch},{width}] %xs), '
                 f'slice={{[{t}:{t + 1}], [0:{batch}], [0:{width}]}}',
                 f'  %x{t} = f32[{batch},{width}] reshape(f32[1,{batch},{width}] %x{t}_s)']
        x, x_width = f'%x{t}', width
        for l in range(layers):
            lines, h[l], c[l] = cell(f't{t}l{l}_', batch, x_width, hidden, x, h[l], c[l],
                                     f'%w{l}', f'%rw{l}', f'%b{l}')
            body += lines
            x, x_width = h[l], hidden
        body.append(f'  %y{t} = f32[1,{batch},{hidden}] reshape({bh} {x})')
        ys.append(f'f32[1,{batch},{hidden}] %y{t}')
    seq, st = f'f32[{steps},{batch},{hidden}]', f'f32[{layers},{batch},{hidden}]'
    body.append(f'  %ys = {seq} concatenate({", ".join(ys)}), dimensions={{0}}')
    for name, vals in (('h_n', h), ('c_n', c)):
        for l, v in enumerate(vals):
            body.append(f'  %{name}{l} = f32[1,{batch},{hidden}] reshape({bh} {v})')
        parts = ', '.join(f'f32[1,{batch},{hidden}] %{name}{l}' for l in range(layers))
        body.append(f'  %{name} = {st} concatenate({parts}), dimensions={{0}}')
    sig = ', '.join(f'{n}: {t}' for n, t in params)
    return '\n'.join([
        f'// A {layers}-deep, {hidden}-wide stacked LSTM over {steps} steps, batch {batch}, input '
        f'width {width}, unrolled;',
        '// written by gen_lstm.py. Starts from h = c = 0; outputs (ys, h_n, c_n) like torch.nn.LSTM.',
        'HloModule lstm_stacked', '',
        f'ENTRY %main ({sig}) -> ({seq}, {st}, {st}) {{', *body,
        f'  ROOT %out = ({seq}, {st}, {st}) tuple({seq} %ys, {st} %h_n, {st} %c_n)', '}', ''])


def lstm_stacked_while(layers=3, hidden=60, steps=20, batch=64, width=60):
    """The same network as lstm_stacked as one while loop over the steps (what jax.lax.scan
    lowers to): state (t, xs, weights..., h[L,B,H], c[L,B,H], ys[T,B,H])."""
    bh, st = f'f32[{batch},{hidden}]', f'f32[{layers},{batch},{hidden}]'
    seq_x, seq = f'f32[{steps},{batch},{width}]', f'f32[{steps},{batch},{hidden}]'
    weights = []
    for l in range(layers):
        fan_in = width if l == 0 else hidden
        weights += [(f'w{l}', f'f32[{fan_in},{4 * hidden}]'), (f'rw{l}', f'f32[{hidden},{4 * hidden}]'),
                    (f'b{l}', f'f32[{4 * hidden}]')]
    fields = [('t', 's32[]'), ('xs', seq_x)] + weights + [('h', st), ('c', st), ('ys', seq)]
    state = '(' + ', '.join(t for _, t in fields) + ')'
    gtes = [f'  %{n} = {t} get-tuple-element({state} %state), index={i}'
            for i, (n, t) in enumerate(fields)]
    body = ['  %z = s32[] constant(0)', '  %one = s32[] constant(1)',
            '  %t1 = s32[] add(s32[] %t, s32[] %one)',
            f'  %x_s = f32[1,{batch},{width}] dynamic-slice({seq_x} %xs, s32[] %t, s32[] %z, s32[] %z), '
            f'dynamic_slice_sizes={{1,{batch},{width}}}',
            f'  %x = f32[{batch},{width}] reshape(f32[1,{batch},{width}] %x_s)']
    x, x_width, hs, cs = '%x', width, [], []
    for l in range(layers):
        for v in 'hc':
            body += [f'  %{v}{l}_s = f32[1,{batch},{hidden}] slice({st} %{v}), '
                     f'slice={{[{l}:{l + 1}], [0:{batch}], [0:{hidden}]}}',
                     f'  %{v}{l} = {bh} reshape(f32[1,{batch},{hidden}] %{v}{l}_s)']
        lines, h, c = cell(f'l{l}_', batch, x_width, hidden, x, f'%h{l}', f'%c{l}', f'%w{l}',
                           f'%rw{l}', f'%b{l}')
        body += lines + [f'  %{h[1:]}3 = f32[1,{batch},{hidden}] reshape({bh} {h})',
                         f'  %{c[1:]}3 = f32[1,{batch},{hidden}] reshape({bh} {c})']
        hs.append(f'f32[1,{batch},{hidden}] {h}3')
        cs.append(f'f32[1,{batch},{hidden}] {c}3')
        x, x_width = h, hidden
    body += [f'  %h_next = {st} concatenate({", ".join(hs)}), dimensions={{0}}',
             f'  %c_next = {st} concatenate({", ".join(cs)}), dimensions={{0}}',
             f'  %ys_next = {seq} dynamic-update-slice({seq} %ys, {hs[-1]}, s32[] %t, s32[] %z, '
             's32[] %z)']
    nxt = ['s32[] %t1', f'{seq_x} %xs'] + [f'{t} %{n}' for n, t in weights] + [
        f'{st} %h_next', f'{st} %c_next', f'{seq} %ys_next']
    sig = ', '.join(f'{n}: {t}' for n, t in [('xs', seq_x)] + weights)
    return '\n'.join([
        f'// The {layers}-deep, {hidden}-wide stacked LSTM of lstm_stacked.hlo ({steps} steps, batch '
        f'{batch}) as one while loop', '// over the steps; written by gen_lstm.py. Outputs (ys, h_n, c_n).',
        'HloModule lstm_stacked_while', '',
        f'%cond (state: {state}) -> pred[] {{', f'  %state = {state} parameter(0)',
        f'  %t = s32[] get-tuple-element({state} %state), index=0',
        f'  %n = s32[] constant({steps})',
        '  ROOT %lt = pred[] compare(s32[] %t, s32[] %n), direction=LT', '}', '',
        f'%body (state: {state}) -> {state} {{', f'  %state = {state} parameter(0)', *gtes, *body,
        f'  ROOT %next = {state} tuple({", ".join(nxt)})', '}', '',
        f'ENTRY %main ({sig}) -> ({seq}, {st}, {st}) {{',
        f'  %xs = {seq_x} parameter(0)',
        *[f'  %{n} = {t} parameter({i + 1})' for i, (n, t) in enumerate(weights)],
        '  %t0 = s32[] constant(0)', '  %zero = f32[] constant(0)',
        f'  %h0 = {st} broadcast(f32[] %zero), dimensions={{}}',
        f'  %ys0 = {seq} broadcast(f32[] %zero), dimensions={{}}',
        f'  %init = {state} tuple(' + ', '.join(['s32[] %t0', f'{seq_x} %xs'] + [
            f'{t} %{n}' for n, t in weights] + [f'{st} %h0', f'{st} %h0', f'{seq} %ys0']) + ')',
        f'  %loop = {state} while({state} %init), condition=%cond, body=%body',
        *[f'  %out_{n} = {t} get-tuple-element({state} %loop), index={i}'
          for i, (n, t) in enumerate(fields) if n in ('h', 'c', 'ys')],
        f'  ROOT %out = ({seq}, {st}, {st}) tuple({seq} %out_ys, {st} %out_h, {st} %out_c)',
        '}', ''])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, text in (('lstm_cell.hlo', lstm_cell()), ('lstm_stacked.hlo', lstm_stacked()),
                       ('lstm_stacked_while.hlo', lstm_stacked_while())):
        with open(os.path.join(out, name), 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
