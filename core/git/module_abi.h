/* The boundary between tea-evaluate and its git module, lib/tea-evaluate/libtea-git.so.
 *
 * libgit2 and the libraries it loads (TLS, SSH, Kerberos, PCRE) cost every start of a program
 * that links them several milliseconds of dynamic loading, which a confined `exec` would pay for
 * nothing. The runtime therefore keeps them in a module that only the commands that need git
 * load. The module is loaded as a plugin is (core/plugins/library.hpp: as root, only when nobody
 * but root can have written it) and follows the plugin ABI's rules (tea/plugin.h): its entry
 * symbol returns a size-prefixed table with one function per operation; a request crosses as a
 * borrowed string, and the answer is appended to a buffer the runtime owns through the host's
 * services, so no memory, C++ object or exception crosses between the two copies of the C++
 * runtime. Requests and answers are JSON documents (byte-safe paths, see tea/json_bytes.hpp and
 * git/wire.hpp). */
#ifndef TEA_GIT_MODULE_ABI_H
#define TEA_GIT_MODULE_ABI_H

#include <stdint.h>
#include <tea/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEA_GIT_MODULE_ENTRY_SYMBOL "tea_git_module_entry"
/* The module is built and installed with the runtime: any other value is another build's. */
#define TEA_GIT_MODULE_ABI 3

/* One operation. Appends to `answer`, through host->buffer_append, the operation's JSON answer
 * and returns TEA_OK; or appends {"kind": "workspace_source" | "private_repository" |
 * "missing_objects" | "other", "message": ..., "commit": ...} and returns TEA_FAILED. */
typedef int32_t (*tea_git_operation_fn)(const tea_host_services *host, tea_str request,
                                        tea_buffer *answer);

typedef struct tea_git_module {
    uint32_t struct_size;
    uint32_t abi; /* TEA_GIT_MODULE_ABI */
    tea_git_operation_fn open_workspace_source;
    tea_git_operation_fn materialize;
    tea_git_operation_fn build_private_repository;
    tea_git_operation_fn attach_in_place;
    tea_git_operation_fn attach_worktree;
    tea_git_operation_fn apply_patch; /* ABI 3: git/patch_apply.hpp */
} tea_git_module;

/* What the entry symbol is: a table in static storage. */
typedef const tea_git_module *(*tea_git_module_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
