// Assembles the fusion pipeline from its passes.
#include "hlo/passes/fusion_pipeline.h"

#include "hlo/passes/dce.h"
#include "hlo/passes/instruction_fusion.h"
#include "hlo/passes/multi_output_fusion.h"

namespace kiln {

std::unique_ptr<HloPassPipeline> MakeFusionPipeline() {
  auto pipeline = std::make_unique<HloPassPipeline>("fusion-pipeline");
  pipeline->AddPass<InstructionFusion>();
  pipeline->AddPass<MultiOutputFusion>();
  // Both passes delete what they absorb; DCE sweeps whatever else is dead.
  pipeline->AddPass<HloDCE>();
  return pipeline;
}

}  // namespace kiln
