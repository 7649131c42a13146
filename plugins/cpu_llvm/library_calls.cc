#include "plugins/cpu_llvm/library_calls.h"

#include "absl/strings/str_cat.h"
#include "plugins/cpu_llvm/fft_library.h"
#include "plugins/cpu_llvm/lapack_library.h"

namespace kiln::cpu {

bool IsLibraryCall(const HloInstruction& h) {
  return IsLapackLibraryCall(h) || IsFftLibraryCall(h);
}

absl::Status RunLibraryCall(const HloInstruction& h, std::span<const Literal* const> operands,
                            Literal& out, ThreadPool* pool) {
  if (IsFftLibraryCall(h) && operands.size() == 1) {
    RunFftLibrary(h, *operands[0], out, pool);
    return absl::OkStatus();
  }
  if (IsLapackLibraryCall(h)) return RunLapackLibrary(h, operands, out);
  return absl::InternalError(absl::StrCat("%", h.name(), " is not a library call"));
}

}  // namespace kiln::cpu
