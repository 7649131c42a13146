"""HLO text of the benchmark workloads, with the sizes as parameters.

Shared by cpu_workloads.py (issue #4, small sizes) and gpu_workloads.py (issue #6, large
sizes) so both time the same modules. The text is what JAX dumps for the same functions:
reductions with named to_apply computations, scalars broadcast explicitly.
mlp_train_step() with its defaults reproduces examples/hlo/mlp_train_step.hlo exactly."""

REDUCERS = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
"""


def sum_xyz(n):
    """sum(x + y*z) over three f32[n]: one scalar out, purely read-bound."""
    return f"""HloModule sum_xyz
{REDUCERS}
ENTRY %main (x: f32[{n}], y: f32[{n}], z: f32[{n}]) -> f32[] {{
  %x = f32[{n}] parameter(0)
  %y = f32[{n}] parameter(1)
  %z = f32[{n}] parameter(2)
  %yz = f32[{n}] multiply(%y, %z)
  %s = f32[{n}] add(%x, %yz)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%s, %zero), dimensions={{0}}, to_apply=%add
}}
"""


def softmax(r, c):
    """Row softmax, decomposed as jax.nn.softmax lowers it: max, subtract, exp, sum, divide."""
    return f"""HloModule softmax
{REDUCERS}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = f32[{r},{c}] broadcast(%m), dimensions={{0}}
  %d = f32[{r},{c}] subtract(%x, %mb)
  %e = f32[{r},{c}] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[{r}] reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  %sb = f32[{r},{c}] broadcast(%s), dimensions={{0}}
  ROOT %y = f32[{r},{c}] divide(%e, %sb)
}}
"""


def layernorm_gelu(r, c):
    """Row layernorm (no scale/shift, eps 1e-5) then tanh-approximated GELU."""
    return f"""HloModule layernorm_gelu
{REDUCERS}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %zero = f32[] constant(0)
  %invn = f32[] constant({1.0 / c!r})
  %invnb = f32[{r}] broadcast(%invn), dimensions={{}}
  %sum = f32[{r}] reduce(%x, %zero), dimensions={{1}}, to_apply=%add
  %mean = f32[{r}] multiply(%sum, %invnb)
  %meanb = f32[{r},{c}] broadcast(%mean), dimensions={{0}}
  %xc = f32[{r},{c}] subtract(%x, %meanb)
  %sq = f32[{r},{c}] multiply(%xc, %xc)
  %ss = f32[{r}] reduce(%sq, %zero), dimensions={{1}}, to_apply=%add
  %var = f32[{r}] multiply(%ss, %invnb)
  %eps = f32[] constant(1e-05)
  %epsb = f32[{r}] broadcast(%eps), dimensions={{}}
  %ve = f32[{r}] add(%var, %epsb)
  %rs = f32[{r}] rsqrt(%ve)
  %rsb = f32[{r},{c}] broadcast(%rs), dimensions={{0}}
  %y = f32[{r},{c}] multiply(%xc, %rsb)
  %half = f32[] constant(0.5)
  %one = f32[] constant(1)
  %k = f32[] constant(0.797884583)
  %a = f32[] constant(0.044715)
  %halfb = f32[{r},{c}] broadcast(%half), dimensions={{}}
  %oneb = f32[{r},{c}] broadcast(%one), dimensions={{}}
  %kb = f32[{r},{c}] broadcast(%k), dimensions={{}}
  %ab = f32[{r},{c}] broadcast(%a), dimensions={{}}
  %y2 = f32[{r},{c}] multiply(%y, %y)
  %y3 = f32[{r},{c}] multiply(%y2, %y)
  %ay3 = f32[{r},{c}] multiply(%ab, %y3)
  %in = f32[{r},{c}] add(%y, %ay3)
  %kin = f32[{r},{c}] multiply(%kb, %in)
  %t = f32[{r},{c}] tanh(%kin)
  %ot = f32[{r},{c}] add(%oneb, %t)
  %hy = f32[{r},{c}] multiply(%halfb, %y)
  ROOT %g = f32[{r},{c}] multiply(%hy, %ot)
}}
"""


def mlp_train_step(batch=256, d_in=784, hidden=512, classes=10, lr=0.1):
    """One SGD step of an MLP d_in-hidden-classes with softmax cross-entropy; outputs
    (loss, w1, b1, w2, b2). The shapes are spelled out everywhere, as in a JAX dump."""
    b, d, h, c = batch, d_in, hidden, classes

    def t(shape, layout=True):  # f32[b,h]{1,0}: the layout only on arrays, as JAX prints
        dims = ','.join(str(v) for v in shape)
        return f'f32[{dims}]' + ('{' + ','.join(str(i) for i in reversed(range(len(shape)))) + '}'
                                  if layout and shape else '')
    X, W1, B1, W2, B2 = t((b, d)), t((d, h)), t((h,)), t((h, c)), t((c,))
    BH, BC, R = t((b, h)), t((b, c)), t((b,))
    PBH, PBC = BH.replace('f32', 'pred'), BC.replace('f32', 'pred')
    SBC = BC.replace('f32', 's32')
    S = f's32[{b}]{{0}}'
    return f"""// One SGD step of an MLP {d}-{h}-{c} on a batch of {b} with softmax cross-entropy, written
