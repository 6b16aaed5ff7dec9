// The main of a libFuzzer target built as a plain program (with TEA_FUZZ_REPLAY_MAIN): replays
// every file named, or found in a directory named, through LLVMFuzzerTestOneInput, so any
// compiler, with or without sanitizers, exercises the target's checks over its corpus. Each file's
// name is printed before it is replayed, so a crash names its input. Include it once, in the
// fuzz target's own source, after LLVMFuzzerTestOneInput.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    std::size_t replayed = 0;
    for (int i = 1; i < argc; ++i) {
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(argv[i])) {
            for (const auto &entry : std::filesystem::directory_iterator(argv[i])) {
                if (entry.is_regular_file()) files.push_back(entry.path());
            }
        } else {
            files.emplace_back(argv[i]);
        }
        std::sort(files.begin(), files.end());
        for (const auto &file : files) {
            std::string bytes(static_cast<std::size_t>(std::filesystem::file_size(file)), '\0');
            std::ifstream in(file, std::ios::binary);
            in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            std::printf("%s\n", file.filename().c_str());
            std::fflush(stdout);
            LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()),
                                   bytes.size());
            ++replayed;
        }
    }
    std::printf("replayed %zu inputs\n", replayed);
    return replayed > 0 ? 0 : 1;
}
