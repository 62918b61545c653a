// Counts the program's heap allocations: what checks that a repeated collective call allocates
// nothing (comm-host-bench; relay_ipc_tests hostpath). The replacement operator new and delete
// (malloc and free plus a counter) are defined where RELAY_ALLOC_COUNTER_DEFINE is set before
// this header is included, in exactly one host-compiled translation unit of a program (nvcc takes
// a replaced operator new in a .cu file for device code too, where it cannot count).
// Single-threaded use: the counter is a plain integer.
#pragma once

#include <cstddef>

namespace relay::testing {

// Heap allocations through operator new so far.
std::size_t allocations();

}  // namespace relay::testing

#if defined(RELAY_ALLOC_COUNTER_DEFINE)
#include <cstdlib>
#include <new>

namespace relay::testing {

namespace {
std::size_t allocation_count = 0;
}  // namespace

std::size_t allocations() {
  return allocation_count;
}

}  // namespace relay::testing

// GCC sees the malloc in operator new and the free in operator delete once inlined and reports
// them as mismatched; as replacements of the global pair they match.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  ++relay::testing::allocation_count;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
