// The GPU forms of a kernel (gpu_layout.h): one thread per element, a block per row with
// the row's statistics combined across the block (warp shuffles, shared memory), and the two
// stages of split reductions; plus the PTX kernel entry.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "plugins/llvm_emitter/kernel_emitter.h"

namespace kiln::llvm_emit::detail {

absl::Status KernelEmitter::EmitGpu() {
  layout_ = AnalyzeGpuKernel(spec_);
  size_t n = spec_.inputs.size() + spec_.outputs.size();
  if (layout_.kind == GpuLayout::Kind::kSplitReduce ||
      layout_.kind == GpuLayout::Kind::kSplitColumns) {
    // Both stages take the partials buffer after the output.
    const bool columns = layout_.kind == GpuLayout::Kind::kSplitColumns;
    StartBody(spec_.name + ".body", n + 1);
    KILN_EMIT_RETURN_IF_ERROR(columns ? EmitGpuColumnStage(false) : EmitGpuSplitStage(false));
    KILN_EMIT_RETURN_IF_ERROR(VerifyGpu(EmitGpuEntry(n + 1, spec_.name)));
    StartBody(spec_.name + ".combine.body", n + 1);
    KILN_EMIT_RETURN_IF_ERROR(columns ? EmitGpuColumnStage(true) : EmitGpuSplitStage(true));
    return VerifyGpu(EmitGpuEntry(n + 1, spec_.name + kGpuCombineSuffix));
  }
  StartBody(spec_.name + ".body", n);
  KILN_EMIT_RETURN_IF_ERROR(layout_.kind == GpuLayout::Kind::kRows ? EmitGpuRowsBody()
                                                                   : EmitGpuBody());
  return VerifyGpu(EmitGpuEntry(n, spec_.name));
}

absl::Status KernelEmitter::VerifyGpu(llvm::Function* kernel) {
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*fn_, &os) || llvm::verifyFunction(*kernel, &os))
    return absl::InternalError(
        absl::StrCat("emitter produced invalid IR for ", spec_.name, ": ", os.str()));
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitGpuBody() {
  // Grid-stride loop: element i = ctaid*ntid + tid, then i += nctaid*ntid while some output
  // has element i, so any grid size covers any output (the launcher caps the grid).
  llvm::Value* ntid = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* start = b_.CreateAdd(
      b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), ntid, "", true, true),
      Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "tid0", true, true);
  llvm::Value* stride =
      b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), ntid, "stride", true, true);
  // With a vector width W, thread index i covers elements i*W .. i*W + W-1 of every output
  // (all outputs have the same size then, a multiple of W): the W elements' values are
  // generated first and stored after, so same-index input loads sit side by side for the
  // load/store vectorizer.
  const int w = layout_.vector_width;
  int64_t total = 0;
  for (const HloInstruction* root : spec_.outputs)
    total = std::max(total, root->shape().num_elements());
  llvm::BasicBlock* pre_bb = b_.GetInsertBlock();
  auto* head_bb = llvm::BasicBlock::Create(ctx_, "gs.head", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "gs.body", fn_);
  auto* exit_bb = llvm::BasicBlock::Create(ctx_, "gs.exit", fn_);
  b_.CreateBr(head_bb);
  b_.SetInsertPoint(head_bb);
  llvm::PHINode* tid = b_.CreatePHI(I64(), 2, "tid");
  tid->addIncoming(start, pre_bb);
  b_.CreateCondBr(b_.CreateICmpSLT(tid, C64(total / w)), body_bb, exit_bb);
  b_.SetInsertPoint(body_bb);
  if (w > 1) {
    PushScope();
    std::vector<std::pair<llvm::Value*, llvm::Value*>> stores;  // (address, value)
    llvm::Value* first = b_.CreateMul(tid, C64(w), "first", true, true);
    for (size_t o = 0; o < spec_.outputs.size(); ++o) {
      const HloInstruction* root = spec_.outputs[o];
      PT t = root->shape().element_type();
      llvm::Type* st = StorageType(t, ctx_);
      std::vector<Index> group = Group(first, root->shape().dimensions(), w);
      KILN_EMIT_RETURN_IF_ERROR(LoadGroup(root->shape().dimensions(), group));
      for (const Index& idx : group) {
        absl::StatusOr<llvm::Value*> v = Element(root, idx);
        if (!v.ok()) return v.status();
        stores.push_back(
            {b_.CreateInBoundsGEP(st, fn_->getArg(spec_.inputs.size() + o), idx.linear),
             ToStorage(*v, t)});
      }
    }
    for (auto& [address, value] : stores) b_.CreateStore(value, address);
    PopScope();
    MarkVectorAligned({first}, w);
  }
  for (size_t o = 0; o < spec_.outputs.size() && w == 1; ++o) {
    const HloInstruction* root = spec_.outputs[o];
    llvm::Value* out = fn_->getArg(spec_.inputs.size() + o);
    PT t = root->shape().element_type();
    llvm::Type* st = StorageType(t, ctx_);
    auto* in_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat("out", o, ".in"), fn_);
    auto* next_bb = llvm::BasicBlock::Create(ctx_, absl::StrCat("out", o, ".done"), fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(tid, C64(root->shape().num_elements())), in_bb, next_bb);
    b_.SetInsertPoint(in_bb);
    // A scope per output: values generated under this bounds check do not dominate the next.
    PushScope();
    Index idx = Delinearize(tid, root->shape().dimensions());
    absl::StatusOr<llvm::Value*> v = Element(root, idx);
    PopScope();
    if (!v.ok()) return v.status();
    b_.CreateStore(ToStorage(*v, t), b_.CreateInBoundsGEP(st, out, tid));
    b_.CreateBr(next_bb);
    b_.SetInsertPoint(next_bb);
  }
  tid->addIncoming(b_.CreateAdd(tid, stride, "tid.next", true, true), b_.GetInsertBlock());
  b_.CreateBr(head_bb);
  b_.SetInsertPoint(exit_bb);
  b_.CreateRetVoid();
  return absl::OkStatus();
}

