/*
 * The frozen layout of tea/plugin.h on x86_64 (LP64, System V), as GStreamer's
 * tests/check/gst/struct_x86_64.h freezes its own: every struct that crosses
 * the plugin boundary, its size, and each member's offset and size.
 *
 * A plugin built against one minor of the SDK must load into a host of any
 * later minor of the same major. That holds only while these numbers hold:
 * CHANGING A NUMBER HERE MEANS BUMPING THE ABI. Appending a member (marked with
 * the minor that added it) grows a struct and bumps TEA_ABI_MINOR; moving,
 * resizing or removing one bumps TEA_ABI_MAJOR. Update this table in the same
 * change as the bump, never to make a failing build pass.
 *
 * Used by abi_layout_test.c (C11) and abi_layout_test.cpp (C++), which turn
 * each line into a static assertion (so a layout change fails the build) and
 * into a row checked at run time (so the test names what moved).
 *
 * TEA_ABI_STRUCT(type, size)
 * TEA_ABI_MEMBER(type, member, offset, size)
 */
#define TEA_ABI_LAYOUT_X86_64(TEA_ABI_STRUCT, TEA_ABI_MEMBER) \
    TEA_ABI_STRUCT(tea_str, 16)                               \
    TEA_ABI_MEMBER(tea_str, data, 0, 8)                       \
    TEA_ABI_MEMBER(tea_str, size, 8, 8)                       \
                                                              \
    TEA_ABI_STRUCT(tea_host_services, 40)                     \
    TEA_ABI_MEMBER(tea_host_services, struct_size, 0, 4)      \
    TEA_ABI_MEMBER(tea_host_services, abi_major, 4, 2)        \
    TEA_ABI_MEMBER(tea_host_services, abi_minor, 6, 2)        \
    TEA_ABI_MEMBER(tea_host_services, context, 8, 8)          \
    TEA_ABI_MEMBER(tea_host_services, log, 16, 8)             \
    TEA_ABI_MEMBER(tea_host_services, set_error, 24, 8)       \
    TEA_ABI_MEMBER(tea_host_services, buffer_append, 32, 8)   \
                                                              \
    TEA_ABI_STRUCT(tea_plugin_ops_base, 32)                   \
    TEA_ABI_MEMBER(tea_plugin_ops_base, struct_size, 0, 4)    \
    TEA_ABI_MEMBER(tea_plugin_ops_base, reserved, 4, 4)       \
    TEA_ABI_MEMBER(tea_plugin_ops_base, create, 8, 8)         \
    TEA_ABI_MEMBER(tea_plugin_ops_base, destroy, 16, 8)       \
    TEA_ABI_MEMBER(tea_plugin_ops_base, probe, 24, 8)         \
                                                              \
    TEA_ABI_STRUCT(tea_backend_ops, 40)                       \
    TEA_ABI_MEMBER(tea_backend_ops, base, 0, 32)              \
    TEA_ABI_MEMBER(tea_backend_ops, prepare, 32, 8)           \
                                                              \
    TEA_ABI_STRUCT(tea_observer_ops, 48)                      \
    TEA_ABI_MEMBER(tea_observer_ops, base, 0, 32)             \
    TEA_ABI_MEMBER(tea_observer_ops, wrap, 32, 8)             \
    TEA_ABI_MEMBER(tea_observer_ops, collect, 40, 8)          \
                                                              \
    TEA_ABI_STRUCT(tea_egress_ops, 48)                        \
    TEA_ABI_MEMBER(tea_egress_ops, base, 0, 32)               \
    TEA_ABI_MEMBER(tea_egress_ops, open, 32, 8)               \
    TEA_ABI_MEMBER(tea_egress_ops, close, 40, 8)              \
                                                              \
    TEA_ABI_STRUCT(tea_login_ops, 40)                         \
    TEA_ABI_MEMBER(tea_login_ops, base, 0, 32)                \
    TEA_ABI_MEMBER(tea_login_ops, grant, 32, 8)               \
                                                              \
    TEA_ABI_STRUCT(tea_plugin_descriptor, 56)                 \
    TEA_ABI_MEMBER(tea_plugin_descriptor, struct_size, 0, 4)  \
    TEA_ABI_MEMBER(tea_plugin_descriptor, abi_major, 4, 2)    \
    TEA_ABI_MEMBER(tea_plugin_descriptor, abi_minor, 6, 2)    \
    TEA_ABI_MEMBER(tea_plugin_descriptor, kind, 8, 4)         \
    TEA_ABI_MEMBER(tea_plugin_descriptor, reserved, 12, 4)    \
    TEA_ABI_MEMBER(tea_plugin_descriptor, name, 16, 16)       \
    TEA_ABI_MEMBER(tea_plugin_descriptor, version, 32, 16)    \
    TEA_ABI_MEMBER(tea_plugin_descriptor, ops, 48, 8)

/*
 * The values that cross as plain integers; the same rule applies. Enumerations
 * start at 1 so that a zeroed field is never valid (tea_status excepted: 0 is
 * TEA_OK). A new minor adds its TEA_ABI_1_m here with the bump of TEA_ABI_MINOR.
 * TEA_ABI_VALUE(name, value)
 */
#define TEA_ABI_VALUES(TEA_ABI_VALUE)   \
    TEA_ABI_VALUE(TEA_ABI_MAJOR, 1)     \
    TEA_ABI_VALUE(TEA_ABI_MINOR, 10)    \
    TEA_ABI_VALUE(TEA_ABI_1_0, 0)       \
    TEA_ABI_VALUE(TEA_ABI_1_1, 1)       \
    TEA_ABI_VALUE(TEA_ABI_1_2, 2)       \
    TEA_ABI_VALUE(TEA_ABI_1_3, 3)       \
    TEA_ABI_VALUE(TEA_ABI_1_4, 4)       \
    TEA_ABI_VALUE(TEA_ABI_1_5, 5)       \
    TEA_ABI_VALUE(TEA_ABI_1_6, 6)       \
    TEA_ABI_VALUE(TEA_ABI_1_7, 7)       \
    TEA_ABI_VALUE(TEA_ABI_1_8, 8)       \
    TEA_ABI_VALUE(TEA_ABI_1_9, 9)       \
    TEA_ABI_VALUE(TEA_ABI_1_10, 10)     \
    TEA_ABI_VALUE(TEA_OK, 0)            \
    TEA_ABI_VALUE(TEA_FAILED, 1)        \
    TEA_ABI_VALUE(TEA_UNAVAILABLE, 2)   \
    TEA_ABI_VALUE(TEA_INVALID, 3)       \
    TEA_ABI_VALUE(TEA_KIND_BACKEND, 1)  \
    TEA_ABI_VALUE(TEA_KIND_OBSERVER, 2) \
    TEA_ABI_VALUE(TEA_KIND_EGRESS, 3)   \
    TEA_ABI_VALUE(TEA_KIND_LOGIN, 4)    \
    TEA_ABI_VALUE(TEA_LOG_DEBUG, 1)     \
    TEA_ABI_VALUE(TEA_LOG_INFO, 2)      \
    TEA_ABI_VALUE(TEA_LOG_WARN, 3)      \
    TEA_ABI_VALUE(TEA_LOG_ERROR, 4)
