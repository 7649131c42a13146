// The values of a plan's instructions during one run, shared by the cpu-llvm and gpu-nvptx
// runners: arguments and constants are borrowed, results are owned; bookkeeping steps and
// evaluator steps are executed here so both runners do them the same way. Tuples are
// bookkeeping: a tuple value refers to its elements' literals, it does not copy them.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/literal.h"

namespace kiln::kernel_plan {

// A value in a run: one literal (an array, or a whole tuple literal such as a tuple
// argument), or a tuple made of element values. Literals are shared: a result lives as long
// as some value refers to it (a while loop's state outlives the body run that made it);
// borrowed literals (arguments, constants) have no owner and are never freed here.
struct Value {
  std::shared_ptr<const Literal> literal;
  std::vector<Value> elements;  // the tuple's elements when `literal` is null

  static Value Borrowed(const Literal* l);
  static Value Owned(Literal l);
  // A literal the run shares with its caller: taken over (moved, updated in place) only
  // when the caller gave up its share, leaving the run the only owner (a donated argument).
  static Value Shared(std::shared_ptr<const Literal> l);
  bool IsTuple() const { return literal == nullptr || literal->IsTuple(); }
  int64_t TupleSize() const;
  Value Element(int64_t i) const;  // i must be in [0, TupleSize())
};

// The value as one literal: moved out where `v` holds the only reference to an owned
// literal, copied otherwise (borrowed, or shared with another value).
Literal Materialize(Value v);

class StepValues {
 public:
  // The literal of `h` (an array, or a tuple literal made once on first use).
  const Literal* at(const HloInstruction* h);
  const Value& value(const HloInstruction* h) const { return values_.at(h); }
  void Set(const HloInstruction* h, Value v) { values_[h] = std::move(v); }
  bool contains(const HloInstruction* h) const { return values_.contains(h); }
  // Takes ownership of `value` as the result of `h`.
  void Own(const HloInstruction* h, Literal value) { Set(h, Value::Owned(std::move(value))); }
  // A kernel's outputs: one literal, or the elements of `h`'s tuple result.
  void OwnOutputs(const HloInstruction* h, std::span<Literal> outputs);  // moved from
  // Drops `h`'s value (after its last reader; nothing when it has none).
  void Release(const HloInstruction* h) { values_.erase(h); }
  // Moves `h`'s value out (its last reader is taking it).
  Value Take(const HloInstruction* h);
  // `h`'s array as a literal the caller may overwrite: its own buffer, taken, when `may_take`
  // (no later step reads `h`) and `h`'s value is the only reference to an owned literal;
  // otherwise a copy.
  Literal TakeOrCopy(const HloInstruction* h, bool may_take);
  // `h`'s array literal, taken (its value dropped), when that value is the only reference to
  // an owned literal; nullopt otherwise, and the value stays.
  std::optional<Literal> TakeIfOnlyOwner(const HloInstruction* h);
  // Parameter, constant, get-tuple-element or tuple. The literal form borrows the entry's
  // arguments; the Value form moves a called computation's arguments in (so a value the
  // computation takes over has no other owner left here).
  // `move_element`: a get-tuple-element takes its element out of the tuple's value
  // (Step::moves_element) instead of sharing it.
  absl::Status RunBookkeeping(const HloInstruction& h, std::span<const Literal* const> args,
                              bool move_element = false);
  absl::Status RunBookkeeping(const HloInstruction& h, std::span<Value> args,
                              bool move_element = false);
  // One instruction on the host evaluator.
  absl::Status RunOnEvaluator(const HloInstruction& h, HloEvaluator& evaluator);
  // The root's value; the run's other values are dropped, so results only the root refers
  // to are moved, not copied.
  Value TakeValue(const HloInstruction* root);
  Literal TakeResult(const HloInstruction* root) { return Materialize(TakeValue(root)); }
  // Drops every value; the table keeps its memory for the next run.
  void Clear() { values_.clear(); }

 private:
  absl::flat_hash_map<const HloInstruction*, Value> values_;
};

}  // namespace kiln::kernel_plan
