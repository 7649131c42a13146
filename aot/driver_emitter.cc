// NAME_run: bookkeeping resolved at compile time, kernels called through their buffer
// tables, GEMM steps, control flow as branches and loops, results copied where no step wrote
// them in place.
#include "aot/driver_emitter.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "aot/gemm_emitter.h"
#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "llvm/IR/Constants.h"

namespace kiln::cpu::aot {

namespace {

int64_t RoundUp(int64_t n) { return (n + kAotAlign - 1) / kAotAlign * kAotAlign; }

void Flatten(const Node& n, std::vector<Place>& out) {
  if (n.place) {
    out.push_back(*n.place);
    return;
  }
  for (const Node& e : n.elements) Flatten(e, out);
}

// Which (kernel or library step, output) writes each result directly: the first result leaf
// a step's output reaches through tuples and get-tuple-elements. Other result leaves
// (arguments, constants, a value returned twice) are copied at the end.
absl::flat_hash_map<Def, int64_t> ClaimResults(const kernel_plan::Plan& plan) {
  // Symbolic values: leaves name the step output (or parameter/constant) that defines them.
  struct Sym {
    std::optional<Def> def;
    std::vector<Sym> elements;
  };
  absl::flat_hash_map<const HloInstruction*, Sym> syms;
  for (const kernel_plan::Step& step : plan.steps) {
    const HloInstruction* h = step.instr;
    Sym s;
    if (step.kind == kernel_plan::Disposition::kInlined) continue;
    if (h->opcode() == HloOpcode::kTuple && step.kind == kernel_plan::Disposition::kBookkeeping) {
      for (const HloInstruction* o : h->operands()) s.elements.push_back(syms.at(o));
    } else if (h->opcode() == HloOpcode::kGetTupleElement &&
               step.kind == kernel_plan::Disposition::kBookkeeping) {
      s = syms.at(h->operand(0)).elements.at(h->tuple_index());
    } else if (h->shape().IsTuple()) {
      for (int i = 0; i < h->shape().tuple_size(); ++i) s.elements.push_back(Sym{Def{h, i}, {}});
    } else {
      s.def = Def{h, 0};
    }
    syms[h] = std::move(s);
  }
  std::vector<Def> leaves;
  // Depth-first, left to right: the order of FlattenShape.
  std::function<void(const Sym&)> walk = [&](const Sym& s) {
    if (s.def) {
      leaves.push_back(*s.def);
      return;
    }
    for (const Sym& e : s.elements) walk(e);
  };
  walk(syms.at(plan.computation->root()));
  absl::flat_hash_map<Def, int64_t> claims;
  for (int64_t j = 0; j < static_cast<int64_t>(leaves.size()); ++j) {
    const HloOpcode op = leaves[j].first->opcode();
    if (op == HloOpcode::kParameter || op == HloOpcode::kConstant) continue;
    claims.emplace(leaves[j], j);
  }
  return claims;
}

}  // namespace

llvm::Value* DriverEmitter::Pointer(const Place& p) {
  switch (p.kind) {
    case Place::kConstant:
      return constants_[p.index];
    case Place::kTemp:
      return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), run_->getArg(2), p.index);
    case Place::kArg:
    case Place::kResult: {
      auto key = std::make_pair(static_cast<int>(p.kind), p.index);
      auto it = loaded_.find(key);
      if (it != loaded_.end()) return it->second;
      // Loaded once, in the entry block, so every later block sees it.
      llvm::IRBuilder<> entry(&run_->getEntryBlock(), run_->getEntryBlock().begin());
      llvm::Value* base = run_->getArg(p.kind == Place::kArg ? 0 : 1);
      llvm::Value* slot = entry.CreateConstInBoundsGEP1_64(entry.getPtrTy(), base, p.index);
      llvm::Value* ptr = entry.CreateLoad(entry.getPtrTy(), slot);
      loaded_[key] = ptr;
      return ptr;
    }
  }
  return nullptr;
}

Place DriverEmitter::OutputPlace(const kernel_plan::Step& step, int o, int64_t bytes) {
  if (auto it = claims_.find(Def{step.instr, o}); it != claims_.end())
    return Place{Place::kResult, it->second, false};
  if (step.instr->shape().IsArray()) {
    if (const int64_t off = arena_.OffsetOf(step.instr); off >= 0)
      return Place{Place::kTemp, off, true};
  }
  return NewTemp(bytes);
}

