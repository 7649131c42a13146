#include "plugins/cpu_llvm/loop_driver_emitter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::cpu {
namespace {

// The driver mirrors FlatLoop::RunFixed, the schedule's interpreter, statement for statement.
class DriverEmitter {
 public:
  DriverEmitter(const LoopSchedule& s, const std::vector<std::string>& names, llvm::Module& m)
      : s_(s), names_(names), m_(m), ctx_(m.getContext()), b_(ctx_) {}

  absl::Status Emit(const std::string& name) {
    // The entry point loads every slot's and constant's pointer and hands them to the run as
    // noalias arguments (distinct slots are distinct buffers wherever the run writes), so
    // once the kernels are inlined the optimizer may keep a scalar state in registers.
    llvm::Function* entry = llvm::Function::Create(
        llvm::FunctionType::get(b_.getVoidTy(), {Ptr(), Ptr(), Ptr()}, false),
        llvm::GlobalValue::ExternalLinkage, name, m_);
    entry->addFnAttr(llvm::Attribute::NoUnwind);
    for (unsigned i = 0; i < 3; ++i) {
      entry->addParamAttr(i, llvm::Attribute::NoCapture);
      entry->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    const int n = s_.slots + s_.constants;
    fn_ = llvm::Function::Create(
        llvm::FunctionType::get(b_.getVoidTy(), std::vector<llvm::Type*>(n, Ptr()), false),
        llvm::GlobalValue::InternalLinkage, name + ".run", m_);
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    for (int i = 0; i < n; ++i) {
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      if (i >= s_.slots) fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> args;
    for (int i = 0; i < n; ++i) {
      const bool slot = i < s_.slots;
      llvm::Value* array = entry->getArg(slot ? 1 : 2);
      args.push_back(b_.CreateLoad(
          Ptr(), b_.CreateConstInBoundsGEP1_64(Ptr(), array, slot ? i : i - s_.slots)));
    }
    b_.CreateCall(fn_, args);
    b_.CreateRetVoid();

    // The kernels' tables, filled once from the arguments: inlined, a kernel's buffer is the
    // argument itself.
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    const int entries = static_cast<int>(s_.table.size());
    table_ = b_.CreateAlloca(llvm::ArrayType::get(Ptr(), std::max(entries, 1)), nullptr, "table");
    for (int e = 0; e < entries; ++e)
      b_.CreateStore(At(s_.table[e]), b_.CreateConstInBoundsGEP1_64(Ptr(), table_, e));
    EmitLoop(0);
    b_.CreateRetVoid();
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyFunction(*fn_, &os) || llvm::verifyFunction(*entry, &os))
      return absl::InternalError(absl::StrCat("loop driver ", name, " is invalid IR: ", os.str()));
    return absl::OkStatus();
  }

 private:
  llvm::Type* Ptr() { return llvm::PointerType::get(ctx_, 0); }

  llvm::Value* Slot(int slot) { return fn_->getArg(slot); }
  llvm::Value* At(const LoopSchedule::Place& p) {
    return p.slot >= 0 ? Slot(p.slot) : fn_->getArg(s_.slots + p.constant);
  }

  void Copy(const LoopSchedule::Copy& c) {
    b_.CreateMemCpy(Slot(c.to), llvm::MaybeAlign(), At(c.from), llvm::MaybeAlign(),
                    static_cast<uint64_t>(c.bytes));
  }

  void Calls(const std::vector<LoopSchedule::Call>& calls) {
    auto* kernel_ty =
        llvm::FunctionType::get(b_.getVoidTy(), {Ptr(), b_.getInt64Ty(), b_.getInt64Ty()}, false);
    for (const LoopSchedule::Call& c : calls) {
      if (c.nested >= 0) {
        EmitLoop(c.nested);
      } else if (c.conditional >= 0) {
        EmitConditional(c.conditional);
      } else {
        if (c.operand.bytes > 0) Copy(c.operand);
        llvm::FunctionCallee f = m_.getOrInsertFunction(names_[c.kernel], kernel_ty);
        b_.CreateCall(f, {b_.CreateConstInBoundsGEP1_64(Ptr(), table_, c.table), b_.getInt64(0),
                          b_.getInt64(c.extent)});
      }
    }
  }

  void EmitLoop(int l) {
    const LoopSchedule::Loop& f = s_.loops[l];
    for (const LoopSchedule::Copy& c : f.entry) Copy(c);
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, absl::StrCat("loop", l), fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("body", l), fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("exit", l), fn_);
    if (f.counter >= 0) {
      // for (i = counter; i < limit; ++i), the limit read once.
      llvm::Type* t = f.s32 ? b_.getInt32Ty() : b_.getInt64Ty();
      llvm::Value* first = b_.CreateSExt(b_.CreateLoad(t, Slot(f.counter)), b_.getInt64Ty());
      llvm::Value* limit = b_.CreateSExt(b_.CreateLoad(t, At(f.limit)), b_.getInt64Ty());
      llvm::BasicBlock* before = b_.GetInsertBlock();
      b_.CreateBr(head);
      b_.SetInsertPoint(head);
      llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
      i->addIncoming(first, before);
      b_.CreateCondBr(b_.CreateICmpSLT(i, limit), body, exit);
      b_.SetInsertPoint(body);
      Calls(f.body);
      for (const LoopSchedule::Copy& c : f.copies) Copy(c);
      llvm::Value* next = b_.CreateNSWAdd(i, b_.getInt64(1));
      // i + 1 <= limit fits the counter's type.
      if (f.store_counter) b_.CreateStore(b_.CreateTrunc(next, t), Slot(f.counter));
      i->addIncoming(next, b_.GetInsertBlock());
      b_.CreateBr(head);
    } else {
      b_.CreateBr(head);
      b_.SetInsertPoint(head);
      Calls(f.cond);
      llvm::Value* go = b_.CreateLoad(b_.getInt8Ty(), At(f.go));
      b_.CreateCondBr(b_.CreateICmpNE(go, b_.getInt8(0)), body, exit);
      b_.SetInsertPoint(body);
      Calls(f.body);
      for (const LoopSchedule::Copy& c : f.copies) Copy(c);
      b_.CreateBr(head);
    }
    b_.SetInsertPoint(exit);
  }

