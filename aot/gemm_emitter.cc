// GEMM steps of an ahead-of-time artifact: the loop nest emitted into the object, or calls
// into OpenBLAS or oneDNN.
#include "aot/gemm_emitter.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::cpu::aot {

namespace {

// A counted loop [0, n) around `body` at the builder's insertion point; the builder ends
// after the loop.
void EmitLoop(llvm::IRBuilder<>& b, llvm::Value* n, const std::string& name,
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
llvm::Function* EmittedGemmFunction(llvm::Module& m, const std::string& prefix,
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
  EmitLoop(b, M, "i", [&](llvm::Value* i) {
    llvm::Value* crow = b.CreateInBoundsGEP(elem, C, b.CreateMul(i, N));
    if (!g.trans_b) {
      EmitLoop(b, N, "zero", [&](llvm::Value* j) {
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
        EmitLoop(b, N, "j", [&](llvm::Value* j) {
          llvm::Value* slot = b.CreateInBoundsGEP(elem, crow, j);
          llvm::Value* sum = b.CreateLoad(elem, slot);
          for (int r = 0; r < rows; ++r)
            sum = b.CreateFAdd(sum, b.CreateFMul(a[r], load(brow[r], j)));
          b.CreateStore(sum, slot);
        });
      };
      llvm::Value* quads = b.CreateSDiv(K, b.getInt64(kUnroll));
      EmitLoop(b, quads, "p4",
               [&](llvm::Value* q) { accumulate(b.CreateMul(q, b.getInt64(kUnroll)), kUnroll); });
      llvm::Value* rest_start = b.CreateMul(quads, b.getInt64(kUnroll));
      EmitLoop(b, b.CreateSub(K, rest_start), "p",
               [&](llvm::Value* r) { accumulate(b.CreateAdd(rest_start, r), 1); });
    } else {
      EmitLoop(b, N, "j", [&](llvm::Value* j) {
        llvm::Value* bcol = b.CreateInBoundsGEP(elem, B, b.CreateMul(j, K));
        llvm::AllocaInst* acc = nullptr;
        {
          llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
          acc = entry.CreateAlloca(elem);
        }
        b.CreateStore(llvm::ConstantFP::get(elem, 0.0), acc);
        EmitLoop(b, K, "p", [&](llvm::Value* p) {
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

// cblas_sgemm/cblas_dgemm(RowMajor, transa, transb, M, N, K, 1, A, lda, B, ldb, 0, C, ldc)
// on batch entry i (OpenBLAS's 32-bit integers).
void EmitCblasCall(llvm::IRBuilder<>& b_, llvm::Module& m_, const kernel_plan::GemmShape& g,
                   llvm::Value* a, llvm::Value* b, llvm::Value* c, llvm::Value* i) {
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
void EmitOneDnnCall(llvm::IRBuilder<>& b_, llvm::Module& m_, const kernel_plan::GemmShape& g,
                    llvm::Value* a, llvm::Value* b, llvm::Value* c, llvm::Value* i) {
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

}  // namespace

void EmitGemmBatch(llvm::IRBuilder<>& b_, llvm::Module& m_, AotGemm kind, const std::string& prefix,
                   const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b,
                   llvm::Value* c) {
  // for (i = 0; i < batch; ++i) gemm(batch entry i)
  EmitLoop(b_, b_.getInt64(g.batch), "gemm_batch", [&](llvm::Value* i) {
    if (kind == AotGemm::kOpenBlas) {
      EmitCblasCall(b_, m_, g, a, b, c, i);
    } else if (kind == AotGemm::kOneDnn) {
      EmitOneDnnCall(b_, m_, g, a, b, c, i);
    } else {
      llvm::Type* elem = g.f64 ? b_.getDoubleTy() : b_.getFloatTy();
      auto entry = [&](llvm::Value* base, int64_t per_batch) {
        return b_.CreateInBoundsGEP(elem, base, b_.CreateMul(i, b_.getInt64(per_batch)));
      };
      b_.CreateCall(EmittedGemmFunction(m_, prefix, g),
                    {entry(a, g.m * g.k), entry(b, g.k * g.n), entry(c, g.m * g.n),
                     b_.getInt64(g.m), b_.getInt64(g.n), b_.getInt64(g.k)});
    }
  });
}

}  // namespace kiln::cpu::aot