void KernelEmitter::MarkVectorAligned(const std::vector<llvm::Value*>& firsts, int width) {
  // Buffers are 16-byte aligned (EmitGpuEntry), so an access to buffer[first] with `first` a
  // multiple of `width` is aligned to width * element size: say so, so the load/store
  // vectorizer may merge it with the next width - 1 accesses (it cannot infer this itself).
  if (firsts.empty()) return;
  const absl::flat_hash_set<llvm::Value*> aligned(firsts.begin(), firsts.end());
  for (llvm::BasicBlock& bb : *fn_) {
    for (llvm::Instruction& i : bb) {
      auto* load = llvm::dyn_cast<llvm::LoadInst>(&i);
      auto* store = llvm::dyn_cast<llvm::StoreInst>(&i);
      llvm::Value* ptr = load    ? load->getPointerOperand()
                         : store ? store->getPointerOperand()
                                 : nullptr;
      auto* gep = llvm::dyn_cast_or_null<llvm::GetElementPtrInst>(ptr);
      if (gep == nullptr || gep->getNumIndices() != 1 || !aligned.contains(gep->getOperand(1)) ||
          !llvm::isa<llvm::Argument>(gep->getPointerOperand()))
        continue;
      const uint64_t size = module_.getDataLayout().getTypeAllocSize(gep->getResultElementType());
      llvm::Align align(std::min<uint64_t>(16, size * static_cast<uint64_t>(width)));
      if (load)
        load->setAlignment(align);
      else
        store->setAlignment(align);
    }
  }
}

std::vector<Index> KernelEmitter::Group(llvm::Value* first, const std::vector<int64_t>& dims,
                                        int w) {
  std::vector<Index> group;
  for (int k = 0; k < w; ++k)
    group.push_back(
        Delinearize(k == 0 ? first : b_.CreateAdd(first, C64(k), "", true, true), dims));
  return group;
}

absl::Status KernelEmitter::LoadGroup(const std::vector<int64_t>& dims,
                                      const std::vector<Index>& group) {
  // Every kernel input read at the same indices (same dimensions) is loaded here, first, for
  // all of the group: the loads of one buffer then sit side by side, before any computation
  // that branches (libdevice calls), where the load/store vectorizer can merge them. Element
  // caches them for the computation that follows.
  if (group.size() < 2) return absl::OkStatus();
  for (const HloInstruction* in : spec_.inputs) {
    if (!in->shape().IsArray() || in->shape().dimensions() != dims) continue;
    for (const Index& idx : group) {
      absl::StatusOr<llvm::Value*> v = Element(in, idx);
      if (!v.ok()) return v.status();
    }
  }
  return absl::OkStatus();
}

