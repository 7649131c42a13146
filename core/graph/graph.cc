// Graph IR basics: attribute values, shapes and node bookkeeping.
#include "core/graph/graph.h"

#include "fmt/format.h"

namespace kiln::graph {

bool TensorShape::IsFullyDefined() const {
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  return true;
}

int64_t TensorShape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

std::string TensorShape::ToString() const { return fmt::format("({})", fmt::join(dims, ",")); }

std::string_view AttrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::kType:
      return "type";
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kBool:
      return "bool";
    case AttrKind::kString:
      return "string";
    case AttrKind::kInts:
      return "list of ints";
    case AttrKind::kFloats:
      return "list of floats";
    case AttrKind::kShape:
      return "shape";
  }
  return "?";
}

std::vector<double> AttrValue::AsNumbers() const {
  switch (kind()) {
    case AttrKind::kInt:
      return {static_cast<double>(i())};
    case AttrKind::kFloat:
      return {f()};
    case AttrKind::kInts:
      return std::vector<double>(ints().begin(), ints().end());
    case AttrKind::kFloats:
      return floats();
    default:
      return {};
  }
}

namespace {
// Shortest text that reads back as the same double, always with a '.' or exponent so it
// stays a float when parsed again.
std::string FloatText(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf/nan
  return s;
}
}  // namespace

std::string AttrValue::ToString() const {
  switch (kind()) {
    case AttrKind::kType:
      return std::string(PrimitiveTypeName(type()));
    case AttrKind::kInt:
      return fmt::format("{}", i());
    case AttrKind::kFloat:
      return FloatText(f());
    case AttrKind::kBool:
      return b() ? "true" : "false";
    case AttrKind::kString: {
      std::string out = "\"";
      for (char c : s()) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
      return out + "\"";
    }
    case AttrKind::kInts:
      return fmt::format("[{}]", fmt::join(ints(), ","));
    case AttrKind::kFloats: {
      std::string out = "[";
      for (size_t k = 0; k < floats().size(); ++k) out += (k ? "," : "") + FloatText(floats()[k]);
      return out + "]";
    }
    case AttrKind::kShape:
      return shape().ToString();
  }
  return "";
}

std::string SourceLoc::ToString() const {
  if (line == 0) return file;
  return fmt::format("{}:{}:{}", file, line, col);
}

const AttrValue* Node::FindAttr(const std::string& n) const {
  auto it = attrs.find(n);
  return it == attrs.end() ? nullptr : &it->second;
}

Node& Graph::AddNode(Node node) {
  nodes_.push_back(std::make_unique<Node>(std::move(node)));
  Node* n = nodes_.back().get();
  by_name_.emplace(n->name, n);  // a duplicate keeps the first; the verifier reports it
  return *n;
}

Node& Graph::Add(std::string name, std::string op, std::vector<Edge> inputs,
                 std::map<std::string, AttrValue> attrs) {
  Node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  return AddNode(std::move(n));
}

Node& Graph::AddPlaceholder(std::string name, PrimitiveType dtype, std::vector<int64_t> dims) {
  return Add(std::move(name), "Placeholder", {},
             {{"dtype", AttrValue::Type(dtype)}, {"shape", AttrValue::ShapeOf({std::move(dims)})}});
}

const Node* Graph::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Node* Graph::FindMutable(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const Node*> Graph::Placeholders() const {
  std::vector<const Node*> out;
  for (const auto& n : nodes_) {
    if (n->op == "Placeholder") out.push_back(n.get());
  }
  return out;
}

}  // namespace kiln::graph
