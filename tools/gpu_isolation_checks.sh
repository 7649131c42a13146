#!/usr/bin/env bash
# Issue #18 on a GPU machine: gpu-nvptx run in a kiln-plugin-host process (KILN_ISOLATE) gives
# the same outputs as in process, and a run stopped at its timeout (a GPU kernel that never
# ends) fails with DEADLINE_EXCEEDED within the bound while the next process still runs.
#   tools/gpu_isolation_checks.sh KILN OUT_DIR     (from the repository root; the bundle's
#   run_gpu_checks.sh calls it with its own kiln)
set -uo pipefail
kiln="$1"
out="$2"
mkdir -p "$out/iso_in" "$out/iso_out"
status=0
echo "== isolation: kiln devices with KILN_ISOLATE=gpu-nvptx"
KILN_ISOLATE=gpu-nvptx timeout 120 "$kiln" devices 2>&1 | grep -E "gpu-nvptx|interpreter"
for m in examples/hlo/dense_relu.hlo examples/hlo/softmax.hlo examples/hlo/mlp_train_step.hlo; do
  name=$(basename "$m" .hlo)
  timeout 120 "$kiln" run "$m" --device gpu-nvptx --output-dir "$out/iso_in/$name" >/dev/null 2>"$out/iso_in/$name.err"
  a=$?
  KILN_ISOLATE=gpu-nvptx timeout 120 "$kiln" run "$m" --device gpu-nvptx --output-dir "$out/iso_out/$name" \
    >/dev/null 2>"$out/iso_out/$name.err"
  b=$?
  same=$(python3 - "$out/iso_in/$name" "$out/iso_out/$name" <<'PY'
import os, sys, numpy as np
a, b = sys.argv[1:3]
files = sorted(f for f in os.listdir(a) if f.endswith('.npy')) if os.path.isdir(a) else []
ok = bool(files) and all(np.array_equal(np.load(os.path.join(a, f)), np.load(os.path.join(b, f)),
                                        equal_nan=True) for f in files)
print('identical' if ok else 'DIFFERENT', len(files), 'outputs')
PY
)
  echo "$name: in process rc=$a, isolated rc=$b, $same"
  [[ $a == 0 && $b == 0 && $same == identical* ]] || status=1
done
cat > "$out/spin.hlo" <<'HLO'
HloModule spin
%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %z = s32[] constant(0)
  ROOT %t = pred[] compare(%s, %z), direction=NE
}
%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] multiply(%s, %one)
}
ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %w = s32[] while(%x), condition=%cond, body=%body
  %k = s32[] constant(1000)
  ROOT %r = s32[] add(%w, %k)
}
HLO
python3 -c "import numpy as np; np.save('$out/one.npy', np.int32(1)); np.save('$out/zero.npy', np.int32(0))"
echo "== timeout: a while loop that never ends on the GPU, --timeout 5"
start=$(date +%s.%N)
timeout 120 "$kiln" run "$out/spin.hlo" --device gpu-nvptx --timeout 5 --input "$out/one.npy" 2>&1 | tail -2
rc=${PIPESTATUS[0]}
took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
echo "rc=$rc after ${took}s"
[[ $rc == 1 ]] || status=1
"$kiln" run "$out/spin.hlo" --device gpu-nvptx --timeout 30 --input "$out/zero.npy" 2>&1 | tail -1
[[ ${PIPESTATUS[0]} == 0 ]] || status=1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | tail -3
echo "isolation checks: $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
