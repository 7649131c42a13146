// Libraries of host custom-call handlers (see custom_call_libraries.h).
#include "tools/custom_call_libraries.h"

#include <dlfcn.h>

#include "core/custom_calls.h"
#include "fmt/format.h"

namespace kiln {

absl::Status LoadCustomCallLibrary(const std::string& path) {
  // Never closed: the handlers it registered stay callable until the process ends.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return absl::InvalidArgumentError(fmt::format("--custom-calls {}: {}", path, dlerror()));
  using Register = void(KILN_RegisterCustomCall_Fn*);
  auto* entry = reinterpret_cast<Register*>(dlsym(lib, "KILN_RegisterCustomCalls"));
  if (entry == nullptr)
    return absl::InvalidArgumentError(
        fmt::format("--custom-calls {}: exports no KILN_RegisterCustomCalls", path));
  entry(KILN_RegisterCustomCall);
  return absl::OkStatus();
}

}  // namespace kiln
