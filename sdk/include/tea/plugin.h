/*
 * The tea-evaluate plugin ABI (TEA_ABI_MAJOR.TEA_ABI_MINOR below).
 *
 * This header is the whole contract between the tea-evaluate runtime (the
 * "host") and a plugin shared object. It is plain C so that a plugin can be
 * written in any language that can export a C symbol, and so that no C++ type,
 * exception or RTTI ever crosses the boundary.
 *
 * Rules that hold for every call across the boundary:
 *  - Every struct that crosses starts with a uint32_t struct_size. New members
 *    are only ever appended, each marked with the ABI minor that added it; a
 *    reader uses a member only when it lies inside struct_size (TEA_HAS_MEMBER).
 *  - Strings cross as pointer + length (tea_str), borrowed for the duration of
 *    the call. They need not be NUL-terminated and may hold any byte.
 *  - Memory is freed by the side that allocated it. A plugin hands data back
 *    by appending it to a host-owned tea_buffer through the host services; the
 *    host never frees plugin memory and the plugin never frees host memory.
 *  - Every operation returns an int32_t status: TEA_OK (0) on success, any
 *    other tea_status on failure, with a sentence set on the tea_error handle.
 *  - Enumerations start at 1 so that a zeroed field is never a valid value.
 *    Every member named reserved is 0; the host refuses a plugin otherwise.
 *  - Plugins are never unloaded while the host runs.
 *
 * Threads. The host calls the entry symbol and every operation of every plugin
 * from one thread, the one that loaded it, and one call at a time: no two
 * calls into plugins overlap, whether into one instance, two instances or two
 * plugins. A plugin may start threads of its own (and must end them before
 * the operation that owns them returns: destroy, or an egress close). The
 * host services, log included, may be called only from the thread that is
 * running one of the plugin's operations, while that operation runs; a
 * plugin's own threads hand what they have to say back to that thread. A later
 * minor that calls plugins concurrently will do so only for a plugin whose
 * descriptor declares that minor.
 *
 * Versions. A plugin declares in its descriptor (and its manifest) the minor
 * whose contract it implements, one of TEA_ABI_1_0 ... TEA_ABI_MINOR, not the
 * minor of the header it was compiled with: the host sends a plugin only what
 * its declared minor knows of, and the two must agree. What each minor added:
 *
 *  1.0  the descriptor, the host services, the four kinds' tables; the launch
 *       spec, exec plan and observation documents.
 *  1.1  exec plan: limits, newSessionKeyring, audit.targetStartKind; launch
 *       spec: readOnlyOver; collect request: targetStartKind. The host refuses
 *       to pair a plan whose targetStart is the target itself with an
 *       observer of 1.0, which would take the target for a launcher.
 *  1.2  exec plan: setupMark, a pipe whose byte the confinement reads once it
 *       stands, so an unaudited call tells its failure from the target's.
 *  1.3  launch spec: unmade, the call's directories left for the backend to
 *       provide; exec plan: makeDirs, those the host must make after all.
 *  1.4  launch spec: observed; exec plan: holder and handoffFd, a process the
 *       host starts beside the plan's and never shows the observer.
 *  1.5  launch spec: staged; exec plan files: deferred, for a process the
 *       host starts before the plan is complete.
 *  1.6  launch spec: identity, the uid/gid the host took for this call alone.
 *  1.7  login: grant's request and grant documents (tea/login_documents.hpp);
 *       the host calls grant only on an adapter of 1.7 or later, since the
 *       documents of earlier minors were provisional.
 *  1.8  launch spec: loginFiles, a login's files shown read-only in the
 *       private home with the content the host read; egress open: an item's
 *       "pinned", addresses the proxy connects to without resolving the host.
 *       The host sends neither to a plugin of an earlier minor.
 *  1.9  launch spec: bridge, the directory of the way into a started service
 *       and the relay a backend runs beside the target to listen in it. The
 *       host sends it only to a plugin of 1.9 or later.
 *  1.10 exec plan: newSession, the plan's process started in a session of
 *       its own (setsid) rather than only a process group of its own, so it
 *       has no controlling terminal to push input into. Nothing is sent to a
 *       plugin that did not ask, and a host older than 1.10 refuses the field,
 *       so a plugin that asks for it declares 1.10.
 *
 * Structured data (a plugin's configuration, a launch spec, an exec plan, an
 * observation) crosses as JSON text whose schema is documented in
 * docs/plugin-authoring.md. A JSON string value that must carry bytes which
 * are not valid UTF-8 (a path, an argument, an environment entry) is written
 * as the object {"base64": "..."} instead; see tea/bytes.hpp.
 */
