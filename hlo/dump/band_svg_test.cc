// The band picture: one band rectangle per band, one node box per node, one path per edge,
// text escaped, bands stacked top to bottom in order, and nodes left to right in a band.
#include "hlo/dump/band_svg.h"

#include <gtest/gtest.h>

#include <regex>

namespace kiln {
namespace {

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The y of band `label`'s rectangle, from `<g class="band"><rect x=".." y="Y"`.
int BandY(const std::string& svg, const std::string& label) {
  size_t text = svg.find(">" + label + "</text>");
  size_t g = svg.rfind("<g class=\"band\">", text);
  std::smatch m;
  std::string piece = svg.substr(g, text - g);
  EXPECT_TRUE(std::regex_search(piece, m, std::regex("y=\"([0-9]+)\""))) << piece;
  return std::stoi(m[1]);
}

TEST(BandSvg, DrawsBandsNodesEdgesAndLegend) {
  BandGraph g;
  g.bands = {{"inputs", "#f0f0f0"}, {"cluster_0 on a<b>", PaletteColor(0)}, {"host", "#d9d9d9"}};
  g.nodes = {{"x\nPlaceholder", 0}, {"n1\nAdd", 1}, {"n2\nMul", 1}, {"u\nUnique", 2}};
  g.edges = {{0, 1, false, ""}, {1, 2, false, ""}, {2, 3, true, "1"}};
  g.legend = {{"a<b>", PaletteColor(0)}, {"host", "#d9d9d9"}};
  std::string svg = BandGraphToSvg(g);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(Count(svg, "<g class=\"band\">"), 3);
  EXPECT_EQ(Count(svg, "<g class=\"node\">"), 4);
  EXPECT_EQ(Count(svg, "marker-end=\"url(#arrow)\""), 3);
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 1);
  EXPECT_NE(svg.find(">cluster_0 on a&lt;b&gt;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b>"), std::string::npos);
  EXPECT_LT(BandY(svg, "inputs"), BandY(svg, "cluster_0 on a&lt;b&gt;"));
  EXPECT_LT(BandY(svg, "cluster_0 on a&lt;b&gt;"), BandY(svg, "host"));
  // n1 left of n2 in their band.
  EXPECT_LT(svg.find(">n1</text>"), svg.find(">n2</text>"));
  std::string html = BandGraphToHtml(g, "t & t", "digraph {}");
  EXPECT_NE(html.find("<title>t &amp; t</title>"), std::string::npos);
  EXPECT_NE(html.find("<pre>digraph {}</pre>"), std::string::npos);
}

}  // namespace
}  // namespace kiln