std::vector<Index> KernelEmitter::RowGroup(const Index& row, llvm::Value* c0, llvm::Value* first,
                                           const std::vector<int64_t>& cols, int w) {
  std::vector<Index> group;
  for (int k = 0; k < w; ++k) {
    Index idx = Delinearize(k == 0 ? c0 : b_.CreateAdd(c0, C64(k), "", true, true), cols);
    idx.multi.insert(idx.multi.begin(), row.multi.begin(), row.multi.end());
    idx.linear = k == 0 ? first : b_.CreateAdd(first, C64(k), "", true, true);
    group.push_back(std::move(idx));
  }
  return group;
}

llvm::Value* KernelEmitter::Sreg(llvm::Intrinsic::ID id) {
  return b_.CreateZExt(CallIntrinsic(id, {}, {}), I64());
}

llvm::Value* KernelEmitter::ThreadIdx() { return Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x); }

llvm::Value* KernelEmitter::Shuffle(llvm::Value* v, int lane_mask) {
  // shfl.sync.bfly moves 32 bits: narrower values are widened, 64-bit ones go in two halves.
  auto shfl32 = [&](llvm::Value* x) {
    return CallIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                         {b_.getInt32(-1), x, b_.getInt32(lane_mask), b_.getInt32(31)});
  };
  llvm::Type* t = v->getType();
  const unsigned bits = t->getPrimitiveSizeInBits();
  if (bits <= 32) {
    llvm::Value* x = t->isIntegerTy() ? b_.CreateZExtOrTrunc(v, b_.getInt32Ty())
                                      : b_.CreateBitCast(v, b_.getInt32Ty());
    llvm::Value* r = shfl32(x);
    return t->isIntegerTy() ? b_.CreateZExtOrTrunc(r, t) : b_.CreateBitCast(r, t);
  }
  llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, b_.getInt64Ty());
  llvm::Value* lo = shfl32(b_.CreateTrunc(x, b_.getInt32Ty()));
  llvm::Value* hi = shfl32(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
  llvm::Value* r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                               b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
  return t->isIntegerTy() ? r : b_.CreateBitCast(r, t);
}

absl::StatusOr<llvm::Value*> KernelEmitter::CombineReduced(const HloInstruction* h, llvm::Value* a,
                                                           llvm::Value* b) {
  if (AccumulatesIn32(*h))
    return h->to_apply()->root()->opcode() == HloOpcode::kAdd ? b_.CreateFAdd(a, b)
                                                              : b_.CreateFMul(a, b);
  return EmitScalarCall(h->to_apply(), {a, b});
}

llvm::Value* KernelEmitter::FinishReduce(const HloInstruction* h, llvm::Value* v) {
  return AccumulatesIn32(*h) ? RoundToType(v, h->shape().element_type()) : v;
}

absl::Status KernelEmitter::Accumulate(const HloInstruction* h, llvm::AllocaInst* acc,
                                       llvm::AllocaInst* valid, llvm::Value* v) {
  llvm::Value* cur = b_.CreateLoad(acc->getAllocatedType(), acc);
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * next, CombineReduced(h, cur, v));
  b_.CreateStore(b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), valid), next, v), acc);
  b_.CreateStore(b_.getTrue(), valid);
  return absl::OkStatus();
}

absl::StatusOr<std::pair<llvm::Value*, llvm::Value*>> KernelEmitter::WarpCombine(
    const HloInstruction* h, llvm::Value* v, llvm::Value* valid) {
  llvm::Value* lane = b_.CreateAnd(ThreadIdx(), C64(31));
  for (int m = 16; m >= 1; m /= 2) {
    llvm::Value* other = Shuffle(v, m);
    llvm::Value* other_valid = Shuffle(valid, m);
    // Both lanes of a pair compute reducer(lower lane's value, upper lane's value), so every
    // lane ends with the same bits.
    llvm::Value* upper = b_.CreateICmpNE(b_.CreateAnd(lane, C64(m)), C64(0));
    KILN_EMIT_ASSIGN_OR_RETURN(
        llvm::Value * both,
        CombineReduced(h, b_.CreateSelect(upper, other, v), b_.CreateSelect(upper, v, other)));
    v = b_.CreateSelect(b_.CreateAnd(valid, other_valid), both, b_.CreateSelect(valid, v, other));
    valid = b_.CreateOr(valid, other_valid);
  }
  return std::make_pair(v, valid);
}