#ifndef TEA_PLUGIN_H
#define TEA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEA_ABI_MAJOR 1
/* The newest minor this header describes. A plugin declares the minor it
 * implements, one of the names below, rather than this number. */
#define TEA_ABI_MINOR 10

/* The minors, each named for a plugin to declare (see the list above). */
#define TEA_ABI_1_0 0
#define TEA_ABI_1_1 1
#define TEA_ABI_1_2 2
#define TEA_ABI_1_3 3
#define TEA_ABI_1_4 4
#define TEA_ABI_1_5 5
#define TEA_ABI_1_6 6
#define TEA_ABI_1_7 7
#define TEA_ABI_1_8 8
#define TEA_ABI_1_9 9
#define TEA_ABI_1_10 10

/* Whether the struct at `pointer`, of the size its struct_size says, holds
 * `member` of `type` whole: the check before reading a member that a later
 * minor appended, e.g. TEA_HAS_MEMBER(tea_host_services, host, buffer_append). */
#ifdef __cplusplus
#define TEA_HAS_MEMBER(type, pointer, member)       \
    ((pointer) != nullptr &&                        \
     static_cast<size_t>((pointer)->struct_size) >= \
         offsetof(type, member) + sizeof(static_cast<const type *>(nullptr)->member))
#else
#define TEA_HAS_MEMBER(type, pointer, member) \
    ((pointer) != NULL &&                     \
     (size_t)(pointer)->struct_size >= offsetof(type, member) + sizeof(((const type *)0)->member))
#endif

/* The one symbol every plugin exports. */
#define TEA_PLUGIN_ENTRY_SYMBOL "tea_plugin_entry"

#if defined(_WIN32)
#define TEA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TEA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* A borrowed byte string: data need not be NUL-terminated. */
typedef struct tea_str {
    const char *data;
    size_t size;
} tea_str;

typedef enum tea_status {
    TEA_OK = 0,
    /* The operation failed; the error handle holds the reason. */
    TEA_FAILED = 1,
    /* probe: the plugin cannot work on this host; the error holds the reason
     * and the way out. */
    TEA_UNAVAILABLE = 2,
    /* The input (config, spec) was refused as invalid. */
    TEA_INVALID = 3
} tea_status;

typedef enum tea_plugin_kind {
    TEA_KIND_BACKEND = 1,
    TEA_KIND_OBSERVER = 2,
    TEA_KIND_EGRESS = 3,
    TEA_KIND_LOGIN = 4
} tea_plugin_kind;

typedef enum tea_log_level {
    TEA_LOG_DEBUG = 1,
    TEA_LOG_INFO = 2,
    TEA_LOG_WARN = 3,
    TEA_LOG_ERROR = 4
} tea_log_level;

/* Host-owned handles. Plugins only pass them back to host services. */
typedef struct tea_error tea_error;
typedef struct tea_buffer tea_buffer;
typedef struct tea_host_context tea_host_context;

/* Plugin-owned instance, made by create and ended by destroy. */
typedef struct tea_instance tea_instance;

/*
 * Services the host hands a plugin at create. Append-only: a member added in
 * a later minor is marked so, and a plugin built against that minor is
 * refused by an older host, so a plugin never reads past struct_size.
 * The table and its context live as long as the process.
 */
typedef struct tea_host_services {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    tea_host_context *context;
    /* 1.0: log a message into the runtime's log, tagged with the plugin name. */
    void (*log)(tea_host_context *context, int32_t level, tea_str message);
    /* 1.0: set the sentence an operation's failure reports (copied). */
    void (*set_error)(tea_error *error, tea_str message);
    /* 1.0: append bytes to a host-owned output buffer (copied). Returns TEA_OK,
     * or TEA_FAILED when the buffer would exceed its limit. */
    int32_t (*buffer_append)(tea_buffer *buffer, tea_str bytes);
} tea_host_services;

