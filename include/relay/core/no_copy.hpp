// A private base for owners of threads, memory and device handles, whose copies would release
// them twice: neither copyable nor movable.
#pragma once

namespace relay {

class no_copy {
 public:
  no_copy(const no_copy&) = delete;
  no_copy& operator=(const no_copy&) = delete;

 protected:
  no_copy() = default;
  ~no_copy() = default;
};

}  // namespace relay
