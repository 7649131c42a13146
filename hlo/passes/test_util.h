// Test helpers for passes: a small FileCheck (CHECK / CHECK-NEXT / CHECK-SAME / CHECK-NOT
// lines matched in order against printed HLO), random inputs, and the check that a pass
// leaves a module's values unchanged on the evaluator. Header-only, for tests.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/pass.h"
#include "hlo/text/parser.h"
#include "hlo/verifier.h"

namespace kiln::testing {

// ---------------------------------------------------------------------------------------------
// FileCheck
//
// `checks` holds lines such as
//   CHECK:      %add = f32[2]{0} add(
//   CHECK-NEXT: ROOT {{.*}} multiply
//   CHECK-SAME: [[X]]
//   CHECK-NOT:  constant
// Text matches literally except `{{regex}}`, `[[NAME:regex]]` (captures into NAME) and
// `[[NAME]]` (the text NAME captured). Matching is by line: CHECK finds the first matching
// line after the previous match, CHECK-NEXT must match the very next line, CHECK-SAME the
// rest of the previous match's line, and CHECK-NOT must match no line between the
// surrounding positive matches (or up to the end).

namespace internal {

struct Directive {
  enum Kind { kCheck, kNext, kSame, kNot } kind;
  std::string pattern;
  std::string text;  // the whole check line, for messages
};

inline std::string EscapeRegex(std::string_view s) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{})";
  std::string out;
  for (char c : s) {
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// Counts the capturing groups a user regex opens, so our own group numbers stay right.
inline int CountGroups(std::string_view re) {
  int n = 0;
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '\\') {
      ++i;
      continue;
    }
    if (re[i] == '(' && (i + 1 >= re.size() || re[i + 1] != '?')) ++n;
  }
  return n;
}

// Builds the regex for `pattern`; `defs` receives (variable, group number) pairs.
inline absl::Status BuildRegex(std::string_view pattern,
                               const absl::flat_hash_map<std::string, std::string>& vars,
                               std::string* out, std::vector<std::pair<std::string, int>>* defs) {
  int groups = 0;
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern.substr(i, 2) == "{{") {
      size_t end = pattern.find("}}", i + 2);
      if (end == std::string_view::npos) return absl::InvalidArgumentError("unclosed {{");
      std::string_view re = pattern.substr(i + 2, end - i - 2);
      *out += "(?:" + std::string(re) + ")";
      groups += CountGroups(re);
      i = end + 2;
    } else if (pattern.substr(i, 2) == "[[") {
      // The closing `]]` is the first one outside the regex's own brackets.
      size_t end = std::string_view::npos;
      int depth = 0;
      for (size_t k = i + 2; k + 1 < pattern.size(); ++k) {
        if (pattern[k] == '\\') {
          ++k;
          continue;
        }
        if (depth == 0 && pattern[k] == ']' && pattern[k + 1] == ']') {
          end = k;
          break;
        }
        if (pattern[k] == '[') ++depth;
        if (pattern[k] == ']') --depth;
      }
      if (end == std::string_view::npos) return absl::InvalidArgumentError("unclosed [[");
      std::string_view body = pattern.substr(i + 2, end - i - 2);
      size_t colon = body.find(':');
      if (colon == std::string_view::npos) {
        auto it = vars.find(std::string(body));
        if (it == vars.end())
          return absl::InvalidArgumentError("undefined variable " + std::string(body));
        *out += EscapeRegex(it->second);
      } else {
        std::string_view re = body.substr(colon + 1);
        ++groups;
        defs->push_back({std::string(body.substr(0, colon)), groups});
        *out += "(" + std::string(re) + ")";
        groups += CountGroups(re);
      }
      i = end + 2;
    } else {
      size_t next = pattern.size();
      for (std::string_view open : {"{{", "[["}) {
        size_t p = pattern.find(open, i);
        if (p != std::string_view::npos) next = std::min(next, p);
      }
      *out += EscapeRegex(pattern.substr(i, next - i));
      i = next;
    }
  }
  return absl::OkStatus();
}

inline std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

inline std::vector<Directive> ParseDirectives(std::string_view checks) {
  std::vector<Directive> out;
  for (const std::string& line : SplitLines(checks)) {
    static const std::pair<std::string_view, Directive::Kind> kPrefixes[] = {
        {"CHECK-NEXT:", Directive::kNext},
        {"CHECK-SAME:", Directive::kSame},
        {"CHECK-NOT:", Directive::kNot},
        {"CHECK:", Directive::kCheck}};
    for (const auto& [prefix, kind] : kPrefixes) {
      size_t p = line.find(prefix);
      if (p == std::string::npos) continue;
      std::string pat = line.substr(p + prefix.size());
      size_t b = pat.find_first_not_of(" \t");
      size_t e = pat.find_last_not_of(" \t\r");
      pat = b == std::string::npos ? "" : pat.substr(b, e - b + 1);
      out.push_back({kind, pat, line});
      break;
    }
  }
  return out;
}

}  // namespace internal

