// Pictures without external tools: a partitioned graph drawn as SVG, one horizontal band per
// group (cluster) in the given order, its nodes left to right, edges as arrows. Used where a
// dump must render without Graphviz (`kiln graph run --dump-clusters FILE.svg|.html`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct BandGraph {
  struct Band {
    std::string label;
    std::string color;  // fill, "#rrggbb"
  };
  struct Node {
    std::string label;  // lines separated by '\n'
    int band = 0;
  };
  struct Edge {
    int from = 0, to = 0;  // node indices; within a band `from` comes first
    bool dashed = false;
    std::string label;
  };
  std::vector<Band> bands;
  std::vector<Node> nodes;  // in each band, drawn in this order
  std::vector<Edge> edges;
  std::vector<std::pair<std::string, std::string>> legend;  // text, colour
};

std::string BandGraphToSvg(const BandGraph& g);
// A standalone page: title, the SVG, then `source` (e.g. DOT) in a <pre> block when not empty.
std::string BandGraphToHtml(const BandGraph& g, std::string_view title, std::string_view source);

// Distinct pastel fills for the first names, then repeating.
std::string PaletteColor(int index);
// Text safe inside XML/HTML elements and attribute values.
std::string EscapeXml(std::string_view s);

}  // namespace kiln
