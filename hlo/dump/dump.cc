// Writes module dumps: text, DOT, HTML (SVG through Graphviz when available).
#include "hlo/dump/dump.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "hlo/dump/band_svg.h"

namespace kiln {
namespace {

std::string EscapeDot(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Single-quoted for /bin/sh.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

bool HaveDotProgram() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && access((dir + "/dot").c_str(), X_OK) == 0) return true;
  return false;
}

absl::Status WriteFile(const std::filesystem::path& p, std::string_view text) {
  std::ofstream f(p, std::ios::binary);
  if (!f) return absl::UnavailableError("cannot write dump file '" + p.string() + "'");
  f << text;
  f.close();
  if (!f) return absl::UnavailableError("error writing dump file '" + p.string() + "'");
  return absl::OkStatus();
}

std::string SafeName(std::string_view s) {
  std::string out;
  for (char c : s)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out;
}

class DotWriter {
 public:
  std::string Write(const HloModule& module) {
    out_ = "digraph \"" + EscapeDot(module.name()) + "\" {\n";
    out_ +=
        "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", "
        "fontsize=10, fillcolor=\"#ffffff\"];\n";
    if (const HloComputation* entry = module.entry()) {
      for (const HloInstruction* i : entry->MakeInstructionPostOrder()) Node(*i, "  ");
      for (const HloInstruction* i : entry->MakeInstructionPostOrder()) Edges(*i);
    }
    out_ += "}\n";
    return out_;
  }

 private:
  std::string Id(const HloInstruction* i) {
    auto [it, inserted] = ids_.try_emplace(i, static_cast<int>(ids_.size()));
    return fmt::format("n{}", it->second);
  }

  static const char* Color(const HloInstruction& i) {
    switch (i.opcode()) {
      case HloOpcode::kParameter:
        return "#fff3c4";
      case HloOpcode::kConstant:
        return "#eeeeee";
      case HloOpcode::kDot:
      case HloOpcode::kConvolution:
        return "#f8c9c9";
      case HloOpcode::kReduce:
        return "#c9e4f8";
      default:
        return IsElementwiseOpcode(i.opcode()) ? "#d9f2d0" : "#ffffff";
    }
  }

  void Node(const HloInstruction& i, const std::string& indent) {
    if (i.opcode() == HloOpcode::kFusion) {
      const HloComputation* body = i.fused_computation();
      out_ += fmt::format(
          "{}subgraph cluster_{} {{\n{}  label=\"{}\\n{} {}\";\n{}  style=\"rounded,filled\"; "
          "fillcolor=\"#f4f0fb\";\n",
          indent, Id(&i), indent, EscapeDot(i.name()), FusionKindString(i.attrs().fusion_kind),
          EscapeDot(i.shape().ToString(false)), indent);
      for (const HloInstruction* x : body->MakeInstructionPostOrder())
        if (x->opcode() != HloOpcode::kParameter) Node(*x, indent + "  ");
      out_ += indent + "}\n";
      return;
    }
    out_ += fmt::format("{}{} [label=\"{}\\n{} {}\", fillcolor=\"{}\"];\n", indent, Id(&i),
                        EscapeDot(i.name()), HloOpcodeString(i.opcode()),
                        EscapeDot(i.shape().ToString(false)), Color(i));
  }

  // The node that stands for the value of `i` (a fusion's root inside its cluster).
  const HloInstruction* Source(const HloInstruction* i) {
    while (i->opcode() == HloOpcode::kFusion) i = i->fused_computation()->root();
    return i;
  }

  // Edges into `i` (and into the instructions of its body when it is a fusion).
  void Edges(const HloInstruction& i) {
    if (i.opcode() != HloOpcode::kFusion) {
      for (const HloInstruction* o : i.operands())
        out_ += fmt::format("  {} -> {};\n", Id(Source(o)), Id(&i));
      return;
    }
    const HloComputation* body = i.fused_computation();
    for (const HloInstruction* x : body->MakeInstructionPostOrder()) {
      if (x->opcode() == HloOpcode::kParameter) continue;
      if (x->opcode() == HloOpcode::kFusion) {
        Edges(*x);
        continue;
      }
      for (const HloInstruction* o : x->operands()) {
        if (o->opcode() == HloOpcode::kParameter) {
          const HloInstruction* outer = i.operand(static_cast<int>(o->parameter_number()));
          out_ += fmt::format("  {} -> {};\n", Id(Source(outer)), Id(x));
        } else {
          out_ += fmt::format("  {} -> {};\n", Id(Source(o)), Id(x));
        }
      }
    }
  }

