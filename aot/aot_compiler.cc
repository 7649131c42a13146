// Ahead-of-time compilation: the plan's entry steps become straight-line calls in NAME_run.
// Every value gets a fixed place when the object is compiled: an argument, a result the
// caller passed, a read-only constant, or an offset in the temporary arena (the buffer
// assignment's layout, plus slots of their own for what the layout leaves out).
#include "aot/aot_compiler.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "aot/aot_header.h"
#include "hlo/computation.h"
#include "hlo/instruction.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/SubtargetFeature.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "plugins/cpu_llvm/cpu_compiler.h"
#include "plugins/cpu_llvm/kernel_signature.h"
#include "plugins/cpu_llvm/llvm_pipeline.h"
#include "plugins/kernel_plan/arena_layout.h"
#include "plugins/kernel_plan/kernel_fusion.h"

namespace kiln::cpu::aot {

namespace {

constexpr int64_t kAlign = 64;
// Dots with batch*m*n*k at least this are emitted as GEMM loop nests (GemmFunction) instead of
// one reduction per output element: the elemental form reads B down its columns.
constexpr int64_t kEmittedGemmMinMnk = int64_t{1} << 12;
int64_t RoundUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Where an array lives while NAME_run runs.
struct Place {
  enum Kind { kArg, kResult, kTemp, kConstant } kind = kTemp;
  int64_t index = 0;   // argument, result or constant number; byte offset for kTemp
  bool arena = false;  // kTemp: placed by the buffer assignment (shared with other values)
  bool operator==(const Place& o) const { return kind == o.kind && index == o.index; }
};

// A value of the entry computation: an array at a place, or a tuple of values.
struct Node {
  std::optional<Place> place;
  std::vector<Node> elements;
};

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
using Def = std::pair<const HloInstruction*, int>;

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

// The first step of one computation AOT cannot compile.
absl::Status CheckPlanSteps(const kernel_plan::ComputationPlan& plan, bool entry) {
  for (const kernel_plan::Step& step : plan.steps) {
    const HloInstruction& h = *step.instr;
    auto refuse = [&](std::string_view why) {
      return absl::UnimplementedError(absl::StrCat("cannot compile %", h.name(), " (",
                                                   std::string(HloOpcodeString(h.opcode())),
                                                   ") ahead of time: ", std::string(why)));
    };
    switch (step.kind) {
      case kernel_plan::Disposition::kEvaluator:
        return refuse(absl::StrCat("the code generator cannot emit it (", step.why,
                                   "), and an AOT artifact has no evaluator to fall back on"));
      case kernel_plan::Disposition::kLibrary:
        if (step.conv || !step.gemm) return refuse("a library call the artifact does not link");
        break;
      case kernel_plan::Disposition::kBookkeeping:
        if (entry && h.opcode() == HloOpcode::kParameter && !h.shape().IsArray())
          return refuse("AOT takes array parameters only (pass the leaves of a tuple one by one)");
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

// The first step AOT cannot compile, in the entry or a computation control flow runs, as an
// error naming it.
absl::Status CheckSteps(const kernel_plan::Plan& plan) {
  if (absl::Status st = CheckPlanSteps(plan, /*entry=*/true); !st.ok()) return st;
  for (const kernel_plan::ComputationPlan& c : plan.called) {
    if (absl::Status st = CheckPlanSteps(c, /*entry=*/false); !st.ok()) return st;
  }
  for (const Shape& leaf : FlattenShape(plan.computation->root()->shape())) {
    if (!leaf.IsArray())
      return absl::UnimplementedError(
          absl::StrCat("cannot compile the entry's result ", plan.computation->root()->name(),
                       " ahead of time: it holds a ", leaf.ToString(false), ", not only arrays"));
  }
  return absl::OkStatus();
}

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const AotOptions& o, std::string* error,
                                                       std::string* description) {
  static std::once_flag init;
  std::call_once(init, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
  const std::string host = llvm::sys::getProcessTriple();
  const std::string triple = o.triple.empty() ? host : llvm::Triple::normalize(o.triple);
  const bool is_host = llvm::Triple(triple).getArch() == llvm::Triple(host).getArch();
  std::string cpu = o.cpu, features = o.features;
  if (cpu.empty()) cpu = is_host ? llvm::sys::getHostCPUName().str() : "generic";
  if (features.empty() && is_host && cpu == llvm::sys::getHostCPUName().str()) {
    llvm::SubtargetFeatures f;
    llvm::StringMap<bool> host_features;
    if (llvm::sys::getHostCPUFeatures(host_features))
      for (auto& e : host_features) f.AddFeature(e.first(), e.second);
    features = f.getString();
  }
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, *error);
  if (target == nullptr) return nullptr;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      o.opt_level >= 3 ? llvm::CodeGenOpt::Aggressive : llvm::CodeGenOpt::Default));
  if (tm == nullptr) *error = absl::StrCat("LLVM cannot create a target machine for ", triple);
  *description = absl::StrCat(triple, " ", cpu);
  return tm;
}

// A counted loop [0, n) around `body` at the builder's insertion point; the builder ends
// after the loop.
void Loop(llvm::IRBuilder<>& b, llvm::Value* n, const std::string& name,
          const std::function<void(llvm::Value*)>& body) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* before = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(b.getContext(), name, f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), name + ".done", f);
  b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), head, done);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name + ".i");
  i->addIncoming(b.getInt64(0), before);
  body(i);
  llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, n), head, done);
  b.SetInsertPoint(done);
}