absl::StatusOr<std::pair<llvm::Value*, llvm::Value*>> KernelEmitter::BlockCombine(
    const HloInstruction* h, llvm::Value* v, llvm::Value* valid) {
  KILN_EMIT_ASSIGN_OR_RETURN(auto warp_result, WarpCombine(h, v, valid));
  const int warps = layout_.threads / 32;
  if (warps <= 1) return warp_result;
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* i32 = b_.getInt32Ty();
  if (smem_values_ == nullptr) {
    // One slot per warp; addrspace(3) is shared memory.
    auto make = [&](llvm::Type* elem, const char* suffix) {
      auto* arr = llvm::ArrayType::get(elem, 32);
      return new llvm::GlobalVariable(module_, arr, false, llvm::GlobalValue::InternalLinkage,
                                      llvm::UndefValue::get(arr), spec_.name + suffix, nullptr,
                                      llvm::GlobalValue::NotThreadLocal, 3);
    };
    smem_values_ = make(i64, "_smem_values");
    smem_valid_ = make(i32, "_smem_valid");
  }
  llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
  llvm::Constant* values = llvm::ConstantExpr::getAddrSpaceCast(smem_values_, ptr);
  llvm::Constant* flags = llvm::ConstantExpr::getAddrSpaceCast(smem_valid_, ptr);
  llvm::Type* t = v->getType();
  auto to_bits = [&](llvm::Value* x) {
    if (t->isIntegerTy()) return b_.CreateZExtOrTrunc(x, i64);
    if (t->isDoubleTy()) return b_.CreateBitCast(x, i64);
    return b_.CreateZExt(b_.CreateBitCast(x, i32), i64);
  };
  auto from_bits = [&](llvm::Value* x) {
    if (t->isIntegerTy()) return b_.CreateZExtOrTrunc(x, t);
    if (t->isDoubleTy()) return b_.CreateBitCast(x, t);
    return b_.CreateBitCast(b_.CreateTrunc(x, i32), t);
  };
  llvm::Value* tid = ThreadIdx();
  llvm::Value* lane = b_.CreateAnd(tid, C64(31));
  llvm::Value* warp = b_.CreateLShr(tid, C64(5));
  // Lane 0 of each warp publishes the warp's result ...
  auto* write_bb = llvm::BasicBlock::Create(ctx_, "smem.write", fn_);
  auto* written_bb = llvm::BasicBlock::Create(ctx_, "smem.written", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(lane, C64(0)), write_bb, written_bb);
  b_.SetInsertPoint(write_bb);
  b_.CreateStore(to_bits(warp_result.first), b_.CreateInBoundsGEP(i64, values, warp));
  b_.CreateStore(b_.CreateZExt(warp_result.second, i32), b_.CreateInBoundsGEP(i32, flags, warp));
  b_.CreateBr(written_bb);
  b_.SetInsertPoint(written_bb);
  CallIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  // ... then every warp combines the warps' results (no broadcast step needed). The second
  // barrier keeps the slots from being overwritten by a following combine before all read.
  llvm::Value* in_range = b_.CreateICmpULT(lane, C64(warps));
  llvm::Value* slot = b_.CreateSelect(in_range, lane, C64(0));
  llvm::Value* w = from_bits(b_.CreateLoad(i64, b_.CreateInBoundsGEP(i64, values, slot)));
  llvm::Value* wv = b_.CreateAnd(
      in_range,
      b_.CreateICmpNE(b_.CreateLoad(i32, b_.CreateInBoundsGEP(i32, flags, slot)), b_.getInt32(0)));
  CallIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  return WarpCombine(h, w, wv);
}

