// NAME_run of an ahead-of-time artifact: the plan's steps (the entry's, and those of the
// computations its while loops and conditionals run) as calls on buffers at fixed places.
// Every value gets its place when the object is compiled: an argument, a result the caller
// passed, a read-only constant, or an offset in the one temporary arena (the buffer
// assignment's layout, plus slots of their own for what the layout leaves out). Includes
// LLVM: only aot/ includes this header.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "aot/aot_compiler.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "plugins/kernel_plan/arena_layout.h"
#include "plugins/kernel_plan/plan.h"

namespace kiln::cpu::aot {

inline constexpr int64_t kAotAlign = 64;  // of the arena and of every slot in it

// Where an array lives while NAME_run runs.
struct Place {
  enum Kind { kArg, kResult, kTemp, kConstant } kind = kTemp;
  int64_t index = 0;   // argument, result or constant number; byte offset for kTemp
  bool arena = false;  // kTemp: placed by the buffer assignment (shared with other values)
  bool operator==(const Place& o) const { return kind == o.kind && index == o.index; }
};

// A value: an array at a place, or a tuple of values.
struct Node {
  std::optional<Place> place;
  std::vector<Node> elements;
};

// A kernel or library step's output: (step instruction, output index).
using Def = std::pair<const HloInstruction*, int>;

// Emits NAME_run and NAME_run_simple into the module that holds the kernels.
class DriverEmitter {
 public:
  DriverEmitter(const kernel_plan::Plan& plan, const kernel_plan::ArenaLayout& arena,
                const AotOptions& options, llvm::Module& m)
      : plan_(plan), arena_(arena), options_(options), m_(m), ctx_(m.getContext()), b_(ctx_) {}

  absl::Status Emit(const std::vector<std::string>& kernel_names, AotArtifact& out);

 private:
  llvm::Value* Pointer(const Place& p);
  Place NewTemp(int64_t bytes) {
    Place p{Place::kTemp, extra_end_, false};
    extra_end_ += (std::max<int64_t>(bytes, 1) + kAotAlign - 1) / kAotAlign * kAotAlign;
    return p;
  }
  // Where step output `o` goes: a result, the step's arena offset, or a slot of its own.
  Place OutputPlace(const kernel_plan::Step& step, int o, int64_t bytes);
  absl::Status EmitConstant(const HloInstruction& h, AotArtifact& out);
  // The steps of one computation (the entry, or one run by control flow) with its parameters
  // at `params`; the root's value.
  absl::StatusOr<Node> EmitComputation(const kernel_plan::ComputationPlan& p,
                                       std::vector<Node> params, AotArtifact& out);
  absl::Status EmitControlFlow(const kernel_plan::Step& step, AotArtifact& out);
  void MarkStateUpdates(const kernel_plan::ComputationPlan& body);
  Node NewNode(const Shape& shape);  // fresh slots for every leaf
  void CopyNode(const Node& to, const Node& from, const Shape& shape);
  void EmitKernelCall(const kernel_plan::Step& step, llvm::Function* fn);
  void EmitGemm(const kernel_plan::Step& step, AotArtifact& out);

  const kernel_plan::Plan& plan_;
  const kernel_plan::ArenaLayout& arena_;
  const AotOptions& options_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* run_ = nullptr;
  llvm::Value* table_ = nullptr;  // the kernels' buffer table
  absl::flat_hash_map<Def, int64_t> claims_;
  absl::flat_hash_map<const HloInstruction*, Node> values_;
  const std::vector<std::string>* kernel_names_ = nullptr;
  absl::flat_hash_set<const HloInstruction*> state_updates_;  // see MarkStateUpdates
  std::vector<llvm::GlobalVariable*> constants_;
  std::map<std::pair<int, int64_t>, llvm::Value*> loaded_;  // argument/result pointers
  int64_t extra_end_ = 0;
};

}  // namespace kiln::cpu::aot
