// `kiln graph run`: parse and verify a .graph file, feed .npy inputs to its Placeholders,
// run it (whole-graph compile or auto-jit clusters + host ops), write or print the outputs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "core/graph/cluster_picture.h"
#include "core/graph/executor.h"
#include "core/graph/graph_text.h"
#include "core/graph/lowering.h"
#include "core/graph/verifier.h"
#include "core/plugin_registry.h"
#include "fmt/format.h"
#include "hlo/text/parser.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/npy.h"
#include "tools/random_inputs.h"

namespace kiln {
namespace {

constexpr const char* kGraphUsage =
    "usage: kiln graph run FILE.graph [--input X.npy]... [--output-dir DIR]\n"
    "                      [--device NAME|auto] [--must-compile|--auto-jit]\n"
    "                      [--log-device-placement] [--log-compiles] [--soft-placement]\n"
    "                      [--dump-clusters FILE.dot|FILE.svg|FILE.html] [--steps N]\n"
    "                      [--no-core-passes]\n"
    "       kiln graph print FILE.graph      (parse, verify, print back)\n"
    "       kiln graph lower FILE.graph [--input X.npy]...  (must-compile lowering, print HLO;\n"
    "                                    inputs give shapes to Placeholders with -1 dims)\n"
    "       kiln graph aot FILE.graph --name NAME --out-dir DIR [--feed P[=SHAPE]]...\n"
    "                      [--fetch NODE[:I]]... [--target TRIPLE] [--cpu CPU] [--features F]\n"
    "                      [--gemm emitted|openblas|onednn] [--no-core-passes] [--parallel]\n"
    "  (ahead of time, as tfcompile: the graph cut to its fetches, lowered whole to DIR/NAME.hlo,\n"
    "  then `kiln aot` on it; feeds are Placeholders, SHAPE like f32[8,784] sets -1 dims,\n"
    "  arguments follow the Placeholders' text order; default: every Placeholder, the\n"
    "  graph's outputs)\n"
    "One --input per Placeholder, in text order; without --input, deterministic\n"
    "pseudo-random inputs are generated as kiln run does (every Placeholder shape must be\n"
    "known). --output-dir writes output_0.npy, ...;\n"
    "without it a summary is printed. --auto-jit (default) compiles maximal compilable\n"
    "clusters and runs host-only ops (Unique) on host kernels; --must-compile compiles the\n"
    "whole graph as one module and fails naming any node that cannot be compiled.\n"
    "Each compilable node runs on the highest-priority plugin whose capability accepts it (or\n"
    "its `device` attribute, else --device); clusters hold nodes of one device.\n"
    "--soft-placement runs nodes whose requested device is unusable (or declines them) on\n"
    "--device (or by capability) instead of failing. --dump-clusters writes the partition as\n"
    "Graphviz DOT, or by the file's extension as an SVG picture or an HTML page (clusters\n"
    "coloured by device; no Graphviz needed).\n"
    "--steps N (Kiln extension, for training graphs) runs the graph N times with the same\n"
    "inputs, keeping variable state (VariableV2) between runs, and prints one line per step:\n"
    "`step 3: loss = 0.4321` (scalars by value, other outputs by type and shape);\n"
    "--output-dir then holds the last step's outputs. Each cluster's module goes through the\n"
    "core passes (as in `kiln run`) before its plugin compiles it; --no-core-passes skips them.\n";

absl::StatusOr<graph::Graph> LoadGraph(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<graph::Graph> g = graph::ParseGraph(*text, path);
  if (!g.ok()) return g.status();
  if (absl::Status s = graph::VerifyGraph(*g); !s.ok()) return s;
  return g;
}

// `step 3: loss = 0.4321, logits = f32(256,10)`: scalars by value, arrays by shape.
std::string StepSummary(int step, const std::vector<graph::Edge>& names,
                        const std::vector<Literal>& values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size(); ++i) {
    const Shape& s = values[i].shape();
    parts.push_back(fmt::format("{} = {}", names[i].ToString(),
                                s.dimensions().empty() && !values[i].IsTuple()
                                    ? fmt::format("{:.7g}", values[i].GetAsDouble(0))
                                    : fmt::format("{}({})", PrimitiveTypeName(s.element_type()),
                                                  fmt::join(s.dimensions(), ","))));
  }
  return fmt::format("step {}: {}\n", step, fmt::join(parts, ", "));
}

// Without --input: deterministic pseudo-random inputs, as `kiln run` makes them, for every
// Placeholder whose shape is fully known; one with a -1 dimension needs --input.
absl::StatusOr<std::vector<Literal>> GenerateInputs(const graph::Graph& g) {
  std::vector<Literal> inputs;
  std::vector<const graph::Node*> placeholders = g.Placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const graph::Node& p = *placeholders[i];
    const graph::AttrValue* dtype = p.FindAttr("dtype");
    const graph::AttrValue* shape = p.FindAttr("shape");
    if (dtype == nullptr || shape == nullptr || !shape->shape().IsFullyDefined()) {
      return absl::InvalidArgumentError(
          fmt::format("Placeholder {} has shape {}: give one --input per Placeholder to set it",
                      p.name, shape ? shape->shape().ToString() : std::string("(unknown)")));
    }
    absl::StatusOr<Literal> input = GeneratedInput(Shape(dtype->type(), shape->shape().dims),
                                                   static_cast<int>(i), "Placeholder " + p.name);
    if (!input.ok()) return input.status();
    inputs.push_back(std::move(*input));
  }
  return inputs;
}

