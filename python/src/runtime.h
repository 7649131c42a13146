// The process-wide plugin registry the Python package uses: discovered once, on first use,
// from the same places as the `kiln` tool (KILN_PLUGIN_PATH, the config file, the build or
// install tree) plus the `plugins/` folder beside the extension module (an installed wheel).
#pragma once

#include <string>

#include "core/plugin_registry.h"

namespace kiln::python {

// Throws StatusError when the config cannot be read.
const PluginRegistry& Registry();

// A usable plugin by name, or for "auto" the first candidate (throws StatusError).
const Plugin& PluginFor(const std::string& device);

}  // namespace kiln::python
