// How much host memory this process may still use: the smallest of the system's MemAvailable
// (/proc/meminfo) and what the cgroup it runs in still allows (memory.max - memory.current,
// cgroup v2). The tools estimate a run's peak before they allocate and compare it with this.
//
// RELAY_AVAILABLE_MEMORY=<bytes> replaces the figure (tests force a shortage with it).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace relay::cli {

struct available_memory {
  std::int64_t bytes = 0;
  std::string source;  // where the figure comes from, for messages
};

namespace detail {

inline std::optional<std::int64_t> whole_number(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

inline std::optional<std::int64_t> file_number(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  if (!in || !(text << in.rdbuf())) return std::nullopt;
  return whole_number(text.str());  // "max" (no limit) is not a number
}

// MemAvailable from /proc/meminfo, in bytes.
inline std::optional<std::int64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::int64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// The memory limit and use of this process's cgroup: v2 ("0::/path" in /proc/self/cgroup;
// memory.max, memory.current) or v1 ("N:memory:/path"; memory.limit_in_bytes,
// memory.usage_in_bytes). Inside a container the path may not exist: the mount's root is the
// container's own cgroup then.
struct cgroup_memory {
  std::int64_t limit = 0, used = 0;
};
inline std::optional<cgroup_memory> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const bool v2 = line.starts_with("0::");
    const std::size_t at = line.find(":memory:");
    if (!v2 && at == std::string::npos) continue;
    const std::string path = v2 ? line.substr(3) : line.substr(at + 8);
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    const std::string max_file = v2 ? "/memory.max" : "/memory.limit_in_bytes";
    const std::string used_file = v2 ? "/memory.current" : "/memory.usage_in_bytes";
    for (const std::string& folder : {root + path, root}) {
      const auto limit = file_number(folder + max_file);  // "max" (v2, no limit) is no number
      const auto used = file_number(folder + used_file);
      if (limit && used) return cgroup_memory{*limit, *used};
    }
  }
  return std::nullopt;
}

}  // namespace detail

inline available_memory host_memory_available() {
  if (const char* forced = std::getenv("RELAY_AVAILABLE_MEMORY"))
    if (auto v = detail::whole_number(forced)) return {*v, "RELAY_AVAILABLE_MEMORY"};
  available_memory m{std::int64_t{1} << 62, "no limit found"};
  if (auto v = detail::mem_available()) m = {*v, "MemAvailable"};
  if (const auto c = detail::cgroup_limit()) {
    const std::int64_t left = c->limit - std::min(c->limit, c->used);
    if (left < m.bytes) m = {left, "the cgroup's memory limit less its use"};
  }
  return m;
}

}  // namespace relay::cli
