// backend_config's content (see backend_config.h).
#include "hlo/backend_config.h"

namespace kiln {

std::string BackendConfigText(const HloInstruction& instr) {
  const std::string* text = instr.attrs().FindExtra("backend_config");
  if (text == nullptr) return "";
  if (text->size() < 2 || text->front() != '"' || text->back() != '"') return *text;
  std::string out;
  for (size_t i = 1; i + 1 < text->size(); ++i) {
    char c = (*text)[i];
    if (c == '\\' && i + 2 < text->size()) {
      c = (*text)[++i];
      if (c == 'n') c = '\n';
      if (c == 't') c = '\t';
    }
    out += c;
  }
  return out;
}

}  // namespace kiln
