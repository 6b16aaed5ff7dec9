/* The boundary between tea-evaluate and its git module, lib/tea-evaluate/libtea-git.so.
 *
 * libgit2 and the libraries it loads (TLS, SSH, Kerberos, PCRE) cost every start of a program
 * that links them several milliseconds of dynamic loading, which a confined `exec` would pay for
 * nothing. The runtime therefore keeps them in a module that only the commands that need git
 * load. Requests and answers are JSON documents (byte-safe paths, see tea/json_bytes.hpp), so no
 * C++ object or exception crosses between the two copies of the C++ runtime. */
#ifndef TEA_GIT_MODULE_ABI_H
#define TEA_GIT_MODULE_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEA_GIT_MODULE_ABI 1

/* Runs `operation` with the JSON `request`. Returns 0 and the JSON answer, or 1 and
 * {"kind": "workspace_source" | "private_repository" | "other", "message": "..."}. The answer is
 * malloc'd; the caller releases it with tea_git_free. */
typedef int (*tea_git_call_fn)(const char *operation, const char *request, size_t request_length,
                               char **answer, size_t *answer_length);
typedef void (*tea_git_free_fn)(char *answer);

struct tea_git_module {
    unsigned abi; /* TEA_GIT_MODULE_ABI */
    tea_git_call_fn call;
    tea_git_free_fn release;
};

/* The module's one exported symbol. */
const struct tea_git_module *tea_git_module_v1(void);

#ifdef __cplusplus
}
#endif

#endif
