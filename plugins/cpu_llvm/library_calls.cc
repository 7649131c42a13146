#include "plugins/cpu_llvm/library_calls.h"

#include "absl/strings/str_cat.h"
#include "plugins/cpu_llvm/fft_library.h"
#include "plugins/cpu_llvm/lapack_library.h"
#include "plugins/cpu_llvm/scan_library.h"
#include "plugins/cpu_llvm/top_k_library.h"

namespace kiln::cpu {

bool IsLibraryCall(const HloInstruction& h) {
  return IsLapackLibraryCall(h) || IsFftLibraryCall(h) || IsTopKLibraryCall(h) ||
         IsScanLibraryCall(h);
}

namespace {

struct PreparedLapackCall : kernel_plan::LibraryCallArgs {
  explicit PreparedLapackCall(const LapackCall& c) : call(c) {}
  LapackCall call;
};

}  // namespace

std::shared_ptr<const kernel_plan::LibraryCallArgs> LibraryCallArgsOf(const HloInstruction& h) {
  if (std::optional<LapackCall> call = PrepareLapackCall(h))
    return std::make_shared<PreparedLapackCall>(*call);
  return nullptr;
}

absl::Status RunLibraryCall(const HloInstruction& h, const kernel_plan::LibraryCallArgs* args,
                            std::span<const Literal* const> operands, Literal& out,
                            ThreadPool* pool) {
  if (const auto* lapack = dynamic_cast<const PreparedLapackCall*>(args)) {
    RunLapackLibrary(lapack->call, operands, out, pool);
    return absl::OkStatus();
  }
  if (h.opcode() == HloOpcode::kTopK) {
    if (!IsTopKLibraryCall(h) || operands.size() != 1)
      return absl::InternalError(absl::StrCat("%", h.name(), " is not a library call"));
    RunTopK(h, *operands[0], out, pool);
    return absl::OkStatus();
  }
  if (h.opcode() == HloOpcode::kReduceWindow) {
    if (!IsScanLibraryCall(h) || operands.size() != 2)
      return absl::InternalError(absl::StrCat("%", h.name(), " is not a library call"));
    RunScan(h, *operands[0], out, pool);
    return absl::OkStatus();
  }
  // LAPACK checks its own calls (RunLapackLibrary).
  if (h.opcode() != HloOpcode::kFft) return RunLapackLibrary(h, operands, out, pool);
  if (!IsFftLibraryCall(h) || operands.size() != 1)
    return absl::InternalError(absl::StrCat("%", h.name(), " is not a library call"));
  RunFftLibrary(h, *operands[0], out, pool);
  return absl::OkStatus();
}

}  // namespace kiln::cpu
