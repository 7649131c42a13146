// Kernel signatures: each instruction as one line of local ids, shape, opcode and attributes.
#include "plugins/cpu_llvm/kernel_signature.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hlo/computation.h"
#include "hlo/text/attribute_text.h"

namespace kiln::cpu {

namespace {

class Signer {
 public:
  // Numbers `h` (after its operands), appending its line; returns its id. Walks the operands
  // with an explicit stack: a chain of 100,000 instructions must not overflow the C++ stack.
  int Visit(const HloInstruction* start) {
    if (auto it = ids_.find(start); it != ids_.end()) return it->second;
    std::vector<std::pair<const HloInstruction*, size_t>> stack{{start, 0}};
    while (!stack.empty()) {
      auto& [h, next] = stack.back();
      if (next < h->operands().size()) {
        const HloInstruction* o = h->operand(static_cast<int>(next++));
        if (!ids_.contains(o)) stack.push_back({o, 0});
        continue;
      }
      if (!ids_.contains(h)) Add(h, Line(*h));
      stack.pop_back();
    }
    return ids_.at(start);
  }

  // `h`'s line; its operands are numbered already.
  std::string Line(const HloInstruction& h) {
    std::string line =
        absl::StrCat(h.shape().ToString(true), " ", std::string(HloOpcodeString(h.opcode())), "(");
    for (const HloInstruction* o : h.operands()) absl::StrAppend(&line, ids_.at(o), ",");
    line += ")";
    if (h.opcode() == HloOpcode::kParameter)
      absl::StrAppend(&line, " param ", h.parameter_number());
    if (h.opcode() == HloOpcode::kConstant && h.attrs().literal && !h.literal().IsTuple()) {
      const Literal& l = h.literal();
      line += " bytes=";
      line.append(reinterpret_cast<const char*>(l.untyped_data()), l.size_bytes());
    }
    hlo_text::AppendTypedAttributes(h, &line);
    if (h.opcode() != HloOpcode::kFusion) {  // a fusion's computation is the kernel itself
      for (const HloComputation* c : h.called_computations())
        absl::StrAppend(&line, " calls{", c ? ComputationSignature(*c) : std::string("null"), "}");
    }
    return line;
  }

  int Add(const HloInstruction* h, std::string line) {
    int id = static_cast<int>(ids_.size());
    ids_[h] = id;
    absl::StrAppend(&out_, id, ": ", line.size(), ":", line, "\n");
    return id;
  }
  std::string& out() { return out_; }

  static std::string ComputationSignature(const HloComputation& c) {
    Signer s;
    for (const HloInstruction* i : c.MakeInstructionPostOrder()) s.Visit(i);
    if (c.root() != nullptr) absl::StrAppend(&s.out(), "root ", s.Visit(c.root()));
    return s.out();
  }

 private:
  absl::flat_hash_map<const HloInstruction*, int> ids_;
  std::string out_;
};

}  // namespace

std::string KernelSignature(const llvm_emit::KernelSpec& spec) {
  Signer s;
  absl::StrAppend(&s.out(), "target ", static_cast<int>(spec.target), " partition ",
                  spec.partition_outer, " columns ", spec.accumulate_columns, " parts ",
                  spec.reduce_parts, "\n");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    s.Add(spec.inputs[i], absl::StrCat("input ", i, " ", spec.inputs[i]->shape().ToString(true)));
  if (spec.sort != nullptr)  // a comparator entry point: the comparator is the kernel
    absl::StrAppend(&s.out(), "sort comparator{",
                    Signer::ComputationSignature(*spec.sort->to_apply()), "}\n");
  std::vector<int> outs;
  for (const HloInstruction* o : spec.outputs) outs.push_back(s.Visit(o));
  s.out() += "outputs";
  for (int o : outs) absl::StrAppend(&s.out(), " ", o);
  return s.out();
}

}  // namespace kiln::cpu
