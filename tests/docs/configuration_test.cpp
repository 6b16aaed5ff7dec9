// docs/configuration.md against the binary: each error the page shows is what the binary prints
// for the file the page shows beside it, and the keys the page's table lists are, table by table,
// the keys the binary knows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "docs/marked_blocks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

const fs::path kPage = fs::path{TEA_SOURCE_DIR} / "docs" / "configuration.md";
constexpr std::string_view kPrompt = "$ ";

std::vector<std::string> user_environment(const fs::path &dir) {
    const char *path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): no thread yet
    return test::environment_with({"HOME=" + (dir / "home").string(),
                                   "XDG_CONFIG_HOME=" + (dir / "home" / ".config").string(),
                                   "PATH=" + fs::path{TEA_EVALUATE_BIN}.parent_path().string() +
                                       ":" + (path != nullptr ? path : "/usr/bin:/bin")});
}

// A block marked `<!-- test: transcript (exit N) -->` is a terminal session in a fresh folder:
// `$ cat FILE` and the lines under it make FILE; any other `$ COMMAND` runs, and what it prints
// (stderr with stdout) must be the lines under it, blank lines after them aside. A tea-evaluate
// command must exit N.
void replay_transcript(const test::FencedBlock &block) {
    const auto exit_at = block.marker.find("(exit ");
    ASSERT_NE(exit_at, std::string::npos) << "configuration.md:" << block.line;
    const int status = std::stoi(block.marker.substr(exit_at + 6));
    const test::TempDir dir{"tea-doc-configuration"};
    const auto env = user_environment(dir.path());

    std::string command;
    std::string shown;
    const auto finish = [&] {
        if (command.empty()) {
            return;
        }
        while (shown.ends_with("\n\n")) {
            shown.pop_back();  // the blank line between two commands
        }
        if (command.starts_with("cat ")) {
            test::write_file((dir / command.substr(4)).string(), shown);
        } else {
            const auto o = test::run(
                {"/bin/sh", "-c", "exec 2>&1; cd \"$0\" && " + command, dir.path().string()}, env);
            std::string why;
            EXPECT_TRUE(test::shows_exactly(shown, o.out, &why))
                << "configuration.md:" << block.line << ": $ " << command << ": " << why;
            if (command.starts_with("tea-evaluate ")) {
                EXPECT_EQ(o.status, status)
                    << "configuration.md:" << block.line << ": $ " << command;
            }
        }
        command.clear();
        shown.clear();
    };
    for (const auto &line : test::lines_of(block.text)) {
        if (line.starts_with(kPrompt)) {
            finish();
            command = line.substr(kPrompt.size());
        } else {
            shown += line + "\n";
        }
    }
    finish();
}

TEST(ConfigurationPage, EachErrorItShowsIsWhatTheBinaryPrintsForTheFileItShows) {
    int transcripts = 0;
    for (const auto &block : test::fenced_blocks(kPage)) {
        if (block.marker.starts_with("transcript")) {
            SCOPED_TRACE("configuration.md:" + std::to_string(block.line));
            replay_transcript(block);
            ++transcripts;
        }
    }
    EXPECT_GE(transcripts, 3);
}

// The keys the binary knows in a table, from its refusal of one it does not know.
std::set<std::string> known_keys(const std::string &toml) {
    const test::TempDir dir{"tea-doc-configuration"};
    test::write_file((dir / "c.toml").string(), toml);
    const auto o = test::run({TEA_EVALUATE_BIN, "--config", (dir / "c.toml").string(), "plugins"},
                             user_environment(dir.path()));
    EXPECT_EQ(o.status, 2) << o.err;
    const std::string_view intro = "(known keys here: ";
    const auto from = o.err.find(intro);
    const auto to = o.err.find(')', from);
    if (from == std::string::npos || to == std::string::npos) {
        ADD_FAILURE() << "no list of known keys in: " << o.err;
        return {};
    }
    std::set<std::string> keys;
    std::string list = o.err.substr(from + intro.size(), to - from - intro.size());
    for (std::size_t at = 0; at <= list.size();) {
        const auto comma = list.find(", ", at);
        keys.insert(list.substr(at, comma - at));
        if (comma == std::string::npos) {
            break;
        }
        at = comma + 2;
    }
    return keys;
}

// The page's "Keys" table: each row's first cell is `[table] key`, or `[plugin.<name>]`.
std::map<std::string, std::set<std::string>> keys_on_the_page() {
    std::map<std::string, std::set<std::string>> tables;
    const auto text = test::read_file(kPage.string());
    for (const auto &line : test::lines_of(text)) {
        if (!line.starts_with("| `[")) {
            continue;
        }
        const auto cell = line.substr(3, line.find('`', 3) - 3);  // [table] key
        const auto close = cell.find(']');
        auto table = cell.substr(1, close - 1);
        table = table.substr(0, table.find('.'));  // plugin.<name>: the table `plugin`
        auto &keys = tables[table];
        if (close + 2 < cell.size()) {
            keys.insert(cell.substr(close + 2));
        }
    }
    return tables;
}

TEST(ConfigurationPage, TheKeysItListsAreTheKeysTheBinaryKnows) {
    const auto page = keys_on_the_page();
    std::set<std::string> tables;
    for (const auto &[table, keys] : page) {
        tables.insert(table);
    }
    EXPECT_EQ(known_keys("[tea_doc_no_such_table]\n"), tables);
    for (const auto &[table, keys] : page) {
        if (table == "plugin") {
            continue;  // each plugin's own table; the plugin validates it
        }
        EXPECT_EQ(known_keys("[" + table + "]\ntea_doc_no_such_key = 1\n"), keys)
            << "[" << table << "]";
    }
}

}  // namespace
}  // namespace tea