absl::Status KernelEmitter::EmitStridedLoop(llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                                            const std::string& name,
                                            const std::function<absl::Status(llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name + ".header", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(I64(), 2, name + ".iv");
  iv->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  PushScope();
  absl::Status st = body(iv);
  PopScope();
  if (!st.ok()) return st;
  iv->addIncoming(b_.CreateAdd(iv, step, name + ".next", true, true), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return absl::OkStatus();
}

// Runs `then` only in thread 0 of the block.
#define KILN_EMIT_IN_THREAD_ZERO(stmts)                                   \
  do {                                                                    \
    auto* _t0 = llvm::BasicBlock::Create(ctx_, "thread0", fn_);           \
    auto* _t0_done = llvm::BasicBlock::Create(ctx_, "thread0.done", fn_); \
    b_.CreateCondBr(b_.CreateICmpEQ(ThreadIdx(), C64(0)), _t0, _t0_done); \
    b_.SetInsertPoint(_t0);                                               \
    stmts;                                                                \
    b_.CreateBr(_t0_done);                                                \
    b_.SetInsertPoint(_t0_done);                                          \
  } while (0)

absl::Status KernelEmitter::EmitGpuRowsBody() {
  const std::vector<const HloInstruction*> stats = GpuRowStatistics(spec_);
  const std::vector<int64_t>& row_dims = layout_.row_dims;
  const size_t k = row_dims.size();
  llvm::Value* tid = ThreadIdx();
  llvm::Value* threads = C64(layout_.threads);
  const int w = layout_.vector_width;
  std::vector<llvm::Value*> aligned;  // linear indices of groups' first elements (w > 1)
  auto tail = [&](const std::vector<int64_t>& dims) {
    return std::vector<int64_t>(dims.begin() + static_cast<std::ptrdiff_t>(k), dims.end());
  };
  KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
      Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), C64(layout_.rows),
      Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), "row",
      [&](llvm::Value* r) -> absl::Status {
        Index row = Delinearize(r, row_dims);
        // The row's statistics, operands first, each combined across the block; the
        // outputs' elements then find them in this scope under the row's index.
        for (const HloInstruction* s : stats) {
          const HloInstruction* input = s->operand(0);
          std::vector<int64_t> cols = tail(input->shape().dimensions());
          int64_t ncols = 1;
          for (int64_t d : cols) ncols *= d;
          KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * init, Element(s->operand(1), Index{{}, C64(0)}));
          llvm::AllocaInst* acc = EntryAlloca(init->getType(), s->name() + ".acc");
          llvm::AllocaInst* valid = EntryAlloca(b_.getInt1Ty(), s->name() + ".valid");
          b_.CreateStore(init, acc);
          b_.CreateStore(b_.getFalse(), valid);
          // Thread t reads groups of w consecutive columns: t, t + threads, ...
          KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
              tid, C64(ncols / w), threads, s->name(), [&](llvm::Value* g) -> absl::Status {
                llvm::Value* c0 = w == 1 ? g : b_.CreateMul(g, C64(w), "", true, true);
                llvm::Value* first =
                    b_.CreateAdd(b_.CreateMul(r, C64(ncols), "", true, true), c0, "", true, true);
                if (w > 1) aligned.insert(aligned.end(), {first, c0});  // c0: per-column operands
                std::vector<Index> group = RowGroup(row, c0, first, cols, w);
                KILN_EMIT_RETURN_IF_ERROR(LoadGroup(input->shape().dimensions(), group));
                for (const Index& in : group) {
                  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * x, Element(input, in));
                  KILN_EMIT_RETURN_IF_ERROR(Accumulate(s, acc, valid, x));
                }
                return absl::OkStatus();
              }));
          KILN_EMIT_ASSIGN_OR_RETURN(auto total,
                                     BlockCombine(s, b_.CreateLoad(init->getType(), acc),
                                                  b_.CreateLoad(b_.getInt1Ty(), valid)));
          KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * with_init, CombineReduced(s, init, total.first));
          scopes_.back()[{s, row.multi}] =
              FinishReduce(s, b_.CreateSelect(total.second, with_init, init));
        }
        for (size_t o = 0; o < spec_.outputs.size(); ++o) {
          const HloInstruction* root = spec_.outputs[o];
          std::vector<int64_t> cols = tail(root->shape().dimensions());
          const int64_t ncols = root->shape().num_elements() / layout_.rows;
          llvm::Value* out = fn_->getArg(spec_.inputs.size() + o);
          PT t = root->shape().element_type();
          llvm::Type* st = StorageType(t, ctx_);
          KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
              tid, C64(ncols / w), threads, absl::StrCat("out", o),
              [&](llvm::Value* g) -> absl::Status {
                llvm::Value* c0 = w == 1 ? g : b_.CreateMul(g, C64(w), "", true, true);
                llvm::Value* first =
                    b_.CreateAdd(b_.CreateMul(r, C64(ncols), "", true, true), c0, "", true, true);
                if (w > 1) aligned.insert(aligned.end(), {first, c0});
                // The group's values first, then its stores (adjacent, for the vectorizer).
                std::vector<std::pair<llvm::Value*, llvm::Value*>> stores;
                std::vector<Index> group = RowGroup(row, c0, first, cols, w);
                KILN_EMIT_RETURN_IF_ERROR(LoadGroup(root->shape().dimensions(), group));
                for (const Index& idx : group) {
                  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * v, Element(root, idx));
                  stores.push_back({b_.CreateInBoundsGEP(st, out, idx.linear), ToStorage(v, t)});
                }
                for (auto& [address, value] : stores) b_.CreateStore(value, address);
                return absl::OkStatus();
              }));
        }
        return absl::OkStatus();
      }));
  MarkVectorAligned(aligned, w);
  b_.CreateRetVoid();
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitGpuSplitStage(bool combine) {
  const HloInstruction* r = spec_.outputs[0];
  const HloInstruction* input = r->operand(0);
  const int64_t n = input->shape().num_elements();
  const int64_t parts = layout_.parts;
  llvm::Value* out = fn_->getArg(spec_.inputs.size());
  llvm::Value* partials = fn_->getArg(spec_.inputs.size() + 1);  // 8-byte slots
  llvm::Value* tid = ThreadIdx();
  llvm::Value* threads = C64(layout_.threads);
  PushScope();
  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * init, Element(r->operand(1), Index{{}, C64(0)}));
  llvm::Type* ct = init->getType();
  llvm::AllocaInst* acc = EntryAlloca(ct, r->name() + ".acc");
  llvm::AllocaInst* valid = EntryAlloca(b_.getInt1Ty(), r->name() + ".valid");
  auto reset = [&] {
    b_.CreateStore(init, acc);
    b_.CreateStore(b_.getFalse(), valid);
  };
  const int64_t rows = layout_.rows;
  const int64_t columns = n / rows;
  const int w = layout_.vector_width;
  std::vector<llvm::Value*> aligned;  // first elements of w-groups (w > 1)
  llvm::Value* first_block = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* blocks = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  absl::Status st;
  if (!combine) {
    // Block r * parts + p reduces the contiguous slice
    // [p columns / parts, (p+1) columns / parts) of row r.
    st = EmitStridedLoop(
        first_block, C64(rows * parts), blocks, "part", [&](llvm::Value* blk) -> absl::Status {
          // In groups of w consecutive elements: the slice bounds fall on group boundaries.
          const int64_t groups = columns / w;
          llvm::Value* p = b_.CreateURem(blk, C64(parts));
          llvm::Value* row_start = b_.CreateMul(b_.CreateUDiv(blk, C64(parts)), C64(groups));
          llvm::Value* lo =
              b_.CreateAdd(row_start, b_.CreateSDiv(b_.CreateMul(p, C64(groups)), C64(parts)));
          llvm::Value* hi = b_.CreateAdd(
              row_start,
              b_.CreateSDiv(b_.CreateMul(b_.CreateAdd(p, C64(1)), C64(groups)), C64(parts)));
          reset();
          KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
              b_.CreateAdd(lo, tid), hi, threads, "elem", [&](llvm::Value* g) -> absl::Status {
                llvm::Value* first = w == 1 ? g : b_.CreateMul(g, C64(w), "", true, true);
                if (w > 1) aligned.push_back(first);
                std::vector<Index> group = Group(first, input->shape().dimensions(), w);
                KILN_EMIT_RETURN_IF_ERROR(LoadGroup(input->shape().dimensions(), group));
                for (const Index& in : group) {
                  KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * x, Element(input, in));
                  KILN_EMIT_RETURN_IF_ERROR(Accumulate(r, acc, valid, x));
                }
                return absl::OkStatus();
              }));
          KILN_EMIT_ASSIGN_OR_RETURN(
              auto total,
              BlockCombine(r, b_.CreateLoad(ct, acc), b_.CreateLoad(b_.getInt1Ty(), valid)));
          // Every part holds at least one element (AnalyzeGpuKernel), so the partial is valid.
          KILN_EMIT_IN_THREAD_ZERO(
              b_.CreateStore(total.first, b_.CreateInBoundsGEP(b_.getInt64Ty(), partials, blk)));
          return absl::OkStatus();
        });
  } else {
    // Block r folds row r's partials, then the init value.
    PT t = r->shape().element_type();
    llvm::Type* storage = StorageType(t, ctx_);
    st = EmitStridedLoop(
        first_block, C64(rows), blocks, "row", [&](llvm::Value* row) -> absl::Status {
          reset();
          llvm::Value* base = b_.CreateMul(row, C64(parts));
          KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
              tid, C64(parts), threads, "partial", [&](llvm::Value* i) -> absl::Status {
                llvm::Value* slot =
                    b_.CreateInBoundsGEP(b_.getInt64Ty(), partials, b_.CreateAdd(base, i));
                return Accumulate(r, acc, valid, b_.CreateLoad(ct, slot));
              }));
          KILN_EMIT_ASSIGN_OR_RETURN(
              auto total,
              BlockCombine(r, b_.CreateLoad(ct, acc), b_.CreateLoad(b_.getInt1Ty(), valid)));
          KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * with_init, CombineReduced(r, init, total.first));
          llvm::Value* v = FinishReduce(r, b_.CreateSelect(total.second, with_init, init));
          KILN_EMIT_IN_THREAD_ZERO(
              b_.CreateStore(ToStorage(v, t), b_.CreateInBoundsGEP(storage, out, row)));
          return absl::OkStatus();
        });
  }
  PopScope();
  if (!st.ok()) return st;
  MarkVectorAligned(aligned, w);
  b_.CreateRetVoid();
  return absl::OkStatus();
}

