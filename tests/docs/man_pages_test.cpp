// docs/man/ against the binary, the built-in configuration and the format's reference: each page
// formats without a warning, tea-evaluate(1) has a section for every subcommand and names every
// option that subcommand's --help lists, tea-evaluate.toml(5) every table and key of
// config/default.toml, and tea-evaluate-evaluation(5) every field docs/evaluation-format.md's
// tables list, so that a page cannot silently fall behind the code or the docs.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "docs/marked_blocks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;

const fs::path kPages = fs::path{TEA_SOURCE_DIR} / "docs" / "man";
const std::vector<std::string> kPageNames{"tea-evaluate.1", "tea-evaluate.toml.5",
                                          "tea-evaluate-evaluation.5"};

// What formatting the page with man(1) and with groff(1) warns about, each warning category on.
std::string formatting_warnings(const fs::path &page) {
    const auto env = test::environment_with({"LC_ALL=C.UTF-8", "MANWIDTH=80"});
    const auto man = test::run({"man", "--warnings", "-E", "UTF-8", "-l", page.string()}, env);
    const auto groff = test::run({"groff", "-man", "-ww", "-z", page.string()}, env);
    std::string warnings = man.err + groff.err;
    if (man.status != 0 || man.out.empty()) {
        warnings += "man exited " + std::to_string(man.status) + " with no page\n";
    }
    if (groff.status != 0) {
        warnings += "groff exited " + std::to_string(groff.status) + "\n";
    }
    return warnings;
}

// The subcommands `tea-evaluate --help` lists, and the long options each `SUB --help` lists
// (the top level's under "").
std::vector<std::string> listed_subcommands(const std::string &help) {
    std::vector<std::string> names;
    bool listed = false;
    for (const auto &line : test::lines_of(help)) {
        if (line == "Subcommands:") {
            listed = true;
        } else if (listed && line.starts_with("  ") && line.size() > 2 && line[2] != ' ') {
            names.push_back(line.substr(2, line.find(' ', 2) - 2));
        }
    }
    return names;
}

std::vector<std::string> long_options(const std::string &help) {
    std::vector<std::string> options;
    for (const auto &line : test::lines_of(help)) {
        if (!line.starts_with("  -")) {
            continue;
        }
        std::istringstream names{line.substr(2, line.find(' ', 2) - 2)};
        for (std::string name; std::getline(names, name, ',');) {
            if (name.starts_with("--")) {
                options.push_back(name);
            }
        }
    }
    return options;
}

// Whether roff source names the option: "--name" is written "\-\-name", and must not be the start
// of a longer option ("--env" in "--environment").
bool names_option(const std::string &source, const std::string &option) {
    std::string roff;
    for (const char c : option) {
        roff += c == '-' ? std::string{"\\-"} : std::string(1, c);
    }
    for (auto at = source.find(roff); at != std::string::npos; at = source.find(roff, at + 1)) {
        const auto after = at + roff.size();
        const bool longer = after < source.size() &&
                            (std::isalnum(static_cast<unsigned char>(source[after])) != 0 ||
                             source.compare(after, 2, "\\-") == 0);
        if (!longer) {
            return true;
        }
    }
    return false;
}

bool has_line(const std::string &source, const std::string &line) {
    for (const auto &each : test::lines_of(source)) {
        if (each == line) {
            return true;
        }
    }
    return false;
}

// The fields of the reference's tables of a format (a "field" column, then its "type"): each
// backquoted name of a row's first cell, the last part of a dotted one ("agent.model" is "model").
// A table of what a record holds ("field | meaning") is left out: no evaluation writes those.
std::set<std::string> format_fields(const std::string &markdown) {
    std::set<std::string> fields;
    bool format_table = false;
    for (const auto &line : test::lines_of(markdown)) {
        if (line.starts_with("| field |")) {
            format_table = line.find("| type |") != std::string::npos;
            continue;
        }
        if (!line.starts_with("|")) {
            format_table = false;
            continue;
        }
        if (!format_table || line.starts_with("|---")) {
            continue;
        }
        const auto first = line.substr(1, line.find('|', 1) - 1);
        for (auto open = first.find('`'); open != std::string::npos;) {
            const auto close = first.find('`', open + 1);
            if (close == std::string::npos) {
                break;
            }
            const auto name = first.substr(open + 1, close - open - 1);
            fields.insert(name.substr(name.rfind('.') + 1));
            open = first.find('`', close + 1);
        }
    }
    return fields;
}

// The words a roff page sets in bold: those of its .B, .BR, .RB, .BI and .IB lines.
std::set<std::string> bold_words(const std::string &source) {
    std::set<std::string> words;
    for (const auto &line : test::lines_of(source)) {
        if (!line.starts_with(".B ") && !line.starts_with(".BR ") && !line.starts_with(".RB ") &&
            !line.starts_with(".BI ") && !line.starts_with(".IB ")) {
            continue;
        }
        std::string word;
        for (const char c : line.substr(line.find(' '))) {
            if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_') {
                word += c;
            } else if (!word.empty()) {
                words.insert(word);
                word.clear();
            }
        }
        if (!word.empty()) {
            words.insert(word);
        }
    }
    return words;
}

