#include "docs/shell_session.hpp"

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test {
namespace {

// A word the shell reads back exactly.
std::string quoted(const std::string &s) {
    std::string out = "'";
    for (const char c : s) {
        out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
    }
    return out + "'";
}

std::string location(const std::filesystem::path &page, const FencedBlock &block) {
    return page.filename().string() + ":" + std::to_string(block.line);
}

}  // namespace

std::vector<std::string> fresh_user_environment(const std::filesystem::path &home,
                                                const std::filesystem::path &private_root,
                                                const std::string &path) {
    auto env = environment_with(
        {"HOME=" + home.string(), "XDG_CONFIG_HOME=" + (home / ".config").string(),
         "TEA_EVALUATE_PRIVATE_ROOT=" + private_root.string(), "PATH=" + path,
         "GIT_AUTHOR_NAME=A reader", "GIT_AUTHOR_EMAIL=reader@example.invalid",
         "GIT_COMMITTER_NAME=A reader", "GIT_COMMITTER_EMAIL=reader@example.invalid"});
    std::erase_if(env, [](const std::string &e) {
        return e.starts_with("TEA_PLUGIN_PATH=") || e.starts_with("XDG_STATE_HOME=") ||
               e.starts_with("GIT_DIR=") || e.starts_with("GIT_WORK_TREE=");
    });
    return env;
}

SessionResult run_page(const std::filesystem::path &page, const std::vector<FencedBlock> &blocks,
                       const std::filesystem::path &cwd, const std::vector<std::string> &env) {
    // Each block's output goes to a file of its own; a block in braces runs in the shell itself,
    // so what it changes holds for the next.
    const TempDir outputs{"tea-doc-outputs"};
    const auto started = outputs / "started";
    std::vector<const FencedBlock *> run;
    std::string script = "set -euo pipefail\ncd " + quoted(cwd.string()) + "\n";
    for (const auto &block : blocks) {
        if (block.marker != "run") {
            continue;
        }
        const auto n = std::to_string(run.size());
        script += "echo " + n + " > " + quoted(started.string()) + "\n{\n" + block.text + "\n} > " +
                  quoted((outputs / n).string()) + " 2>&1\n";
        run.push_back(&block);
    }

    const auto o = test::run({"/bin/bash", "-c", script}, env);
    SessionResult result;
    result.status = o.status;
    for (std::size_t i = 0; i < run.size(); ++i) {
        result.outputs.push_back(read_file((outputs / std::to_string(i)).string()));
    }
    if (o.status != 0) {
        const auto last = read_file(started.string());
        if (last.empty()) {
            result.failed_block = "before the first block: " + o.out + o.err;
        } else {
            const auto i = static_cast<std::size_t>(std::stoi(last));
            result.failed_block =
                location(page, *run[i]) + ":\n" + run[i]->text + "printed:\n" + result.outputs[i];
        }
    }
    return result;
}

std::vector<std::string> outputs_not_shown(const std::filesystem::path &page,
                                           const std::vector<FencedBlock> &blocks,
                                           const SessionResult &session) {
    std::vector<std::string> problems;
    int run_index = -1;
    for (const auto &block : blocks) {
        if (block.marker == "run") {
            ++run_index;
        } else if (block.marker == "output") {
            if (run_index < 0) {
                problems.push_back(location(page, block) +
                                   ": an output with no run block before it");
                continue;
            }
            const auto &printed = session.outputs.at(static_cast<std::size_t>(run_index));
            if (std::string missing; !shows_in_order(block.text, printed, &missing)) {
                problems.push_back(location(page, block) + ": the page shows '" + missing +
                                   "', which the commands above it did not print (in that "
                                   "order); they printed:\n" +
                                   printed);
            }
        }
    }
    return problems;
}

}  // namespace tea::test
