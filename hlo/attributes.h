// Typed attributes of HLO instructions (dimension numbers, windows, padding, ...).
// Plain structs: the parser fills them, the printer prints them, passes read them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions, rhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions, rhs_contracting_dimensions;
  // ragged-dot only: the one ragged lhs dimension and the rhs group dimension (if any).
  std::vector<int64_t> lhs_ragged_dimensions, rhs_group_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;   // `rhs_dilate` in text
  int64_t base_dilation = 1;     // `lhs_dilate` in text
  bool window_reversal = false;  // `rhs_reversal` in text
  bool operator==(const WindowDimension&) const = default;
};

struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window&) const = default;
};

// `dim_labels=b01f_01io->b01f`: which dimension of each operand/result plays which role.
struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 0;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0;
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 0;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

// `padding=0_1_2x3_4`: low_high_interior per dimension.
struct PaddingDimension {
  int64_t edge_padding_low = 0;
  int64_t edge_padding_high = 0;
  int64_t interior_padding = 0;
  bool operator==(const PaddingDimension&) const = default;
};
using PaddingConfig = std::vector<PaddingDimension>;

enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
// `type=TOTALORDER` etc.; kDefault means "derived from the element type".
enum class ComparisonType { kDefault, kFloat, kFloatTotalOrder, kSigned, kUnsigned };

enum class FusionKind { kLoop, kInput, kOutput, kCustom };

enum class RandomDistribution { kUniform, kNormal };
enum class RandomAlgorithm { kDefault, kThreeFry, kPhilox };

enum class FftType { kFft, kIfft, kRfft, kIrfft };

enum class TriangularSolveTranspose { kNoTranspose, kTranspose, kAdjoint };

}  // namespace kiln