absl::Status DriverEmitter::EmitConstant(const HloInstruction& h, AotArtifact& out) {
  absl::StatusOr<const Literal*> value = kernel_plan::ConstantValue(h);
  if (!value.ok()) return value.status();
  const Literal& lit = **value;
  static const uint8_t kZero = 0;  // an empty array still gets a byte, so it has an address
  llvm::ArrayRef<uint8_t> bytes =
      lit.size_bytes() > 0
          ? llvm::ArrayRef<uint8_t>(lit.untyped_data(), static_cast<size_t>(lit.size_bytes()))
          : llvm::ArrayRef<uint8_t>(&kZero, 1);
  llvm::Constant* init = llvm::ConstantDataArray::get(ctx_, bytes);
  auto* g = new llvm::GlobalVariable(m_, init->getType(), /*isConstant=*/true,
                                     llvm::GlobalValue::PrivateLinkage, init,
                                     absl::StrCat(options_.name, ".constant.", h.name()));
  g->setAlignment(llvm::Align(kAotAlign));
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  out.constant_bytes += lit.size_bytes();
  values_[&h].place = Place{Place::kConstant, static_cast<int64_t>(constants_.size()), false};
  constants_.push_back(g);
  return absl::OkStatus();
}

void DriverEmitter::EmitKernelCall(const kernel_plan::Step& step, llvm::Function* fn) {
  const llvm_emit::KernelSpec& spec = plan_.kernels[step.kernel];
  Node result;
  std::vector<llvm::Value*> outs;
  for (int o = 0; o < static_cast<int>(spec.outputs.size()); ++o) {
    const int64_t bytes = spec.outputs[o]->shape().byte_size();
    Place p;
    if (step.in_place_source >= 0) {
      // The kernel writes only the update into a buffer that holds the operand already: the
      // operand's own slot when nothing else can see it any more, else a copy.
      const HloInstruction* operand = step.sources[step.in_place_source];
      const Place from = *values_.at(operand).place;
      const HloOpcode op = operand->opcode();
      const bool private_value = op != HloOpcode::kGetTupleElement && op != HloOpcode::kTuple &&
                                 op != HloOpcode::kParameter && op != HloOpcode::kConstant &&
                                 operand->users().size() == 1 && step.IsLastUse(operand);
      // Not an arena slot: the buffer assignment may give it to another value after this step.
      const bool own_slot = from.kind == Place::kTemp && !from.arena;
      const bool placed = claims_.contains(Def{step.instr, o}) || arena_.OffsetOf(step.instr) >= 0;
      const bool state_update = state_updates_.contains(step.instr) && step.IsLastUse(operand);
      p = state_update || (!placed && own_slot && private_value) ? from
                                                                 : OutputPlace(step, o, bytes);
      if (!(p == from))
        b_.CreateMemCpy(Pointer(p), llvm::MaybeAlign(16), Pointer(from), llvm::MaybeAlign(16),
                        bytes);
    } else {
      p = OutputPlace(step, o, bytes);
    }
    outs.push_back(Pointer(p));
    if (step.instr->shape().IsArray())
      result.place = p;
    else
      result.elements.push_back(Node{p, {}});
  }
  int slot = 0;
  auto store = [&](llvm::Value* v) {
    b_.CreateStore(v, b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), table_, slot++));
  };
  for (size_t s = 0; s < step.sources.size(); ++s) {
    store(static_cast<int>(s) == step.in_place_source
              ? outs[0]
              : Pointer(*values_.at(step.sources[s]).place));
  }
  for (llvm::Value* v : outs) store(v);
  // A two-stage reduction: the parts into `partials` (parallel), then the combining call.
  const int64_t extent = step.reduce_parts > 0 ? step.reduce_parts : step.outer_extent;
  if (step.reduce_parts > 0) {
    const Shape partials = llvm_emit::PartialsShape(spec);
    store(Pointer(NewTemp(partials.dimensions(0) * ByteSizeOf(partials.element_type()))));
  }
  if (options_.parallel && extent >= 2 &&
      step.work >= kernel_plan::PlanOptions().parallel_min_work) {
    llvm::Type* ptr = b_.getPtrTy();
    llvm::FunctionCallee parallel_for = m_.getOrInsertFunction(
        "kiln_aot_parallel_for",
        llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, b_.getInt64Ty()}, false));
    b_.CreateCall(parallel_for, {fn, table_, b_.getInt64(extent)});
  } else {
    b_.CreateCall(fn, {table_, b_.getInt64(0), b_.getInt64(extent)});
  }
  if (step.reduce_parts > 0)
    b_.CreateCall(fn, {table_, b_.getInt64(extent), b_.getInt64(extent + 1)});
  values_[step.instr] = std::move(result);
}

