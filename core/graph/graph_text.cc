// Parser and printer of the graph text format (see graph_text.h).
#include "core/graph/graph_text.h"

#include <cctype>
#include <cstdlib>

#include "fmt/format.h"

namespace kiln::graph {
namespace {

class LineParser {
 public:
  LineParser(std::string_view line, std::string_view file, int lineno)
      : s_(line), file_(file), line_(lineno) {}

  absl::Status Error(const std::string& msg) const { return ErrorAt(pos_, msg); }
  absl::Status ErrorAt(size_t pos, const std::string& msg) const {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", std::string(file_), line_, pos + 1, msg));
  }
  SourceLoc Loc(size_t pos) const { return {std::string(file_), line_, static_cast<int>(pos) + 1}; }
  size_t pos() const { return pos_; }

  void Skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '#') pos_ = s_.size();  // trailing comment
  }
  bool AtEnd() {
    Skip();
    return pos_ >= s_.size();
  }
  bool Consume(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status Expect(char c, std::string_view what) {
    if (Consume(c)) return absl::OkStatus();
    return Error(fmt::format("expected '{}' {}, found {}", c, what, Found()));
  }
  std::string Found() {
    Skip();
    if (pos_ >= s_.size()) return "end of line";
    return fmt::format("'{}'", s_[pos_]);
  }
  static bool IdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '/';
  }
  absl::StatusOr<std::string> Ident(std::string_view what) {
    Skip();
    size_t start = pos_;
    if (pos_ < s_.size() &&
        (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      while (pos_ < s_.size() && IdentChar(s_[pos_])) ++pos_;
    }
    if (pos_ == start) return Error(fmt::format("expected {}, found {}", what, Found()));
    return std::string(s_.substr(start, pos_ - start));
  }
  absl::StatusOr<Edge> ParseEdge() {
    absl::StatusOr<std::string> name = Ident("a node name");
    if (!name.ok()) return name.status();
    Edge e{*name, 0};
    if (Consume(':')) {
      Skip();
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_) return Error("expected an output index after ':'");
      e.index = std::atoi(std::string(s_.substr(start, pos_ - start)).c_str());
    }
    return e;
  }

  // A number: int unless it has '.', 'e' or is inf/nan. `is_float` says which.
  absl::StatusOr<double> Number(bool* is_float) {
    Skip();
    size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    if (s_.substr(pos_, 3) == "inf" || s_.substr(pos_, 3) == "nan") {
      pos_ += 3;
      *is_float = true;
    } else {
      *is_float = false;
      while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                  s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
                                  ((s_[pos_] == '-' || s_[pos_] == '+') &&
                                   (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')))) {
        if (!std::isdigit(static_cast<unsigned char>(s_[pos_]))) *is_float = true;
        ++pos_;
      }
    }
    std::string text(s_.substr(start, pos_ - start));
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      return ErrorAt(start, fmt::format("malformed number '{}'", text));
    }
    return v;
  }

  absl::StatusOr<AttrValue> Value() {
    Skip();
    if (pos_ >= s_.size()) return Error("expected an attribute value, found end of line");
    char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != '"') {
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
        out += s_[pos_++];
      }
      if (pos_ >= s_.size()) return Error("unterminated string");
      ++pos_;
      return AttrValue::String(out);
    }
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++pos_;
      std::vector<double> vals;
      bool any_float = false;
      if (!Consume(close)) {
        while (true) {
          bool f = false;
          absl::StatusOr<double> v = Number(&f);
          if (!v.ok()) return v.status();
          any_float |= f;
          vals.push_back(*v);
          if (Consume(close)) break;
          if (!Consume(','))
            return Error(fmt::format("expected ',' or '{}', found {}", close, Found()));
        }
      }
      if (close == ')') {
        if (any_float) return Error("shape dimensions must be integers");
        return AttrValue::ShapeOf({std::vector<int64_t>(vals.begin(), vals.end())});
      }
      if (any_float) return AttrValue::Floats(vals);
      return AttrValue::Ints(std::vector<int64_t>(vals.begin(), vals.end()));
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      bool f = false;
      absl::StatusOr<double> v = Number(&f);
      if (!v.ok()) return v.status();
      if (f) return AttrValue::Float(*v);
      return AttrValue::Int(static_cast<int64_t>(*v));
    }
    size_t start = pos_;
    absl::StatusOr<std::string> word = Ident("an attribute value");
    if (!word.ok()) return word.status();
    if (*word == "true") return AttrValue::Bool(true);
    if (*word == "false") return AttrValue::Bool(false);
    if (*word == "inf" || *word == "nan") {
      return AttrValue::Float(std::strtod(word->c_str(), nullptr));
    }
    std::optional<PrimitiveType> t = PrimitiveTypeFromName(*word);
    if (!t) return ErrorAt(start, fmt::format("unknown attribute value '{}'", *word));
    return AttrValue::Type(*t);
  }

  std::string_view rest() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  std::string_view file_;
  int line_;
  size_t pos_ = 0;
};