  void EmitConditional(int ci) {
    const LoopSchedule::Conditional& c = s_.conditionals[ci];
    const int n = static_cast<int>(c.branches.size());
    llvm::Value* index;
    if (c.pred) {
      llvm::Value* v = b_.CreateLoad(b_.getInt8Ty(), At(c.selector));
      index = b_.CreateSelect(b_.CreateICmpNE(v, b_.getInt8(0)), b_.getInt32(0), b_.getInt32(1));
    } else {
      // The switch's default, the last branch, takes every value out of range.
      index = b_.CreateLoad(b_.getInt32Ty(), At(c.selector));
    }
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, absl::StrCat("join", ci), fn_);
    std::vector<llvm::BasicBlock*> blocks;
    for (int i = 0; i < n; ++i)
      blocks.push_back(llvm::BasicBlock::Create(ctx_, absl::StrCat("branch", ci, "_", i), fn_));
    llvm::SwitchInst* sw = b_.CreateSwitch(index, blocks[n - 1], n - 1);
    for (int i = 0; i + 1 < n; ++i) sw->addCase(b_.getInt32(i), blocks[i]);
    for (int i = 0; i < n; ++i) {
      b_.SetInsertPoint(blocks[i]);
      Calls(c.branches[i].calls);
      for (const LoopSchedule::Copy& r : c.branches[i].results) Copy(r);
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(join);
  }

  const LoopSchedule& s_;
  const std::vector<std::string>& names_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;  // the run, its arguments the slots, then the constants
  llvm::Value* table_ = nullptr;
};

}  // namespace

absl::Status EmitLoopDriver(const LoopDriverSpec& spec,
                            const std::vector<std::string>& kernel_names, llvm::Module& m) {
  return DriverEmitter(*spec.schedule, kernel_names, m).Emit(spec.name);
}

}  // namespace kiln::cpu