void DriverEmitter::EmitGemm(const kernel_plan::Step& step, AotArtifact& out) {
  ++out.gemm_steps;
  Place p = OutputPlace(step, 0, step.instr->shape().byte_size());
  const kernel_plan::GemmShape& g = *step.gemm;
  // Waking the pool costs more than a small GEMM takes (the stacked LSTM's 64x240x60 ones
  // ran 25% slower split): only large ones are split.
  constexpr int64_t kParallelGemmMinMnk = int64_t{1} << 22;
  const bool parallel = options_.parallel && options_.gemm == AotGemm::kEmitted &&
                        g.m * g.n * g.k >= kParallelGemmMinMnk;
  EmitGemmBatch(
      b_, m_, options_.gemm, options_.name, g, Pointer(*values_.at(step.sources[0]).place),
      Pointer(*values_.at(step.sources[1]).place), Pointer(p), parallel ? table_ : nullptr);
  values_[step.instr].place = p;
}

absl::StatusOr<Node> DriverEmitter::EmitComputation(const kernel_plan::ComputationPlan& p,
                                                    std::vector<Node> params, AotArtifact& out) {
  for (const kernel_plan::Step& step : p.steps) {
    const HloInstruction& h = *step.instr;
    switch (step.kind) {
      case kernel_plan::Disposition::kBookkeeping:
        if (h.opcode() == HloOpcode::kParameter) {
          values_[&h] = params.at(h.parameter_number());
        } else if (h.opcode() == HloOpcode::kConstant) {
          if (absl::Status st = EmitConstant(h, out); !st.ok()) return st;
        } else if (h.opcode() == HloOpcode::kGetTupleElement) {
          Node n = values_.at(h.operand(0)).elements.at(h.tuple_index());
          values_[&h] = std::move(n);
        } else {
          Node t;
          for (const HloInstruction* o : h.operands()) t.elements.push_back(values_.at(o));
          values_[&h] = std::move(t);
        }
        break;
      case kernel_plan::Disposition::kKernel: {
        llvm::Function* fn = m_.getFunction((*kernel_names_)[step.kernel]);
        if (fn == nullptr)
          return absl::InternalError(absl::StrCat("AOT: kernel ", (*kernel_names_)[step.kernel],
                                                  " of %", h.name(), " was not emitted"));
        EmitKernelCall(step, fn);
        break;
      }
      case kernel_plan::Disposition::kLibrary:
        EmitGemm(step, out);
        break;
      case kernel_plan::Disposition::kControlFlow:
        if (absl::Status st = EmitControlFlow(step, out); !st.ok()) return st;
        break;
      default:
        break;  // kInlined; CheckSteps refused the rest
    }
  }
  return values_.at(p.computation->root());
}

Node DriverEmitter::NewNode(const Shape& shape) {
  if (!shape.IsTuple()) return Node{NewTemp(shape.byte_size()), {}};
  Node n;
  for (const Shape& s : shape.tuple_shapes()) n.elements.push_back(NewNode(s));
  return n;
}

void DriverEmitter::CopyNode(const Node& to, const Node& from, const Shape& shape) {
  std::vector<Place> dst, src;
  Flatten(to, dst);
  Flatten(from, src);
  std::vector<Shape> leaves = FlattenShape(shape);
  for (size_t k = 0; k < dst.size(); ++k) {
    if (dst[k] == src[k]) continue;
    b_.CreateMemCpy(Pointer(dst[k]), llvm::MaybeAlign(16), Pointer(src[k]), llvm::MaybeAlign(16),
                    leaves[k].byte_size());
  }
}

// The body steps that may update a state element in place: a kernel with an in-place
// dynamic-update-slice whose operand is the state's element k, read by nothing else (one
// get-tuple-element of index k, the parameter used only through get-tuple-elements), and
// whose result is the body's element k. Its output is then the state slot itself.
void DriverEmitter::MarkStateUpdates(const kernel_plan::ComputationPlan& body) {
  const HloComputation& comp = *body.computation;
  const HloInstruction* param = comp.parameter(0);
  const HloInstruction* root = comp.root();
  if (root->opcode() != HloOpcode::kTuple) return;
  absl::flat_hash_map<int64_t, int> readers;
  for (const HloInstruction* u : param->users()) {
    if (u->opcode() != HloOpcode::kGetTupleElement) return;
    ++readers[u->tuple_index()];
  }
  for (const kernel_plan::Step& step : body.steps) {
    if (step.kind != kernel_plan::Disposition::kKernel || step.in_place_source < 0) continue;
    const HloInstruction* operand = step.sources[step.in_place_source];
    if (operand->opcode() != HloOpcode::kGetTupleElement || operand->operand(0) != param ||
        operand->users().size() != 1 || readers[operand->tuple_index()] != 1)
      continue;
    const int64_t k = operand->tuple_index();
    if (k < root->operand_count() && root->operand(k) == step.instr)
      state_updates_.insert(step.instr);
  }
}

