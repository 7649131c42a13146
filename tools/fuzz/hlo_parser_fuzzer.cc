// libFuzzer target for the HLO text parser, verifier and printer: never crash; a module
// that parses and verifies must print to text that parses again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hlo/text/parser.h"
#include "hlo/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;  // big inputs only slow the search down
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<kiln::HloModule>> module = kiln::ParseHloModule(text, "fuzz.hlo");
  if (!module.ok()) return 0;
  if (!kiln::VerifyModule(**module, kiln::ShapeRules::kXlaText).ok()) return 0;
  std::string printed = (*module)->ToString();
  absl::StatusOr<std::unique_ptr<kiln::HloModule>> again =
      kiln::ParseHloModule(printed, "printed.hlo");
  if (!again.ok()) std::abort();
  return 0;
}