// `kiln graph aot`: the graph's fetches (default: its outputs) lowered whole with its fed
// Placeholders as parameters, written to DIR/NAME.hlo, then compiled by `kiln aot`.
int GraphAot(graph::Graph& g, const std::string& path, const ParsedFlags& flags) {
  if (!flags.Has("name") || !flags.Has("out-dir"))
    return ReportError("graph", "graph aot needs --name NAME and --out-dir DIR", kExitUsage);
  std::map<std::string, graph::ValueInfo> feeds;
  std::set<std::string> fed;
  for (const std::string& feed : flags.All("feed")) {
    const size_t eq = feed.find('=');
    const std::string name = feed.substr(0, eq);
    const graph::Node* node = g.Find(name);
    if (node == nullptr || node->op != "Placeholder")
      return ReportError(
          "graph", fmt::format("--feed {}: {} has no Placeholder named '{}'", feed, path, name));
    fed.insert(name);
    if (eq == std::string::npos) continue;
    absl::StatusOr<Shape> shape = ParseShape(feed.substr(eq + 1));
    if (!shape.ok() || !shape->IsArray())
      return ReportError("graph", fmt::format("--feed {}: expected NAME=SHAPE with SHAPE like "
                                              "f32[8,784]",
                                              feed));
    feeds[name] = {shape->element_type(), graph::TensorShape{shape->dimensions()}};
  }
  if (!fed.empty()) {
    for (const graph::Node* p : g.Placeholders()) {
      if (!fed.count(p->name))
        return ReportError("graph", fmt::format("{}: Placeholder {} is not fed (--feed {}): an "
                                                "AOT artifact takes every input it reads",
                                                p->loc.ToString(), p->name, p->name));
    }
  }
  if (flags.Has("fetch")) {
    std::vector<graph::Edge> fetches;
    for (const std::string& fetch : flags.All("fetch")) {
      const size_t colon = fetch.rfind(':');
      graph::Edge e{fetch, 0};
      if (colon != std::string::npos) {
        e.node = fetch.substr(0, colon);
        try {
          e.index = std::stoi(fetch.substr(colon + 1));
        } catch (const std::exception&) {
          return ReportError("graph", fmt::format("--fetch {}: expected NODE or NODE:INDEX", fetch),
                             kExitUsage);
        }
      }
      if (g.Find(e.node) == nullptr)
        return ReportError(
            "graph", fmt::format("--fetch {}: {} has no node named '{}'", fetch, path, e.node));
      fetches.push_back(e);
    }
    g.set_outputs(std::move(fetches));
  }
  absl::StatusOr<std::unique_ptr<HloModule>> m = graph::LowerToHlo(g, feeds);
  if (!m.ok()) return ReportError("graph", std::string(m.status().message()));
  const std::filesystem::path dir = flags.Get("out-dir");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path hlo = dir / (flags.Get("name") + ".hlo");
  std::ofstream out(hlo);
  out << (*m)->ToString();
  out.close();
  if (ec || !out) return ReportError("graph", fmt::format("{}: cannot write", hlo.string()));
  std::vector<std::string> args = {hlo.string()};
  for (const char* f : {"name", "out-dir", "target", "cpu", "features", "gemm"}) {
    if (flags.Has(f)) args.insert(args.end(), {std::string("--") + f, flags.Get(f)});
  }
  if (flags.Has("no-core-passes")) args.push_back("--no-core-passes");
  if (flags.Has("parallel")) args.push_back("--parallel");
  return AotCommand(args);
}

}  // namespace

