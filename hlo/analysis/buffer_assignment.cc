// Buffer assignment: aliasing, in-place reuse, best-fit reuse of dead allocations, stats.
#include "hlo/analysis/buffer_assignment.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln {

namespace {

// A tiny cursor over the alias attribute text.
class AliasText {
 public:
  explicit AliasText(std::string_view s) : s_(s) {}
  void Skip() {
    while (i_ < s_.size() && (std::isspace(static_cast<unsigned char>(s_[i_])) || s_[i_] == ','))
      ++i_;
  }
  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Skip();
    return i_ >= s_.size();
  }
  bool Int(int64_t* v) {
    Skip();
    size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (start == i_) return false;
    *v = std::stoll(std::string(s_.substr(start, i_ - start)));
    return true;
  }
  bool Index(std::vector<int64_t>* out) {
    if (!Eat('{')) return false;
    int64_t v;
    while (Int(&v)) out->push_back(v);
    return Eat('}');
  }
  std::string Word() {
    Skip();
    size_t start = i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == '_'))
      ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  size_t pos() const { return i_; }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

bool IsSmallConstant(const HloInstruction& i) {
  return i.opcode() == HloOpcode::kConstant && i.shape().IsArray() && i.shape().num_elements() <= 1;
}

// Operands whose buffer the instruction may overwrite with its result.
std::vector<int> InPlaceCandidates(const HloInstruction& instr) {
  std::vector<int> out;
  if (!instr.shape().IsArray()) return out;
  if (instr.opcode() == HloOpcode::kDynamicUpdateSlice) return {0};
  if (IsElementwiseOpcode(instr.opcode())) {
    for (int i = 0; i < instr.operand_count(); ++i) out.push_back(i);
    return out;
  }
  if (instr.opcode() != HloOpcode::kFusion || instr.attrs().fusion_kind != FusionKind::kLoop)
    return out;
  const HloComputation* body = instr.fused_computation();
  const HloInstruction* root = body->root();
  if (root->opcode() == HloOpcode::kDynamicUpdateSlice &&
      root->operand(0)->opcode() == HloOpcode::kParameter)
    return {static_cast<int>(root->operand(0)->parameter_number())};
  for (const HloInstruction* x : body->instructions()) {
    HloOpcode op = x->opcode();
    if (op == HloOpcode::kParameter || IsSmallConstant(*x) || IsElementwiseOpcode(op)) continue;
    if (op == HloOpcode::kBroadcast && x->operand(0)->shape().num_elements() <= 1) continue;
    return out;
  }
  for (int i = 0; i < instr.operand_count(); ++i) {
    const HloInstruction* p = body->parameter(i);
    if (!p || p->shape().dimensions() != instr.shape().dimensions()) continue;
    bool elementwise =
        std::all_of(p->users().begin(), p->users().end(),
                    [](const HloInstruction* u) { return IsElementwiseOpcode(u->opcode()); });
    if (elementwise) out.push_back(i);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<InputOutputAlias>> ParseInputOutputAlias(std::string_view text) {
  std::vector<InputOutputAlias> out;
  AliasText t(text);
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("input_output_alias, column ", t.pos() + 1, ": ",
                                                   std::string(what), " in '", std::string(text),
                                                   "'"));
  };
  if (!t.Eat('{')) return error("expected '{'");
  while (!t.Eat('}')) {
    if (t.AtEnd()) return error("missing '}'");
    InputOutputAlias a;
    if (!t.Index(&a.output_index)) return error("expected an output index like {0}");
    if (!t.Eat(':')) return error("expected ':'");
    if (!t.Eat('(')) return error("expected '('");
    if (!t.Int(&a.parameter_number)) return error("expected a parameter number");
    if (!t.Index(&a.parameter_index)) return error("expected a parameter index like {}");
    if (!t.Eat(')')) {
      std::string kind = t.Word();
      if (kind == "must-alias") {
        a.must_alias = true;
      } else if (kind != "may-alias") {
        return error("expected may-alias or must-alias");
      }
      if (!t.Eat(')')) return error("expected ')'");
    }
    out.push_back(std::move(a));
  }
  return out;
}

