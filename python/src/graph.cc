// kiln.Graph and kiln.GraphSession: the framework-level graph IR from Python (core/graph):
// parse a graph, run it with auto-jit or must-compile, soft placement and placement logs,
// variables kept across runs.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <sstream>

#include "core/graph/executor.h"
#include "core/graph/graph_text.h"
#include "fmt/format.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/runtime.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

struct PyGraph {
  std::string text, filename;  // sessions parse their own copy
  std::shared_ptr<graph::Graph> graph;
};

// One executor over its own copy of the graph: compiled clusters and variables live here.
class PyGraphSession {
 public:
  PyGraphSession(const PyGraph& g, graph::ExecutorOptions options)
      : graph_(
            std::make_unique<graph::Graph>(ValueOrThrow(graph::ParseGraph(g.text, g.filename)))) {
    options.log = &log_;
    exe_ = ValueOrThrow(graph::GraphExecutor::Create(*graph_, Registry(), std::move(options)));
  }

  nb::list Run(nb::args args) {
    std::vector<const graph::Node*> placeholders = graph_->Placeholders();
    if (args.size() != placeholders.size()) {
      throw StatusError(absl::InvalidArgumentError(fmt::format(
          "the graph has {} placeholder(s), got {} input(s)", placeholders.size(), args.size())));
    }
    std::vector<Literal> inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      inputs.push_back(ValueOrThrow(InputFor(*placeholders[i], args[i])));
    }
    absl::StatusOr<std::vector<Literal>> outs;
    {
      nb::gil_scoped_release release;
      outs = exe_->Run(inputs);
    }
    nb::list result;
    for (Literal& l : ValueOrThrow(std::move(outs))) result.append(ArrayFromLiteral(std::move(l)));
    return result;
  }

  // The log lines written since the last call (placement, compiles).
  std::string TakeLog() {
    std::string s = log_.str();
    log_.str("");
    return s;
  }
  int compile_count() const { return exe_->compile_count(); }
  nb::dict Variables() const {
    nb::dict out;
    for (const auto& node : graph_->nodes()) {
      if (const Literal* v = exe_->variables().Find(node->name)) {
        out[node->name.c_str()] = ArrayFromLiteral(*v);
      }
    }
    return out;
  }
  nb::dict Placement() const {
    nb::dict out;
    for (const auto& node : graph_->nodes()) {
      if (!node->assigned_device.empty()) out[node->name.c_str()] = node->assigned_device;
    }
    return out;
  }

 private:
  // A placeholder's value: its dtype, its rank, its known dims (-1 takes the array's).
  static absl::StatusOr<Literal> InputFor(const graph::Node& ph, nb::handle value) {
    const graph::AttrValue* dtype = ph.FindAttr("dtype");
    const graph::AttrValue* shape = ph.FindAttr("shape");
    if (dtype == nullptr || shape == nullptr) {
      return absl::InternalError(fmt::format("placeholder {} has no dtype or shape", ph.name));
    }
    std::vector<int64_t> dims = shape->shape().dims;
    nb::object array = nb::module_::import_("numpy").attr("shape")(value);
    std::vector<int64_t> given;
    for (nb::handle d : array) given.push_back(nb::cast<int64_t>(d));
    if (given.size() == dims.size()) {
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] < 0) dims[i] = given[i];
      }
    }
    return LiteralFromPython(value, Shape(dtype->type(), dims), [&] {
      return fmt::format("placeholder {} {}", ph.name, shape->shape().ToString());
    });
  }

  std::unique_ptr<graph::Graph> graph_;
  std::ostringstream log_;
  std::unique_ptr<graph::GraphExecutor> exe_;
};

}  // namespace

void BindGraph(nb::module_& m) {
  nb::class_<PyGraph>(m, "Graph", "A graph of framework-level ops (Kiln's graph text).")
      .def_prop_ro("text", [](const PyGraph& g) { return graph::PrintGraph(*g.graph); })
      .def_prop_ro(
          "placeholders",
          [](const PyGraph& g) {
            nb::list out;
            for (const graph::Node* p : g.graph->Placeholders()) {
              const graph::AttrValue* dtype = p->FindAttr("dtype");
              const graph::AttrValue* shape = p->FindAttr("shape");
              nb::list dims;
              if (shape != nullptr)
                for (int64_t d : shape->shape().dims) dims.append(d);
              out.append(nb::make_tuple(
                  p->name, dtype ? std::string(PrimitiveTypeName(dtype->type())) : std::string(),
                  nb::tuple(dims)));
            }
            return out;
          },
          "(name, dtype, shape) of each input, in feeding order; -1 = any size.")
      .def("__repr__", [](const PyGraph& g) {
        return fmt::format("<kiln.Graph {} nodes, {} placeholders>", g.graph->nodes().size(),
                           g.graph->Placeholders().size());
      });
  m.def(
      "parse_graph",
      [](const std::string& text, const std::string& filename) {
        PyGraph g{text, filename, nullptr};
        g.graph = std::make_shared<graph::Graph>(ValueOrThrow(graph::ParseGraph(text, filename)));
        return g;
      },
      nb::arg("text"), nb::arg("filename") = "<graph>");

  nb::class_<PyGraphSession>(m, "GraphSession",
                             "Runs a graph; keeps its compiled clusters and variables.")
      .def(
          "__init__",
          [](PyGraphSession* self, const PyGraph& g, const std::string& device, bool must_compile,
             bool soft_placement, bool log_placement, bool log_compiles, bool core_passes) {
            graph::ExecutorOptions o;
            o.device = device;
            o.must_compile = must_compile;
            o.soft_placement = soft_placement;
            o.log_placement = log_placement;
            o.log_compiles = log_compiles;
            o.core_passes = core_passes;
            new (self) PyGraphSession(g, std::move(o));
          },
          nb::arg("graph"), nb::arg("device") = "auto", nb::arg("must_compile") = false,
          nb::arg("soft_placement") = false, nb::arg("log_placement") = false,
          nb::arg("log_compiles") = false, nb::arg("core_passes") = true)
      .def("run", &PyGraphSession::Run, "Feeds the placeholders in order; returns the outputs.")
      .def("take_log", &PyGraphSession::TakeLog,
           "Placement and compile log lines written since the last call.")
      .def_prop_ro("compile_count", &PyGraphSession::compile_count)
      .def_prop_ro("variables", &PyGraphSession::Variables,
                   "Variable values after the last successful run.")
      .def_prop_ro("placement", &PyGraphSession::Placement,
                   "The device each node ran on ('host' for host ops).");
}

}  // namespace kiln::python
