#include "json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace relay_plan {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          constexpr std::string_view hex = "0123456789abcdef";
          const auto u = static_cast<unsigned char>(ch);
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 0xf];
        } else {
          out += ch;  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return ec == std::errc{} ? std::string(buf.data(), end) : "null";
}

void json_writer::newline() {
  out_ += '\n';
  out_.append(2 * levels_.size(), ' ');
}

void json_writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  level& l = levels_.back();
  if (!l.empty) out_ += l.inline_items ? ", " : ",";
  if (!l.inline_items) newline();
  l.empty = false;
}

void json_writer::raw(std::string_view text) {
  before_value();
  out_ += text;
}

void json_writer::open(char bracket, bool inline_items) {
  before_value();
  out_ += bracket;
  // Inside an inline array everything stays inline.
  const bool inherit = !levels_.empty() && levels_.back().inline_items;
  levels_.push_back({inline_items || inherit, true});
}

void json_writer::close(char bracket) {
  const level l = levels_.back();
  levels_.pop_back();
  if (!l.inline_items && !l.empty) newline();
  out_ += bracket;
}

void json_writer::begin_object() {
  open('{', false);
}
void json_writer::end_object() {
  close('}');
}
void json_writer::begin_array(bool inline_items) {
  open('[', inline_items);
}
void json_writer::end_array() {
  close(']');
}

void json_writer::key(std::string_view k) {
  before_value();
  out_ += json_quote(k);
  out_ += ": ";
  after_key_ = true;
}

void json_writer::value(std::string_view s) {
  raw(json_quote(s));
}
void json_writer::value(double x) {
  raw(json_number(x));
}
void json_writer::value(std::int64_t x) {
  raw(std::to_string(x));
}
void json_writer::value(std::uint64_t x) {
  raw(std::to_string(x));
}
void json_writer::value(bool b) {
  raw(b ? "true" : "false");
}
void json_writer::null() {
  raw("null");
}

std::string json_writer::str() const {
  return levels_.empty() ? out_ + "\n" : out_;
}

}  // namespace relay_plan
