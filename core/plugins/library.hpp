// Opening a shared object the runtime runs code from: a plugin, or the runtime's own git module.
// One way for both, so both get the same checks: who may have written the file (trust.hpp), that
// it is an ELF shared object, and that it is never unloaded.
#pragma once

#include <filesystem>

#include "plugins/trust.hpp"

namespace tea::plugins {

// Opens `path` as `trust` requires, checks it is an ELF shared object and loads it with every
// symbol bound (RTLD_NOW) and none shared with later libraries (RTLD_LOCAL), for the rest of the
// process. Returns the address of `symbol`, or nullptr when the library does not define it.
// Throws std::runtime_error with one sentence that names the file.
void *load_library(const std::filesystem::path &path, const char *symbol, const TrustPolicy &trust);

}  // namespace tea::plugins
