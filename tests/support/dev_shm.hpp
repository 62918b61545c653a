// What a test checks to show that relay leaves nothing in /dev/shm: the lines of this process's
// memory map backed by a file there (a segment created by name shows, unlinked or not), and the
// relay names there.
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace relay::testing {

inline std::string dev_shm_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line))
    if (line.find("/dev/shm/") != std::string::npos) found += line + "\n";
  return found;
}

// The names in /dev/shm that start with "relay" (what a segment created by name would leave).
inline std::set<std::string> relay_names_in_dev_shm() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (const std::string n = e.path().filename().string(); n.rfind("relay", 0) == 0)
      names.insert(n);
  return names;
}

}  // namespace relay::testing
