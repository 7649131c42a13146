// HLO modules that exercise each GPU kernel layout (llvm_emitter/gpu_layout.h), device-side
// control flow and persistent buffers. Shared by the host emulation test (which checks
// layouts, copies and allocations as well as values) and the GPU test (values on hardware).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::gpu::testing {

// A reducer computation `name` (a: type, b: type) -> type applying binary `op`.
inline std::string Reducer(const char* name, const char* type, const char* op) {
  return absl::StrCat("%", name, " (a: ", type, "[], b: ", type, "[]) -> ", type,
                      "[] {\n  %a = ", type, "[] parameter(0)\n  %b = ", type,
                      "[] parameter(1)\n  ROOT %r = ", type, "[] ", op, "(%a, %b)\n}\n");
}

inline std::string F32Reducers() {
  return Reducer("add", "f32", "add") + Reducer("max", "f32", "maximum");
}

// Softmax [37,1000]: rows not a multiple of the block (one rows kernel).
inline std::string SoftmaxModule() {
  return absl::StrCat("HloModule softmax\n", F32Reducers(), R"(
ENTRY %main (x: f32[37,1000]) -> f32[37,1000] {
  %x = f32[37,1000] parameter(0)
  %ninf = f32[] constant(-inf)
  %m = f32[37] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %mb = f32[37,1000] broadcast(%m), dimensions={0}
  %d = f32[37,1000] subtract(%x, %mb)
  %e = f32[37,1000] exponential(%d)
  %zero = f32[] constant(0)
  %s = f32[37] reduce(%e, %zero), dimensions={1}, to_apply=%add
  %sb = f32[37,1000] broadcast(%s), dimensions={0}
  ROOT %y = f32[37,1000] divide(%e, %sb)
}
)");
}

// Layernorm + GELU over [3,7,300]: a statistic of a statistic (one rows kernel).
inline std::string LayernormGeluModule() {
  return absl::StrCat("HloModule layernorm\n", F32Reducers(), R"(
ENTRY %main (x: f32[3,7,300], g: f32[300]) -> f32[3,7,300] {
  %x = f32[3,7,300] parameter(0)
  %g = f32[300] parameter(1)
  %zero = f32[] constant(0)
  %n = f32[] constant(300)
  %s = f32[3,7] reduce(%x, %zero), dimensions={2}, to_apply=%add
  %nb = f32[3,7] broadcast(%n), dimensions={}
  %mean = f32[3,7] divide(%s, %nb)
  %mb = f32[3,7,300] broadcast(%mean), dimensions={0,1}
  %c = f32[3,7,300] subtract(%x, %mb)
  %sq = f32[3,7,300] multiply(%c, %c)
  %vs = f32[3,7] reduce(%sq, %zero), dimensions={2}, to_apply=%add
  %var = f32[3,7] divide(%vs, %nb)
  %eps = f32[] constant(1e-5)
  %eb = f32[3,7] broadcast(%eps), dimensions={}
  %ve = f32[3,7] add(%var, %eb)
  %r = f32[3,7] rsqrt(%ve)
  %rb = f32[3,7,300] broadcast(%r), dimensions={0,1}
  %y = f32[3,7,300] multiply(%c, %rb)
  %gb = f32[3,7,300] broadcast(%g), dimensions={2}
  %z = f32[3,7,300] multiply(%y, %gb)
  %h0 = f32[] constant(0.5)
  %half = f32[3,7,300] broadcast(%h0), dimensions={}
  %t = f32[3,7,300] tanh(%z)
  %one0 = f32[] constant(1)
  %one = f32[3,7,300] broadcast(%one0), dimensions={}
  %u = f32[3,7,300] add(%t, %one)
  %h = f32[3,7,300] multiply(%z, %half)
  ROOT %o = f32[3,7,300] multiply(%h, %u)
}
)");
}

// Row reductions of f64 (two trailing dims), s64, pred and f32 max, non-identity init.
inline std::string RowReductionsModule() {
  return "HloModule rowreduce\n" + Reducer("addd", "f64", "add") +
         Reducer("maxs", "s64", "maximum") + Reducer("orp", "pred", "or") +
         Reducer("maxf", "f32", "maximum") + R"(
ENTRY %main (x: f64[5,4,70], i: s64[6,130], p: pred[9,100], f: f32[4,500]) -> (f64[5], s64[6], pred[9], f32[4]) {
  %x = f64[5,4,70] parameter(0)
  %i = s64[6,130] parameter(1)
  %p = pred[9,100] parameter(2)
  %f = f32[4,500] parameter(3)
  %three = f64[] constant(3.5)
  %sx = f64[5] reduce(%x, %three), dimensions={1,2}, to_apply=%addd
  %lo = s64[] constant(-9223372036854775808)
  %mi = s64[6] reduce(%i, %lo), dimensions={1}, to_apply=%maxs
  %no = pred[] constant(false)
  %op = pred[9] reduce(%p, %no), dimensions={1}, to_apply=%orp
  %ninf = f32[] constant(-inf)
  %mf = f32[4] reduce(%f, %ninf), dimensions={1}, to_apply=%maxf
  ROOT %t = (f64[5], s64[6], pred[9], f32[4]) tuple(%sx, %mi, %op, %mf)
}
)";
}

