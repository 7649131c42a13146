// HLO text printer (stub: to be written): HloModule/HloInstruction::ToString.
#include "hlo/module.h"

namespace kiln {

std::string HloInstruction::ToString() const { return name(); }
std::string HloModule::ToString() const { return "HloModule " + name(); }

}  // namespace kiln
