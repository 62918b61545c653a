// A minimal JSON writer: objects one member per line, arrays of scalars on one line, strings
// escaped, numbers as the shortest decimals that read back exactly. relay-plan writes JSON by hand
// so that the tools need no JSON library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace relay_plan {

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);
// The shortest decimal that reads back as `x` ("0.25", "4", "0.42857142857142855"); null when
// `x` is not finite (JSON has no infinities).
std::string json_number(double x);

class json_writer {
 public:
  void begin_object();
  void end_object();
  // `inline_items`: keep the array on one line (arrays of numbers, rows of a matrix).
  void begin_array(bool inline_items = false);
  void end_array();
  void key(std::string_view k);  // inside an object, before each value

  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(double x);
  void value(std::int64_t x);
  void value(std::uint64_t x);
  void value(int x) { value(static_cast<std::int64_t>(x)); }
  void value(bool b);
  void null();
  template <class T>
  void value(const std::optional<T>& v) {
    v ? value(*v) : null();
  }

  // key(k) then value(v): one member of an object.
  template <class T>
  void member(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  // key(k) then the values of `items` as an array on one line.
  template <class Range>
  void inline_array(std::string_view k, const Range& items) {
    key(k);
    begin_array(true);
    for (const auto& item : items)
      value(item);
    end_array();
  }

  // key(k) then an object whose members `members()` writes.
  template <class F>
  void object(std::string_view k, F&& members) {
    key(k);
    begin_object();
    members();
    end_object();
  }
  // key(k) then an array of one object per item of `items`, whose members `members(item)` writes.
  template <class Range, class F>
  void object_array(std::string_view k, const Range& items, F&& members) {
    key(k);
    begin_array();
    for (const auto& item : items) {
      begin_object();
      members(item);
      end_object();
    }
    end_array();
  }

  // The document so far, with a final newline once every object and array is closed.
  std::string str() const;

 private:
  struct level {
    bool inline_items = false;
    bool empty = true;
  };
  void before_value();
  void raw(std::string_view text);
  void open(char bracket, bool inline_items);
  void close(char bracket);
  void newline();

  std::string out_;
  std::vector<level> levels_;
  bool after_key_ = false;
};

}  // namespace relay_plan
