// A growable array for code that runs inside the compiler as often as at run time (the checks).
//
// Compilers price constant evaluation by the statements and calls they run. std::vector's
// push_back, clear and subscript each run tens of them inside the library (clear destroys element
// by element, a subscript checks its bound); a flat_stack's are one or two. The checks append,
// read and truncate such lists for every operand of every operation, which makes the difference
// between fitting the compiler's default budget and not.
#pragma once

#include <cstddef>

namespace relay {

template <class T>
class flat_stack {
 public:
  constexpr flat_stack() = default;
  constexpr flat_stack(const flat_stack&) = delete;
  constexpr flat_stack& operator=(const flat_stack&) = delete;
  constexpr ~flat_stack() { delete[] data_; }

  constexpr T* data() { return data_; }
  constexpr const T* data() const { return data_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& back() { return data_[size_ - 1]; }

  constexpr void clear() { size_ = 0; }
  constexpr void pop(std::size_t count = 1) { size_ -= count; }
  constexpr void push(const T& x) {
    if (size_ == capacity_) grow(size_ + 1);
    data_[size_++] = x;
  }
  // Makes room for `count` more elements; the new ones keep whatever they held.
  constexpr void extend(std::size_t count) {
    if (size_ + count > capacity_) grow(size_ + count);
    size_ += count;
  }

 private:
  constexpr void grow(std::size_t at_least) {
    std::size_t capacity = capacity_ == 0 ? 16 : 2 * capacity_;
    while (capacity < at_least)
      capacity *= 2;
    T* const bigger = new T[capacity];
    for (std::size_t i = 0; i < size_; ++i)
      bigger[i] = data_[i];
    delete[] data_;
    data_ = bigger;
    capacity_ = capacity;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace relay
