// How the CPU codegen runs an entry computation: which instructions become JIT kernels
// (and which of them are generated inside another kernel), which fall back to the HLO
// evaluator, and which are bookkeeping (parameters, constants, tuples). LLVM-free.
#pragma once

#include <string>
#include <vector>

#include "hlo/module.h"
#include "plugins/llvm_emitter/elemental_emitter.h"

namespace kiln::cpu {

enum class Disposition {
  kKernel,        // computed by its own JIT kernel (its result is materialized)
  kInlined,       // generated element by element inside the kernel of a user
  kEvaluator,     // the HLO evaluator computes it (the emitter cannot)
  kBookkeeping,   // parameter, constant, tuple, get-tuple-element: no computation
};
std::string_view DispositionName(Disposition d);

struct PlanOptions {
  // Generate chains of unfused elementwise/data-movement instructions inside the kernel of
  // their consumer instead of one kernel (and one intermediate array) per instruction.
  bool fuse_unfused = true;
};

// One step of the run, in post-order.
struct Step {
  const HloInstruction* instr = nullptr;
  Disposition kind = Disposition::kBookkeeping;
  int kernel = -1;  // index into Plan::kernels for kKernel
  // For kKernel: entry instructions whose values feed the kernel's input buffers, in order.
  std::vector<const HloInstruction*> sources;
  std::string why;  // for kEvaluator: why the emitter cannot do it
};

struct Plan {
  std::vector<Step> steps;
  std::vector<llvm_emit::KernelSpec> kernels;
  // Disposition of every entry instruction, in post-order (the capability report).
  std::vector<std::pair<const HloInstruction*, Disposition>> dispositions;
};

// True when every instruction of a fused computation can be emitted (a root tuple of
// arrays is allowed: a multi-output fusion). `why` says what blocks it.
bool CanEmitFusion(const HloInstruction& fusion, std::string* why);

Plan MakePlan(const HloModule& module, const PlanOptions& options);

}  // namespace kiln::cpu