// Reductions to a scalar split across blocks: f32 sum(x+y*z) and s32 (init 7) 4 elements at
// a time, bf16 of an odd length one at a time.
inline std::string ScalarSplitModule() {
  return "HloModule split\n" + Reducer("add", "f32", "add") + Reducer("addi", "s32", "add") +
         Reducer("addb", "bf16", "add") + R"(
ENTRY %main (x: f32[300000], y: f32[300000], z: f32[300000], i: s32[257,300], b: bf16[70001]) -> (f32[], s32[], bf16[]) {
  %x = f32[300000] parameter(0)
  %y = f32[300000] parameter(1)
  %z = f32[300000] parameter(2)
  %yz = f32[300000] multiply(%y, %z)
  %xyz = f32[300000] add(%x, %yz)
  %init = f32[] constant(3.5)
  %s = f32[] reduce(%xyz, %init), dimensions={0}, to_apply=%add
  %i = s32[257,300] parameter(3)
  %seven = s32[] constant(7)
  %si = s32[] reduce(%i, %seven), dimensions={0,1}, to_apply=%addi
  %b = bf16[70001] parameter(4)
  %bz = bf16[] constant(0)
  %sb = bf16[] reduce(%b, %bz), dimensions={0}, to_apply=%addb
  ROOT %t = (f32[], s32[], bf16[]) tuple(%s, %si, %sb)
}
)";
}

// An elementwise kernel with 4 elements per thread: broadcast, transpose, bf16 output.
inline std::string FourPerThreadModule() {
  return R"(HloModule vec
ENTRY %main (x: f32[64,256], b: f32[256], y: f32[256,64]) -> (f32[64,256], bf16[64,256]) {
  %x = f32[64,256] parameter(0)
  %b = f32[256] parameter(1)
  %y = f32[256,64] parameter(2)
  %bb = f32[64,256] broadcast(%b), dimensions={1}
  %yt = f32[64,256] transpose(%y), dimensions={1,0}
  %s = f32[64,256] add(%x, %bb)
  %p = f32[64,256] multiply(%s, %yt)
  %zero = f32[] constant(0)
  %zb = f32[64,256] broadcast(%zero), dimensions={}
  %r = f32[64,256] maximum(%p, %zb)
  %h = bf16[64,256] convert(%r)
  ROOT %t = (f32[64,256], bf16[64,256]) tuple(%r, %h)
}
)";
}

// Few long rows split across blocks: f32 (two trailing dims), f32 max, s32 (init 9).
inline std::string FewLongRowsModule() {
  return "HloModule longrows\n" + Reducer("add", "f32", "add") + Reducer("max", "f32", "maximum") +
         Reducer("addi", "s32", "add") + R"(
ENTRY %main (x: f32[3,2,12000], y: f32[5,14000], i: s32[2,33000]) -> (f32[3], f32[5], s32[2]) {
  %x = f32[3,2,12000] parameter(0)
  %zero = f32[] constant(0)
  %sx = f32[3] reduce(%x, %zero), dimensions={1,2}, to_apply=%add
  %y = f32[5,14000] parameter(1)
  %ninf = f32[] constant(-inf)
  %my = f32[5] reduce(%y, %ninf), dimensions={1}, to_apply=%max
  %i = s32[2,33000] parameter(2)
  %nine = s32[] constant(9)
  %si = s32[2] reduce(%i, %nine), dimensions={1}, to_apply=%addi
  ROOT %t = (f32[3], f32[5], s32[2]) tuple(%sx, %my, %si)
}
)";
}