#undef KILN_EMIT_IN_THREAD_ZERO

absl::Status KernelEmitter::EmitGpuColumnStage(bool combine) {
  const HloInstruction* r = spec_.outputs[0];
  const HloInstruction* input = r->operand(0);
  const int64_t columns = layout_.columns;
  const int64_t parts = layout_.parts;
  const int64_t rows = input->shape().num_elements() / columns;
  const std::vector<int64_t>& in_dims = input->shape().dimensions();
  const std::vector<int64_t> row_dims(in_dims.begin(), in_dims.end() - r->shape().rank());
  llvm::Value* out = fn_->getArg(spec_.inputs.size());
  llvm::Value* partials = fn_->getArg(spec_.inputs.size() + 1);  // [parts, columns], 8-byte slots
  llvm::Value* ntid = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* start = b_.CreateAdd(
      b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), ntid, "", true, true),
      ThreadIdx(), "", true, true);
  llvm::Value* stride =
      b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), ntid, "", true, true);
  PushScope();
  absl::Status st;
  absl::StatusOr<llvm::Value*> init_or = Element(r->operand(1), Index{{}, C64(0)});
  if (!init_or.ok()) st = init_or.status();
  llvm::Value* init = st.ok() ? *init_or : nullptr;
  llvm::Type* ct = st.ok() ? init->getType() : nullptr;
  llvm::AllocaInst* acc = st.ok() ? EntryAlloca(ct, r->name() + ".acc") : nullptr;
  if (st.ok() && !combine) {
    // Thread t: part t / columns, column t % columns (adjacent threads, adjacent columns).
    st = EmitStridedLoop(
        start, C64(parts * columns), stride, "colpart", [&](llvm::Value* t) -> absl::Status {
          llvm::Value* p = b_.CreateUDiv(t, C64(columns));
          llvm::Value* c = b_.CreateURem(t, C64(columns));
          Index col = Delinearize(c, r->shape().dimensions());
          llvm::Value* lo = b_.CreateSDiv(b_.CreateMul(p, C64(rows)), C64(parts));
          llvm::Value* hi =
              b_.CreateSDiv(b_.CreateMul(b_.CreateAdd(p, C64(1)), C64(rows)), C64(parts));
          // Every part holds at least 32 rows (AnalyzeGpuKernel): the first row starts the partial.
          auto element = [&](llvm::Value* k) -> absl::StatusOr<llvm::Value*> {
            Index in = Delinearize(k, row_dims);
            in.multi.insert(in.multi.end(), col.multi.begin(), col.multi.end());
            in.linear =
                b_.CreateAdd(b_.CreateMul(k, C64(columns), "", true, true), c, "", true, true);
            return Element(input, in);
          };
          PushScope();
          absl::StatusOr<llvm::Value*> first = element(lo);
          PopScope();
          if (!first.ok()) return first.status();
          b_.CreateStore(*first, acc);
          KILN_EMIT_RETURN_IF_ERROR(EmitStridedLoop(
              b_.CreateAdd(lo, C64(1)), hi, C64(1), "rows", [&](llvm::Value* k) -> absl::Status {
                KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * x, element(k));
                KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * next,
                                           CombineReduced(r, b_.CreateLoad(ct, acc), x));
                b_.CreateStore(next, acc);
                return absl::OkStatus();
              }));
          b_.CreateStore(b_.CreateLoad(ct, acc),
                         b_.CreateInBoundsGEP(b_.getInt64Ty(), partials, t));
          return absl::OkStatus();
        });
  } else if (st.ok()) {
    // Thread c folds init, then its column's partials in part order.
    PT t = r->shape().element_type();
    llvm::Type* storage = StorageType(t, ctx_);
    st = EmitStridedLoop(start, C64(columns), stride, "col", [&](llvm::Value* c) -> absl::Status {
      b_.CreateStore(init, acc);
      KILN_EMIT_RETURN_IF_ERROR(
          EmitStridedLoop(C64(0), C64(parts), C64(1), "parts", [&](llvm::Value* p) -> absl::Status {
            llvm::Value* slot =
                b_.CreateAdd(b_.CreateMul(p, C64(columns), "", true, true), c, "", true, true);
            llvm::Value* x =
                b_.CreateLoad(ct, b_.CreateInBoundsGEP(b_.getInt64Ty(), partials, slot));
            KILN_EMIT_ASSIGN_OR_RETURN(llvm::Value * next,
                                       CombineReduced(r, b_.CreateLoad(ct, acc), x));
            b_.CreateStore(next, acc);
            return absl::OkStatus();
          }));
      llvm::Value* v = FinishReduce(r, b_.CreateLoad(ct, acc));
      b_.CreateStore(ToStorage(v, t), b_.CreateInBoundsGEP(storage, out, c));
      return absl::OkStatus();
    });
  }
  PopScope();
  if (!st.ok()) return st;
  b_.CreateRetVoid();
  return absl::OkStatus();
}

