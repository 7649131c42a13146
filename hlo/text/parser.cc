// HLO text parser (stub: to be written).
#include "hlo/text/parser.h"

#include "absl/status/status.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text,
                                                          std::string_view filename) {
  return absl::UnimplementedError("parser not written yet");
}
absl::StatusOr<Shape> ParseShape(std::string_view text) {
  return absl::UnimplementedError("parser not written yet");
}

}  // namespace kiln
