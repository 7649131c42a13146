// Band layout: band k is a row; node widths follow their longest label line (monospace).
#include "hlo/dump/band_svg.h"

#include <algorithm>
#include <sstream>

#include "fmt/format.h"

namespace kiln {
namespace {

constexpr int kCharW = 7, kLineH = 14, kPad = 8, kGapX = 28, kBandPadY = 26, kMargin = 16;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line, '\n');) out.push_back(line);
  if (out.empty()) out.push_back("");
  return out;
}

}  // namespace

std::string EscapeXml(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string PaletteColor(int index) {
  static const char* const kColors[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                        "#fb9a99", "#ffff99", "#8dd3c7", "#bebada"};
  return kColors[index % (sizeof(kColors) / sizeof(kColors[0]))];
}

std::string BandGraphToSvg(const BandGraph& g) {
  const int nb = static_cast<int>(g.bands.size());
  struct Box {
    int x, y, w, h;
  };
  std::vector<Box> box(g.nodes.size());
  std::vector<int> band_h(nb, 0), band_w(nb, 0), band_y(nb, 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::vector<std::string> lines = Lines(g.nodes[i].label);
    size_t chars = 0;
    for (const std::string& l : lines) chars = std::max(chars, l.size());
    box[i].w = static_cast<int>(chars) * kCharW + 2 * kPad;
    box[i].h = static_cast<int>(lines.size()) * kLineH + kPad;
    int b = g.nodes[i].band;
    box[i].x = kMargin + kPad + band_w[b];
    band_w[b] += box[i].w + kGapX;
    band_h[b] = std::max(band_h[b], box[i].h);
  }
  int width = 0, y = kMargin;
  for (int b = 0; b < nb; ++b) {
    band_w[b] = std::max(band_w[b], static_cast<int>(g.bands[b].label.size()) * kCharW + kGapX);
    width = std::max(width, band_w[b] + 2 * kPad + 2 * kMargin);
    band_y[b] = y;
    y += band_h[b] + kBandPadY + 2 * kPad + 18;  // room for the label and the arrows
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) box[i].y = band_y[g.nodes[i].band] + kBandPadY;
  const int legend_y = y;
  const int height = legend_y + (g.legend.empty() ? 0 : 24) + kMargin;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"monospace\" font-size=\"11\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker>"
      "</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      width, height, width, height);
  for (int b = 0; b < nb; ++b) {
    s += fmt::format(
        "<g class=\"band\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"{}\" "
        "fill-opacity=\"0.45\" stroke=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-weight=\"bold\">{}</text>"
        "</g>\n",
        kMargin, band_y[b], width - 2 * kMargin, band_h[b] + kBandPadY + kPad, g.bands[b].color,
        g.bands[b].color, kMargin + kPad, band_y[b] + 16, EscapeXml(g.bands[b].label));
  }
  for (const BandGraph::Edge& e : g.edges) {
    const Box& a = box[e.from];
    const Box& b = box[e.to];
    std::string d;
    if (g.nodes[e.from].band == g.nodes[e.to].band) {
      // Same band: an arc above the row, from the top of one to the top of the other.
      int x0 = a.x + a.w / 2, x1 = b.x + b.w / 2, top = a.y - 14;
      d = fmt::format("M{},{} C{},{} {},{} {},{}", x0, a.y, x0, top, x1, top, x1, b.y);
    } else {
      int x0 = a.x + a.w / 2, y0 = a.y + a.h, x1 = b.x + b.w / 2, y1 = b.y;
      d = fmt::format("M{},{} C{},{} {},{} {},{}", x0, y0, x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, x1,
                      y1);
    }
    s +=
        fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#444\"{} marker-end=\"url(#arrow)\"/>\n",
                    d, e.dashed ? " stroke-dasharray=\"4,3\"" : "");
    if (!e.label.empty()) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#444\">{}</text>\n",
                       (a.x + a.w / 2 + b.x + b.w / 2) / 2 + 3, (a.y + b.y) / 2 + a.h / 2,
                       EscapeXml(e.label));
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Box& bx = box[i];
    s += fmt::format(
        "<g class=\"node\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" "
        "fill=\"#ffffff\" stroke=\"#222\"/>",
        bx.x, bx.y, bx.w, bx.h);
    std::vector<std::string> lines = Lines(g.nodes[i].label);
    for (size_t k = 0; k < lines.size(); ++k) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", bx.x + bx.w / 2,
                       bx.y + kPad / 2 + kLineH * static_cast<int>(k + 1) - 3, EscapeXml(lines[k]));
    }
    s += "</g>\n";
  }
  int x = kMargin;
  for (const auto& [text, color] : g.legend) {
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\" stroke=\"#222\"/>"
        "<text x=\"{}\" y=\"{}\">{}</text>\n",
        x, legend_y, color, x + 18, legend_y + 11, EscapeXml(text));
    x += 18 + static_cast<int>(text.size()) * kCharW + 20;
  }
  return s + "</svg>\n";
}

std::string BandGraphToHtml(const BandGraph& g, std::string_view title, std::string_view source) {
  std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                    EscapeXml(title) + "</title></head>\n<body>\n<h1>" + EscapeXml(title) +
                    "</h1>\n" + BandGraphToSvg(g);
  if (!source.empty()) out += "<h2>Source</h2>\n<pre>" + EscapeXml(source) + "</pre>\n";
  return out + "</body></html>\n";
}

}  // namespace kiln