absl::Status DriverEmitter::EmitControlFlow(const kernel_plan::Step& step, AotArtifact& out) {
  const HloInstruction& h = *step.instr;
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  if (h.opcode() == HloOpcode::kWhile) {
    const kernel_plan::ComputationPlan& cond = plan_.called[step.called[0]];
    const kernel_plan::ComputationPlan& body = plan_.called[step.called[1]];
    // The state lives in slots of its own; the body's results are copied back into them,
    // except what it returns unchanged and what it updated there in place.
    Node state = NewNode(h.shape());
    CopyNode(state, values_.at(h.operand(0)), h.shape());
    MarkStateUpdates(body);
    llvm::BasicBlock* test = llvm::BasicBlock::Create(ctx_, h.name() + ".cond", f);
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, h.name() + ".body", f);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, h.name() + ".done", f);
    b_.CreateBr(test);
    b_.SetInsertPoint(test);
    absl::StatusOr<Node> go = EmitComputation(cond, {state}, out);
    if (!go.ok()) return go.status();
    llvm::Value* flag = b_.CreateLoad(b_.getInt8Ty(), Pointer(*go->place));
    b_.CreateCondBr(b_.CreateICmpNE(flag, b_.getInt8(0)), loop, done);
    b_.SetInsertPoint(loop);
    absl::StatusOr<Node> next = EmitComputation(body, {state}, out);
    if (!next.ok()) return next.status();
    // Elements the body moved from one state slot to another go through a staging copy, so
    // none is overwritten before it is read.
    std::vector<Place> to, from;
    Flatten(state, to);
    Flatten(*next, from);
    std::vector<Shape> leaves = FlattenShape(h.shape());
    std::vector<std::pair<size_t, Place>> staged;
    for (size_t k = 0; k < to.size(); ++k) {
      if (from[k] == to[k]) continue;
      if (std::find(to.begin(), to.end(), from[k]) != to.end()) {
        Place stage = NewTemp(leaves[k].byte_size());
        b_.CreateMemCpy(Pointer(stage), llvm::MaybeAlign(16), Pointer(from[k]),
                        llvm::MaybeAlign(16), leaves[k].byte_size());
        staged.emplace_back(k, stage);
      }
    }
    for (size_t k = 0; k < to.size(); ++k) {
      if (from[k] == to[k] || std::find(to.begin(), to.end(), from[k]) != to.end()) continue;
      b_.CreateMemCpy(Pointer(to[k]), llvm::MaybeAlign(16), Pointer(from[k]), llvm::MaybeAlign(16),
                      leaves[k].byte_size());
    }
    for (const auto& [k, stage] : staged)
      b_.CreateMemCpy(Pointer(to[k]), llvm::MaybeAlign(16), Pointer(stage), llvm::MaybeAlign(16),
                      leaves[k].byte_size());
    b_.CreateBr(test);
    b_.SetInsertPoint(done);
    values_[&h] = std::move(state);
    return absl::OkStatus();
  }
  // A conditional: its selector picks the branch (pred true -> 0, false -> 1; an index out
  // of range -> the last branch), whose result is copied into slots of the conditional's own.
  if (h.opcode() != HloOpcode::kConditional)
    return absl::UnimplementedError(absl::StrCat("cannot compile %", h.name(),
                                                 " ahead of time: calls must be inlined first "
                                                 "(the call-inliner pass)"));
  Node result = NewNode(h.shape());
  const int64_t branches = static_cast<int64_t>(step.called.size());
  const HloInstruction* selector = h.operand(0);
  llvm::Value* index;
  if (selector->shape().element_type() == PrimitiveType::PRED) {
    llvm::Value* v = b_.CreateLoad(b_.getInt8Ty(), Pointer(*values_.at(selector).place));
    index = b_.CreateSelect(b_.CreateICmpNE(v, b_.getInt8(0)), b_.getInt32(0), b_.getInt32(1));
  } else {
    llvm::Value* v = b_.CreateLoad(b_.getInt32Ty(), Pointer(*values_.at(selector).place));
    llvm::Value* inside = b_.CreateAnd(b_.CreateICmpSGE(v, b_.getInt32(0)),
                                       b_.CreateICmpSLT(v, b_.getInt32(branches)));
    index = b_.CreateSelect(inside, v, b_.getInt32(static_cast<int32_t>(branches - 1)));
  }
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, h.name() + ".done", f);
  llvm::SwitchInst* sw = b_.CreateSwitch(index, done, static_cast<unsigned>(branches));
  for (int64_t i = 0; i < branches; ++i) {
    llvm::BasicBlock* block =
        llvm::BasicBlock::Create(ctx_, absl::StrCat(h.name(), ".branch", i), f);
    sw->addCase(b_.getInt32(static_cast<int32_t>(i)), block);
    b_.SetInsertPoint(block);
    absl::StatusOr<Node> r =
        EmitComputation(plan_.called[step.called[i]], {values_.at(h.operand(i + 1))}, out);
    if (!r.ok()) return r.status();
    CopyNode(result, *r, h.shape());
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
  values_[&h] = std::move(result);
  return absl::OkStatus();
}

