// The frozen-layout test of the plugin ABI as a C++ compiler sees it (a C++
// plugin includes the same header inside extern "C"). The literal numbers are
// in abi_layout_x86_64.h: changing a number there means bumping the ABI.
//
// static_assert makes a layout change fail the build; the test body names
// what moved. It also checks that the C++ helper (tea/plugin.hpp) fills the
// size-prefixed tables with the sizes the host expects.
#include <gtest/gtest.h>
#include <tea/plugin.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tea/plugin.hpp>
#include <utility>
#include <vector>

#include "abi_layout_x86_64.h"

namespace {

#define MEMBER_SIZE(type, member) sizeof(std::declval<type &>().member)

#if defined(__x86_64__) && defined(__LP64__)
constexpr bool abi_frozen = true;

#define STATIC_STRUCT(type, size) \
    static_assert(sizeof(type) == (size), "sizeof(" #type ") changed: bump the ABI");
#define STATIC_MEMBER(type, member, offset, size)                            \
    static_assert(offsetof(type, member) == (offset),                        \
                  "offsetof(" #type ", " #member ") changed: bump the ABI"); \
    static_assert(MEMBER_SIZE(type, member) == (size),                       \
                  "sizeof(" #type "." #member ") changed: bump the ABI");
#define STATIC_VALUE(name, value) static_assert((name) == (value), #name " changed: bump the ABI");

TEA_ABI_LAYOUT_X86_64(STATIC_STRUCT, STATIC_MEMBER)
TEA_ABI_VALUES(STATIC_VALUE)

struct Row {
    std::string what;
    std::size_t found;
    std::size_t expected;
};

#define ROW_STRUCT(type, size) Row{"sizeof(" #type ")", sizeof(type), (size)},
#define ROW_MEMBER(type, member, offset, size)                                 \
    Row{"offsetof(" #type ", " #member ")", offsetof(type, member), (offset)}, \
        Row{"sizeof(" #type "." #member ")", MEMBER_SIZE(type, member), (size)},
#define ROW_VALUE(name, value) Row{#name, static_cast<std::size_t>(name), (value)},

const std::vector<Row> &rows() {
    static const std::vector<Row> table{TEA_ABI_LAYOUT_X86_64(ROW_STRUCT, ROW_MEMBER)
                                            TEA_ABI_VALUES(ROW_VALUE)};
    return table;
}
#else
constexpr bool abi_frozen = false;
const std::vector<Row> &rows() {
    static const std::vector<Row> none;
    return none;
}
#endif

TEST(AbiLayout, EveryStructMemberAndValueIsFrozen) {
    if (!abi_frozen) {
        GTEST_SKIP() << "the frozen layout is recorded for x86_64 only";
    }
    ASSERT_FALSE(rows().empty());
    for (const auto &row : rows()) {
        EXPECT_EQ(row.found, row.expected) << row.what << " changed: bump the ABI";
    }
}

TEST(AbiLayout, EnumerationsFitTheInt32TheyCrossAs) {
    static_assert(sizeof(tea_status) == 4 && sizeof(tea_plugin_kind) == 4 &&
                  sizeof(tea_log_level) == 4);
    EXPECT_EQ(std::string_view{TEA_PLUGIN_ENTRY_SYMBOL}, "tea_plugin_entry");
}

// The helper's tables, made at compile time, carry the sizes of this ABI.
class Dummy {
   public:
    Dummy(tea::sdk::Host /*host*/, std::string_view /*config*/) {}
    void probe() {}
    std::string prepare(std::string_view in) { return std::string{in}; }
    std::string wrap(std::string_view in) { return std::string{in}; }
    std::string collect(std::string_view in) { return std::string{in}; }
    std::string grant(std::string_view in) { return std::string{in}; }
    struct Session {};
    std::unique_ptr<Session> open(std::string_view /*in*/, std::string & /*info*/) {
        return std::make_unique<Session>();
    }
    std::string close(Session & /*session*/) { return "[]"; }
};

static_assert(tea::sdk::BackendAdapter<Dummy>::ops.base.struct_size == sizeof(tea_backend_ops));
static_assert(tea::sdk::ObserverAdapter<Dummy>::ops.base.struct_size == sizeof(tea_observer_ops));
static_assert(tea::sdk::EgressAdapter<Dummy>::ops.base.struct_size == sizeof(tea_egress_ops));
static_assert(tea::sdk::LoginAdapter<Dummy>::ops.base.struct_size == sizeof(tea_login_ops));

TEST(AbiLayout, HelperDescriptorCarriesTheMinorThePluginDeclares) {
    constexpr auto d = tea::sdk::make_descriptor(TEA_KIND_LOGIN, "n", "1.2.3",
                                                 &tea::sdk::LoginAdapter<Dummy>::ops, TEA_ABI_1_3);
    static_assert(d.struct_size == sizeof(tea_plugin_descriptor));
    static_assert(d.abi_major == TEA_ABI_MAJOR && d.abi_minor == TEA_ABI_1_3);
    static_assert(d.kind == TEA_KIND_LOGIN && d.reserved == 0);
    EXPECT_EQ(std::string_view(d.name.data, d.name.size), "n");
    EXPECT_EQ(std::string_view(d.version.data, d.version.size), "1.2.3");
    EXPECT_EQ(d.ops, &tea::sdk::LoginAdapter<Dummy>::ops);
    for (const auto &base :
         {tea::sdk::BackendAdapter<Dummy>::ops.base, tea::sdk::ObserverAdapter<Dummy>::ops.base,
          tea::sdk::EgressAdapter<Dummy>::ops.base, tea::sdk::LoginAdapter<Dummy>::ops.base}) {
        EXPECT_EQ(base.reserved, 0U);
        EXPECT_NE(base.create, nullptr);
        EXPECT_NE(base.destroy, nullptr);
        EXPECT_NE(base.probe, nullptr);
    }
}

// The newest minor is the last one named: a bump that forgets its name fails here.
static_assert(TEA_ABI_MINOR == TEA_ABI_1_10);

// Code written before the minor was an argument still builds (with a deprecation warning) and
// declares what it declared then: the header's newest minor.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr auto unstated =
    tea::sdk::make_descriptor(TEA_KIND_BACKEND, "n", "1", &tea::sdk::BackendAdapter<Dummy>::ops);
#pragma GCC diagnostic pop
static_assert(unstated.abi_minor == TEA_ABI_MINOR);

TEST(AbiLayout, HasMemberSaysWhetherAStructOfItsSizeHoldsTheMember) {
    tea_host_services host{};
    host.struct_size = sizeof host;
    EXPECT_TRUE(TEA_HAS_MEMBER(tea_host_services, &host, buffer_append));
    // A table of a minor before buffer_append existed (were it appended later): cut before it.
    host.struct_size = static_cast<std::uint32_t>(offsetof(tea_host_services, buffer_append));
    EXPECT_FALSE(TEA_HAS_MEMBER(tea_host_services, &host, buffer_append));
    EXPECT_TRUE(TEA_HAS_MEMBER(tea_host_services, &host, set_error));
    // Half of a member is not the member.
    host.struct_size += 4;
    EXPECT_FALSE(TEA_HAS_MEMBER(tea_host_services, &host, buffer_append));
    const tea_host_services *none = nullptr;
    EXPECT_FALSE(TEA_HAS_MEMBER(tea_host_services, none, log));
}

}  // namespace
