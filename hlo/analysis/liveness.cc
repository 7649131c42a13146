// Value definition, aliasing through tuples/get-tuple-element/bitcast, and live ranges.
#include "hlo/analysis/liveness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln {

std::string BufferValue::ToString() const {
  return absl::StrCat(defining->name(), "{", absl::StrJoin(index, ","), "}");
}

void ValueTree::Flatten(std::vector<int64_t>* out) const {
  if (value >= 0) out->push_back(value);
  for (const ValueTree& c : children) c.Flatten(out);
}

namespace {

constexpr int64_t kPointerBytes = 8;

}  // namespace

Liveness Liveness::Compute(const HloComputation& comp, const SequentialSchedule& schedule) {
  Liveness l;
  l.schedule_ = &schedule;
  const int64_t end = schedule.size();

  // Defines fresh values for every node of `shape`.
  auto define = [&](const HloInstruction* instr, const Shape& shape, std::vector<int64_t> index,
                    int64_t t, auto&& self) -> ValueTree {
    ValueTree tree;
    BufferValue v;
    v.id = static_cast<int64_t>(l.values_.size());
    v.defining = instr;
    v.index = index;
    v.is_parameter = instr->opcode() == HloOpcode::kParameter;
    v.is_constant = instr->opcode() == HloOpcode::kConstant;
    // Parameters exist before the first step, wherever the schedule lists them.
    v.def_time = v.last_use = v.is_parameter ? 0 : t;
    if (shape.IsTuple()) {
      v.is_tuple_table = true;
      v.size = kPointerBytes * shape.tuple_size();
    } else {
      v.size = shape.IsArray() ? shape.byte_size() : 0;
    }
    tree.value = v.id;
    l.values_.push_back(std::move(v));
    for (int i = 0; i < shape.tuple_size(); ++i) {
      std::vector<int64_t> sub = index;
      sub.push_back(i);
      tree.children.push_back(self(instr, shape.tuple_shapes(i), sub, t, self));
    }
    return tree;
  };
  auto use = [&](const ValueTree& tree, int64_t t) {
    std::vector<int64_t> ids;
    tree.Flatten(&ids);
    for (int64_t id : ids) l.values_[id].last_use = std::max(l.values_[id].last_use, t);
  };

  for (int64_t t = 0; t < end; ++t) {
    const HloInstruction* instr = schedule.sequence()[t];
    switch (instr->opcode()) {
      case HloOpcode::kGetTupleElement: {
        const ValueTree& op = l.trees_.at(instr->operand(0));
        if (op.value >= 0) l.values_[op.value].last_use = std::max(l.values_[op.value].last_use, t);
        l.trees_[instr] = op.children.at(static_cast<size_t>(instr->tuple_index()));
        break;
      }
      case HloOpcode::kBitcast:
        l.trees_[instr] = l.trees_.at(instr->operand(0));
        break;
      case HloOpcode::kTuple: {
        ValueTree tree = define(instr, Shape::Tuple({}), {}, t, define);
        l.values_[tree.value].size = kPointerBytes * instr->operand_count();
        for (const HloInstruction* o : instr->operands()) tree.children.push_back(l.trees_.at(o));
        l.trees_[instr] = std::move(tree);
        break;
      }
      default:
        for (const HloInstruction* o : instr->operands()) use(l.trees_.at(o), t);
        l.trees_[instr] = define(instr, instr->shape(), {}, t, define);
        break;
    }
  }

  // What the root holds leaves the computation: live to the end.
  if (const HloInstruction* root = comp.root(); root && l.trees_.contains(root)) {
    auto mark = [&](const ValueTree& tree, std::vector<int64_t> index, auto&& self) -> void {
      if (tree.value >= 0) {
        BufferValue& v = l.values_[tree.value];
        v.is_output = true;
        v.output_index = index;
        v.last_use = end;
      }
      for (size_t i = 0; i < tree.children.size(); ++i) {
        std::vector<int64_t> sub = index;
        sub.push_back(static_cast<int64_t>(i));
        self(tree.children[i], sub, self);
      }
    };
    mark(l.trees_.at(root), {}, mark);
  }
  return l;
}

}  // namespace kiln