int GraphCommand(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.with_value = {"device", "input",    "output-dir", "dump-clusters", "steps",
                     "name",   "out-dir",  "feed",       "fetch",         "target",
                     "cpu",    "features", "gemm"};
  spec.switches = {"help",         "must-compile",   "auto-jit",       "log-device-placement",
                   "log-compiles", "soft-placement", "no-core-passes", "parallel"};
  absl::StatusOr<ParsedFlags> flags = ParseFlags(argv, spec);
  if (!flags.ok()) return ReportError("graph", std::string(flags.status().message()), kExitUsage);
  if (flags->Has("help")) {
    std::cout << kGraphUsage;
    return kExitOk;
  }
  if (flags->positional.size() != 2) {
    return ReportError("graph", "expected `run|print|lower|aot FILE.graph` (see kiln graph --help)",
                       kExitUsage);
  }
  const std::string& sub = flags->positional[0];
  const std::string& path = flags->positional[1];
  if (sub != "run" && sub != "print" && sub != "lower" && sub != "aot") {
    return ReportError("graph", fmt::format("unknown graph subcommand '{}'", sub), kExitUsage);
  }
  if (flags->Has("must-compile") && flags->Has("auto-jit")) {
    return ReportError("graph", "--must-compile and --auto-jit exclude each other", kExitUsage);
  }
  absl::StatusOr<graph::Graph> g = LoadGraph(path);
  if (!g.ok()) return ReportError("graph", std::string(g.status().message()));
  if (sub == "print") {
    std::cout << graph::PrintGraph(*g);
    return kExitOk;
  }
  if (sub == "aot") return GraphAot(*g, path, *flags);
  std::vector<Literal> inputs;
  for (const std::string& file : flags->All("input")) {
    absl::StatusOr<Literal> l = ReadNpyFile(file);
    if (!l.ok()) return ReportError("graph", std::string(l.status().message()));
    inputs.push_back(std::move(*l));
  }
  if (sub == "lower") {
    // Inputs, when given, supply the shapes of Placeholders with unknown dimensions.
    std::map<std::string, graph::ValueInfo> feeds;
    std::vector<const graph::Node*> placeholders = g->Placeholders();
    for (size_t i = 0; i < inputs.size() && i < placeholders.size(); ++i) {
      feeds[placeholders[i]->name] = {inputs[i].shape().element_type(),
                                      graph::TensorShape{inputs[i].shape().dimensions()}};
    }
    absl::StatusOr<std::unique_ptr<HloModule>> m = graph::LowerToHlo(*g, feeds);
    if (!m.ok()) return ReportError("graph", std::string(m.status().message()));
    std::cout << (*m)->ToString();
    return kExitOk;
  }
  if (inputs.empty()) {
    absl::StatusOr<std::vector<Literal>> generated = GenerateInputs(*g);
    if (!generated.ok()) return ReportError("graph", std::string(generated.status().message()));
    inputs = std::move(*generated);
  }
  absl::StatusOr<PluginRegistry> registry = PluginRegistry::Discover();
  if (!registry.ok()) return ReportError("graph", std::string(registry.status().message()));
  graph::ExecutorOptions options;
  options.device = flags->Get("device", "auto");
  options.must_compile = flags->Has("must-compile");
  options.log_compiles = flags->Has("log-compiles");
  options.log_placement = flags->Has("log-device-placement");
  options.soft_placement = flags->Has("soft-placement");
  options.core_passes = !flags->Has("no-core-passes");
  absl::StatusOr<std::unique_ptr<graph::GraphExecutor>> ex =
      graph::GraphExecutor::Create(*g, *registry, options);
  if (!ex.ok()) return ReportError("graph", std::string(ex.status().message()));
  if (flags->Has("dump-clusters")) {
    const std::string file = flags->Get("dump-clusters");
    std::ofstream out(file);
    const std::string ext = std::filesystem::path(file).extension().string();
    out << (ext == ".svg"    ? graph::ClustersToSvg(*g, (*ex)->clusters())
            : ext == ".html" ? graph::ClustersToHtml(*g, (*ex)->clusters())
                             : graph::ClustersToDot(*g, (*ex)->clusters()));
    if (!out) return ReportError("graph", fmt::format("--dump-clusters {}: cannot write", file));
  }
  int steps = 0;  // 0: one run, outputs printed in full
  if (flags->Has("steps")) {
    const std::string s = flags->Get("steps");
    if (!absl::SimpleAtoi(s, &steps) || steps < 1) {
      return ReportError("graph", fmt::format("--steps {}: expected a positive integer", s),
                         kExitUsage);
    }
  }
  absl::StatusOr<std::vector<Literal>> outputs;
  for (int step = 1; step <= std::max(steps, 1); ++step) {
    outputs = (*ex)->Run(inputs);
    if (!outputs.ok()) {
      return ReportError("graph", (steps ? fmt::format("step {}: ", step) : "") +
                                      std::string(outputs.status().message()));
    }
    if (steps) std::cout << StepSummary(step, g->outputs(), *outputs) << std::flush;
  }
  if (options.log_compiles) {
    std::cerr << fmt::format("kiln graph: {} compilation{}\n", (*ex)->compile_count(),
                             (*ex)->compile_count() == 1 ? "" : "s");
  }
  if (flags->Has("output-dir")) {
    std::filesystem::path dir = flags->Get("output-dir");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return ReportError("graph", fmt::format("--output-dir {}: {}", dir.string(), ec.message()));
    for (size_t i = 0; i < outputs->size(); ++i) {
      std::string file = (dir / fmt::format("output_{}.npy", i)).string();
      if (absl::Status s = WriteNpyFile(file, (*outputs)[i]); !s.ok()) {
        return ReportError("graph", std::string(s.message()));
      }
    }
  } else if (steps == 0) {
    for (size_t i = 0; i < outputs->size(); ++i) {
      std::cout << fmt::format("output_{}: {}\n", i, (*outputs)[i].ToString());
    }
  }
  return kExitOk;
}

}  // namespace kiln