TEST(ManPages, EachFormatsWithoutAWarning) {
    for (const auto &name : kPageNames) {
        EXPECT_EQ(formatting_warnings(kPages / name), "") << name;
    }
}

// The positive control: a page with an unknown macro and a bad escape is warned about.
TEST(ManPages, AFaultyPageIsWarnedAbout) {
    const test::TempDir dir{"tea-man-pages"};
    const auto page = dir.path() / "faulty.1";
    test::write_file(
        page.string(),
        ".TH FAULTY 1\n.SH NAME\nfaulty \\- a page\n.NOSUCHMACRO x\n\\[nosuchglyph]\n");
    const auto warnings = formatting_warnings(page);
    EXPECT_NE(warnings.find("NOSUCHMACRO"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("nosuchglyph"), std::string::npos) << warnings;
}

TEST(ManPages, TheCommandPageHasEverySubcommandAndOption) {
    const auto env = test::environment_with({"XDG_CONFIG_HOME=/nonexistent-tea-test"});
    const auto source = test::read_file((kPages / "tea-evaluate.1").string());
    const auto top = test::run({TEA_EVALUATE_BIN, "--help"}, env);
    ASSERT_EQ(top.status, 0) << top.err;
    const auto subcommands = listed_subcommands(top.out);
    ASSERT_GE(subcommands.size(), 9U) << top.out;
    std::set<std::string> checked;
    for (const auto &option : long_options(top.out)) {
        EXPECT_TRUE(names_option(source, option)) << "tea-evaluate.1 lacks " << option;
        checked.insert(option);
    }
    for (const auto &sub : subcommands) {
        EXPECT_TRUE(has_line(source, ".SS " + sub)) << "tea-evaluate.1 has no section " << sub;
        const auto help = test::run({TEA_EVALUATE_BIN, sub, "--help"}, env);
        ASSERT_EQ(help.status, 0) << sub << ": " << help.err;
        for (const auto &option : long_options(help.out)) {
            EXPECT_TRUE(names_option(source, option))
                << "tea-evaluate.1 lacks " << sub << " " << option;
            checked.insert(option);
        }
    }
    // The parse found the options of more than the top level (exec's, qualify's).
    EXPECT_TRUE(checked.contains("--withhold") && checked.contains("--jobs") &&
                checked.contains("--legs") && checked.contains("--output"));
    // The control: an option of no subcommand, and a prefix of one, are not taken as named.
    EXPECT_FALSE(names_option(source, "--frobnicate"));
    EXPECT_FALSE(names_option(source, "--with"));
}

TEST(ManPages, TheConfigurationPageHasEveryTableAndKeyOfTheDefault) {
    const auto source = test::read_file((kPages / "tea-evaluate.toml.5").string());
    const auto lines = test::lines_of(source);
    const auto defaults =
        toml::parse_file((fs::path{TEA_SOURCE_DIR} / "config" / "default.toml").string());
    ASSERT_GE(defaults.size(), 7U);
    for (const auto &[table, keys] : defaults) {
        const std::string heading = ".SS [" + std::string{table.str()} + "]";
        // The keys of the table's section: from its heading to the next.
        std::set<std::string> described;
        bool inside = false;
        for (const auto &line : lines) {
            if (line.starts_with(".SS ")) {
                inside = line == heading;
            } else if (inside && line.starts_with(".B ")) {
                described.insert(line.substr(3));
            }
        }
        EXPECT_TRUE(has_line(source, heading)) << "tea-evaluate.toml.5 has no section " << heading;
        ASSERT_TRUE(keys.is_table()) << table.str();
        for (const auto &[key, value] : *keys.as_table()) {
            EXPECT_TRUE(described.contains(std::string{key.str()}))
                << "tea-evaluate.toml.5 does not describe [" << table.str() << "] " << key.str();
        }
    }
}

TEST(ManPages, TheEvaluationPageHasEveryFieldOfTheReference) {
    const auto fields = format_fields(
        test::read_file((fs::path{TEA_SOURCE_DIR} / "docs" / "evaluation-format.md").string()));
    // The parse found the tables of several objects (evaluation.json, a probe, a tool-server and
    // an HTTP probe, a conversation's agent, an egress item, a rubric judge, contract.json) and
    // left out the call record's table, which an evaluator reads.
    for (const std::string field : {"trials", "stdin", "method", "request", "maxTurns", "pinned",
                                    "passThreshold", "interfaces", "model"}) {
        EXPECT_TRUE(fields.contains(field)) << field;
    }
    EXPECT_FALSE(fields.contains("timedOut"));
    const auto named = bold_words(test::read_file((kPages / "tea-evaluate-evaluation.5").string()));
    for (const auto &field : fields) {
        EXPECT_TRUE(named.contains(field))
            << "tea-evaluate-evaluation.5 does not set the field " << field << " in bold";
    }
    // The control: a word the page never sets in bold, and one it has only in plain text.
    EXPECT_FALSE(named.contains("frobnicate"));
    EXPECT_FALSE(named.contains("checkout"));
}

}  // namespace
}  // namespace tea
