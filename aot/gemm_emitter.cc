// GEMM steps of an ahead-of-time artifact: the loop nest emitted into the object, or calls
// into OpenBLAS or oneDNN.
#include "aot/gemm_emitter.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::cpu::aot {

namespace {

// AOT plans f32 and f64 GEMMs only (no s8: PlanOptions::s8_gemm is off).
bool IsF64(const kernel_plan::GemmShape& g) { return g.type == kernel_plan::GemmType::kF64; }

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

// Columns per register tile of the GEMM below (and per part of a parallel GEMM).
int64_t TileColumns(const kernel_plan::GemmShape& g) { return IsF64(g) ? 8 : 16; }

// void gemm(noalias A, noalias B, noalias C, i64 m, i64 n, i64 k, i64 col_begin, i64 col_end):
// columns [col_begin, col_end) of C[m,n] = op(A) op(B), all row-major, as GemmShape describes
// (col_begin a multiple of TileColumns). With B stored k x n, C is computed in register tiles
// (below); with B stored transposed, each element is a unit-stride dot product.
llvm::Function* EmittedGemmFunction(llvm::Module& m, const std::string& prefix,
                                    const kernel_plan::GemmShape& g) {
  const std::string name = absl::StrCat(prefix, ".gemm.", IsF64(g) ? "f64" : "f32", ".",
                                        g.trans_a ? "T" : "N", g.trans_b ? "T" : "N");
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* elem = IsF64(g) ? b.getDoubleTy() : b.getFloatTy();
  llvm::Function* f = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr, i64, i64, i64, i64, i64}, false),
      llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < 3; ++i) {
    f->addParamAttr(i, llvm::Attribute::NoAlias);
    f->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  llvm::Value *A = f->getArg(0), *B = f->getArg(1), *C = f->getArg(2);
  llvm::Value *M = f->getArg(3), *N = f->getArg(4), *K = f->getArg(5);
  llvm::Value *col_begin = f->getArg(6), *col_end = f->getArg(7);
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
  // A value per (row, column) of C as an unit-stride-in-k dot product: the transposed-B form,
  // and the edges the register tiles below leave.
  auto dot_product = [&](llvm::Value* i, llvm::Value* j, llvm::Value* crow) {
    llvm::AllocaInst* acc = nullptr;
    {
      llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
      acc = entry.CreateAlloca(elem);
    }
    b.CreateStore(llvm::ConstantFP::get(elem, 0.0), acc);
    EmitLoop(b, K, "p", [&](llvm::Value* p) {
      llvm::Value* bv = g.trans_b ? load(B, b.CreateAdd(b.CreateMul(j, K), p))
                                  : load(B, b.CreateAdd(b.CreateMul(p, N), j));
      b.CreateStore(b.CreateFAdd(b.CreateLoad(elem, acc), b.CreateFMul(a_at(i, p), bv)), acc);
    });
    b.CreateStore(b.CreateLoad(elem, acc), b.CreateInBoundsGEP(elem, crow, j));
  };
  if (g.trans_b) {
    EmitLoop(b, M, "i", [&](llvm::Value* i) {
      llvm::Value* crow = b.CreateInBoundsGEP(elem, C, b.CreateMul(i, N));
      EmitLoop(b, b.CreateSub(col_end, col_begin), "j",
               [&](llvm::Value* j) { dot_product(i, b.CreateAdd(col_begin, j), crow); });
    });
    b.CreateRetVoid();
    return f;
  }
  // Register tiles: kRows rows by kVectors vectors of C stay in registers over all of k;
  // each step loads kVectors vectors of a row of B and one element of A per row, and
  // multiplies-adds kRows * kVectors vectors (one vector load per two FMAs at 4x2).
  constexpr int kRows = 4, kVectors = 2;
  const unsigned lanes = IsF64(g) ? 4 : 8;  // 256-bit vectors (AVX2; two NEON registers)
  llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
  const int64_t tile_cols = kVectors * lanes;  // TileColumns(g)
  llvm::Value* row_tiles = b.CreateSDiv(M, b.getInt64(kRows));
  llvm::Value* col_tiles = b.CreateSDiv(b.CreateSub(col_end, col_begin), b.getInt64(tile_cols));
  std::vector<llvm::AllocaInst*> acc;
  {
    llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
    for (int t = 0; t < kRows * kVectors; ++t) acc.push_back(entry.CreateAlloca(vec));
  }
  // Column strips outside, blocks of k next, row tiles inside. Each block of a strip of B
  // (kDepth x tile_cols) is first copied to a contiguous buffer that stays in the L1 cache
  // while every row tile reads it (a strip read in place strides through B a row at a time,
  // a new page every few steps). Tiles start from zero in the first block and from C after.
  constexpr int64_t kDepth = 256;
  const llvm::Align elem_align(elem->getPrimitiveSizeInBits() / 8);
  llvm::Value* packed = nullptr;
  {
    llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
    packed = entry.CreateAlloca(llvm::ArrayType::get(elem, kDepth * tile_cols));
  }
  llvm::Value* depth_blocks =
      b.CreateSDiv(b.CreateAdd(K, b.getInt64(kDepth - 1)), b.getInt64(kDepth));
  EmitLoop(b, col_tiles, "jt", [&](llvm::Value* jt) {
    llvm::Value* j0 = b.CreateAdd(col_begin, b.CreateMul(jt, b.getInt64(tile_cols)));
    EmitLoop(b, depth_blocks, "kb", [&](llvm::Value* kb) {
      llvm::Value* p0 = b.CreateMul(kb, b.getInt64(kDepth));
      llvm::Value* rem = b.CreateSub(K, p0);
      llvm::Value* depth =
          b.CreateSelect(b.CreateICmpSLT(rem, b.getInt64(kDepth)), rem, b.getInt64(kDepth));
      EmitLoop(b, depth, "pack", [&](llvm::Value* p) {
        llvm::Value* from =
            b.CreateInBoundsGEP(elem, B, b.CreateAdd(b.CreateMul(b.CreateAdd(p0, p), N), j0));
        llvm::Value* to = b.CreateInBoundsGEP(elem, packed, b.CreateMul(p, b.getInt64(tile_cols)));
        for (int v = 0; v < kVectors; ++v)
          b.CreateAlignedStore(
              b.CreateAlignedLoad(vec, b.CreateInBoundsGEP(elem, from, b.getInt64(v * lanes)),
                                  elem_align),
              b.CreateInBoundsGEP(elem, to, b.getInt64(v * lanes)), elem_align);
      });
      llvm::Value* first_block = b.CreateICmpEQ(kb, b.getInt64(0));
      EmitLoop(b, row_tiles, "it", [&](llvm::Value* it) {
        llvm::Value* i0 = b.CreateMul(it, b.getInt64(kRows));
        auto c_at = [&](int r, int v) {
          llvm::Value* row = b.CreateAdd(i0, b.getInt64(r));
          return b.CreateInBoundsGEP(
              elem, C, b.CreateAdd(b.CreateMul(row, N), b.CreateAdd(j0, b.getInt64(v * lanes))));
        };
        for (int r = 0; r < kRows; ++r) {
          for (int v = 0; v < kVectors; ++v) {
            llvm::Value* start = b.CreateSelect(first_block, llvm::Constant::getNullValue(vec),
                                                b.CreateAlignedLoad(vec, c_at(r, v), elem_align));
            b.CreateStore(start, acc[r * kVectors + v]);
          }
        }
        EmitLoop(b, depth, "p", [&](llvm::Value* p) {
          llvm::Value* brow =
              b.CreateInBoundsGEP(elem, packed, b.CreateMul(p, b.getInt64(tile_cols)));
          std::vector<llvm::Value*> bv;
          for (int v = 0; v < kVectors; ++v)
            bv.push_back(b.CreateAlignedLoad(
                vec, b.CreateInBoundsGEP(elem, brow, b.getInt64(v * lanes)), elem_align));
          for (int r = 0; r < kRows; ++r) {
            llvm::Value* a = b.CreateVectorSplat(
                lanes, a_at(b.CreateAdd(i0, b.getInt64(r)), b.CreateAdd(p0, p)));
            for (int v = 0; v < kVectors; ++v) {
              llvm::AllocaInst* slot = acc[r * kVectors + v];
              b.CreateStore(b.CreateFAdd(b.CreateLoad(vec, slot), b.CreateFMul(a, bv[v])), slot);
            }
          }
        });
        for (int r = 0; r < kRows; ++r)
          for (int v = 0; v < kVectors; ++v)
            b.CreateAlignedStore(b.CreateLoad(vec, acc[r * kVectors + v]), c_at(r, v), elem_align);
      });
    });
  });
  // The edges: columns past the last whole tile of the tiled rows, then every column of the
  // rows past the last whole tile.
  llvm::Value* tiled_rows = b.CreateMul(row_tiles, b.getInt64(kRows));
  llvm::Value* tiled_end = b.CreateAdd(col_begin, b.CreateMul(col_tiles, b.getInt64(tile_cols)));
  EmitLoop(b, M, "edge_i", [&](llvm::Value* i) {
    llvm::Value* crow = b.CreateInBoundsGEP(elem, C, b.CreateMul(i, N));
    llvm::Value* first = b.CreateSelect(b.CreateICmpSLT(i, tiled_rows), tiled_end, col_begin);
    EmitLoop(b, b.CreateSub(col_end, first), "edge_j",
             [&](llvm::Value* jj) { dot_product(i, b.CreateAdd(first, jj), crow); });
  });
  b.CreateRetVoid();
  return f;
}

