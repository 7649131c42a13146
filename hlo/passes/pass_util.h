// Helpers the rewriting passes share: side-effect queries, fresh names, safe replacement
// and removal of the dead instructions a rewrite leaves behind.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/module.h"

namespace kiln {

// True for instructions whose effect is more than their result: I/O, communication,
// random state, async pairs, custom calls marked custom_call_has_side_effect=true.
bool HasSideEffectNoRecurse(const HloInstruction& instr);
// Also true when a called computation (loop body, reducer, ...) has a side effect.
bool HasSideEffect(const HloInstruction& instr);

// Computations that are not fusion bodies, callees first (most passes leave fusions alone:
// the fusion pass owns their shape).
std::vector<HloComputation*> NonFusionComputations(const HloModule& module);

// Hands out instruction names not yet used anywhere in the module: `base.N`.
class NameUniquer {
 public:
  explicit NameUniquer(const HloModule& module);
  std::string Get(std::string_view base);

 private:
  absl::flat_hash_set<std::string> used_;
  absl::flat_hash_map<std::string, int64_t> next_;
};

// Adds `instr` to `comp` under a fresh name derived from its opcode (or `base`).
HloInstruction* AddWithFreshName(HloComputation* comp, std::unique_ptr<HloInstruction> instr,
                                 NameUniquer& names, std::string_view base = {});

// An array shape with `like`'s layout convention: the default layout when `like` has one.
Shape ShapeLike(PrimitiveType type, std::vector<int64_t> dims, const Shape& like);

// Adds `op` over `operands` with result `type`[`dims`] (`like`'s layout convention) to `comp`
// under a fresh name; attributes are the caller's to set.
HloInstruction* AddArrayInstruction(HloComputation* comp, NameUniquer& names, HloOpcode op,
                                    PrimitiveType type, std::vector<int64_t> dims,
                                    std::vector<HloInstruction*> operands, const Shape& like);

// Adds transpose(x) by `perm` (x's element type and layout convention) to `comp` under a
// fresh name.
HloInstruction* AddTranspose(HloComputation* comp, NameUniquer& names, HloInstruction* x,
                             const std::vector<int64_t>& perm);

// Adds compare(a, b) with `dir`, a pred[`dims`] (`like`'s layout convention), to `comp`.
HloInstruction* AddCompare(HloComputation* comp, NameUniquer& names, HloInstruction* a,
                           HloInstruction* b, ComparisonDirection dir, std::vector<int64_t> dims,
                           const Shape& like);

// The scalar computation `op`(a, b) of `type` (a reduce's to_apply), added to `module` once
// per (op, type): a computation of that name and form already there is reused.
HloComputation* BinaryComputation(HloModule& module, HloOpcode op, PrimitiveType type);

// Adds the scalar constant `value` of `type` to `comp` under a fresh name.
HloInstruction* AddScalarConstant(HloComputation* comp, NameUniquer& names, PrimitiveType type,
                                  double value);

// A dot's multiply-adds: its result's elements times its contracted size.
int64_t DotMultiplyAdds(const HloInstruction& dot);

// Makes every user of `old` use `repl`. Refuses (returns false) when there is nothing to
// replace (no users, not the root), when the shapes differ in
// element type or dimensions, or when `old` is its computation's root and the layouts
// differ (a root's layout is part of the computation's signature).
bool ReplaceUsesIfCompatible(HloInstruction* old, HloInstruction* repl);

// The instructions some instruction of `comp` names as a control predecessor: they must
// stay, or the control edge would dangle.
absl::flat_hash_set<const HloInstruction*> ControlPredecessorsIn(const HloComputation& comp);

// Whether DCE may delete `instr`: no users, not the root, not a parameter, no side effect,
// not a control predecessor.
bool IsRemovable(const HloInstruction& instr,
                 const absl::flat_hash_set<const HloInstruction*>& control_preds);

// Removes the candidates that are dead, then the operands they leave dead, and so on.
// Returns how many instructions were removed.
int64_t RemoveDeadFrom(HloComputation* comp, std::vector<HloInstruction*> candidates);

// Calls `rewrite` on each `op` instruction of the computations that are not fusion bodies, in
// post order; one it replaced (it returned true) is removed with what that leaves dead, and
// its computation is put back in post order. Returns whether any was replaced.
bool RewriteEach(HloModule& module, HloOpcode op,
                 const std::function<bool(HloInstruction*)>& rewrite);

// The operation of a reduce's (or reduce-window's) reducer when it is op(p0, p1), either
// order, of add, multiply, maximum or minimum (and or or of pred) and the initial value is its
// identity: a reducer whose order only rounding can tell, applied as often as wanted to the
// initial value. nullopt otherwise, and for complex types.
std::optional<HloOpcode> BinaryReducerWithIdentity(const HloInstruction& reduce);

// Constant helpers for pattern matching: a constant, or a broadcast of a constant, whose
// elements all equal `value` (integers and real floats; complex never matches).
bool IsAllValue(const HloInstruction* instr, double value);
// All elements are the type's lowest value (-inf for floats, the minimum for integers,
// false for pred) or its highest (+inf, the maximum, true): identities of max and min.
bool IsAllLowest(const HloInstruction* instr);
bool IsAllHighest(const HloInstruction* instr);
// The constant literal behind `instr` (a constant, or the operand of a broadcast of a
// constant) when all its elements are bitwise equal; null otherwise.
const Literal* UniformConstant(const HloInstruction* instr);

}  // namespace kiln
