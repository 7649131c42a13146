// HLO text parser: module header, stack-frame tables, computations and instructions. Reads
// characters through a Cursor; recursion is limited to tuple shapes/literals (depth-capped),
// so malformed or deeply nested input cannot overflow the stack.
#include "hlo/text/parser.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "hlo/shape_inference.h"
#include "hlo/text/attribute_text.h"
#include "hlo/text/lexer.h"
#include "hlo/text/literal_text.h"
#include "hlo/text/shape_text.h"

namespace kiln {
namespace {

using hlo_text::Cursor;
using hlo_text::IsDigit;

#define KILN_RETURN_IF_ERROR(expr) \
  do {                             \
    absl::Status _st = (expr);     \
    if (!_st.ok()) return _st;     \
  } while (0)

// A reference to a computation by name, resolved once the whole module is read.
struct ComputationRef {
  std::string name;
  size_t at;
};

// Called-computation attributes of one instruction, before they are put in XLA's positional
// order.
struct CallAttributes {
  std::optional<ComputationRef> to_apply, calls, condition, body, select, scatter, true_comp,
      false_comp;
  std::vector<ComputationRef> branches, called;
  bool has_branches = false, has_called = false;
};

// The text of an attribute value with line wrapping undone: whitespace runs that contain a
// newline become one space, `//` comments are dropped; quoted strings are copied unchanged.
std::string NormalizeValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  size_t i = 0;
  while (i < v.size()) {
    char ch = v[i];
    if (ch == '"') {
      size_t j = i + 1;
      while (j < v.size() && v[j] != '"') j += (v[j] == '\\') ? 2 : 1;
      j = std::min(j + 1, v.size());
      out.append(v.substr(i, j - i));
      i = j;
    } else if (ch == '/' && i + 1 < v.size() && v[i + 1] == '/') {
      while (i < v.size() && v[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < v.size() && v[i + 1] == '*') {
      size_t close = v.find("*/", i + 2);
      size_t j = close == std::string_view::npos ? v.size() : close + 2;
      out.append(v.substr(i, j - i));
      i = j;
    } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      size_t j = i;
      bool newline = false;
      while (j < v.size() && (v[j] == ' ' || v[j] == '\t' || v[j] == '\n' || v[j] == '\r')) {
        newline |= v[j] == '\n';
        ++j;
      }
      if (newline) {
        // A `//` comment may have left a space already.
        if (!out.empty() && out.back() != ' ') out.push_back(' ');
      } else {
        out.append(v.substr(i, j - i));
      }
      i = j;
    } else {
      out.push_back(ch);
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename) : c_(text, filename) {}

  absl::StatusOr<std::unique_ptr<HloModule>> ParseModule() {
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    if (!c_.TryConsumeWord("HloModule"))
      return c_.Expected("'HloModule' at the start of the module");
    std::string name;
    KILN_RETURN_IF_ERROR(c_.ReadName("the module name", &name));
    c_.TryConsume(':');  // `HloModule name:`, an old form XLA still reads
    module_ = std::make_unique<HloModule>(name);
    while (c_.TryConsume(',')) {
      std::string attr;
      size_t at = c_.pos();
      KILN_RETURN_IF_ERROR(c_.ReadName("a module attribute name", &attr));
      for (const auto& [k, v] : module_->attributes())
        if (k == attr)
          return c_.ErrorAt(at, fmt::format("module attribute '{}' given twice", attr));
      KILN_RETURN_IF_ERROR(c_.ExpectF('=', "'=' after module attribute '{}'", attr));
      size_t b, e;
      KILN_RETURN_IF_ERROR(ScanValue(&b, &e));
      module_->attributes().emplace_back(attr, NormalizeValue(c_.text().substr(b, e - b)));
    }
    KILN_RETURN_IF_ERROR(ParseStackFrameTables());
    while (true) {
      KILN_RETURN_IF_ERROR(c_.SkipSpace());
      if (c_.AtEnd()) break;
      KILN_RETURN_IF_ERROR(ParseComputation());
    }
    if (module_->computations().empty()) return c_.Error("module has no computations");
    KILN_RETURN_IF_ERROR(ResolveComputationReferences());
    if (!module_->entry()) module_->set_entry(module_->computations().back());
    return std::move(module_);
  }

 private:
  // The extent of an attribute value: up to a `,` or whitespace outside brackets and
  // quotes, or a closing bracket that the value did not open.
  absl::Status ScanValue(size_t* begin, size_t* end) {
    while (c_.Peek() == ' ' || c_.Peek() == '\t') c_.Advance();
    // XLA's tests break lines after `condition=`: the value is on the next line.
    if (c_.Peek() == '\n' || c_.Peek() == '\r') {
      Cursor probe = c_;
      while (probe.Peek() == ' ' || probe.Peek() == '\t' || probe.Peek() == '\n' ||
             probe.Peek() == '\r')
        probe.Advance();
      // Not when the next line starts an instruction (`padding=` may be empty).
      Cursor word = probe;
      if (word.Peek() == '%') word.Advance();
      const std::string_view w = word.PeekWord();
      word.Advance(w.size());
      while (word.Peek() == ' ' || word.Peek() == '\t') word.Advance();
      const bool instruction = w == "ROOT" || (!w.empty() && word.Peek() == '=');
      if (!probe.AtEnd() && !instruction && probe.Peek() != ',' && probe.Peek() != ')' &&
          probe.Peek() != '}')
        c_ = probe;
    }
    *begin = c_.pos();
    std::vector<std::pair<char, size_t>> open;  // bracket and where it opened
    while (!c_.AtEnd()) {
      char ch = c_.Peek();
      if (ch == '"') {
        size_t at = c_.pos();
        c_.Advance();
        while (!c_.AtEnd() && c_.Peek() != '"') c_.Advance(c_.Peek() == '\\' ? 2 : 1);
        if (c_.AtEnd()) return c_.ErrorAt(at, "unterminated string in attribute value");
        c_.Advance();
        continue;
      }
      if (ch == '/' && (c_.Peek(1) == '*' || c_.Peek(1) == '/')) {
        if (open.empty()) break;
        KILN_RETURN_IF_ERROR(c_.SkipSpace());
        continue;
      }
      if (ch == '{' || ch == '[' || ch == '(') {
        open.emplace_back(ch, c_.pos());
      } else if (ch == '}' || ch == ']' || ch == ')') {
        if (open.empty()) break;
        char want = open.back().first == '{' ? '}' : open.back().first == '[' ? ']' : ')';
        if (ch != want) {
          return c_.Error(fmt::format("'{}' does not match the '{}' opened at {}", ch,
                                      open.back().first, Where(open.back().second)));
        }
        open.pop_back();
      } else if (open.empty() &&
                 (ch == ',' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')) {
        break;
      }
      c_.Advance();
    }
    if (!open.empty()) {
      return c_.ErrorAt(open.back().second,
                        fmt::format("'{}' in attribute value is never closed", open.back().first));
    }
    *end = c_.pos();
    return absl::OkStatus();
  }

  std::string Where(size_t at) const { return c_.Location(at); }

  // FileNames / FunctionNames / FileLocations / StackFrames tables, kept verbatim.
  absl::Status ParseStackFrameTables() {
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    size_t start = c_.pos(), end = start;
    auto is_table = [&] {
      std::string_view w = c_.PeekWord();
      if (c_.Peek() == '%') return false;
      if (w != "FileNames" && w != "FunctionNames" && w != "FileLocations" && w != "StackFrames")
        return false;
      Cursor probe = c_;
      probe.Advance(w.size());
      if (!probe.SkipSpace().ok()) return false;
      return IsDigit(probe.Peek()) || probe.PeekWord() == "FileNames" ||
             probe.PeekWord() == "FunctionNames" || probe.PeekWord() == "FileLocations" ||
             probe.PeekWord() == "StackFrames" || probe.AtEnd() || probe.PeekWord() == "ENTRY";
    };
    while (is_table()) {
      c_.Advance(c_.PeekWord().size());
      end = c_.pos();
      while (true) {
        KILN_RETURN_IF_ERROR(c_.SkipSpace());
        if (!IsDigit(c_.Peek())) break;
        int64_t id;
        KILN_RETURN_IF_ERROR(c_.ReadInt("a table entry id", &id));
        KILN_RETURN_IF_ERROR(c_.SkipSpace());
        if (c_.Peek() == '"') {
          std::string ignored;
          KILN_RETURN_IF_ERROR(c_.ReadQuoted("a quoted name", &ignored));
        } else if (c_.Peek() == '{') {
          size_t b, e;
          KILN_RETURN_IF_ERROR(ScanValue(&b, &e));
        } else {
          return c_.Expected("a quoted string or '{' in the stack frame table entry");
        }
        end = c_.pos();
      }
    }
    if (end > start)
      module_->set_stack_frame_tables(std::string(c_.text().substr(start, end - start)));
    return absl::OkStatus();
  }

  absl::Status ParseComputation() {
    size_t at = c_.pos();
    bool is_entry = c_.TryConsumeWord("ENTRY");
    std::string name;
    KILN_RETURN_IF_ERROR(c_.ReadName(
        is_entry ? "a computation name after ENTRY" : "a computation name or ENTRY", &name));
    if (computations_.contains(name))
      return c_.ErrorAt(at, fmt::format("computation '{}' is defined twice", name));
    // Optional signature: `(p: f32[2], ...) -> f32[2]`.
    std::optional<std::pair<Shape, size_t>> sig_result;
    if (c_.TryConsume('(')) {
      if (!c_.TryConsume(')')) {
        while (true) {
          std::string pname;
          KILN_RETURN_IF_ERROR(c_.ReadName("a parameter name in the signature", &pname));
          KILN_RETURN_IF_ERROR(c_.Expect(':', "':' after the parameter name"));
          KILN_RETURN_IF_ERROR(c_.SkipSpace());
          Shape ignored;  // read, not checked: the body's parameters decide (see below)
          KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(c_, &ignored));
          if (c_.TryConsume(')')) break;
          KILN_RETURN_IF_ERROR(c_.Expect(',', "',' or ')' in the signature"));
        }
      }
      KILN_RETURN_IF_ERROR(c_.Expect('-', "'->' after the parameters"));
      KILN_RETURN_IF_ERROR(c_.Expect('>', "'->' after the parameters"));
      KILN_RETURN_IF_ERROR(c_.SkipSpace());
      size_t shape_at = c_.pos();
      Shape s;
      KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(c_, &s));
      sig_result.emplace(std::move(s), shape_at);
    }
    KILN_RETURN_IF_ERROR(ParseComputationAttributes());
    KILN_RETURN_IF_ERROR(c_.Expect('{', "'{' starting the computation body"));
    auto comp = std::make_unique<HloComputation>(name);
    HloComputation* cp = comp.get();
    if (is_entry && module_->entry()) {
      return c_.ErrorAt(at, fmt::format("second ENTRY computation '{}' (the first is '{}')", name,
                                        module_->entry()->name()));
    }
    module_->AddComputation(std::move(comp), is_entry);
    computations_[name] = cp;
    KILN_RETURN_IF_ERROR(ParseBody(cp, at));
    if (sig_result) {
      // The body decides the parameters: XLA's parser reads the signature's parameter list
      // and checks only its result against the root (dumps may list parameters the body no
      // longer has, and XLA's tests write signatures that disagree with the body).
      if (!sig_result->first.Compatible(cp->root()->shape())) {
        return c_.ErrorAt(
            sig_result->second,
            fmt::format("signature gives result shape {}, but the root '{}' is {}",
                        hlo_text::ShapeToText(sig_result->first, false), cp->root()->name(),
                        hlo_text::ShapeToText(cp->root()->shape(), false)));
      }
    }
    return absl::OkStatus();
  }

  // The instructions of `cp` after its '{' up to and including the '}' (and the
  // attributes XLA writes after it); its root and parameters are checked. `at` locates
  // errors about the whole computation.
  absl::Status ParseBody(HloComputation* cp, size_t at) {
    const std::string& name = cp->name();
    instructions_.clear();
    HloInstruction* root = nullptr;
    HloInstruction* last = nullptr;
    while (true) {
      KILN_RETURN_IF_ERROR(c_.SkipSpace());
      if (c_.AtEnd())
        return c_.ErrorAt(at, fmt::format("computation '{}' is never closed with '}}'", name));
      if (c_.Peek() == '}') {
        c_.Advance();
        break;
      }
      size_t instr_at = c_.pos();
      bool is_root = c_.TryConsumeWord("ROOT");
      HloInstruction* instr = nullptr;
      KILN_RETURN_IF_ERROR(ParseInstruction(cp, &instr));
      if (is_root) {
        if (root) {
          return c_.ErrorAt(instr_at,
                            fmt::format("second ROOT in computation '{}' (the first is '{}')", name,
                                        root->name()));
        }
        root = instr;
      }
      last = instr;
    }
    // XLA writes them after the body: `%c (...) -> f32[] { ... }, execution_thread="main"`.
    KILN_RETURN_IF_ERROR(ParseComputationAttributes());
    if (!last) return c_.ErrorAt(at, fmt::format("computation '{}' has no instructions", name));
    cp->set_root(root ? root : last);
    // Parameters must be numbered 0..n-1.
    for (int i = 0; i < cp->num_parameters(); ++i) {
      if (!cp->parameter(i))
        return c_.ErrorAt(
            at, fmt::format("computation '{}' has no parameter({}) but has parameter({})", name, i,
                            cp->num_parameters() - 1));
    }
    return absl::OkStatus();
  }

  // A computation written in place of a name (`to_apply={ ... }`): parsed as a computation
  // of its own named after the attribute (`<instruction>.to_apply`), referred to by that.
  absl::Status ParseInlineComputation(Cursor v, const std::string& base, ComputationRef* out) {
    out->at = v.pos();
    out->name = base;
    for (int n = 1; computations_.contains(out->name); ++n)
      out->name = fmt::format("{}.{}", base, n);
    KILN_RETURN_IF_ERROR(v.Expect('{', "'{' starting the inline computation"));
    auto comp = std::make_unique<HloComputation>(out->name);
    HloComputation* cp = comp.get();
    module_->AddComputation(std::move(comp), /*is_entry=*/false);
    computations_[out->name] = cp;
    // The body is parsed by the same code with the caller's state set aside.
    auto callers_instructions = std::move(instructions_);
    Cursor caller = c_;
    c_ = v;
    absl::Status st = ParseBody(cp, out->at);
    if (st.ok()) st = c_.SkipSpace();
    if (st.ok() && !c_.AtEnd()) st = c_.Expected("the end of the inline computation");
    c_ = caller;
    instructions_ = std::move(callers_instructions);
    return st;
  }

  // `, execution_thread="name"` (XLA's one computation attribute), before or after the body.
  // The thread is not kept: Kiln runs every computation on the thread that runs the module.
  absl::Status ParseComputationAttributes() {
    while (c_.TryConsume(',')) {
      KILN_RETURN_IF_ERROR(c_.SkipSpace());
      size_t at = c_.pos();
      std::string key, value;
      KILN_RETURN_IF_ERROR(c_.ReadName("a computation attribute", &key));
      if (key != "execution_thread")
        return c_.ErrorAt(at, fmt::format("unknown computation attribute '{}' (known: "
                                          "execution_thread)",
                                          key));
      KILN_RETURN_IF_ERROR(c_.Expect('=', "'=' after execution_thread"));
      KILN_RETURN_IF_ERROR(c_.ReadQuoted("the thread name", &value));
    }
    return absl::OkStatus();
  }

  // The opcode word, including XLA's `<op>-start` / `-update` / `-done` shorthand for async
  // wrappers of one instruction.
  absl::Status ParseOpcode(HloOpcode* op, std::optional<HloOpcode>* wrapped) {
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    std::string_view w = c_.Peek() == '%' ? std::string_view() : c_.PeekWord();
    if (w.empty()) return c_.Expected("an opcode");
    if (auto o = StringToHloOpcode(w)) {
      *op = *o;
      c_.Advance(w.size());
      return absl::OkStatus();
    }
    const std::pair<std::string_view, HloOpcode> suffixes[] = {{"-start", HloOpcode::kAsyncStart},
                                                               {"-update", HloOpcode::kAsyncUpdate},
                                                               {"-done", HloOpcode::kAsyncDone}};
    for (const auto& [suffix, async_op] : suffixes) {
      if (w.size() > suffix.size() && w.substr(w.size() - suffix.size()) == suffix) {
        if (auto inner = StringToHloOpcode(w.substr(0, w.size() - suffix.size()))) {
          *op = async_op;
          *wrapped = *inner;
          c_.Advance(w.size());
          return absl::OkStatus();
        }
      }
    }
    return c_.Error(fmt::format("unknown opcode '{}'", w));
  }

  absl::Status ParseInstruction(HloComputation* comp, HloInstruction** out) {
    std::string name;
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    size_t name_at = c_.pos();
    KILN_RETURN_IF_ERROR(c_.ReadName("an instruction name or '}'", &name));
    if (instructions_.contains(name)) {
      return c_.ErrorAt(
          name_at,
          fmt::format("instruction '{}' is defined twice in computation '{}'", name, comp->name()));
    }
    KILN_RETURN_IF_ERROR(c_.ExpectF('=', "'=' after instruction name '{}'", name));
    return ParseInstructionBody(comp, name, /*nested=*/false, out);
  }

  // An instruction from its shape (or opcode) on, named `name`. A nested one is an operand
  // written in place (`convert(s8[4] parameter(0))`): its attributes end at a ',' that no
  // `name=` follows, and at the ')' closing its user's operands.
  absl::Status ParseInstructionBody(HloComputation* comp, const std::string& name, bool nested,
                                    HloInstruction** out) {
    Shape shape;
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    size_t shape_begin = c_.pos();
    // XLA may leave the shape out where it can be inferred: `%t = tuple(%a, %b)`.
    const bool shape_written = hlo_text::AtShapeStart(c_) || !OpcodeFollows();
    if (shape_written) {
      KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(c_, &shape));
      KILN_RETURN_IF_ERROR(hlo_text::ParseLayoutAfterSpace(c_, &shape));
    }
    std::string_view shape_text = c_.text().substr(shape_begin, c_.pos() - shape_begin);
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    size_t op_at = c_.pos();
    HloOpcode op = HloOpcode::kAdd;
    std::optional<HloOpcode> wrapped;
    KILN_RETURN_IF_ERROR(ParseOpcode(&op, &wrapped));
    if (!shape_written && (op == HloOpcode::kConstant || op == HloOpcode::kParameter))
      return c_.ErrorAt(op_at, fmt::format("'{}' needs its shape written before the opcode", name));
    KILN_RETURN_IF_ERROR(c_.ExpectF('(', "'(' after opcode '{}'", HloOpcodeString(op)));
    auto instr = std::make_unique<HloInstruction>(op, std::move(shape));
    instr->set_name(name);
    InstructionAttributes& attrs = instr->mutable_attrs();
    attrs.async_wrapped_opcode = wrapped;
    if (op == HloOpcode::kConstant) {
      KILN_RETURN_IF_ERROR(hlo_text::ParseLiteral(c_, instr->shape(), &attrs.literal));
      KILN_RETURN_IF_ERROR(c_.Expect(')', "')' after the constant's value"));
    } else if (op == HloOpcode::kParameter) {
      size_t at = c_.pos();
      KILN_RETURN_IF_ERROR(c_.ReadInt("a parameter number", &attrs.parameter_number));
      // Numbers 0..n-1 must all appear, so n cannot exceed the text's length; the bound keeps
      // a malformed number from sizing a huge parameter table.
      if (attrs.parameter_number < 0 ||
          attrs.parameter_number > static_cast<int64_t>(c_.text().size()))
        return c_.ErrorAt(
            at, fmt::format("parameter number {} is out of range", attrs.parameter_number));
      if (comp->parameters().size() > static_cast<size_t>(attrs.parameter_number) &&
          comp->parameter(static_cast<int>(attrs.parameter_number))) {
        return c_.ErrorAt(at, fmt::format("parameter({}) is defined twice in computation '{}'",
                                          attrs.parameter_number, comp->name()));
      }
      KILN_RETURN_IF_ERROR(c_.Expect(')', "')' after the parameter number"));
    } else if (!c_.TryConsume(')')) {
      while (true) {
        KILN_RETURN_IF_ERROR(c_.SkipSpace());
        // The operand's written shape, if any. Usually it is the same text as at the
        // operand's definition, which was parsed there; only a differing text is parsed.
        std::optional<std::pair<size_t, size_t>> written;
        if (hlo_text::AtShapeStart(c_)) {
          size_t at = c_.pos();
          if (!SkipCompactShape()) {
            c_.set_pos(at);
            Shape s;
            KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(c_, &s));
          }
          written.emplace(at, c_.pos());
          KILN_RETURN_IF_ERROR(c_.SkipSpace());
        }
        if (OpcodeFollows()) {  // a nested instruction, named after its user
          if (written) c_.set_pos(written->first);
          std::string nested_name;
          for (int k = instr->operand_count();; ++k) {
            nested_name = fmt::format("{}.operand{}", name, k);
            if (!instructions_.contains(nested_name)) break;
          }
          HloInstruction* operand = nullptr;
          KILN_RETURN_IF_ERROR(ParseInstructionBody(comp, nested_name, /*nested=*/true, &operand));
          instr->AppendOperand(operand);
          KILN_RETURN_IF_ERROR(c_.SkipSpace());
          if (c_.TryConsume(')')) break;
          KILN_RETURN_IF_ERROR(c_.Expect(',', "',' or ')' after an operand"));
          continue;
        }
        size_t at = c_.pos();
        std::string_view operand;
        KILN_RETURN_IF_ERROR(ReadNameView("an operand name", &operand));
        auto it = instructions_.find(absl::string_view(operand.data(), operand.size()));
        if (it == instructions_.end()) {
          return c_.ErrorAt(at, fmt::format("operand '{}' of '{}' is not defined earlier in "
                                            "computation '{}'",
                                            operand, name, comp->name()));
        }
        if (written) {
          std::string_view text =
              c_.text().substr(written->first, written->second - written->first);
          if (text != it->second.shape_text) {
            Cursor sub = c_.Sub(written->first, written->second);
            Shape s;
            KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(sub, &s));
            KILN_RETURN_IF_ERROR(sub.SkipSpace());
            if (!sub.AtEnd()) return sub.Expected("the end of the operand's shape");
            if (!s.Compatible(it->second.instr->shape())) {
              return c_.ErrorAt(
                  written->first,
                  fmt::format("operand '{}' is written with shape {} but has shape {}", operand,
                              hlo_text::ShapeToText(s),
                              hlo_text::ShapeToText(it->second.instr->shape())));
            }
          }
        }
        instr->AppendOperand(it->second.instr);
        if (c_.TryConsume(')')) break;
        KILN_RETURN_IF_ERROR(c_.Expect(',', "',' or ')' after an operand"));
      }
    }
    int arity = wrapped ? (op == HloOpcode::kAsyncStart ? kVariadic : 1) : HloOpcodeArity(op);
    if (arity != kVariadic && instr->operand_count() != arity) {
      return c_.ErrorAt(op_at, fmt::format("'{}' takes {} operand{}, found {}", HloOpcodeString(op),
                                           arity, arity == 1 ? "" : "s", instr->operand_count()));
    }
    CallAttributes calls;
    KILN_RETURN_IF_ERROR(ParseAttributes(instr.get(), &calls, nested));
    KILN_RETURN_IF_ERROR(PlaceCalledComputations(instr.get(), calls, op_at));
    // A dot written without dimension numbers contracts nothing (an outer product, as XLA
    // reads it); it prints with its empty lists.
    if (instr->opcode() == HloOpcode::kDot && !instr->attrs().dot_dimension_numbers)
      instr->mutable_attrs().dot_dimension_numbers.emplace();
    if (!shape_written) {
      absl::StatusOr<Shape> inferred = InferShape(*instr);
      if (!inferred.ok())
        return c_.ErrorAt(shape_begin,
                          fmt::format("'{}' is written without a shape, and it cannot be "
                                      "inferred ({}); write the shape before the opcode",
                                      name, std::string(inferred.status().message())));
      *instr->mutable_shape() = *std::move(inferred);
    }
    HloInstruction* p = comp->AddInstruction(std::move(instr));
    instructions_[name] = Defined{p, shape_text};
    *out = p;
    return absl::OkStatus();
  }

  // True when `, name=` follows (an attribute, not the next operand of a nested user).
  bool AttributeFollows() const {
    Cursor probe = c_;
    if (!probe.TryConsume(',') || !probe.SkipSpace().ok()) return false;
    std::string_view w = probe.Peek() == '%' ? std::string_view() : probe.PeekWord();
    if (w.empty()) return false;
    probe.Advance(w.size());
    while (probe.Peek() == ' ' || probe.Peek() == '\t') probe.Advance();
    return probe.Peek() == '=';
  }

  // True when the text at the cursor is an opcode and '(' (an instruction without a shape).
  bool OpcodeFollows() const {
    Cursor probe = c_;
    std::string_view w = probe.Peek() == '%' ? std::string_view() : probe.PeekWord();
    return !w.empty() && probe.Peek(w.size()) == '(';
  }

  // Skips a shape written without spaces or comments (`f32[2,3]{1,0}`, `(s32[], f32[2]{0})`)
  // without building it; false (cursor anywhere) when the text is not that simple.
  bool SkipCompactShape() {
    int depth = 0;
    while (!c_.AtEnd()) {
      char ch = c_.Peek();
      if (ch == '(' || ch == '[' || ch == '{') {
        ++depth;
      } else if (ch == ')' || ch == ']' || ch == '}') {
        if (depth == 0) return false;
        --depth;
        c_.Advance();
        // After a closing bracket at the top: done unless a layout follows `]`.
        if (depth == 0 && !(ch == ']' && c_.Peek() == '{')) return true;
        continue;
      } else if (!(hlo_text::IsNameChar(ch) || ch == ',' || ch == ':' || ch == '<' || ch == '=')) {
        return false;
      }
      c_.Advance();
    }
    return false;
  }

  absl::Status ReadNameView(std::string_view what, std::string_view* out) {
    KILN_RETURN_IF_ERROR(c_.SkipSpace());
    if (c_.Peek() == '%') c_.Advance();
    *out = c_.PeekWord();
    if (out->empty() || c_.Peek() == '%') return c_.Expected(what);
    c_.Advance(out->size());
    return absl::OkStatus();
  }

  absl::Status ReadComputationName(Cursor v, ComputationRef* out) {
    KILN_RETURN_IF_ERROR(v.SkipSpace());
    out->at = v.pos();
    KILN_RETURN_IF_ERROR(v.ReadName("a computation name", &out->name));
    KILN_RETURN_IF_ERROR(v.SkipSpace());
    if (!v.AtEnd()) return v.Expected("the end of the computation name");
    return absl::OkStatus();
  }

  // `{%a, %b}` into names with positions.
  absl::Status ReadNameList(Cursor v, std::string_view what, std::vector<ComputationRef>* out) {
    KILN_RETURN_IF_ERROR(v.ExpectF('{', "'{{' starting the list of {}", what));
    if (!v.TryConsume('}')) {
      while (true) {
        KILN_RETURN_IF_ERROR(v.SkipSpace());
        ComputationRef r;
        r.at = v.pos();
        KILN_RETURN_IF_ERROR(v.ReadName(fmt::format("a name in the list of {}", what), &r.name));
        out->push_back(std::move(r));
        if (v.TryConsume('}')) break;
        KILN_RETURN_IF_ERROR(v.ExpectF(',', "',' or '}}' in the list of {}", what));
      }
    }
    KILN_RETURN_IF_ERROR(v.SkipSpace());
    if (!v.AtEnd()) return v.Expected(fmt::format("the end of the list of {}", what));
    return absl::OkStatus();
  }

  absl::Status ParseAttributes(HloInstruction* instr, CallAttributes* calls, bool nested = false) {
    std::vector<std::string_view> seen;
    InstructionAttributes& attrs = instr->mutable_attrs();
    size_t global_ids_at = std::string_view::npos;  // where use_global_device_ids=true is
    while (!nested || AttributeFollows()) {
      if (!c_.TryConsume(',')) break;
      KILN_RETURN_IF_ERROR(c_.SkipSpace());
      size_t at = c_.pos();
      std::string_view attr;
      KILN_RETURN_IF_ERROR(ReadNameView("an attribute name", &attr));
      if (std::find(seen.begin(), seen.end(), attr) != seen.end())
        return c_.ErrorAt(at, fmt::format("attribute '{}' given twice", attr));
      seen.push_back(attr);
      KILN_RETURN_IF_ERROR(c_.ExpectF('=', "'=' after attribute '{}'", attr));
      size_t b, e;
      KILN_RETURN_IF_ERROR(ScanValue(&b, &e));
      if (attr == "literal") {
        // A custom-call's literal is a shape, a space, then the value: `literal=s32[2] {1, 2}`.
        Cursor probe = c_;
        while (probe.Peek() == ' ' || probe.Peek() == '\t') probe.Advance();
        if (probe.pos() != c_.pos() && !probe.AtEnd() && probe.Peek() != ',' &&
            probe.Peek() != '\n' && probe.Peek() != '\r' && probe.Peek() != '/') {
          c_ = probe;
          size_t vb;
          KILN_RETURN_IF_ERROR(ScanValue(&vb, &e));
        }
      }
      Cursor v = c_.Sub(b, e);
      if (attr == "use_global_device_ids" && c_.text().substr(b, e - b) == "true")
        global_ids_at = at;
      if (b == e && attr != "padding") {
        return c_.ErrorAt(b, fmt::format("expected a value for attribute '{}', found {}", attr,
                                         Cursor(c_).DescribeHere()));
      }
      std::optional<ComputationRef>* single = nullptr;
      if (attr == "to_apply")
        single = &calls->to_apply;
      else if (attr == "calls")
        single = &calls->calls;
      else if (attr == "condition")
        single = &calls->condition;
      else if (attr == "body")
        single = &calls->body;
      else if (attr == "select")
        single = &calls->select;
      else if (attr == "scatter")
        single = &calls->scatter;
      else if (attr == "true_computation")
        single = &calls->true_comp;
      else if (attr == "false_computation")
        single = &calls->false_comp;
      if (single) {
        single->emplace();
        if (v.Peek() == '{') {  // an inline body: `to_apply={ ... }`
          KILN_RETURN_IF_ERROR(
              ParseInlineComputation(v, fmt::format("{}.{}", instr->name(), attr), &**single));
        } else {
          KILN_RETURN_IF_ERROR(ReadComputationName(v, &**single));
        }
        continue;
      }
      if (attr == "branch_computations") {
        calls->has_branches = true;
        KILN_RETURN_IF_ERROR(ReadNameList(v, "branch computations", &calls->branches));
        continue;
      }
      if (attr == "called_computations") {
        calls->has_called = true;
        KILN_RETURN_IF_ERROR(ReadNameList(v, "called computations", &calls->called));
        continue;
      }
      if (attr == "control-predecessors") {
        std::vector<ComputationRef> names;
        KILN_RETURN_IF_ERROR(ReadNameList(v, "control predecessors", &names));
        for (const ComputationRef& r : names) {
          auto it = instructions_.find(r.name);
          if (it == instructions_.end()) {
            return c_.ErrorAt(r.at, fmt::format("control predecessor '{}' is not defined earlier "
                                                "in the computation",
                                                r.name));
          }
          instr->AddControlPredecessor(it->second.instr);
        }
        continue;
      }
      bool typed = false;
      const HloOpcode op = hlo_text::AttributeOpcode(*instr);
      KILN_RETURN_IF_ERROR(hlo_text::ParseTypedAttribute(attr, op, v, &attrs, &typed));
      if (!typed) {
        KILN_RETURN_IF_ERROR(hlo_text::CheckVerbatimAttribute(attr, op, v));
        attrs.extra.emplace_back(std::string(attr), NormalizeValue(c_.text().substr(b, e - b)));
      }
    }
    // Global device ids name devices across replicas and partitions, which needs a channel.
    if (global_ids_at != std::string_view::npos &&
        std::find(seen.begin(), seen.end(), "channel_id") == seen.end())
      return c_.ErrorAt(global_ids_at, "use_global_device_ids=true needs a channel_id");
    return absl::OkStatus();
  }

  // Puts the called computations in the positional convention of instruction.h.
  absl::Status PlaceCalledComputations(HloInstruction* instr, const CallAttributes& a,
                                       size_t op_at) {
    std::vector<ComputationRef> order;
    HloOpcode op = instr->opcode();
    auto need = [&](const std::optional<ComputationRef>& r, std::string_view attr) -> absl::Status {
      if (!r) {
        return c_.ErrorAt(op_at, fmt::format("'{}' needs {}=", HloOpcodeString(op), attr));
      }
      order.push_back(*r);
      return absl::OkStatus();
    };
    auto reject = [&](const std::optional<ComputationRef>& r,
                      std::string_view attr) -> absl::Status {
      if (r) {
        return c_.ErrorAt(r->at, fmt::format("'{}' does not take {}=", HloOpcodeString(op), attr));
      }
      return absl::OkStatus();
    };
    if (op == HloOpcode::kWhile) {
      KILN_RETURN_IF_ERROR(need(a.condition, "condition"));
      KILN_RETURN_IF_ERROR(need(a.body, "body"));
    } else if (op == HloOpcode::kConditional) {
      if (a.has_branches) {
        if (a.true_comp || a.false_comp)
          return c_.ErrorAt(
              op_at, "conditional has both branch_computations= and true/false_computation=");
        if (a.branches.empty()) return c_.ErrorAt(op_at, "conditional has no branch computations");
        order = a.branches;
      } else {
        KILN_RETURN_IF_ERROR(need(a.true_comp, "true_computation (or branch_computations)"));
        KILN_RETURN_IF_ERROR(need(a.false_comp, "false_computation"));
      }
    } else if (op == HloOpcode::kSelectAndScatter) {
      KILN_RETURN_IF_ERROR(need(a.select, "select"));
      KILN_RETURN_IF_ERROR(need(a.scatter, "scatter"));
    } else if (op == HloOpcode::kFusion) {
      KILN_RETURN_IF_ERROR(need(a.calls, "calls"));
    } else {
      for (auto [r, attr] : {std::pair{&a.condition, "condition"},
                             {&a.body, "body"},
                             {&a.select, "select"},
                             {&a.scatter, "scatter"},
                             {&a.true_comp, "true_computation"},
                             {&a.false_comp, "false_computation"}}) {
        KILN_RETURN_IF_ERROR(reject(*r, attr));
      }
      if (a.has_branches)
        return c_.ErrorAt(
            op_at, fmt::format("'{}' does not take branch_computations=", HloOpcodeString(op)));
      if (a.to_apply) order.push_back(*a.to_apply);
      if (a.calls) order.push_back(*a.calls);
      for (const auto& r : a.called) order.push_back(r);
      bool needs_to_apply = op == HloOpcode::kReduce || op == HloOpcode::kReduceWindow ||
                            op == HloOpcode::kMap || op == HloOpcode::kScatter ||
                            op == HloOpcode::kSort || op == HloOpcode::kCall ||
                            op == HloOpcode::kAllReduce || op == HloOpcode::kAllReduceStart ||
                            op == HloOpcode::kReduceScatter;
      if (needs_to_apply && order.empty())
        return c_.ErrorAt(op_at, fmt::format("'{}' needs to_apply=", HloOpcodeString(op)));
    }
    for (const ComputationRef& r : order) {
      // A computation defined earlier (or inline) is set now, so a shape written nowhere can
      // be inferred from it; every reference is still resolved and checked at the end.
      auto known = computations_.find(r.name);
      instr->AppendCalledComputation(
          known != computations_.end() && known->second != module_->entry() ? known->second
                                                                            : nullptr);
      pending_.push_back({instr, static_cast<int>(instr->called_computations().size()) - 1, r});
    }
    return absl::OkStatus();
  }

  absl::Status ResolveComputationReferences() {
    for (const Pending& p : pending_) {
      auto it = computations_.find(p.ref.name);
      if (it == computations_.end())
        return c_.ErrorAt(p.ref.at, fmt::format("unknown computation '{}'", p.ref.name));
      if (it->second == module_->entry())
        return c_.ErrorAt(p.ref.at,
                          fmt::format("the entry computation '{}' cannot be called", p.ref.name));
      p.instr->set_called_computation(p.index, it->second);
      if (p.instr->opcode() == HloOpcode::kFusion) it->second->set_is_fusion_computation(true);
    }
    // A computation that (indirectly) calls itself would make every walk over calls loop.
    absl::flat_hash_map<const HloComputation*, int> state;  // 1 = on stack, 2 = done
    for (HloComputation* start : module_->computations()) {
      if (state[start] == 2) continue;
      std::vector<std::pair<HloComputation*, std::vector<HloComputation*>>> stack;
      auto callees = [](HloComputation* c) {
        std::vector<HloComputation*> out;
        for (HloInstruction* i : c->instructions())
          for (HloComputation* k : i->called_computations()) out.push_back(k);
        return out;
      };
      stack.emplace_back(start, callees(start));
      state[start] = 1;
      while (!stack.empty()) {
        auto& [c, rest] = stack.back();
        if (rest.empty()) {
          state[c] = 2;
          stack.pop_back();
          continue;
        }
        HloComputation* next = rest.back();
        rest.pop_back();
        int& st = state[next];
        if (st == 1) {
          const ComputationRef* where = nullptr;
          for (const Pending& p : pending_)
            if (p.instr->parent() == c && p.ref.name == next->name()) where = &p.ref;
          return c_.ErrorAt(
              where ? where->at : 0,
              fmt::format("computation '{}' calls itself through '{}'", next->name(), c->name()));
        }
        if (st == 0) {
          st = 1;
          auto next_callees = callees(next);
          stack.emplace_back(next, std::move(next_callees));
        }
      }
    }
    return absl::OkStatus();
  }

  struct Pending {
    HloInstruction* instr;
    int index;
    ComputationRef ref;
  };

  Cursor c_;
  std::unique_ptr<HloModule> module_;
  absl::flat_hash_map<std::string, HloComputation*> computations_;
  // Instructions of the current computation with the text of their shape.
  struct Defined {
    HloInstruction* instr;
    std::string_view shape_text;
  };
  absl::flat_hash_map<std::string, Defined> instructions_;
  std::vector<Pending> pending_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text,
                                                          std::string_view filename) {
  Parser parser(text, filename);
  return parser.ParseModule();
}

absl::StatusOr<Shape> ParseShape(std::string_view text) {
  hlo_text::Cursor c(text, "<shape>");
  Shape shape;
  KILN_RETURN_IF_ERROR(hlo_text::ParseShapeAt(c, &shape));
  KILN_RETURN_IF_ERROR(c.SkipSpace());
  if (!c.AtEnd()) return c.Expected("the end of the shape");
  return shape;
}

}  // namespace kiln