// cblas_sgemm/cblas_dgemm(RowMajor, transa, transb, M, N, K, 1, A, lda, B, ldb, 0, C, ldc)
// on batch entry i (OpenBLAS's 32-bit integers).
void EmitCblasCall(llvm::IRBuilder<>& b_, llvm::Module& m_, const kernel_plan::GemmShape& g,
                   llvm::Value* a, llvm::Value* b, llvm::Value* c, llvm::Value* i) {
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* elem = IsF64(g) ? b_.getDoubleTy() : b_.getFloatTy();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::FunctionType* ty = llvm::FunctionType::get(
      b_.getVoidTy(), {i32, i32, i32, i32, i32, i32, elem, ptr, i32, ptr, i32, elem, ptr, i32},
      false);
  llvm::FunctionCallee gemm = m_.getOrInsertFunction(IsF64(g) ? "cblas_dgemm" : "cblas_sgemm", ty);
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

// void part(void** table, i64 begin, i64 end): the column parts [begin, end) of one GEMM
// whose A, B and C are table[0..2], for kiln_aot_parallel_for.
llvm::Function* GemmPartFunction(llvm::Module& m, const std::string& prefix,
                                 const kernel_plan::GemmShape& g) {
  const std::string name =
      absl::StrCat(prefix, ".gemm_part.", IsF64(g) ? "f64" : "f32", ".", g.trans_a ? "T" : "N",
                   g.trans_b ? "T" : "N", ".", g.m, "x", g.n, "x", g.k);
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::IRBuilder<> b(m.getContext());
  llvm::Type* ptr = b.getPtrTy();
  llvm::Function* f = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt64Ty(), b.getInt64Ty()}, false),
      llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(m.getContext(), "entry", f));
  std::vector<llvm::Value*> abc;
  for (int i = 0; i < 3; ++i)
    abc.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, f->getArg(0), i)));
  const int64_t cols = TileColumns(g);
  llvm::Value* begin = b.CreateMul(f->getArg(1), b.getInt64(cols));
  llvm::Value* end = b.CreateMul(f->getArg(2), b.getInt64(cols));
  end = b.CreateSelect(b.CreateICmpSLT(end, b.getInt64(g.n)), end, b.getInt64(g.n));
  b.CreateCall(EmittedGemmFunction(m, prefix, g), {abc[0], abc[1], abc[2], b.getInt64(g.m),
                                                   b.getInt64(g.n), b.getInt64(g.k), begin, end});
  b.CreateRetVoid();
  return f;
}

}  // namespace

