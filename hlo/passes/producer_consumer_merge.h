// Producer-consumer merging, the second half of multi-output fusion
// (MultiOutputFusionOptions::producer_consumer): elementwise loops merged into the elementwise
// loops that read them element by element, the producers' values still outputs where
// something else reads them.
#pragma once

#include "hlo/module.h"
#include "hlo/passes/fusion_util.h"
#include "hlo/passes/multi_output_fusion.h"

namespace kiln {

// Merges in `comp` within `options`' limits; whether anything changed. The instruction order
// is left for the caller to sort.
bool MergeProducersIntoConsumers(HloComputation* comp, const MultiOutputFusionOptions& options,
                                 FusionNameTable& names);

}  // namespace kiln
