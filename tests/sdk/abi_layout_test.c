/*
 * The frozen-layout test of the plugin ABI, compiled as C11 (as a C plugin is
 * built), after GStreamer's gstabi.c. The literal numbers are in
 * abi_layout_x86_64.h: changing a number there means bumping the ABI.
 *
 * Each row is checked twice: by _Static_assert, so that a layout change fails
 * the build, and at run time, so that the test's output names what moved.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <tea/plugin.h>

#include "abi_layout_x86_64.h"

#define MEMBER_SIZE(type, member) sizeof(((type *)0)->member)

#if defined(__x86_64__) && defined(__LP64__)
#define TEA_ABI_FROZEN 1

#define STATIC_STRUCT(type, size) \
    _Static_assert(sizeof(type) == (size), "sizeof(" #type ") changed: bump the ABI");
#define STATIC_MEMBER(type, member, offset, size)                             \
    _Static_assert(offsetof(type, member) == (offset),                        \
                   "offsetof(" #type ", " #member ") changed: bump the ABI"); \
    _Static_assert(MEMBER_SIZE(type, member) == (size),                       \
                   "sizeof(" #type "." #member ") changed: bump the ABI");
#define STATIC_VALUE(name, value) _Static_assert((name) == (value), #name " changed: bump the ABI");

TEA_ABI_LAYOUT_X86_64(STATIC_STRUCT, STATIC_MEMBER)
TEA_ABI_VALUES(STATIC_VALUE)

struct row {
    const char *what;
    size_t found;
    size_t expected;
};

#define ROW_STRUCT(type, size) {"sizeof(" #type ")", sizeof(type), (size)},
#define ROW_MEMBER(type, member, offset, size)                              \
    {"offsetof(" #type ", " #member ")", offsetof(type, member), (offset)}, \
        {"sizeof(" #type "." #member ")", MEMBER_SIZE(type, member), (size)},
#define ROW_VALUE(name, value) {#name, (size_t)(name), (value)},

static const struct row rows[] = {TEA_ABI_LAYOUT_X86_64(ROW_STRUCT, ROW_MEMBER)
                                      TEA_ABI_VALUES(ROW_VALUE)};
#else
#define TEA_ABI_FROZEN 0
#endif

int main(void) {
#if TEA_ABI_FROZEN
    size_t i;
    int failures = 0;
    const size_t count = sizeof rows / sizeof rows[0];
    for (i = 0; i < count; ++i) {
        if (rows[i].found != rows[i].expected) {
            fprintf(stderr, "%s is %zu, frozen at %zu: bump the ABI\n", rows[i].what, rows[i].found,
                    rows[i].expected);
            ++failures;
        }
    }
    /* Enumerations cross as int32_t; the enum types themselves must fit one. */
    if (sizeof(tea_status) != 4 || sizeof(tea_plugin_kind) != 4 || sizeof(tea_log_level) != 4) {
        fprintf(stderr, "an enumeration of tea/plugin.h is not 4 bytes\n");
        ++failures;
    }
    {
        /* TEA_HAS_MEMBER as a C plugin uses it: a table cut before a member lacks it. */
        tea_host_services host;
        memset(&host, 0, sizeof host);
        host.struct_size = (uint32_t)offsetof(tea_host_services, buffer_append);
        if (!TEA_HAS_MEMBER(tea_host_services, &host, set_error) ||
            TEA_HAS_MEMBER(tea_host_services, &host, buffer_append)) {
            fprintf(stderr, "TEA_HAS_MEMBER misjudges a table cut before buffer_append\n");
            ++failures;
        }
    }
    if (strcmp(TEA_PLUGIN_ENTRY_SYMBOL, "tea_plugin_entry") != 0) {
        fprintf(stderr, "the entry symbol is '%s', frozen as 'tea_plugin_entry'\n",
                TEA_PLUGIN_ENTRY_SYMBOL);
        ++failures;
    }
    printf("%zu layout rows checked (C11), %d differ\n", count, failures);
    return failures == 0 ? 0 : 1;
#else
    printf("the frozen layout is recorded for x86_64 only; skipped\n");
    return 77;
#endif
}
