// What the fusion passes share: which instructions are expensive or fusible, fresh names,
// reachability, and building a fusion instruction (with its fused computation) out of a set
// of instructions of a computation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/module.h"

namespace kiln {

// Hands out names not yet used anywhere in the module (instructions and computations share
// one table): `base`, then `base.1`, `base.2`, ... Names can be given back when their owner
// disappears, so rebuilt fusions keep short names.
class FusionNameTable {
 public:
  explicit FusionNameTable(const HloModule& module);
  std::string Get(std::string_view base);
  void Release(const std::string& name) { used_.erase(name); }
  void Reserve(const std::string& name) { used_.insert(name); }

 private:
  absl::flat_hash_set<std::string> used_;
  absl::flat_hash_map<std::string, int64_t> next_;
};

// Ops whose recomputation costs noticeably more than a load: transcendental functions,
// divisions, and anything that reads many elements per output (dot, reduce, ...). A fusion
// counts as expensive when something inside it is.
bool IsExpensive(const HloInstruction& instr);

// Ops that are cheap enough to copy into every consumer: constants, iota, and broadcasts of
// scalars or constants.
bool IsCheapToDuplicate(const HloInstruction& instr);

// A fusion kind from what the fused computation holds: a dot makes kOutput, a reduce makes
// kInput, anything else kLoop.
FusionKind KindForFusedComputation(const HloComputation& fused);

// True when `to` can be reached from `from` by following users (from != to).
bool Reaches(const HloInstruction* from, const HloInstruction* to);

// A copy of `src` (opcode, shape, attributes, called computations, name) with new operands.
// Control edges are not copied: the fusion passes leave instructions that have them alone.
std::unique_ptr<HloInstruction> CloneWithOperands(const HloInstruction& src,
                                                  const std::vector<HloInstruction*>& operands);

// What to fuse. `members` are instructions of one computation; members that are fusions are
// inlined. `outputs` are the members whose values leave the fusion: one array output gives
// an array root, several give a tuple root (a multi-output member contributes all its
// leaves). `survivors` are members that stay outside too (duplicated): their clones get
// fresh names, the others keep theirs.
struct FusionSpec {
  std::vector<HloInstruction*> members;
  std::vector<HloInstruction*> outputs;
  absl::flat_hash_set<HloInstruction*> survivors;
  FusionKind kind = FusionKind::kLoop;
  std::string name;              // of the fusion instruction
  std::string computation_name;  // of the fused computation
};

struct BuiltFusion {
  HloInstruction* fusion = nullptr;
  // For each output, the tuple index of its first leaf in the fusion's root (0 when the root
  // is not a tuple).
  std::vector<int64_t> output_offsets;
};

// Adds the fused computation to the module and the fusion instruction to `comp`. Does not
// rewire users and removes nothing: the caller does both.
BuiltFusion BuildFusion(HloComputation* comp, const FusionSpec& spec, FusionNameTable& names);

// Removes the members that nothing uses any more, users before operands.
void RemoveDeadMembers(HloComputation* comp, const std::vector<HloInstruction*>& members,
                       absl::flat_hash_set<const HloInstruction*>* removed = nullptr);

// Computations whose instructions the fusion passes may fuse: the entry and the bodies of
// while/conditional/call, never fusion bodies or reducers/comparators (`to_apply`).
std::vector<HloComputation*> FusibleComputations(const HloModule& module);

// Instructions that take part in control edges (have control predecessors or are one).
absl::flat_hash_set<const HloInstruction*> InstructionsWithControlEdges(const HloComputation& comp);

}  // namespace kiln
