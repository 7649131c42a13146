// The auto-jit partition as a picture that needs no external tools: SVG (or an HTML page
// holding it and the DOT source), one band per cluster coloured by its device.
#pragma once

#include <string>
#include <vector>

#include "core/graph/executor.h"

namespace kiln::graph {

std::string ClustersToSvg(const Graph& g, const std::vector<Cluster>& clusters);
std::string ClustersToHtml(const Graph& g, const std::vector<Cluster>& clusters);

}  // namespace kiln::graph
