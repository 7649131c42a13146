// Character cursor over HLO text: whitespace and comment skipping, small token readers and
// located errors (`file:line:col: message`). The parser reads characters directly through it
// (no token stream), which keeps parsing a large module to a few milliseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kiln::hlo_text {

// True for characters that may appear in an HLO identifier after its first character.
inline bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '$';
}
inline bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Cursor {
 public:
  Cursor(std::string_view text, std::string_view filename)
      : text_(text), filename_(filename), pos_(0), end_(text.size()) {}
  // A cursor over [begin, end) of the same text; errors still report whole-file positions.
  Cursor Sub(size_t begin, size_t end) const {
    Cursor c = *this;
    c.pos_ = begin;
    c.end_ = end;
    return c;
  }

  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }
  size_t end() const { return end_; }
  std::string_view text() const { return text_; }
  bool AtEnd() const { return pos_ >= end_; }
  // The character at the cursor, or '\0' at the end.
  char Peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? text_[pos_ + ahead] : '\0'; }
  void Advance(size_t n = 1) { pos_ += n; }

  // Skips whitespace, `// ...` and `/* ... */` comments. An unterminated `/*` is an error.
  absl::Status SkipSpace();
  // Skips space, then consumes `c` if it is next.
  bool TryConsume(char c);
  // Skips space, then consumes `s` if it is next (no check for a word boundary).
  bool TryConsume(std::string_view s);
  // Skips space, then consumes the identifier `word` if it is next as a whole word.
  bool TryConsumeWord(std::string_view word);
  // Skips space and consumes `c`, or fails with "expected <what>, found ...".
  absl::Status Expect(char c, std::string_view what = {});

  // Skips space, then reads an identifier (an optional leading `%` is dropped). Fails with
  // "expected <what>, found ..." when there is none.
  absl::Status ReadName(std::string_view what, std::string* out);
  // The identifier at the cursor without consuming it (no leading `%`; no space skipped).
  std::string_view PeekWord() const;
  // Expect / ReadInt with a formatted description, built only when there is an error (these
  // run for every instruction, so the success path must not format strings).
  template <typename... Args>
  absl::Status ExpectF(char c, fmt::format_string<Args...> what, Args&&... args) {
    if (absl::Status s = SkipSpace(); !s.ok()) return s;
    if (Peek() == c) {
      ++pos_;
      return absl::OkStatus();
    }
    return Expected(fmt::format(what, std::forward<Args>(args)...));
  }
  template <typename... Args>
  absl::Status ReadIntF(int64_t* out, fmt::format_string<Args...> what, Args&&... args) {
    if (absl::Status s = SkipSpace(); !s.ok()) return s;
    char ch = Peek();
    if (IsDigit(ch) || ((ch == '-' || ch == '+') && IsDigit(Peek(1))))
      return ReadInt("an integer", out);
    return Expected(fmt::format(what, std::forward<Args>(args)...));
  }
  // Skips space and reads a decimal integer with optional sign.
  absl::Status ReadInt(std::string_view what, int64_t* out);
  // Skips space and reads `true`/`false`.
  absl::Status ReadBool(std::string_view what, bool* out);
  // Skips space and reads a double-quoted string with C escapes; `out` gets the unescaped
  // bytes.
  absl::Status ReadQuoted(std::string_view what, std::string* out);

  // `file:line:col: message` at byte offset `at`.
  absl::Status ErrorAt(size_t at, std::string_view message) const;
  absl::Status Error(std::string_view message) const { return ErrorAt(pos_, message); }
  // "line L, col C" of byte offset `at`, for messages that point at a second place.
  std::string Location(size_t at) const;
  // "expected <what>, found <description of the text at the cursor>".
  absl::Status Expected(std::string_view what) const;
  // A short description of the text at the cursor for messages: `'abc'`, `'{'`,
  // "end of input".
  std::string DescribeHere() const;

 private:
  std::string_view text_;
  std::string_view filename_;
  size_t pos_;
  size_t end_;
};

// Adds C escapes so that ReadQuoted gives back exactly `bytes`.
std::string EscapeString(std::string_view bytes);

}  // namespace kiln::hlo_text
