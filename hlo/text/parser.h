// Parser for XLA's HLO text format (both the `%name` style with typed operands and the
// newer bare style). Errors carry `filename:line:col: message`.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "hlo/module.h"

namespace kiln {

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text,
                                                          std::string_view filename = "<text>");
// Parses a shape such as `f32[2,3]{1,0}` or `(f32[], s32[4])`.
absl::StatusOr<Shape> ParseShape(std::string_view text);

}  // namespace kiln
