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
  // Numbers `h` (after its operands), appending its line; returns its id.
  int Visit(const HloInstruction* h) {
    if (auto it = ids_.find(h); it != ids_.end()) return it->second;
    std::vector<int> ops;
    for (const HloInstruction* o : h->operands()) ops.push_back(Visit(o));
    std::string line =
        absl::StrCat(h->shape().ToString(true), " ", std::string(HloOpcodeString(h->opcode())), "(");
    for (int o : ops) absl::StrAppend(&line, o, ",");
    line += ")";
    if (h->opcode() == HloOpcode::kParameter) absl::StrAppend(&line, " param ", h->parameter_number());
    if (h->opcode() == HloOpcode::kConstant && h->attrs().literal && !h->literal().IsTuple()) {
      const Literal& l = h->literal();
      line += " bytes=";
      line.append(reinterpret_cast<const char*>(l.untyped_data()), l.size_bytes());
    }
    hlo_text::AppendTypedAttributes(*h, &line);
    if (h->opcode() != HloOpcode::kFusion) {  // a fusion's computation is the kernel itself
      for (const HloComputation* c : h->called_computations())
        absl::StrAppend(&line, " calls{", c ? ComputationSignature(*c) : std::string("null"), "}");
    }
    return Add(h, std::move(line));
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
                  spec.partition_outer, "\n");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    s.Add(spec.inputs[i], absl::StrCat("input ", i, " ", spec.inputs[i]->shape().ToString(true)));
  std::vector<int> outs;
  for (const HloInstruction* o : spec.outputs) outs.push_back(s.Visit(o));
  s.out() += "outputs";
  for (int o : outs) absl::StrAppend(&s.out(), " ", o);
  return s.out();
}

}  // namespace kiln::cpu