absl::StatusOr<BufferAssignment> BufferAssignment::Run(const HloModule& module) {
  if (!module.entry()) return absl::InvalidArgumentError("module has no entry computation");
  std::vector<InputOutputAlias> aliases;
  for (const auto& [name, value] : module.attributes()) {
    if (name != "input_output_alias") continue;
    absl::StatusOr<std::vector<InputOutputAlias>> parsed = ParseInputOutputAlias(value);
    if (!parsed.ok()) return parsed.status();
    aliases = *std::move(parsed);
  }
  return Analyse(*module.entry(), aliases);
}

BufferAssignment BufferAssignment::RunOnComputation(const HloComputation& comp) {
  return Analyse(comp, {});
}

BufferAssignment BufferAssignment::Analyse(const HloComputation& comp,
                                           const std::vector<InputOutputAlias>& aliases) {
  BufferAssignment ba;
  ba.comp_ = &comp;
  ba.schedule_ = std::make_unique<SequentialSchedule>(SequentialSchedule::PostOrder(*ba.comp_));
  ba.liveness_ = Liveness::Compute(*ba.comp_, *ba.schedule_);
  ba.Assign(aliases);
  ba.ComputeStats();
  return ba;
}

void BufferAssignment::Assign(const std::vector<InputOutputAlias>& aliases) {
  const auto& values = liveness_.values();
  allocation_of_.assign(values.size(), -1);
  std::vector<int64_t> free_after;  // per allocation: last step any of its values is live
  auto add_to = [&](int64_t alloc, const BufferValue& v) {
    allocations_[alloc].values.push_back(v.id);
    allocation_of_[v.id] = alloc;
    free_after[alloc] = std::max(free_after[alloc], v.last_use);
    if (v.is_output) allocations_[alloc].maybe_live_out = true;
  };
  auto new_alloc = [&](const BufferValue& v) {
    Allocation a;
    a.index = static_cast<int64_t>(allocations_.size());
    a.size = v.size;
    a.is_parameter = v.is_parameter;
    a.is_constant = v.is_constant;
    if (v.is_parameter) a.parameter_number = v.defining->parameter_number();
    allocations_.push_back(std::move(a));
    free_after.push_back(v.last_use);
    add_to(allocations_.back().index, v);
    return allocations_.back().index;
  };

  for (const BufferValue& v : values) {
    if (v.size == 0) continue;  // tokens, empty arrays: no memory
    if (v.is_parameter || v.is_constant) {
      new_alloc(v);
      continue;
    }
    const int64_t t = v.def_time;
    const HloInstruction* def = v.defining;
    std::vector<int> in_place = v.index.empty() ? InPlaceCandidates(*def) : std::vector<int>{};
    auto dies_here_in_place = [&](int64_t other) {
      for (int i : in_place) {
        const ValueTree& tree = liveness_.TreeOf(def->operand(i));
        if (tree.children.empty() && tree.value == other) return true;
      }
      return false;
    };

    // 1. Output aliased to a parameter.
    if (v.is_output && !v.is_tuple_table) {
      const InputOutputAlias* alias = nullptr;
      for (const InputOutputAlias& a : aliases)
        if (a.output_index == v.output_index) alias = &a;
      if (alias) {
        int64_t pv = -1;
        if (alias->parameter_number < comp_->num_parameters() &&
            comp_->parameter(static_cast<int>(alias->parameter_number))) {
          const ValueTree* tree =
              &liveness_.TreeOf(comp_->parameter(static_cast<int>(alias->parameter_number)));
          for (int64_t k : alias->parameter_index) {
            if (k < 0 || k >= static_cast<int64_t>(tree->children.size())) {
              tree = nullptr;
              break;
            }
            tree = &tree->children[k];
          }
          if (tree) pv = tree->value;
        }
        int64_t pa = pv >= 0 ? allocation_of_[pv] : -1;
        if (pa >= 0 && values[pv].size == v.size &&
            (free_after[pa] < t || (free_after[pa] == t && dies_here_in_place(pv)))) {
          add_to(pa, v);
          ++stats_.aliased_outputs;
          notes_[v.id] = absl::StrCat("aliased to parameter ", alias->parameter_number);
          continue;
        }
        ++stats_.alias_copies_needed;
        notes_[v.id] = absl::StrCat("alias to parameter ", alias->parameter_number,
                                    " needs a copy (parameter still read, or sizes differ)");
      }
    }
    // 2. In place on an operand that dies here.
    bool placed = false;
    for (int i : in_place) {
      const ValueTree& tree = liveness_.TreeOf(def->operand(i));
      if (!tree.children.empty() || tree.value < 0) continue;
      const BufferValue& ov = values[tree.value];
      int64_t a = allocation_of_[ov.id];
      if (a < 0 || ov.is_parameter || ov.is_constant || ov.size != v.size || ov.last_use != t ||
          free_after[a] != t)
        continue;
      add_to(a, v);
      ++stats_.in_place_count;
      notes_[v.id] = absl::StrCat("in place on ", ov.ToString());
      placed = true;
      break;
    }
    if (placed) continue;
    // 3. Best fit among dead allocations.
    int64_t best = -1;
    for (const Allocation& a : allocations_) {
      if (a.is_parameter || a.is_constant || free_after[a.index] >= t || a.size < v.size) continue;
      if (best < 0 || a.size < allocations_[best].size) best = a.index;
    }
    if (best >= 0) {
      add_to(best, v);
      notes_[v.id] = "reuses a dead allocation";
      continue;
    }
    // 4. A new allocation.
    new_alloc(v);
  }
}

