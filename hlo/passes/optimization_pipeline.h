// The standard target-independent pipelines Kiln runs before handing a module to a plugin.
#pragma once

#include <memory>

#include "hlo/passes/pass_pipeline.h"

namespace kiln {

// async-to-sync, library-call-lowering, algsimp, constant-folding, tuple-simplifier,
// transpose-folding, cse, dce, repeated until none of them changes the module.
std::unique_ptr<HloPassPipeline> MakeSimplificationPipeline();

}  // namespace kiln