void EmitGemmBatch(llvm::IRBuilder<>& b_, llvm::Module& m_, AotGemm kind, const std::string& prefix,
                   const kernel_plan::GemmShape& g, llvm::Value* a, llvm::Value* b, llvm::Value* c,
                   llvm::Value* parallel_table) {
  // for (i = 0; i < batch; ++i) gemm(batch entry i)
  EmitLoop(b_, b_.getInt64(g.batch), "gemm_batch", [&](llvm::Value* i) {
    if (kind == AotGemm::kOpenBlas) {
      EmitCblasCall(b_, m_, g, a, b, c, i);
      return;
    }
    if (kind == AotGemm::kOneDnn) {
      EmitOneDnnCall(b_, m_, g, a, b, c, i);
      return;
    }
    llvm::Type* elem = IsF64(g) ? b_.getDoubleTy() : b_.getFloatTy();
    auto entry = [&](llvm::Value* base, int64_t per_batch) {
      return b_.CreateInBoundsGEP(elem, base, b_.CreateMul(i, b_.getInt64(per_batch)));
    };
    llvm::Value* ai = entry(a, g.m * g.k);
    llvm::Value* bi = entry(b, g.k * g.n);
    llvm::Value* ci = entry(c, g.m * g.n);
    const int64_t parts = (g.n + TileColumns(g) - 1) / TileColumns(g);
    if (parallel_table != nullptr && parts >= 2) {
      llvm::Type* ptr = b_.getPtrTy();
      for (int s = 0; s < 3; ++s)
        b_.CreateStore(std::vector<llvm::Value*>{ai, bi, ci}[s],
                       b_.CreateConstInBoundsGEP1_64(ptr, parallel_table, s));
      llvm::FunctionCallee parallel_for = m_.getOrInsertFunction(
          "kiln_aot_parallel_for",
          llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, b_.getInt64Ty()}, false));
      b_.CreateCall(parallel_for,
                    {GemmPartFunction(m_, prefix, g), parallel_table, b_.getInt64(parts)});
      return;
    }
    b_.CreateCall(EmittedGemmFunction(m_, prefix, g),
                  {ai, bi, ci, b_.getInt64(g.m), b_.getInt64(g.n), b_.getInt64(g.k), b_.getInt64(0),
                   b_.getInt64(g.n)});
  });
}

}  // namespace kiln::cpu::aot