// OK when `text` satisfies `checks`; otherwise an error naming the failed directive.
inline absl::Status FileCheck(std::string_view text, std::string_view checks) {
  using internal::Directive;
  std::vector<std::string> lines = internal::SplitLines(text);
  std::vector<Directive> directives = internal::ParseDirectives(checks);
  if (directives.empty()) return absl::InvalidArgumentError("no CHECK lines");
  absl::flat_hash_map<std::string, std::string> vars;
  int last_line = -1;   // line of the previous positive match
  size_t last_col = 0;  // end column of that match
  int search_from = 0;  // first line CHECK may match
  std::vector<const Directive*> nots;

  // Matches `d` within lines[line] from column `col`; records captures.
  auto match_at = [&](const Directive& d, int line, size_t col, size_t* end) -> bool {
    std::string re;
    std::vector<std::pair<std::string, int>> defs;
    if (!internal::BuildRegex(d.pattern, vars, &re, &defs).ok()) return false;
    std::regex rx;
    try {
      rx = std::regex(re);
    } catch (const std::regex_error&) {
      return false;  // reported as "no match" with the directive's text
    }
    std::smatch m;
    const std::string& s = lines[line];
    auto begin = s.begin() + static_cast<std::ptrdiff_t>(std::min(col, s.size()));
    if (!std::regex_search(begin, s.end(), m, rx)) return false;
    for (const auto& [name, group] : defs) vars[name] = m[group].str();
    *end = static_cast<size_t>(m[0].second - s.begin());
    return true;
  };
  auto fail = [&](const Directive& d, std::string_view why) {
    return absl::NotFoundError(std::string(why) + ": `" + d.text + "`\n--- input ---\n" +
                               std::string(text));
  };
  // Checks the pending CHECK-NOTs against lines [from, to).
  auto check_nots = [&](int from, int to) -> absl::Status {
    for (const Directive* d : nots) {
      for (int l = std::max(from, 0); l < to; ++l) {
        size_t end;
        if (match_at(*d, l, 0, &end))
          return fail(*d,
                      "CHECK-NOT matched line " + std::to_string(l + 1) + " `" + lines[l] + "`");
      }
    }
    nots.clear();
    return absl::OkStatus();
  };

  for (const Directive& d : directives) {
    std::string re;
    std::vector<std::pair<std::string, int>> defs;
    if (absl::Status s = internal::BuildRegex(d.pattern, vars, &re, &defs); !s.ok())
      return fail(d, std::string(s.message()));
    size_t end = 0;
    switch (d.kind) {
      case Directive::kNot:
        nots.push_back(&d);
        break;
      case Directive::kCheck: {
        int found = -1;
        for (int l = search_from; l < static_cast<int>(lines.size()); ++l)
          if (match_at(d, l, 0, &end)) {
            found = l;
            break;
          }
        if (found < 0) return fail(d, "no match");
        if (absl::Status s = check_nots(search_from, found); !s.ok()) return s;
        last_line = found;
        last_col = end;
        search_from = found + 1;
        break;
      }
      case Directive::kNext: {
        int l = last_line + 1;
        if (l >= static_cast<int>(lines.size()) || !match_at(d, l, 0, &end))
          return fail(d, "CHECK-NEXT: the next line does not match");
        if (absl::Status s = check_nots(l, l); !s.ok()) return s;
        last_line = l;
        last_col = end;
        search_from = l + 1;
        break;
      }
      case Directive::kSame: {
        if (last_line < 0 || !match_at(d, last_line, last_col, &end))
          return fail(d, "CHECK-SAME: no match on the same line");
        last_col = end;
        break;
      }
    }
  }
  return check_nots(search_from, static_cast<int>(lines.size()));
}

// ---------------------------------------------------------------------------------------------
// Modules and values

inline std::unique_ptr<HloModule> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(text, "test");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *std::move(m) : nullptr;
}

// Runs `pass` on the module parsed from `text`; returns the printed result ("" on error).
inline std::string RunPassAndPrint(HloPass& pass, std::string_view text, bool* changed = nullptr) {
  std::unique_ptr<HloModule> m = Parse(text);
  if (!m) return "";
  absl::StatusOr<bool> c = pass.Run(*m);
  EXPECT_TRUE(c.ok()) << c.status().message();
  if (changed) *changed = c.ok() && *c;
  absl::Status valid = VerifyModule(*m);
  EXPECT_TRUE(valid.ok()) << "invalid after the pass: " << valid.message() << "\n" << m->ToString();
  return m->ToString();
}

// Values spread over a small range so that arithmetic stays finite; integers small.
inline Literal RandomLiteral(const Shape& shape, std::mt19937& rng) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& s : shape.tuple_shapes()) elements.push_back(RandomLiteral(s, rng));
    return Literal::MakeTuple(std::move(elements));
  }
  Literal lit(shape);
  if (!shape.IsArray()) return lit;
  PrimitiveType t = shape.element_type();
  std::uniform_real_distribution<double> real(-3.0, 3.0);
  std::uniform_int_distribution<int> small(-8, 8);
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    if (t == PrimitiveType::PRED)
      lit.SetFromDouble(i, small(rng) > 0 ? 1 : 0);
    else if (IsUnsignedInt(t))
      lit.SetFromDouble(i, small(rng) + 8);
    else if (IsInteger(t))
      lit.SetFromDouble(i, small(rng));
    else
      lit.SetFromDouble(i, real(rng));
  }
  return lit;
}

