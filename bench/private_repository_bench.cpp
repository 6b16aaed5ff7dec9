// Times build_private_repository against `git clone --no-local --mirror` of the same project, and
// the cached path, interleaved in one run so that both see the same machine state.
//
//   private_repository_bench [--commits N] [--repetitions R] [--work DIR]
//
// The project (N commits, an evaluation folder `.tea` that changes every 20th commit, annotated
// and lightweight tags) is generated once with `git fast-import` and kept in DIR (default
// /tmp/tea-private-repository-bench) for later runs.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "git/private_repository.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kDirectories = 10;
constexpr int kFilesPerDirectory = 100;
constexpr int kLinesPerFile = 30;

void run(const std::string &command) {
    const int status = std::system(command.c_str());
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("command failed: " + command);
}

std::string file_content(int file, int version, int commit) {
    std::ostringstream out;
    for (int line = 0; line < kLinesPerFile; ++line) {
        out << "file " << file << " line " << line;
        if (version > 0 && line == version % kLinesPerFile) out << " edited at commit " << commit;
        out << '\n';
    }
    return out.str();
}

std::string file_path(int file) {
    return "d" + std::to_string(file % kDirectories) + "/f" + std::to_string(file) + ".txt";
}

void data(std::FILE *out, const std::string &content) {
    std::fprintf(out, "data %zu\n", content.size());
    std::fwrite(content.data(), 1, content.size(), out);
    std::fputc('\n', out);
}

struct PipeCloser {
    void operator()(std::FILE *f) const {
        if (f != nullptr) pclose(f);
    }
};

// Commit i: even commits edit one line of one file, the odd commit after reverts it (its trees
// repeat an earlier commit's, as a revert does), and every 20th commit changes the evaluation
// folder, whose grading file is different each time.
void generate(const fs::path &project, int commits) {
    fs::remove_all(project);
    run("git init -q -b main " + project.string());
    std::unique_ptr<std::FILE, PipeCloser> out(
        popen(("git -C " + project.string() + " fast-import --quiet").c_str(), "w"));
    if (!out) throw std::runtime_error("cannot start git fast-import");
    std::FILE *f = out.get();
    long long when = 1600000000;
    int previous_file = -1;
    std::string previous_content;
    for (int i = 0; i < commits; ++i) {
        std::fprintf(f, "commit refs/heads/main\nmark :%d\n", i + 1);
        std::fprintf(f, "committer Bench <bench@example.com> %lld +0000\n", when + i);
        data(f, "commit " + std::to_string(i));
        if (i > 0) std::fprintf(f, "from :%d\n", i);
        if (i == 0) {
            for (int file = 0; file < kDirectories * kFilesPerDirectory; ++file) {
                std::fprintf(f, "M 100644 inline %s\n", file_path(file).c_str());
                data(f, file_content(file, 0, 0));
            }
            std::fprintf(f, "M 100644 inline .tea/evaluation.json\n");
            data(f, "{\"targets\": []}\n");
        } else if (i % 20 == 19) {
            std::fprintf(f, "M 100644 inline .tea/evaluator/grade.txt\n");
            data(f, "expected answer " + std::to_string(i * 7919) + "\n");
            previous_file = -1;
        } else if (i % 2 == 0) {
            const int file = (i / 2 * 37) % (kDirectories * kFilesPerDirectory);
            std::fprintf(f, "M 100644 inline %s\n", file_path(file).c_str());
            data(f, file_content(file, i / 2, i));
            previous_file = file;
            previous_content = file_content(file, 0, 0);
        } else if (previous_file >= 0) {
            std::fprintf(f, "M 100644 inline %s\n", file_path(previous_file).c_str());
            data(f, previous_content);
            previous_file = -1;
        }
        if (i % 5000 == 4999) {
            std::fprintf(f, "tag v%d\nfrom :%d\n", i / 5000, i + 1);
            std::fprintf(f, "tagger Bench <bench@example.com> %lld +0000\n", when + i);
            data(f, "release " + std::to_string(i / 5000));
        }
        if (i % 7000 == 6999)
            std::fprintf(f, "reset refs/tags/light-%d\nfrom :%d\n\n", i / 7000, i + 1);
    }
    out.reset();
    run("git -C " + project.string() + " repack -a -d -q");
}

double seconds(const std::function<void()> &work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char **argv) {
    int commits = 100000;
    int repetitions = 3;
    fs::path work = "/tmp/tea-private-repository-bench";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--commits")
            commits = std::atoi(argv[i + 1]);
        else if (flag == "--repetitions")
            repetitions = std::atoi(argv[i + 1]);
        else if (flag == "--work")
            work = argv[i + 1];
    }
    try {
        const fs::path project = work / ("project-" + std::to_string(commits));
        if (!fs::exists(project / "generated")) {
            std::cout << "generating " << commits << " commits in " << project << "...\n";
            const double took = seconds([&] { generate(project, commits); });
            std::ofstream(project / "generated") << commits << '\n';
            std::cout << "generated in " << took << " s\n";
        }
        run("git -C " + project.string() + " count-objects -v | grep -E 'in-pack|size-pack'");

        const fs::path scratch = work / "scratch";
        const fs::path cache = work / "cache";
        fs::remove_all(scratch);
        fs::remove_all(cache);
        fs::create_directories(scratch);
        tea::git::PrivateRepositoryRequest request{project, "main", {".tea"}, {}};

        // Fills the cache, untimed; the cached runs below are hits.
        request.destination = scratch / "warm";
        const auto first = tea::git::build_private_repository(request, cache);
        std::cout << "carried: " << first.commits << " commits, " << first.trees << " trees, "
                  << first.blobs << " blobs, " << first.tags << " tags\n";

        std::vector<double> build, clone, cached;
        for (int r = 0; r < repetitions; ++r) {
            const fs::path b = scratch / ("build-" + std::to_string(r));
            const fs::path c = scratch / ("clone-" + std::to_string(r));
            const fs::path h = scratch / ("cached-" + std::to_string(r));
            build.push_back(seconds([&] {
                request.destination = b;
                tea::git::build_private_repository(request);
            }));
            clone.push_back(seconds([&] {
                run("git clone -q --no-local --mirror " + project.string() + " " + c.string());
            }));
            cached.push_back(seconds([&] {
                request.destination = h;
                if (!tea::git::build_private_repository(request, cache).reused_from_cache)
                    throw std::runtime_error("the cache was not used");
            }));
            std::cout << "round " << r + 1 << ": build " << build.back() << " s, clone "
                      << clone.back() << " s, cached " << cached.back() << " s\n";
            fs::remove_all(b);
            fs::remove_all(c);
            fs::remove_all(h);
        }
        const double mb = median(build), mc = median(clone), mh = median(cached);
        std::cout << "median of " << repetitions << ": build_private_repository " << mb
                  << " s, git clone --no-local --mirror " << mc << " s, cached " << mh << " s\n"
                  << "ratio build/clone " << mb / mc << ", cached/clone " << mh / mc << '\n';
        fs::remove_all(scratch);
    } catch (const std::exception &error) {
        std::cerr << "private_repository_bench: " << error.what() << '\n';
        return 1;
    }
    return 0;
}
