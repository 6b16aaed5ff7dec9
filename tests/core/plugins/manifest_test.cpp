// Manifest-level refusals: what is wrong with plugins.d/<name>.toml, or with
// the file it points at before the loader looks for the entry symbol. Each
// refusal names the file and says what was expected and what was found.
#include "plugins/manifest.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "plugin_test_support.hpp"
#include "plugins/loader.hpp"
#include "util/error.hpp"

namespace tea::plugins {
namespace {

using test_support::discover_one;
using test_support::manifest_text;
using test_support::refusal_of;
using test_support::TempDir;
using test_support::write_file;
using test_support::write_manifest;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const std::filesystem::path good_backend{TEA_FIXTURE_GOOD_BACKEND};

// ---------------------------------------------------------------------------
// Reading a good manifest.

TEST(ReadManifest, ReadsEveryField) {
    const TempDir dir;
    const auto file =
        write_file(dir / "good-backend.toml",
                   manifest_text("good-backend", "observer", good_backend.string(), "1.0") +
                       "description = \"allowed, and ignored\"\n");
    const auto m = read_manifest(file, "/nonexistent");
    EXPECT_EQ(m.file, file);
    EXPECT_EQ(m.name, "good-backend");
    EXPECT_EQ(m.kind, Kind::observer);
    EXPECT_EQ(m.abi_major, 1);
    EXPECT_EQ(m.abi_minor, 0);
    EXPECT_EQ(m.library, good_backend);
}

TEST(ReadManifest, BasenameIsLookedUpBesideTheManifestFirst) {
    const TempDir dir;
    const auto basename = good_backend.filename();
    std::filesystem::create_symlink(good_backend, dir / basename.string());
    const auto file = write_manifest(dir.path(), "good-backend", "backend", basename.string());
    // The same basename also exists in the plugin libdir; the manifest's own directory wins.
    EXPECT_EQ(read_manifest(file, good_backend.parent_path()).library, dir / basename.string());
}

TEST(ReadManifest, BasenameIsLookedUpInThePluginLibdir) {
    const TempDir dir;
    const auto basename = good_backend.filename().string();
    const auto file = write_manifest(dir.path(), "good-backend", "backend", basename);
    EXPECT_EQ(read_manifest(file, good_backend.parent_path()).library,
              good_backend.parent_path() / basename);
    // And the plugin loads from there.
    const auto entry = discover_one(dir.path(), good_backend.parent_path());
    EXPECT_NE(entry.plugin, nullptr) << entry.refusal;
}

TEST(ReadManifest, KindsRoundTrip) {
    for (const Kind k : {Kind::backend, Kind::observer, Kind::egress, Kind::login}) {
        EXPECT_EQ(kind_from_string(to_string(k)), k);
    }
    EXPECT_EQ(kind_from_string("Backend"), std::nullopt);
    EXPECT_EQ(kind_from_string(""), std::nullopt);
}

// ---------------------------------------------------------------------------
// Refusals of the manifest itself. Each names the manifest file.

struct ManifestCase {
    std::string id;
    std::string text;
    std::vector<std::string> expected;
};

void PrintTo(const ManifestCase &c, std::ostream *out) {
    *out << c.id;
}

class ManifestRefusal : public ::testing::TestWithParam<ManifestCase> {};

TEST_P(ManifestRefusal, NamesTheManifestAndWhatWasExpected) {
    const auto &c = GetParam();
    const TempDir dir;
    const auto file = write_file(dir / "plugin.toml", c.text);
    const auto refusal = refusal_of(dir.path());
    EXPECT_THAT(refusal, HasSubstr(file.string() + ": "));
    for (const auto &expected : c.expected) {
        EXPECT_THAT(refusal, HasSubstr(expected));
    }
    // read_manifest alone (no loading) refuses all of them except a foreign ABI,
    // which the loader refuses before it opens the library.
    if (c.id != "abi_2_0") {
        EXPECT_THROW((void)read_manifest(file, dir.path()), std::runtime_error);
    }
}

std::string lines(std::initializer_list<const char *> items) {
    std::string out;
    for (const char *item : items) {
        out += item;
        out += '\n';
    }
    return out;
}

const std::string library_line = "library = \"" + good_backend.string() + "\"\n";

INSTANTIATE_TEST_SUITE_P(
    Manifests, ManifestRefusal,
    ::testing::Values(
        ManifestCase{"no_library_key",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\""}),
                     {"names no library", "expected key 'library'"}},
        ManifestCase{
            "library_empty",
            lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\"", "library = \"\""}),
            {"key 'library' must be a non-empty string"}},
        ManifestCase{"library_not_a_string",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\"", "library = 3"}),
                     {"key 'library' must be a non-empty string"}},
        ManifestCase{
            "library_parent_directory",
            lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\"", "library = \"../x.so\""}),
            {"library '../x.so' must be a basename or an absolute path"}},
        ManifestCase{"library_subdirectory",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\"",
                            "library = \"sub/x.so\""}),
                     {"library 'sub/x.so' must be a basename or an absolute path"}},
        ManifestCase{
            "unknown_key",
            lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0\"", "enabled = true"}) +
                library_line,
            {"unknown key 'enabled'", "expected name, kind, abi, library, description"}},
        ManifestCase{
            "unknown_kind",
            lines({"name = \"x\"", "kind = \"frobnicator\"", "abi = \"1.0\""}) + library_line,
            {"kind 'frobnicator' is not a plugin kind",
             "expected backend, observer, egress or login"}},
        ManifestCase{"kind_not_a_string",
                     lines({"name = \"x\"", "kind = 1", "abi = \"1.0\""}) + library_line,
                     {"key 'kind' must be a non-empty string"}},
        ManifestCase{"missing_name",
                     lines({"kind = \"backend\"", "abi = \"1.0\""}) + library_line,
                     {"missing key 'name'"}},
        ManifestCase{
            "name_with_a_slash",
            lines({"name = \"../evil\"", "kind = \"backend\"", "abi = \"1.0\""}) + library_line,
            {"name '../evil' is not a valid plugin name"}},
        ManifestCase{"missing_abi",
                     lines({"name = \"x\"", "kind = \"backend\""}) + library_line,
                     {"missing key 'abi'"}},
        ManifestCase{"abi_word",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"one\""}) + library_line,
                     {"abi 'one' is not of the form MAJOR.MINOR"}},
        ManifestCase{"abi_no_minor",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1\""}) + library_line,
                     {"abi '1' is not of the form MAJOR.MINOR"}},
        ManifestCase{
            "abi_three_parts",
            lines({"name = \"x\"", "kind = \"backend\"", "abi = \"1.0.0\""}) + library_line,
            {"abi '1.0.0' is not of the form MAJOR.MINOR"}},
        ManifestCase{"abi_number",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = 1.0"}) + library_line,
                     {"key 'abi' must be a non-empty string"}},
        ManifestCase{"abi_2_0",
                     lines({"name = \"x\"", "kind = \"backend\"", "abi = \"2.0\""}) + library_line,
                     {"plugin 'x' declares ABI 2.0", "this tea-evaluate supports ABI 1.x"}},
        ManifestCase{"invalid_toml",
                     lines({"name = \"x\"", "kind = backend", "abi = \"1.0\""}) + library_line,
                     {"line 2: invalid TOML"}}),
    [](const auto &test_info) { return test_info.param.id; });