// Equal values (NaN equals NaN; +0 equals -0), array by array.
inline ::testing::AssertionResult SameValues(const Literal& a, const Literal& b) {
  if (!a.shape().Compatible(b.shape()))
    return ::testing::AssertionFailure()
           << "shapes differ: " << a.shape().ToString() << " vs " << b.shape().ToString();
  if (a.IsTuple()) {
    for (size_t i = 0; i < a.elements().size(); ++i) {
      ::testing::AssertionResult r =
          SameValues(a.element(static_cast<int>(i)), b.element(static_cast<int>(i)));
      if (!r) return r << " (tuple element " << i << ")";
    }
    return ::testing::AssertionSuccess();
  }
  if (!a.shape().IsArray()) return ::testing::AssertionSuccess();
  PrimitiveType t = a.shape().element_type();
  for (int64_t i = 0; i < a.element_count(); ++i) {
    bool same;
    if (IsFloating(t)) {
      double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
      same = x == y || (std::isnan(x) && std::isnan(y));
    } else if (IsComplex(t)) {
      int64_t w = ByteSizeOf(t);
      same = std::memcmp(a.untyped_data() + i * w, b.untyped_data() + i * w, w) == 0;
    } else if (IsUnsignedInt(t)) {
      same = a.GetAsUint64(i) == b.GetAsUint64(i);
    } else {
      same = a.GetAsInt64(i) == b.GetAsInt64(i);
    }
    if (!same)
      return ::testing::AssertionFailure()
             << "element " << i << " differs: " << a.GetAsDouble(i) << " vs " << b.GetAsDouble(i);
  }
  return ::testing::AssertionSuccess();
}

// Equal within float rounding (1e-5 absolute plus 1e-5 relative), element by element of one
// array: partitioned programs sum in another order than the whole one.
inline ::testing::AssertionResult Near(const Literal& got, const Literal& want) {
  if (!got.shape().Compatible(want.shape()))
    return ::testing::AssertionFailure()
           << "shape " << got.shape().ToString() << ", want " << want.shape().ToString();
  for (int64_t i = 0; i < want.element_count(); ++i) {
    double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (std::fabs(g - w) > 1e-5 + 1e-5 * std::fabs(w))
      return ::testing::AssertionFailure() << "element " << i << " is " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

// How PassPreservesValues compares: bit for bit, or within Near's rounding tolerance (a pass
// that reassociates floating-point arithmetic).
enum class Agreement { kExact, kToRounding };

// Parses `text` twice, runs `pass` on one copy, and evaluates both on the same random
// inputs (`trials` times): the values must be the same.
inline ::testing::AssertionResult PassPreservesValues(HloPass& pass, std::string_view text,
                                                      int trials = 3, unsigned seed = 1,
                                                      Agreement agreement = Agreement::kExact) {
  std::unique_ptr<HloModule> before = Parse(text);
  std::unique_ptr<HloModule> after = Parse(text);
  if (!before || !after) return ::testing::AssertionFailure() << "parse failed";
  if (absl::Status valid = VerifyModule(*before); !valid.ok())
    return ::testing::AssertionFailure() << "invalid before the pass: " << valid.message();
  absl::StatusOr<bool> changed = pass.Run(*after);
  if (!changed.ok()) return ::testing::AssertionFailure() << changed.status().message();
  if (absl::Status valid = VerifyModule(*after); !valid.ok())
    return ::testing::AssertionFailure() << "invalid after the pass: " << valid.message();
  std::mt19937 rng(seed);
  HloEvaluator evaluator;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<Literal> args;
    for (const HloInstruction* p : before->entry()->parameters())
      args.push_back(RandomLiteral(p->shape(), rng));
    absl::StatusOr<Literal> x = evaluator.Evaluate(*before, args);
    if (!x.ok()) return ::testing::AssertionFailure() << "before: " << x.status().message();
    absl::StatusOr<Literal> y = evaluator.Evaluate(*after, args);
    if (!y.ok())
      return ::testing::AssertionFailure() << "after: " << y.status().message() << "\n"
                                           << after->ToString();
    ::testing::AssertionResult r =
        agreement == Agreement::kExact ? SameValues(*x, *y) : Near(*y, *x);
    if (!r) return r << "\n--- after the pass ---\n" << after->ToString();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::testing

// EXPECT that `text` satisfies the CHECK lines in `checks`.
#define EXPECT_FILECHECK(text, checks)                                      \
  do {                                                                      \
    absl::Status kiln_fc_status = ::kiln::testing::FileCheck(text, checks); \
    EXPECT_TRUE(kiln_fc_status.ok()) << kiln_fc_status.message();           \
  } while (0)
