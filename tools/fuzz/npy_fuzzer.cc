// libFuzzer target for the .npy reader: never crash; whatever parses must survive a
// write/read round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tools/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::Literal> literal = kiln::ParseNpy(bytes, "fuzz.npy");
  if (!literal.ok()) return 0;
  absl::StatusOr<std::string> written = kiln::SerializeNpy(*literal);
  if (!written.ok()) std::abort();
  absl::StatusOr<kiln::Literal> again = kiln::ParseNpy(*written, "again.npy");
  if (!again.ok()) std::abort();
  if (again->shape().dimensions() != literal->shape().dimensions() ||
      again->shape().element_type() != literal->shape().element_type() ||
      again->size_bytes() != literal->size_bytes() ||
      (literal->size_bytes() > 0 &&  // empty arrays have no data pointer to compare
       std::memcmp(again->untyped_data(), literal->untyped_data(), literal->size_bytes()) != 0)) {
    std::abort();
  }
  return 0;
}
