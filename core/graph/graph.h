// The framework-level graph IR: named nodes with an op, typed attributes, data and control
// inputs and device requests; graph inputs are Placeholder nodes, outputs a list of values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hlo/primitive_type.h"

namespace kiln::graph {

// A graph-level shape: dimensions, -1 where unknown until run time (Placeholder only).
struct TensorShape {
  std::vector<int64_t> dims;
  bool operator==(const TensorShape&) const = default;
  int rank() const { return static_cast<int>(dims.size()); }
  bool IsFullyDefined() const;
  int64_t num_elements() const;  // -1 when not fully defined
  std::string ToString() const;  // `(2,-1)`
};

enum class AttrKind { kType, kInt, kFloat, kBool, kString, kInts, kFloats, kShape };
std::string_view AttrKindName(AttrKind k);

class AttrValue {
 public:
  using Storage = std::variant<PrimitiveType, int64_t, double, bool, std::string,
                               std::vector<int64_t>, std::vector<double>, TensorShape>;
  AttrValue() : v_(int64_t{0}) {}
  AttrValue(Storage v) : v_(std::move(v)) {}  // NOLINT: implicit on purpose, for builders
  static AttrValue Type(PrimitiveType t) { return AttrValue(Storage(t)); }
  static AttrValue Int(int64_t v) { return AttrValue(Storage(v)); }
  static AttrValue Float(double v) { return AttrValue(Storage(v)); }
  static AttrValue Bool(bool v) { return AttrValue(Storage(v)); }
  static AttrValue String(std::string v) { return AttrValue(Storage(std::move(v))); }
  static AttrValue Ints(std::vector<int64_t> v) { return AttrValue(Storage(std::move(v))); }
  static AttrValue Floats(std::vector<double> v) { return AttrValue(Storage(std::move(v))); }
  static AttrValue ShapeOf(TensorShape s) { return AttrValue(Storage(std::move(s))); }

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  PrimitiveType type() const { return std::get<PrimitiveType>(v_); }
  int64_t i() const { return std::get<int64_t>(v_); }
  double f() const { return std::get<double>(v_); }
  bool b() const { return std::get<bool>(v_); }
  const std::string& s() const { return std::get<std::string>(v_); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<double>& floats() const { return std::get<std::vector<double>>(v_); }
  const TensorShape& shape() const { return std::get<TensorShape>(v_); }
  // Int, float, int list or float list read as numbers (Const's `value`).
  std::vector<double> AsNumbers() const;

  std::string ToString()
      const;  // the text form: `f32`, `3`, `0.5`, `true`, `"s"`, `[1,2]`, `(2,3)`
  bool operator==(const AttrValue&) const = default;

 private:
  Storage v_;
};

// Where a node's text came from, for located errors (line 0 when built in C++).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string ToString() const;  // `file:line:col` or empty
};

// One data input: output `index` of node `node`.
struct Edge {
  std::string node;
  int index = 0;
  bool operator==(const Edge&) const = default;
  std::string ToString() const { return index == 0 ? node : node + ":" + std::to_string(index); }
};

struct Node {
  std::string name;
  std::string op;
  std::map<std::string, AttrValue> attrs;
  std::vector<Edge> inputs;
  std::vector<std::string> control_inputs;
  std::string requested_device;  // the `device` attribute in text; empty = any
  std::string assigned_device;   // filled by the executor's placement
  SourceLoc loc;

  const AttrValue* FindAttr(const std::string& n) const;
};

class Graph {
 public:
  // Appends a node; nodes keep their insertion (text) order. Returns it for more edits.
  Node& AddNode(Node node);
  // Builder shorthand: `g.Add("n3", "MatMul", {{"x"}, {"w"}}, {{"transpose_b", Bool(true)}})`.
  Node& Add(std::string name, std::string op, std::vector<Edge> inputs = {},
            std::map<std::string, AttrValue> attrs = {});
  Node& AddPlaceholder(std::string name, PrimitiveType dtype, std::vector<int64_t> dims);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const Node* Find(const std::string& name) const;
  Node* FindMutable(const std::string& name);

  const std::vector<Edge>& outputs() const { return outputs_; }
  void set_outputs(std::vector<Edge> o) { outputs_ = std::move(o); }
  SourceLoc outputs_loc;  // the `outputs:` line, when parsed

  // Placeholder nodes in insertion order: the graph's inputs, fed in this order.
  std::vector<const Node*> Placeholders() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, Node*> by_name_;
  std::vector<Edge> outputs_;
};

}  // namespace kiln::graph