// as JAX would lower it (forward, backward, update). Outputs (loss, w1, b1, w2, b2).
HloModule mlp_train_step

%add_f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}

%max_f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}}

ENTRY %main (x: {t((b, d), False)}, labels: s32[{b}], w1: {t((d, h), False)}, b1: {t((h,), False)}, w2: {t((h, c), False)}, b2: {t((c,), False)}) -> (f32[], {t((d, h), False)}, {t((h,), False)}, {t((h, c), False)}, {t((c,), False)}) {{
  %x = {X} parameter(0)
  %labels = {S} parameter(1)
  %w1 = {W1} parameter(2)
  %b1 = {B1} parameter(3)
  %w2 = {W2} parameter(4)
  %b2 = {B2} parameter(5)
  %zero = f32[] constant(0)
  %ninf = f32[] constant(-inf)
  %lr = f32[] constant({lr!r})
  %inv_batch = f32[] constant({1.0 / b!r})
  // forward
  %xw1 = {BH} dot({X} %x, {W1} %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %b1b = {BH} broadcast({B1} %b1), dimensions={{1}}
  %pre = {BH} add({BH} %xw1, {BH} %b1b)
  %zeros_h = {BH} broadcast(f32[] %zero), dimensions={{}}
  %h = {BH} maximum({BH} %pre, {BH} %zeros_h)
  %hw2 = {BC} dot({BH} %h, {W2} %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %b2b = {BC} broadcast({B2} %b2), dimensions={{1}}
  %logits = {BC} add({BC} %hw2, {BC} %b2b)
  %rowmax = {R} reduce({BC} %logits, f32[] %ninf), dimensions={{1}}, to_apply=%max_f32
  %rowmax_b = {BC} broadcast({R} %rowmax), dimensions={{0}}
  %shifted = {BC} subtract({BC} %logits, {BC} %rowmax_b)
  %e = {BC} exponential({BC} %shifted)
  %sumexp = {R} reduce({BC} %e, f32[] %zero), dimensions={{1}}, to_apply=%add_f32
  %logsum = {R} log({R} %sumexp)
  %logsum_b = {BC} broadcast({R} %logsum), dimensions={{0}}
  %logp = {BC} subtract({BC} %shifted, {BC} %logsum_b)
  %classes = {SBC} iota(), iota_dimension=1
  %labels_b = {SBC} broadcast({S} %labels), dimensions={{0}}
  %is_label = {PBC} compare({SBC} %classes, {SBC} %labels_b), direction=EQ
  %one = f32[] constant(1)
  %ones = {BC} broadcast(f32[] %one), dimensions={{}}
  %zeros_o = {BC} broadcast(f32[] %zero), dimensions={{}}
  %onehot = {BC} select({PBC} %is_label, {BC} %ones, {BC} %zeros_o)
  %picked = {BC} multiply({BC} %onehot, {BC} %logp)
  %total = f32[] reduce({BC} %picked, f32[] %zero), dimensions={{0,1}}, to_apply=%add_f32
  %neg_total = f32[] negate(f32[] %total)
  %loss = f32[] multiply(f32[] %neg_total, f32[] %inv_batch)
  // backward: dlogits = (softmax - onehot) / batch
  %sumexp_b = {BC} broadcast({R} %sumexp), dimensions={{0}}
  %probs = {BC} divide({BC} %e, {BC} %sumexp_b)
  %diff = {BC} subtract({BC} %probs, {BC} %onehot)
  %inv_b = {BC} broadcast(f32[] %inv_batch), dimensions={{}}
  %dlogits = {BC} multiply({BC} %diff, {BC} %inv_b)
  %dw2 = {W2} dot({BH} %h, {BC} %dlogits), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  %db2 = {B2} reduce({BC} %dlogits, f32[] %zero), dimensions={{0}}, to_apply=%add_f32
  %dh = {BH} dot({BC} %dlogits, {W2} %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  %active = {PBH} compare({BH} %pre, {BH} %zeros_h), direction=GT
  %dpre = {BH} select({PBH} %active, {BH} %dh, {BH} %zeros_h)
  %dw1 = {W1} dot({X} %x, {BH} %dpre), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  %db1 = {B1} reduce({BH} %dpre, f32[] %zero), dimensions={{0}}, to_apply=%add_f32
  // SGD update
  %lr_w1 = {W1} broadcast(f32[] %lr), dimensions={{}}
  %step_w1 = {W1} multiply({W1} %dw1, {W1} %lr_w1)
  %w1_new = {W1} subtract({W1} %w1, {W1} %step_w1)
  %lr_b1 = {B1} broadcast(f32[] %lr), dimensions={{}}
  %step_b1 = {B1} multiply({B1} %db1, {B1} %lr_b1)
  %b1_new = {B1} subtract({B1} %b1, {B1} %step_b1)
  %lr_w2 = {W2} broadcast(f32[] %lr), dimensions={{}}
  %step_w2 = {W2} multiply({W2} %dw2, {W2} %lr_w2)
  %w2_new = {W2} subtract({W2} %w2, {W2} %step_w2)
  %lr_b2 = {B2} broadcast(f32[] %lr), dimensions={{}}
  %step_b2 = {B2} multiply({B2} %db2, {B2} %lr_b2)
  %b2_new = {B2} subtract({B2} %b2, {B2} %step_b2)
  ROOT %out = (f32[], {W1}, {B1}, {W2}, {B2}) tuple(f32[] %loss, {W1} %w1_new, {B1} %b1_new, {W2} %w2_new, {B2} %b2_new)
}}
"""


def mlp_train_step_reference(xp, lr, x, labels, w1, b1, w2, b2):
    """What mlp_train_step's module computes, in NumPy or jax.numpy (`xp`): the same outputs
    (loss, w1, b1, w2, b2), so both benchmark scripts check Kiln against one formula."""
    batch, classes = x.shape[0], w2.shape[1]
    pre = x @ w1 + b1
    h = xp.maximum(pre, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(1, keepdims=True)
    e = xp.exp(shifted)
    s = e.sum(1, keepdims=True)
    onehot = (xp.arange(classes)[None, :] == labels[:, None]).astype(xp.float32)
    loss = -(onehot * (shifted - xp.log(s))).sum() / batch
    dlogits = (e / s - onehot) / batch
    dpre = (dlogits @ w2.T) * (pre > 0)
    return (loss, w1 - lr * (x.T @ dpre), b1 - lr * dpre.sum(0), w2 - lr * (h.T @ dlogits),
            b2 - lr * dlogits.sum(0))
