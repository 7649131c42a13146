// Cursor over HLO text: space/comment skipping, small token readers, located errors.
#include "hlo/text/lexer.h"

#include <charconv>
#include <utility>

#include "fmt/format.h"

namespace kiln::hlo_text {

absl::Status Cursor::SkipSpace() {
  while (pos_ < end_) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < end_ && text_[pos_ + 1] == '/') {
      while (pos_ < end_ && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && pos_ + 1 < end_ && text_[pos_ + 1] == '*') {
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos || close + 2 > end_)
        return ErrorAt(pos_, "unterminated '/*' comment");
      pos_ = close + 2;
    } else {
      break;
    }
  }
  return absl::OkStatus();
}

bool Cursor::TryConsume(char c) {
  if (!SkipSpace().ok()) return false;
  if (Peek() != c) return false;
  ++pos_;
  return true;
}

bool Cursor::TryConsume(std::string_view s) {
  if (!SkipSpace().ok()) return false;
  if (pos_ + s.size() > end_ || text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

bool Cursor::TryConsumeWord(std::string_view word) {
  if (!SkipSpace().ok()) return false;
  if (PeekWord() != word || Peek() == '%') return false;
  pos_ += word.size();
  return true;
}

absl::Status Cursor::Expect(char c, std::string_view what) {
  if (absl::Status s = SkipSpace(); !s.ok()) return s;
  if (Peek() == c) {
    ++pos_;
    return absl::OkStatus();
  }
  if (what.empty()) return Expected(fmt::format("'{}'", c));
  return Expected(what);
}

std::string_view Cursor::PeekWord() const {
  size_t p = pos_;
  if (p < end_ && text_[p] == '%') ++p;
  size_t start = p;
  if (p >= end_ || !IsNameChar(text_[p])) return {};
  while (p < end_ && IsNameChar(text_[p])) ++p;
  return text_.substr(start, p - start);
}

absl::Status Cursor::ReadName(std::string_view what, std::string* out) {
  if (absl::Status s = SkipSpace(); !s.ok()) return s;
  size_t p = pos_;
  if (p < end_ && text_[p] == '%') ++p;
  if (p >= end_ || !IsNameChar(text_[p])) return Expected(what);
  size_t start = p;
  while (p < end_ && IsNameChar(text_[p])) ++p;
  out->assign(text_.substr(start, p - start));
  pos_ = p;
  return absl::OkStatus();
}

absl::Status Cursor::ReadInt(std::string_view what, int64_t* out) {
  if (absl::Status s = SkipSpace(); !s.ok()) return s;
  size_t start = pos_;
  size_t p = pos_;
  if (p < end_ && (text_[p] == '-' || text_[p] == '+')) ++p;
  size_t digits = p;
  while (p < end_ && IsDigit(text_[p])) ++p;
  if (p == digits) return Expected(what);
  const char* b = text_.data() + start + (text_[start] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(b, text_.data() + p, *out);
  if (ec != std::errc() || ptr != text_.data() + p)
    return ErrorAt(start, fmt::format("integer {} is out of range for {}",
                                      text_.substr(start, p - start), what));
  pos_ = p;
  return absl::OkStatus();
}

absl::Status Cursor::ReadBool(std::string_view what, bool* out) {
  if (absl::Status s = SkipSpace(); !s.ok()) return s;
  std::string_view w = PeekWord();
  if (Peek() != '%' && w == "true") {
    *out = true;
  } else if (Peek() != '%' && w == "false") {
    *out = false;
  } else {
    return Expected(what);
  }
  pos_ += w.size();
  return absl::OkStatus();
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

absl::Status Cursor::ReadQuoted(std::string_view what, std::string* out) {
  if (absl::Status s = SkipSpace(); !s.ok()) return s;
  if (Peek() != '"') return Expected(what);
  size_t start = pos_;
  ++pos_;
  out->clear();
  while (true) {
    if (pos_ >= end_) return ErrorAt(start, "unterminated string");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return absl::OkStatus();
    }
    if (c != '\\') {
      out->push_back(c);
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= end_) return ErrorAt(start, "unterminated string");
    char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'a':
        out->push_back('\a');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'v':
        out->push_back('\v');
        break;
      case '\\':
      case '"':
      case '\'':
      case '?':
        out->push_back(e);
        break;
      case 'x': {
        int v = 0, n = 0;
        while (n < 2 && pos_ < end_ && HexValue(text_[pos_]) >= 0) {
          v = v * 16 + HexValue(text_[pos_++]);
          ++n;
        }
        if (n == 0) return ErrorAt(pos_ - 2, "'\\x' escape without hex digits");
        out->push_back(static_cast<char>(v));
        break;
      }
      default: {
        if (e < '0' || e > '7')
          return ErrorAt(pos_ - 2, fmt::format("unknown escape '\\{}' in string", e));
        int v = e - '0', n = 1;
        while (n < 3 && pos_ < end_ && text_[pos_] >= '0' && text_[pos_] <= '7') {
          v = v * 8 + (text_[pos_++] - '0');
          ++n;
        }
        out->push_back(static_cast<char>(v & 0xff));
      }
    }
  }
}

namespace {
// 1-based line and column of byte offset `at`.
std::pair<size_t, size_t> LineCol(std::string_view text, size_t at) {
  if (at > text.size()) at = text.size();
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, at - line_start + 1};
}
}  // namespace

absl::Status Cursor::ErrorAt(size_t at, std::string_view message) const {
  auto [line, col] = LineCol(text_, at);
  return absl::InvalidArgumentError(fmt::format("{}:{}:{}: {}", filename_, line, col, message));
}

std::string Cursor::Location(size_t at) const {
  auto [line, col] = LineCol(text_, at);
  return fmt::format("line {}, col {}", line, col);
}

std::string Cursor::DescribeHere() const {
  if (pos_ >= end_) return "end of input";
  std::string_view w = PeekWord();
  if (!w.empty()) {
    if (w.size() > 40) return fmt::format("'{}...'", w.substr(0, 40));
    return fmt::format("'{}{}'", Peek() == '%' ? "%" : "", w);
  }
  char c = text_[pos_];
  if (c == '\n') return "end of line";
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  return fmt::format("'{}'", c);
}

absl::Status Cursor::Expected(std::string_view what) const {
  return Error(fmt::format("expected {}, found {}", what, DescribeHere()));
}

std::string EscapeString(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\{:03o}", u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace kiln::hlo_text