// void gemm(noalias A, noalias B, noalias C, i64 m, i64 n, i64 k): C[m,n] = op(A) op(B), all
// row-major, as GemmShape describes. With B stored k x n, C's row i is accumulated from the
// rows of B scaled by A[i,p] (unit-stride inner loop the vectorizer turns into FMAs over
// vectors); with B stored transposed, each element is a unit-stride dot product.
llvm::Function* GemmFunction(llvm::Module& m, const std::string& prefix,
                             const kernel_plan::GemmShape& g) {
  const std::string name = absl::StrCat(prefix, ".gemm.", g.f64 ? "f64" : "f32", ".",
                                        g.trans_a ? "T" : "N", g.trans_b ? "T" : "N");
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* elem = g.f64 ? b.getDoubleTy() : b.getFloatTy();
  llvm::Function* f = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr, i64, i64, i64}, false),
      llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < 3; ++i) {
    f->addParamAttr(i, llvm::Attribute::NoAlias);
    f->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  llvm::Value *A = f->getArg(0), *B = f->getArg(1), *C = f->getArg(2);
  llvm::Value *M = f->getArg(3), *N = f->getArg(4), *K = f->getArg(5);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  fmf.setAllowReassoc(true);  // the dot-product form vectorizes its sum
  b.setFastMathFlags(fmf);
  auto load = [&](llvm::Value* base, llvm::Value* index) {
    return b.CreateLoad(elem, b.CreateInBoundsGEP(elem, base, index));
  };
  auto a_at = [&](llvm::Value* i, llvm::Value* p) {  // op(A)[i, p]
    return load(A,
                g.trans_a ? b.CreateAdd(b.CreateMul(p, M), i) : b.CreateAdd(b.CreateMul(i, K), p));
  };
  Loop(b, M, "i", [&](llvm::Value* i) {
    llvm::Value* crow = b.CreateInBoundsGEP(elem, C, b.CreateMul(i, N));
    if (!g.trans_b) {
      Loop(b, N, "zero", [&](llvm::Value* j) {
        b.CreateStore(llvm::ConstantFP::get(elem, 0.0), b.CreateInBoundsGEP(elem, crow, j));
      });
      // Four rows of B per pass over C's row: a quarter of the loads and stores of C.
      constexpr int kUnroll = 4;
      auto accumulate = [&](llvm::Value* p0, int rows) {
        std::vector<llvm::Value*> a, brow;
        for (int r = 0; r < rows; ++r) {
          llvm::Value* p = b.CreateAdd(p0, b.getInt64(r));
          a.push_back(a_at(i, p));
          brow.push_back(b.CreateInBoundsGEP(elem, B, b.CreateMul(p, N)));
        }
        Loop(b, N, "j", [&](llvm::Value* j) {
          llvm::Value* slot = b.CreateInBoundsGEP(elem, crow, j);
          llvm::Value* sum = b.CreateLoad(elem, slot);
          for (int r = 0; r < rows; ++r)
            sum = b.CreateFAdd(sum, b.CreateFMul(a[r], load(brow[r], j)));
          b.CreateStore(sum, slot);
        });
      };
      llvm::Value* quads = b.CreateSDiv(K, b.getInt64(kUnroll));
      Loop(b, quads, "p4",
           [&](llvm::Value* q) { accumulate(b.CreateMul(q, b.getInt64(kUnroll)), kUnroll); });
      llvm::Value* rest_start = b.CreateMul(quads, b.getInt64(kUnroll));
      Loop(b, b.CreateSub(K, rest_start), "p",
           [&](llvm::Value* r) { accumulate(b.CreateAdd(rest_start, r), 1); });
    } else {
      Loop(b, N, "j", [&](llvm::Value* j) {
        llvm::Value* bcol = b.CreateInBoundsGEP(elem, B, b.CreateMul(j, K));
        llvm::AllocaInst* acc = nullptr;
        {
          llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
          acc = entry.CreateAlloca(elem);
        }
        b.CreateStore(llvm::ConstantFP::get(elem, 0.0), acc);
        Loop(b, K, "p", [&](llvm::Value* p) {
          b.CreateStore(
              b.CreateFAdd(b.CreateLoad(elem, acc), b.CreateFMul(a_at(i, p), load(bcol, p))), acc);
        });
        b.CreateStore(b.CreateLoad(elem, acc), b.CreateInBoundsGEP(elem, crow, j));
      });
    }
  });
  b.CreateRetVoid();
  return f;
}

