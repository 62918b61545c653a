// Where the nccl transport's NCCL (or RCCL) comes from: found at run time, never linked, so that
// a process holds one copy of the library, the one its framework (torch) already loaded.
//
//   relay::nccl_library lib;
//   relay::status s = relay::load_nccl(relay::nccl_search_of_cuda, lib);  // lib.api.send(...)
//
// load_nccl takes the entry points (nccl/api.hpp's table) from the first of:
//   1. a library already in the process that defines ncclCommInitRank (whatever its file name
//      or path: torch's libnccl.so.2 or librccl.so, or a program linked with NCCL);
//   2. the file the search's variable names (RELAY_NCCL_LIBRARY, RELAY_RCCL_LIBRARY);
//   3. the search's default name (libnccl.so.2, librccl.so.1), through the dynamic loader's
//      path.
// Where 1 finds a library and the variable names a different file, that is an error: loading
// the second copy is what the rule exists to prevent. Every entry point must resolve; a missing
// library or symbol is an error (errc::unsupported) that names it. Nothing here runs when a
// program loads: only when the nccl transport is asked for (nccl_transport::create, ::over,
// nccl_bootstrap, nccl_executor), so programs that never use it run without NCCL.
//
// process_nccl(search) is the process's table: loaded by its first successful call and kept
// (never unloaded) for the rest of the process; a failed load is retried by the next call.
//
// Host code: any compiler may include this header (POSIX dlopen; glibc before 2.34 links -ldl).
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/transport/nccl/api.hpp"

namespace relay {

// Which library a build looks for, and the words its errors use.
struct nccl_search {
  const char* name;      // "NCCL"
  const char* variable;  // the environment variable that names its file
  const char* soname;    // the default, found through the loader's path
};
inline constexpr nccl_search nccl_search_of_cuda{"NCCL", "RELAY_NCCL_LIBRARY", "libnccl.so.2"};
inline constexpr nccl_search nccl_search_of_hip{"RCCL", "RELAY_RCCL_LIBRARY", "librccl.so.1"};

// A loaded library and its table. `handle` closes the library with the last copy (the process's
// table, process_nccl, is never closed).
struct nccl_library {
  nccl_api api;
  std::string path;  // the file the entry points come from
  std::string how;   // "already in this process", "RELAY_NCCL_LIBRARY", "the default name"
  int version = 0;   // ncclGetVersion's code: 22805 for 2.28.5
  std::shared_ptr<void> handle;
};

namespace detail {

inline std::shared_ptr<void> nccl_handle(void* h) {
  return std::shared_ptr<void>(h, [](void* x) {
    if (x != nullptr) (void)::dlclose(x);
  });
}

// The file that defines `symbol` among the objects already loaded, in load order; empty if none.
// Opening a loaded object again with RTLD_NOLOAD loads nothing; dladdr names the object that
// defines the address (a library's dependency may be the one that does).
inline std::string nccl_loaded_file(const char* symbol) {
  std::vector<std::string> loaded;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name ? info->dlpi_name
                                                                                  : "");
        return 0;
      },
      &loaded);
  for (const std::string& name : loaded) {
    void* h = ::dlopen(name.empty() ? nullptr : name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) continue;
    void* at = ::dlsym(h, symbol);
    Dl_info where{};
    const bool found = at != nullptr && ::dladdr(at, &where) != 0 && where.dli_fname != nullptr;
    std::string file = found ? where.dli_fname : "";
    (void)::dlclose(h);
    if (!file.empty()) return file;
  }
  return {};
}

inline bool nccl_same_file(const std::string& a, const std::string& b) {
  struct stat x {};
  struct stat y {};
  if (::stat(a.c_str(), &x) != 0 || ::stat(b.c_str(), &y) != 0) return a == b;
  return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

inline std::string nccl_dlerror() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown error";
}

}  // namespace detail

// The library `where` describes, found and bound as the header says; `out` is left as it was
// on an error.
inline status load_nccl(const nccl_search& where, nccl_library& out) {
  const std::string name = where.name;
  const char* named = std::getenv(where.variable);
  const std::string variable = named != nullptr ? named : "";
  nccl_library lib;
  void* h = nullptr;
  const std::string loaded = detail::nccl_loaded_file("ncclCommInitRank");
  if (!loaded.empty()) {
    if (!variable.empty() && !detail::nccl_same_file(variable, loaded))
      return {errc::unsupported, std::string(where.variable) + " names " + variable +
                                     ", but this process already holds " + name + " from " +
                                     loaded + "; relay uses that copy and never loads a second: " +
                                     "unset " + where.variable + " or name " + loaded};
    h = ::dlopen(loaded.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) h = ::dlopen(nullptr, RTLD_LAZY);  // the program itself defines it
    lib.path = loaded;
    lib.how = "already in this process";
  } else if (!variable.empty()) {
    h = ::dlopen(variable.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
      return {errc::unsupported, "the nccl transport needs " + name + ": " + where.variable +
                                     " names " + variable + ", which cannot be loaded (" +
                                     detail::nccl_dlerror() + ")"};
    lib.path = variable;
    lib.how = where.variable;
  } else {
    h = ::dlopen(where.soname, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
      return {errc::unsupported, "the nccl transport needs " + name + ": none is loaded in this " +
                                     "process and " + where.soname + " cannot be loaded (" +
                                     detail::nccl_dlerror() + "); install " + name + " or set " +
                                     where.variable + " to its file"};
    lib.path = where.soname;
    lib.how = "the default name";
  }
  lib.handle = detail::nccl_handle(h);
  std::string missing;
  nccl_entry_points(lib.api, [&](const char* symbol, auto& entry) {
    void* at = h != nullptr ? ::dlsym(h, symbol) : nullptr;
    if (at == nullptr) {
      if (missing.empty()) missing = symbol;
      return;
    }
    static_assert(sizeof(entry) == sizeof(at));
    std::memcpy(&entry, &at, sizeof at);  // an object pointer to a function pointer, as POSIX does
  });
  if (!missing.empty())
    return {errc::unsupported, "the nccl transport needs " + name + "'s " + missing + ", which " +
                                   lib.path + " (" + lib.how + ") does not define (not " + name +
                                   ", or older than 2.7)"};
  if (nccl_result r = lib.api.get_version(&lib.version); r != nccl_success)
    return {errc::unsupported, lib.path + ": ncclGetVersion failed (" +
                                   std::string(lib.api.get_error_string(r)) + ")"};
  out = std::move(lib);
  return {};
}

// The process's table, loaded by the first successful call (see the header). It is never freed:
// communicators may outlive every static destructor that would close the library.
inline status process_nccl(const nccl_search& where, const nccl_library*& out) {
  static std::mutex lock;
  static const nccl_library* loaded = nullptr;
  const std::lock_guard<std::mutex> hold(lock);
  if (loaded == nullptr) {
    nccl_library lib;
    if (status s = load_nccl(where, lib); !s) return s;
    loaded = new nccl_library(std::move(lib));
  }
  out = loaded;
  return {};
}

}  // namespace relay