TEST(ManifestRefusal, LibraryNotFoundSaysWhereItLooked) {
    const TempDir dir;
    const TempDir libdir;
    const auto file = write_manifest(dir.path(), "x", "backend", "libtea-backend-missing.so");
    const auto entry = Registry::discover({dir.path()}, libdir.path()).entries().at(0);
    EXPECT_EQ(entry.plugin, nullptr);
    EXPECT_THAT(entry.refusal,
                AllOf(HasSubstr(file.string() + ": library 'libtea-backend-missing.so' was not "
                                                "found (looked for "),
                      HasSubstr((dir / "libtea-backend-missing.so").string()),
                      HasSubstr((libdir / "libtea-backend-missing.so").string())));
}

// A manifest that was read names its plugin: `plugins` lists it by name and kind, a command that
// asks for it is told why it cannot be loaded, and it keeps its name from a later manifest.
TEST(ManifestRefusal, AMissingLibraryKeepsThePluginsNameAndKind) {
    const TempDir dir;
    const TempDir later;
    const TempDir libdir;
    write_manifest(dir.path(), "x", "observer", "libtea-observer-missing.so");
    write_manifest(later.path(), "x", "observer", good_backend.string());
    const auto registry = Registry::discover({dir.path(), later.path()}, libdir.path());
    const auto &entries = registry.entries();
    ASSERT_EQ(entries.size(), 2U);
    EXPECT_EQ(entries[0].name, "x");
    EXPECT_EQ(entries[0].kind, Kind::observer);
    EXPECT_THAT(entries[0].refusal,
                HasSubstr("library 'libtea-observer-missing.so' was not found"));
    EXPECT_THAT(entries[1].refusal, HasSubstr("duplicate plugin name 'x'"));
    try {
        (void)registry.require("x", Kind::observer);
        ADD_FAILURE() << "a plugin without its library was loaded";
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("the observer plugin 'x' cannot be loaded: "));
        EXPECT_THAT(e.what(), HasSubstr("was not found"));
    }
}