// Emits NAME_run: the steps in the plan's order on fixed places.
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
    extra_end_ += RoundUp(std::max<int64_t>(bytes, 1));
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
  void CallGemm(const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b, llvm::Value* c,
                llvm::Value* i);
  void CallOneDnn(const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b, llvm::Value* c,
                  llvm::Value* i);

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
  g->setAlignment(llvm::Align(kAlign));
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
  b_.CreateCall(fn, {table_, b_.getInt64(0), b_.getInt64(step.outer_extent)});
  values_[step.instr] = std::move(result);
}

void DriverEmitter::CallGemm(const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b,
                             llvm::Value* c, llvm::Value* i) {
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* elem = g.f64 ? b_.getDoubleTy() : b_.getFloatTy();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::FunctionType* ty = llvm::FunctionType::get(
      b_.getVoidTy(), {i32, i32, i32, i32, i32, i32, elem, ptr, i32, ptr, i32, elem, ptr, i32},
      false);
  llvm::FunctionCallee gemm = m_.getOrInsertFunction(g.f64 ? "cblas_dgemm" : "cblas_sgemm", ty);
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n, ldc = g.n;
  auto offset = [&](llvm::Value* base, int64_t per_batch) {
    return b_.CreateInBoundsGEP(elem, base, b_.CreateMul(i, b_.getInt64(per_batch)));
  };
  auto c32 = [&](int64_t v) { return b_.getInt32(static_cast<int32_t>(v)); };
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  b_.CreateCall(
      gemm, {c32(kRowMajor), c32(g.trans_a ? kTrans : kNoTrans), c32(g.trans_b ? kTrans : kNoTrans),
             c32(g.m), c32(g.n), c32(g.k), llvm::ConstantFP::get(elem, 1.0), offset(a, g.m * g.k),
             c32(lda), offset(b, g.k * g.n), c32(ldb), llvm::ConstantFP::get(elem, 0.0),
             offset(c, g.m * g.n), c32(ldc)});
}