  std::string out_;
  absl::flat_hash_map<const HloInstruction*, int> ids_;
};

std::string Html(const HloModule& module, std::string_view pass, std::string_view svg,
                 std::string_view dot) {
  std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                    EscapeXml(module.name()) + " after " + EscapeXml(pass) +
                    "</title>\n<style>body{font-family:sans-serif} pre{background:#f6f6f6;"
                    "padding:8px;overflow:auto}</style></head><body>\n<h1>" +
                    EscapeXml(module.name()) + " after " + EscapeXml(pass) + "</h1>\n";
  if (!svg.empty()) {
    size_t at = svg.find("<svg");
    out += std::string(at == std::string_view::npos ? svg : svg.substr(at));
  } else {
    out +=
        "<p>Graphviz <code>dot</code> was not found; render the graph below with "
        "<code>dot -Tsvg</code> or any Graphviz viewer.</p>\n<h2>Graph (DOT)</h2>\n<pre>" +
        EscapeXml(dot) + "</pre>\n";
  }
  out += "<h2>Module text</h2>\n<pre>" + EscapeXml(module.ToString()) + "</pre>\n</body></html>\n";
  return out;
}

}  // namespace

std::string ModuleToDot(const HloModule& module) { return DotWriter().Write(module); }

absl::Status DumpModule(const HloModule& module, const DumpOptions& options,
                        std::string_view pass_name, int sequence) {
  if (!options.pass_regex.empty()) {
    try {
      std::regex re(options.pass_regex, std::regex::ECMAScript);
      if (!std::regex_search(std::string(pass_name), re)) return absl::OkStatus();
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("bad --dump-pass-re regex '" + options.pass_regex +
                                        "': " + e.what());
    }
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec)
    return absl::UnavailableError("cannot create dump directory '" + options.dir +
                                  "': " + ec.message());
  std::string base = fmt::format("{}{}.{:02d}.{}", options.prefix, SafeName(module.name()),
                                 sequence, SafeName(pass_name));
  fs::path dir(options.dir);
  if (absl::Status s = WriteFile(dir / (base + ".txt"), module.ToString()); !s.ok()) return s;
  if (!options.graph) return absl::OkStatus();
  std::string dot = ModuleToDot(module);
  fs::path dot_path = dir / (base + ".dot");
  if (absl::Status s = WriteFile(dot_path, dot); !s.ok()) return s;
  std::string svg;
  if (HaveDotProgram()) {
    fs::path svg_path = dir / (base + ".svg");
    std::string cmd = "dot -Tsvg " + ShellQuote(dot_path.string()) + " -o " +
                      ShellQuote(svg_path.string()) + " 2>/dev/null";
    if (std::system(cmd.c_str()) == 0) {
      std::ifstream f(svg_path);
      std::stringstream ss;
      ss << f.rdbuf();
      svg = ss.str();
    }
  }
  return WriteFile(dir / (base + ".html"), Html(module, pass_name, svg, dot));
}

absl::Status DumpModule(const HloModule& module, std::string_view dir, std::string_view prefix,
                        std::string_view pass_name, int sequence, std::string_view pass_regex) {
  DumpOptions o;
  o.dir = std::string(dir);
  o.prefix = std::string(prefix);
  o.pass_regex = std::string(pass_regex);
  return DumpModule(module, o, pass_name, sequence);
}

absl::Status DumpReport(const HloModule& module, std::string_view dir, std::string_view name,
                        int sequence, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(std::string(dir), ec);
  if (ec)
    return absl::UnavailableError("cannot create dump directory '" + std::string(dir) +
                                  "': " + ec.message());
  std::string base =
      fmt::format("{}.{:02d}.{}.txt", SafeName(module.name()), sequence, SafeName(name));
  return WriteFile(std::filesystem::path(std::string(dir)) / base, std::string(text));
}

void ModuleDumper::AfterPass(std::string_view pass_name, const HloModule& module) {
  if (!options_.pass_regex.empty()) {
    try {
      if (!std::regex_search(std::string(pass_name), std::regex(options_.pass_regex))) return;
    } catch (const std::regex_error&) {
      // DumpModule reports it below.
    }
  }
  absl::Status s = DumpModule(module, options_, pass_name, sequence_++);
  if (!s.ok() && status_.ok()) status_ = s;
}

}  // namespace kiln
