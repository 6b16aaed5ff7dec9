// Helpers shared by the plugin tests: a temporary directory and manifests
// written into it that point at the fixture libraries of tests/fixtures.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "plugins/loader.hpp"
#include "support/temp_dir.hpp"
#include "tea_fixtures.h"

namespace tea::plugins::test_support {

using tea::test::TempDir;

inline std::filesystem::path write_file(const std::filesystem::path &file,
                                        const std::string &text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out{file, std::ios::binary | std::ios::trunc};
    out << text;
    out.close();
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
    return file;
}

// The ABI the fixtures' descriptors declare unless built to declare another.
inline const std::string fixture_abi = "1." + std::to_string(TEA_ABI_MINOR);

// A well-formed manifest (the form cmake/plugin-manifest.toml.in writes).
inline std::string manifest_text(const std::string &name, const std::string &kind,
                                 const std::string &library, const std::string &abi = fixture_abi) {
    return "# written by a test\nname = \"" + name + "\"\nkind = \"" + kind + "\"\nabi = \"" + abi +
           "\"\nlibrary = \"" + library + "\"\n";
}

inline std::filesystem::path write_manifest(const std::filesystem::path &dir,
                                            const std::string &name, const std::string &kind,
                                            const std::string &library,
                                            const std::string &abi = fixture_abi) {
    return write_file(dir / (name + ".toml"), manifest_text(name, kind, library, abi));
}

// Discovers the one manifest of dir and returns its entry.
inline Registry::Entry discover_one(const std::filesystem::path &dir,
                                    const std::filesystem::path &libdir = "/nonexistent-libdir") {
    const auto registry = Registry::discover({dir}, libdir);
    if (registry.entries().size() != 1) {
        ADD_FAILURE() << "expected one entry in " << dir << ", found " << registry.entries().size();
        return {};
    }
    return registry.entries().front();
}

// The refusal of the one manifest of dir (fails the test when it was loaded).
inline std::string refusal_of(const std::filesystem::path &dir) {
    const auto entry = discover_one(dir);
    EXPECT_EQ(entry.plugin, nullptr) << "expected a refusal, but the plugin was loaded";
    EXPECT_FALSE(entry.refusal.empty());
    return entry.refusal;
}

}  // namespace tea::plugins::test_support