llvm::Function* KernelEmitter::EmitGpuEntry(size_t n, const std::string& name) {
  llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
  auto* ty = llvm::FunctionType::get(b_.getVoidTy(), std::vector<llvm::Type*>(n, ptr), false);
  llvm::Function* kernel =
      llvm::Function::Create(ty, llvm::GlobalValue::ExternalLinkage, name, module_);
  kernel->setCallingConv(llvm::CallingConv::PTX_Kernel);
  kernel->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < n; ++i) {
    kernel->addParamAttr(i, llvm::Attribute::NoAlias);
    kernel->addParamAttr(i, llvm::Attribute::NoCapture);
    // Device buffers come from the caching allocator, 256-byte aligned: 16 lets 4 x 32-bit
    // accesses become one vector access.
    kernel->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(16)));
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
  std::vector<llvm::Value*> args;
  // Buffers are global memory: the round trip through addrspace(1) lets address-space
  // inference turn generic loads and stores into ld.global / st.global.
  for (size_t i = 0; i < n; ++i) {
    llvm::Value* global =
        b_.CreateAddrSpaceCast(kernel->getArg(i), llvm::PointerType::get(ctx_, 1));
    args.push_back(b_.CreateAddrSpaceCast(global, ptr));
  }
  // The CPU outer-range arguments of the body are unused on the GPU.
  while (args.size() < fn_->arg_size()) args.push_back(C64(0));
  b_.CreateCall(fn_, args);
  b_.CreateRetVoid();
  // Older NVPTX backends find kernels through this metadata rather than the calling convention.
  llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(kernel), llvm::MDString::get(ctx_, "kernel"),
                          llvm::ValueAsMetadata::get(b_.getInt32(1))};
  module_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx_, md));
  return kernel;
}

}  // namespace kiln::llvm_emit::detail