absl::Status ParseNodeLine(LineParser& p, Graph& g) {
  p.Skip();
  size_t start = p.pos();
  Node n;
  n.loc = p.Loc(start);
  absl::StatusOr<std::string> name = p.Ident("a node name");
  if (!name.ok()) return name.status();
  n.name = *name;
  if (g.Find(n.name) != nullptr) {
    return p.ErrorAt(start, fmt::format("node '{}' is defined twice (first at {})", n.name,
                                        g.Find(n.name)->loc.ToString()));
  }
  if (absl::Status s = p.Expect('=', "after the node name"); !s.ok()) return s;
  absl::StatusOr<std::string> op = p.Ident("an op name");
  if (!op.ok()) return op.status();
  n.op = *op;
  if (p.Consume('[') && !p.Consume(']')) {
    while (true) {
      p.Skip();
      size_t attr_pos = p.pos();
      absl::StatusOr<std::string> key = p.Ident("an attribute name");
      if (!key.ok()) return key.status();
      if (absl::Status s = p.Expect('=', "after the attribute name"); !s.ok()) return s;
      absl::StatusOr<AttrValue> v = p.Value();
      if (!v.ok()) return v.status();
      if (*key == "device") {
        if (v->kind() != AttrKind::kString) {
          return p.ErrorAt(attr_pos, "attribute 'device' must be a string");
        }
        n.requested_device = v->s();
      } else if (!n.attrs.emplace(*key, *v).second) {
        return p.ErrorAt(attr_pos, fmt::format("attribute '{}' given twice", *key));
      }
      if (p.Consume(']')) break;
      if (!p.Consume(',')) return p.Error(fmt::format("expected ',' or ']', found {}", p.Found()));
    }
  }
  if (absl::Status s = p.Expect('(', "before the operands"); !s.ok()) return s;
  if (!p.Consume(')')) {
    while (true) {
      absl::StatusOr<Edge> e = p.ParseEdge();
      if (!e.ok()) return e.status();
      n.inputs.push_back(*e);
      if (p.Consume(')')) break;
      if (!p.Consume(',')) return p.Error(fmt::format("expected ',' or ')', found {}", p.Found()));
    }
  }
  if (p.Consume('@')) {
    while (true) {
      absl::StatusOr<std::string> c = p.Ident("a control input name");
      if (!c.ok()) return c.status();
      n.control_inputs.push_back(*c);
      if (!p.Consume(',')) break;
    }
  }
  if (!p.AtEnd()) return p.Error(fmt::format("unexpected {} after the node", p.Found()));
  g.AddNode(std::move(n));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> ParseGraph(std::string_view text, std::string_view file) {
  Graph g;
  bool have_outputs = false;
  int lineno = 0;
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++lineno;
    LineParser p(line, file, lineno);
    if (p.AtEnd()) continue;
    p.Skip();
    if (p.rest().starts_with("outputs") &&
        p.rest().substr(7).find_first_not_of(" \t") != std::string_view::npos &&
        p.rest().substr(7)[p.rest().substr(7).find_first_not_of(" \t")] == ':') {
      size_t start = p.pos();
      (void)p.Ident("outputs");
      (void)p.Consume(':');
      if (have_outputs) return p.ErrorAt(start, "second 'outputs:' line");
      have_outputs = true;
      g.outputs_loc = p.Loc(start);
      std::vector<Edge> outs;
      while (true) {
        absl::StatusOr<Edge> e = p.ParseEdge();
        if (!e.ok()) return e.status();
        outs.push_back(*e);
        if (p.AtEnd()) break;
        if (!p.Consume(',')) return p.Error(fmt::format("expected ',', found {}", p.Found()));
      }
      g.set_outputs(std::move(outs));
      continue;
    }
    if (absl::Status s = ParseNodeLine(p, g); !s.ok()) return s;
  }
  if (!have_outputs) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:1: missing 'outputs:' line", std::string(file), lineno));
  }
  return g;
}

std::string PrintNode(const Node& n) {
  std::string s = n.name + " = " + n.op;
  std::vector<std::string> attrs;
  for (const auto& [k, v] : n.attrs) attrs.push_back(k + "=" + v.ToString());
  if (!n.requested_device.empty()) {
    attrs.push_back("device=" + AttrValue::String(n.requested_device).ToString());
  }
  if (!attrs.empty()) s += fmt::format("[{}]", fmt::join(attrs, ", "));
  std::vector<std::string> ins;
  for (const Edge& e : n.inputs) ins.push_back(e.ToString());
  s += fmt::format("({})", fmt::join(ins, ", "));
  if (!n.control_inputs.empty()) s += fmt::format(" @ {}", fmt::join(n.control_inputs, ", "));
  return s;
}

std::string PrintGraph(const Graph& g) {
  std::string s;
  for (const auto& n : g.nodes()) s += PrintNode(*n) + "\n";
  std::vector<std::string> outs;
  for (const Edge& e : g.outputs()) outs.push_back(e.ToString());
  s += fmt::format("outputs: {}\n", fmt::join(outs, ", "));
  return s;
}

}  // namespace kiln::graph