// Short rows, and column reductions split into parts: f32, s32 over two dims, f64, short.
inline std::string ColumnReductionsModule() {
  return "HloModule columns\n" + Reducer("add", "f32", "add") + Reducer("addi", "s32", "add") +
         Reducer("maxd", "f64", "maximum") + R"(
ENTRY %main (x: f32[500,20], y: f32[3000,70], w: f32[3000,70], i: s32[40,50,6], d: f64[999,3], e: f32[31,8]) -> (f32[500], f32[70], s32[6], f64[3], f32[8]) {
  %x = f32[500,20] parameter(0)
  %zero = f32[] constant(0)
  %r = f32[500] reduce(%x, %zero), dimensions={1}, to_apply=%add
  %y = f32[3000,70] parameter(1)
  %w = f32[3000,70] parameter(2)
  %yw = f32[3000,70] multiply(%y, %w)
  %c = f32[70] reduce(%yw, %zero), dimensions={0}, to_apply=%add
  %i = s32[40,50,6] parameter(3)
  %five = s32[] constant(5)
  %ci = s32[6] reduce(%i, %five), dimensions={0,1}, to_apply=%addi
  %d = f64[999,3] parameter(4)
  %ninf = f64[] constant(-inf)
  %cd = f64[3] reduce(%d, %ninf), dimensions={0}, to_apply=%maxd
  %e = f32[31,8] parameter(5)
  %ce = f32[8] reduce(%e, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[500], f32[70], s32[6], f64[3], f32[8]) tuple(%r, %c, %ci, %cd, %ce)
}
)";
}

// A while loop (n iterations), a call and an index conditional (parameter b).
inline std::string ControlFlowModule() {
  return R"(HloModule flow
%cond (s: (s32[], f32[300])) -> pred[] {
  %s = (s32[], f32[300]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(0)
  %lim = s32[] add(%n, %n)
  ROOT %lt = pred[] compare(%i, %lim), direction=GT
}
%body (s: (s32[], f32[300])) -> (s32[], f32[300]) {
  %s = (s32[], f32[300]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[300] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] subtract(%i, %one)
  %h = f32[] constant(0.5)
  %hb = f32[300] broadcast(%h), dimensions={}
  %sx = f32[300] sine(%x)
  %m = f32[300] multiply(%x, %hb)
  %x1 = f32[300] add(%m, %sx)
  ROOT %t = (s32[], f32[300]) tuple(%i1, %x1)
}
%double (y: f32[300]) -> f32[300] {
  %y = f32[300] parameter(0)
  ROOT %d = f32[300] add(%y, %y)
}
%negate (y: f32[300]) -> f32[300] {
  %y = f32[300] parameter(0)
  ROOT %n = f32[300] negate(%y)
}
%scale (y: f32[300]) -> f32[300] {
  %y = f32[300] parameter(0)
  %c = f32[] constant(3)
  %cb = f32[300] broadcast(%c), dimensions={}
  ROOT %m = f32[300] multiply(%y, %cb)
}
ENTRY %main (x: f32[300], n: s32[], b: s32[]) -> f32[300] {
  %x = f32[300] parameter(0)
  %n = s32[] parameter(1)
  %b = s32[] parameter(2)
  %init = (s32[], f32[300]) tuple(%n, %x)
  %loop = (s32[], f32[300]) while(%init), condition=%cond, body=%body
  %r = f32[300] get-tuple-element(%loop), index=1
  %c = f32[300] call(%r), to_apply=%scale
  ROOT %k = f32[300] conditional(%b, %c, %c), branch_computations={%double, %negate}
}
)";
}

// One step of a loop whose result feeds the next (persistent device buffers).
inline std::string PersistentStepModule() {
  return "HloModule step\n" + Reducer("add", "f32", "add") + R"(
ENTRY %main (w: f32[64,300], x: f32[300]) -> (f32[64,300], f32[64]) {
  %w = f32[64,300] parameter(0)
  %x = f32[300] parameter(1)
  %xb = f32[64,300] broadcast(%x), dimensions={1}
  %p = f32[64,300] multiply(%w, %xb)
  %zero = f32[] constant(0)
  %s = f32[64] reduce(%p, %zero), dimensions={1}, to_apply=%add
  %t = f32[64,300] tanh(%w)
  ROOT %r = (f32[64,300], f32[64]) tuple(%t, %s)
}
)";
}

// Every module above, by name.
inline std::vector<std::pair<std::string, std::string>> AllLayoutModules() {
  return {{"softmax", SoftmaxModule()},          {"layernorm", LayernormGeluModule()},
          {"rowreduce", RowReductionsModule()},  {"split", ScalarSplitModule()},
          {"vec", FourPerThreadModule()},        {"longrows", FewLongRowsModule()},
          {"columns", ColumnReductionsModule()}, {"flow", ControlFlowModule()},
          {"step", PersistentStepModule()}};
}

}  // namespace kiln::gpu::testing
