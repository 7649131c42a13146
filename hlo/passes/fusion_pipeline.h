// The fusion pipeline: producer-consumer fusion, then sibling multi-output fusion, then
// dead-code removal. Runs after the simplification pipeline.
#pragma once

#include <memory>

#include "hlo/passes/pass_pipeline.h"

namespace kiln {

std::unique_ptr<HloPassPipeline> MakeFusionPipeline();

}  // namespace kiln