absl::Status DriverEmitter::Emit(const std::vector<std::string>& kernel_names, AotArtifact& out) {
  claims_ = ClaimResults(plan_);
  extra_end_ = RoundUp(arena_.size);
  llvm::Type* ptr = b_.getPtrTy();
  run_ = llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr, ptr}, false),
                                llvm::GlobalValue::ExternalLinkage, options_.name + "_run", m_);
  run_->addFnAttr(llvm::Attribute::NoUnwind);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", run_));
  size_t table_size = 3;  // at least A, B and C of a parallel GEMM
  for (const llvm_emit::KernelSpec& spec : plan_.kernels)
    table_size = std::max(table_size, spec.inputs.size() + spec.outputs.size() + 1);
  table_ = b_.CreateAlloca(llvm::ArrayType::get(ptr, table_size), nullptr, "buffers");
  kernel_names_ = &kernel_names;
  std::vector<Node> params;
  for (int i = 0; i < plan_.computation->num_parameters(); ++i)
    params.push_back(Node{Place{Place::kArg, i, false}, {}});
  absl::StatusOr<Node> root = EmitComputation(plan_, std::move(params), out);
  if (!root.ok()) return root.status();
  // Results the steps did not write in place are copied into the caller's buffers.
  std::vector<Place> leaves;
  Flatten(*root, leaves);
  std::vector<Shape> shapes = FlattenShape(plan_.computation->root()->shape());
  for (size_t j = 0; j < leaves.size(); ++j) {
    Place dst{Place::kResult, static_cast<int64_t>(j), false};
    if (leaves[j] == dst) continue;
    b_.CreateMemCpy(Pointer(dst), llvm::MaybeAlign(1), Pointer(leaves[j]), llvm::MaybeAlign(1),
                    shapes[j].byte_size());
  }
  b_.CreateRet(b_.getInt32(0));
  // The arena, then the slots of their own after it: every size a multiple of 64.
  out.temp_bytes = extra_end_;

  // NAME_run_simple: NAME_run with its own temporary memory.
  llvm::Function* simple =
      llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false),
                             llvm::GlobalValue::ExternalLinkage, options_.name + "_run_simple", m_);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", simple));
  if (out.temp_bytes == 0) {
    b_.CreateRet(b_.CreateCall(run_, {simple->getArg(0), simple->getArg(1),
                                      llvm::ConstantPointerNull::get(b_.getPtrTy())}));
    return absl::OkStatus();
  }
  llvm::FunctionCallee alloc = m_.getOrInsertFunction(
      "aligned_alloc", llvm::FunctionType::get(ptr, {b_.getInt64Ty(), b_.getInt64Ty()}, false));
  llvm::FunctionCallee release =
      m_.getOrInsertFunction("free", llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
  llvm::Value* temp = b_.CreateCall(alloc, {b_.getInt64(kAotAlign), b_.getInt64(out.temp_bytes)});
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "ok", simple);
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "no_memory", simple);
  b_.CreateCondBr(b_.CreateIsNull(temp), fail, ok);
  b_.SetInsertPoint(fail);
  b_.CreateRet(b_.getInt32(1));
  b_.SetInsertPoint(ok);
  llvm::Value* rc = b_.CreateCall(run_, {simple->getArg(0), simple->getArg(1), temp});
  b_.CreateCall(release, {temp});
  b_.CreateRet(rc);
  return absl::OkStatus();
}

}  // namespace kiln::cpu::aot