TEST(ManifestRefusal, AbsoluteLibraryNotFound) {
    const TempDir dir;
    const auto missing = dir / "nowhere" / "libx.so";
    write_manifest(dir.path(), "x", "backend", missing.string());
    EXPECT_THAT(refusal_of(dir.path()), HasSubstr("was not found (looked for " + missing.string()));
}

TEST(ManifestRefusal, ADirectoryIsNoLibrary) {
    const TempDir dir;
    std::filesystem::create_directory(dir / "libx.so");
    write_manifest(dir.path(), "x", "backend", "libx.so");
    EXPECT_THAT(refusal_of(dir.path()), HasSubstr("library 'libx.so' was not found"));
}

// A foreign ABI is refused from the manifest alone: the library, which may be
// built for an ABI this host cannot even describe, is never opened.
TEST(ManifestRefusal, ForeignAbiIsRefusedBeforeTheLibraryIsOpened) {
    const TempDir dir;
    const auto text = write_file(dir / "libtext.so", "not a library\n");
    write_manifest(dir.path(), "x", "backend", text.string(), "2.0");
    EXPECT_THAT(refusal_of(dir.path()),
                AllOf(HasSubstr("declares ABI 2.0"), Not(HasSubstr("is not a shared object"))));
}

// ---------------------------------------------------------------------------
// The file the manifest points at is not a shared object.

TEST(LibraryRefusal, TextFile) {
    const TempDir dir;
    const auto text = write_file(dir / "libtext.so", "this is a text file, not a library\n");
    write_manifest(dir.path(), "x", "backend", "libtext.so");
    EXPECT_THAT(refusal_of(dir.path()),
                HasSubstr(text.string() +
                          ": is not a shared object (expected an ELF file, found 35 bytes of "
                          "something else)"));
}

TEST(LibraryRefusal, EmptyFile) {
    const TempDir dir;
    write_file(dir / "libempty.so", "");
    write_manifest(dir.path(), "x", "backend", "libempty.so");
    EXPECT_THAT(refusal_of(dir.path()),
                HasSubstr("is not a shared object (expected an ELF file, found 0 bytes"));
}

TEST(LibraryRefusal, ElfMagicButTruncated) {
    const TempDir dir;
    write_file(dir / "libshort.so", std::string{"\x7f"
                                                "ELF\x02\x01\x01",
                                                7});
    write_manifest(dir.path(), "x", "backend", "libshort.so");
    EXPECT_THAT(refusal_of(dir.path()), HasSubstr("is not a loadable shared object"));
}

TEST(LibraryRefusal, RelocatableObjectIsNotASharedObject) {
    const TempDir dir;
    write_manifest(dir.path(), "x", "backend", TEA_FIXTURE_OBJECT_FILE);
    EXPECT_THAT(refusal_of(dir.path()),
                HasSubstr(std::string{TEA_FIXTURE_OBJECT_FILE} +
                          ": is an ELF file but not a shared object (expected type ET_DYN, found "
                          "type 1)"));
}

// ---------------------------------------------------------------------------
// Discovery across directories.

TEST(Discover, DuplicateNameFirstWinsAndTheSecondIsRefusedNamingBoth) {
    const TempDir first;
    const TempDir second;
    const auto winner =
        write_manifest(first.path(), "good-backend", "backend", good_backend.string());
    // Even a perfectly loadable duplicate must not shadow or replace the first.
    const auto loser =
        write_manifest(second.path(), "good-backend", "backend", good_backend.string());
    const auto registry = Registry::discover({first.path(), second.path()}, "/nonexistent");
    ASSERT_EQ(registry.entries().size(), 2U);
    const auto &kept = registry.entries()[0];
    const auto &refused = registry.entries()[1];
    EXPECT_EQ(kept.manifest_file, winner);
    ASSERT_NE(kept.plugin, nullptr) << kept.refusal;
    EXPECT_EQ(refused.manifest_file, loser);
    EXPECT_EQ(refused.plugin, nullptr);
    EXPECT_THAT(refused.refusal,
                AllOf(HasSubstr(loser.string() + ": duplicate plugin name 'good-backend'"),
                      HasSubstr("already provided by " + winner.string())));
    ASSERT_NE(registry.find("good-backend"), nullptr);
    EXPECT_EQ(registry.find("good-backend")->manifest_file, winner);
    EXPECT_EQ(&registry.require("good-backend", Kind::backend), kept.plugin.get());
}