/*
 * The members every kind's operations table begins with.
 */
typedef struct tea_plugin_ops_base {
    /* Size of the whole kind table (tea_backend_ops and so on). */
    uint32_t struct_size;
    /* 0. */
    uint32_t reserved;
    /* Required. Make an instance from the plugin's config table, given as a
     * JSON object ("{}" when the configuration has none). */
    int32_t (*create)(const tea_host_services *host, tea_str config_json, tea_instance **instance,
                      tea_error *error);
    /* Required. */
    void (*destroy)(tea_instance *instance);
    /* Required. TEA_OK when the plugin can work on this host, TEA_UNAVAILABLE
     * with the reason and the way out otherwise. May run real processes. */
    int32_t (*probe)(tea_instance *instance, tea_error *error);
} tea_plugin_ops_base;

/*
 * Backend: turns a launch spec into an exec plan, without running anything.
 * The host's call runner executes the plan.
 */
typedef struct tea_backend_ops {
    tea_plugin_ops_base base;
    /* 1.0, required. launch_spec_json in, exec plan JSON appended to plan. */
    int32_t (*prepare)(tea_instance *instance, tea_str launch_spec_json, tea_buffer *plan,
                       tea_error *error);
} tea_backend_ops;

/*
 * Observer: wraps an exec plan so that what the call opens is recorded, then
 * turns the record into access events.
 */
typedef struct tea_observer_ops {
    tea_plugin_ops_base base;
    /* 1.0, required. {"plan": ExecPlan, "traceDir": path} in, ExecPlan out. */
    int32_t (*wrap)(tea_instance *instance, tea_str request_json, tea_buffer *plan,
                    tea_error *error);
    /* 1.0, required. {"traceDir": path, ...} in, {"complete": bool,
     * "events": [...]} out. */
    int32_t (*collect)(tea_instance *instance, tea_str request_json, tea_buffer *observation,
                       tea_error *error);
} tea_observer_ops;

/* An egress session: one per call that lists egress items. Plugin-owned. */
typedef struct tea_egress_session tea_egress_session;

/*
 * Egress: serves the route out for one call and reports what it refused.
 */
typedef struct tea_egress_ops {
    tea_plugin_ops_base base;
    /* 1.0, required. Session request JSON in; session info JSON (socket path,
     * variables for the target) appended to info. */
    int32_t (*open)(tea_instance *instance, tea_str request_json, tea_egress_session **session,
                    tea_buffer *info, tea_error *error);
    /* 1.0, required. Ends the session and appends its records as JSON. The
     * session is gone after the call, whatever the status. */
    int32_t (*close)(tea_instance *instance, tea_egress_session *session, tea_buffer *records,
                     tea_error *error);
} tea_egress_ops;

/*
 * Login: grants a target the credentials an entry's login names.
 */
typedef struct tea_login_ops {
    tea_plugin_ops_base base;
    /* 1.0, required; called from 1.7 on. For one registry entry that
     * declares this login: the login request document in, the grant document
     * out (tea/login_documents.hpp). TEA_UNAVAILABLE when the host has no
     * route to the login for a confined entry, with a sentence saying what to
     * do. */
    int32_t (*grant)(tea_instance *instance, tea_str request_json, tea_buffer *grant,
                     tea_error *error);
} tea_login_ops;

/*
 * What the entry symbol returns: a pointer to static storage that lives as
 * long as the library is loaded.
 */
typedef struct tea_plugin_descriptor {
    uint32_t struct_size;
    /* TEA_ABI_MAJOR. */
    uint16_t abi_major;
    /* The minor the plugin implements (TEA_ABI_1_0 ... TEA_ABI_MINOR); its
     * manifest's abi must name the same. */
    uint16_t abi_minor;
    /* A tea_plugin_kind. */
    int32_t kind;
    /* 0. */
    uint32_t reserved;
    /* Must equal the name in the plugin's manifest. */
    tea_str name;
    tea_str version;
    /* The kind's operations table; begins with tea_plugin_ops_base. */
    const void *ops;
} tea_plugin_descriptor;

typedef const tea_plugin_descriptor *(*tea_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TEA_PLUGIN_H */