// dnnl_sgemm(char transa, char transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc): row-major,
// 64-bit dimensions; its status is ignored (it fails only on bad arguments).
void DriverEmitter::CallOneDnn(const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b,
                               llvm::Value* c, llvm::Value* i) {
  llvm::Type* i8 = b_.getInt8Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::FunctionType* ty = llvm::FunctionType::get(
      b_.getInt32Ty(), {i8, i8, i64, i64, i64, f32, ptr, i64, ptr, i64, f32, ptr, i64}, false);
  llvm::FunctionCallee gemm = m_.getOrInsertFunction("dnnl_sgemm", ty);
  if (auto* f = llvm::dyn_cast<llvm::Function>(gemm.getCallee())) {
    f->addParamAttr(0, llvm::Attribute::SExt);
    f->addParamAttr(1, llvm::Attribute::SExt);
  }
  const int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n, ldc = g.n;
  auto offset = [&](llvm::Value* base, int64_t per_batch) {
    return b_.CreateInBoundsGEP(f32, base, b_.CreateMul(i, b_.getInt64(per_batch)));
  };
  llvm::CallInst* call = b_.CreateCall(
      gemm, {b_.getInt8(g.trans_a ? 'T' : 'N'), b_.getInt8(g.trans_b ? 'T' : 'N'), b_.getInt64(g.m),
             b_.getInt64(g.n), b_.getInt64(g.k), llvm::ConstantFP::get(f32, 1.0),
             offset(a, g.m * g.k), b_.getInt64(lda), offset(b, g.k * g.n), b_.getInt64(ldb),
             llvm::ConstantFP::get(f32, 0.0), offset(c, g.m * g.n), b_.getInt64(ldc)});
  call->addParamAttr(0, llvm::Attribute::SExt);
  call->addParamAttr(1, llvm::Attribute::SExt);
}

void DriverEmitter::EmitGemm(const kernel_plan::Step& step, AotArtifact& out) {
  const kernel_plan::GemmShape& g = *step.gemm;
  ++out.gemm_steps;
  Place p = OutputPlace(step, 0, step.instr->shape().byte_size());
  llvm::Value* a = Pointer(*values_.at(step.sources[0]).place);
  llvm::Value* b = Pointer(*values_.at(step.sources[1]).place);
  llvm::Value* c = Pointer(p);
  // for (i = 0; i < batch; ++i) gemm(batch entry i)
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, "gemm_batch", run_);
  llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "gemm_done", run_);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
  i->addIncoming(b_.getInt64(0), before);
  if (options_.gemm == AotGemm::kOpenBlas) {
    CallGemm(g, a, b, c, i);
  } else if (options_.gemm == AotGemm::kOneDnn) {
    CallOneDnn(g, a, b, c, i);
  } else {
    llvm::Type* elem = g.f64 ? b_.getDoubleTy() : b_.getFloatTy();
    auto entry = [&](llvm::Value* base, int64_t per_batch) {
      return b_.CreateInBoundsGEP(elem, base, b_.CreateMul(i, b_.getInt64(per_batch)));
    };
    b_.CreateCall(GemmFunction(m_, options_.name, g),
                  {entry(a, g.m * g.k), entry(b, g.k * g.n), entry(c, g.m * g.n), b_.getInt64(g.m),
                   b_.getInt64(g.n), b_.getInt64(g.k)});
  }
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(g.batch)), loop, after);
  b_.SetInsertPoint(after);
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
  size_t table_size = 1;
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
  out.temp_bytes = extra_end_ > RoundUp(arena_.size) ? extra_end_ : arena_.size;
  out.temp_bytes = RoundUp(out.temp_bytes);

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
  llvm::Value* temp = b_.CreateCall(alloc, {b_.getInt64(kAlign), b_.getInt64(out.temp_bytes)});
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

}  // namespace