void BufferAssignment::ComputeStats() {
  const auto& values = liveness_.values();
  for (const Allocation& a : allocations_) {
    if (a.is_parameter) {
      stats_.parameter_bytes += a.size;
    } else if (a.is_constant) {
      stats_.constant_bytes += a.size;
    } else {
      ++stats_.allocation_count;
      stats_.total_allocation_bytes += a.size;
    }
  }
  std::vector<const BufferValue*> counted;
  for (const BufferValue& v : values) {
    if (v.is_parameter || v.is_constant) continue;
    stats_.sum_intermediate_bytes += v.size;
    int64_t a = allocation_of_[v.id];
    if (a >= 0 && !allocations_[a].is_parameter) counted.push_back(&v);
  }
  // Peak: per step, per allocation, the largest live value (in-place pairs count once).
  std::vector<int64_t> cur(allocations_.size(), 0);
  std::vector<int64_t> touched;
  for (int64_t t = 0; t <= schedule_->size(); ++t) {
    int64_t sum = 0;
    for (const BufferValue* v : counted) {
      if (v->def_time > t || v->last_use < t) continue;
      int64_t a = allocation_of_[v->id];
      if (cur[a] == 0) touched.push_back(a);
      if (v->size > cur[a]) {
        sum += v->size - cur[a];
        cur[a] = v->size;
      }
    }
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, sum);
    for (int64_t a : touched) cur[a] = 0;
    touched.clear();
  }
}

std::string BufferAssignment::ToString() const {
  const auto& values = liveness_.values();
  std::string out = absl::StrCat("BufferAssignment for computation ", comp_->name(), " (",
                                 schedule_->size(), " scheduled instructions)\n");
  for (const Allocation& a : allocations_) {
    std::string kind = a.is_parameter  ? absl::StrCat("parameter ", a.parameter_number)
                       : a.is_constant ? "constant"
                                       : "temp";
    absl::StrAppend(&out, "allocation ", a.index, ": ", a.size, " bytes, ", kind,
                    a.maybe_live_out ? ", maybe-live-out" : "", "\n");
    for (int64_t id : a.values) {
      const BufferValue& v = values[id];
      absl::StrAppend(&out, "  ", v.ToString(), " ", v.size, "B live [", v.def_time, ",",
                      v.last_use, "]", v.is_tuple_table ? " tuple-table" : "",
                      v.is_output ? " output" : "");
      if (auto it = notes_.find(id); it != notes_.end())
        absl::StrAppend(&out, " (", it->second, ")");
      out += "\n";
    }
  }
  const BufferStats& s = stats_;
  absl::StrAppend(&out, "allocations: ", s.allocation_count,
                  "\ntotal_allocation_bytes: ", s.total_allocation_bytes,
                  "\npeak_live_bytes: ", s.peak_live_bytes,
                  "\nsum_intermediate_bytes: ", s.sum_intermediate_bytes,
                  "\nparameter_bytes: ", s.parameter_bytes, "\nconstant_bytes: ", s.constant_bytes,
                  "\nin_place: ", s.in_place_count, "\naliased_outputs: ", s.aliased_outputs,
                  "\nalias_copies_needed: ", s.alias_copies_needed, "\n");
  return out;
}

}  // namespace kiln