TEST(Discover, ARefusedFirstStillShadowsALaterDuplicate) {
    const TempDir first;
    const TempDir second;
    write_manifest(first.path(), "good-backend", "backend", TEA_FIXTURE_NO_ENTRY);
    write_manifest(second.path(), "good-backend", "backend", good_backend.string());
    const auto registry = Registry::discover({first.path(), second.path()}, "/nonexistent");
    ASSERT_EQ(registry.entries().size(), 2U);
    EXPECT_THAT(registry.entries()[0].refusal, HasSubstr("has no entry symbol"));
    EXPECT_THAT(registry.entries()[1].refusal, HasSubstr("duplicate plugin name"));
    EXPECT_THROW((void)registry.require("good-backend", Kind::backend), tea::Error);
}

TEST(Discover, OneBrokenManifestDoesNotHideTheOthers) {
    const TempDir dir;
    write_file(dir / "a-broken.toml", "this is = = not toml");
    write_manifest(dir.path(), "good-backend", "backend", good_backend.string());
    const auto registry = Registry::discover({dir.path()}, "/nonexistent");
    ASSERT_EQ(registry.entries().size(), 2U);
    EXPECT_EQ(registry.entries()[0].name, "");
    EXPECT_FALSE(registry.entries()[0].kind.has_value());
    EXPECT_THAT(registry.entries()[0].refusal, HasSubstr("invalid TOML"));
    EXPECT_NE(registry.entries()[1].plugin, nullptr) << registry.entries()[1].refusal;
}

TEST(Discover, AManifestIsReadOnlyOnceACommandNeedsIt) {
    const TempDir dir;
    write_manifest(dir.path(), "good-backend", "backend", good_backend.string());
    const auto later = write_file(dir / "later.toml", "this is = = not toml");
    const auto registry = Registry::discover({dir.path()}, "/nonexistent");
    // The backend's manifest comes first: finding it reads nothing after it.
    const auto *entry = registry.find("good-backend");
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->refusal, "");
    // Read only now: what it holds at this point is what the listing shows.
    write_file(later, manifest_text("good-observer", "observer", TEA_FIXTURE_GOOD_OBSERVER));
    ASSERT_EQ(registry.entries().size(), 2U);
    EXPECT_EQ(registry.entries()[1].name, "good-observer");
    EXPECT_NE(registry.entries()[1].plugin, nullptr) << registry.entries()[1].refusal;
}

TEST(Discover, AnEntryStaysInPlaceWhileLaterManifestsAreRead) {
    const TempDir dir;
    write_manifest(dir.path(), "good-backend", "backend", good_backend.string());
    for (const char *name : {"h", "i", "j", "k", "l", "m", "n", "o"}) {
        write_file(dir / (std::string{name} + ".toml"), "not = = toml");
    }
    write_file(dir / "z.toml",
               manifest_text("good-observer", "observer", TEA_FIXTURE_GOOD_OBSERVER));
    const auto registry = Registry::discover({dir.path()}, "/nonexistent");
    const auto *first = registry.find("good-backend");
    ASSERT_NE(first, nullptr);
    // Reads the nine manifests after it: the first entry must not have moved meanwhile.
    ASSERT_NE(registry.find("good-observer"), nullptr);
    EXPECT_EQ(registry.find("no-such-plugin"), nullptr);
    ASSERT_EQ(registry.entries().size(), 10U);
    EXPECT_EQ(first, &registry.entries()[0]);
    EXPECT_EQ(first->name, "good-backend");
    EXPECT_EQ(&registry.require("good-backend", Kind::backend), first->plugin.get());
}

TEST(ListManifests, DirectoriesInOrderEachSortedOnlyToml) {
    const TempDir a;
    const TempDir b;
    write_file(a / "zeta.toml", "");
    write_file(a / "alpha.toml", "");
    write_file(a / "readme.txt", "");
    write_file(a / "alpha.toml.bak", "");
    write_file(b / "beta.toml", "");
    const auto files = list_manifests({b.path(), "/nonexistent-plugins.d", a.path()});
    const std::vector<std::filesystem::path> expected{b / "beta.toml", a / "alpha.toml",
                                                      a / "zeta.toml"};
    EXPECT_EQ(files, expected);
}

}  // namespace
}  // namespace tea::plugins