bool IsValidAotName(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

absl::StatusOr<AotArtifact> CompileAot(const HloModule& module, const AotOptions& options) {
  if (!IsValidAotName(options.name))
    return absl::InvalidArgumentError(absl::StrCat(
        "the name '", options.name, "' is not a C identifier ([A-Za-z][A-Za-z0-9_]*)"));
  if (module.entry() == nullptr)
    return absl::InvalidArgumentError("the module has no entry computation");
  // cpu-llvm's planning for one thread: no partitioned loops or split reductions; dots and
  // convolutions emitted unless a BLAS is linked.
  kernel_plan::PlanOptions po = CpuPlanOptions();
  po.parallel_min_work = std::numeric_limits<int64_t>::max();
  po.library_convolutions = false;
  // Large plain dots are GEMM steps either way: OpenBLAS calls, or the loop nest GemmFunction
  // emits (planned as a device GEMM library, which needs no host BLAS in this build).
  if (options.gemm != AotGemm::kOpenBlas) {
    // f32 only: f64 dots stay generated kernels (oneDNN has no dgemm).
    po.blas_min_mnk = std::numeric_limits<int64_t>::max();
    po.device_gemm_min_mnk =
        options.gemm == AotGemm::kEmitted ? kEmittedGemmMinMnk : CpuPlanOptions().blas_min_mnk;
  }
  absl::StatusOr<kernel_plan::Plan> made = kernel_plan::MakeFusedPlan(module, po);
  if (!made.ok()) return made.status();
  const kernel_plan::Plan& plan = *made;
  const HloModule& planned = plan.fused_module ? *plan.fused_module : module;
  if (absl::Status st = CheckSteps(plan); !st.ok()) return st;
  const kernel_plan::ArenaLayout arena = kernel_plan::LayOutArena(planned, plan);

  std::string error;
  AotArtifact out;
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(options, &error, &out.target);
  if (tm == nullptr) return absl::InvalidArgumentError(absl::StrCat("AOT target: ", error));
  llvm::LLVMContext ctx;
  llvm::Module m(options.name, ctx);
  m.setDataLayout(tm->createDataLayout());
  m.setTargetTriple(tm->getTargetTriple().str());
  // Kernels: identical ones (the same fusion layer after layer) are emitted once.
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, std::string> by_signature;
  for (const llvm_emit::KernelSpec& spec : plan.kernels) {
    auto [it, inserted] = by_signature.emplace(KernelSignature(spec), spec.name);
    names.push_back(it->second);
    if (!inserted) continue;
    if (absl::Status st = llvm_emit::EmitKernel(spec, m); !st.ok()) return st;
    ++out.kernels;
  }
  DriverEmitter driver(plan, arena, options, m);
  if (absl::Status st = driver.Emit(names, out); !st.ok()) return st;
  // Only NAME_run and NAME_run_simple are exported: two artifacts link into one program.
  const std::string cpu = std::string(tm->getTargetCPU()),
                    features = std::string(tm->getTargetFeatureString());
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    if (f.getName() != options.name + "_run" && f.getName() != options.name + "_run_simple")
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr("target-cpu", cpu);
    if (!features.empty()) f.addFnAttr("target-features", features);
  }
  std::string broken;
  llvm::raw_string_ostream os(broken);
  if (llvm::verifyModule(m, &os))
    return absl::InternalError(absl::StrCat("AOT produced invalid LLVM IR: ", os.str()));
  JitOptions jit;
  jit.opt_level = options.opt_level;
  // glibc's vector math library is part of libm on x86-64 (-lm links it).
  const bool libmvec = tm->getTargetTriple().getArch() == llvm::Triple::x86_64;
  OptimizeModule(m, *tm, jit, libmvec);
  absl::StatusOr<std::string> object = EmitObjectFile(m, *tm);
  if (!object.ok()) return object.status();
  out.object = *std::move(object);
  for (int i = 0; i < module.entry()->num_parameters(); ++i) {
    const HloInstruction* p = module.entry()->parameter(i);
    out.args.push_back(AotBuffer{p->name(), p->shape()});
  }
  std::vector<Shape> leaves = FlattenShape(module.entry()->root()->shape());
  for (size_t j = 0; j < leaves.size(); ++j)
    out.results.push_back(AotBuffer{absl::StrCat("result", j), leaves[j]});
  out.header = MakeAotHeader(module.name(), options.name, out);
  return out;
}

}  // namespace kiln::cpu::aot
