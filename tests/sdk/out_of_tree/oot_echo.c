/*
 * oot-echo: an out-of-tree backend in plain C, built against the installed
 * SDK. Like plugins/backend-opt-out it returns the identity plan: the target
 * runs exactly as the launch spec describes it, with "confinement": "opt-out".
 *
 * It parses no JSON into values: it finds the top-level "argv", "env" and
 * "cwd" members of the launch spec and copies their text into the plan, so
 * byte strings (plain or {"base64": ...}) pass through untouched.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tea/plugin.h>

struct tea_instance {
    const tea_host_services *host;
};

typedef struct span {
    const char *data;
    size_t size;
} span;

static tea_str str(const char *data, size_t size) {
    tea_str out;
    out.data = data;
    out.size = size;
    return out;
}

static tea_str cstr(const char *s) {
    return str(s, strlen(s));
}

static const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        ++p;
    }
    return p;
}

/* p is at '"'; returns the position after the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (++p; p < end; ++p) {
        if (*p == '\\') {
            ++p;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Returns the position after the JSON value at p, or NULL when it is malformed. */
static const char *skip_value(const char *p, const char *end, int depth) {
    p = skip_space(p, end);
    if (p >= end || depth > 64) {
        return NULL;
    }
    if (*p == '"') {
        return skip_string(p, end);
    }
    if (*p == '{' || *p == '[') {
        const char close = *p == '{' ? '}' : ']';
        p = skip_space(p + 1, end);
        if (p < end && *p == close) {
            return p + 1;
        }
        for (;;) {
            if (close == '}') {
                p = skip_space(p, end);
                if (p >= end || *p != '"' || (p = skip_string(p, end)) == NULL) {
                    return NULL;
                }
                p = skip_space(p, end);
                if (p >= end || *p != ':') {
                    return NULL;
                }
                ++p;
            }
            p = skip_value(p, end, depth + 1);
            if (p == NULL) {
                return NULL;
            }
            p = skip_space(p, end);
            if (p < end && *p == ',') {
                ++p;
            } else if (p < end && *p == close) {
                return p + 1;
            } else {
                return NULL;
            }
        }
    }
    /* A number, true, false or null. */
    while (p < end && strchr(",}] \t\r\n", *p) == NULL) {
        ++p;
    }
    return p;
}

/* Finds the top-level members argv, env and cwd of a JSON object. */
static int find_members(tea_str json, span *argv, span *env, span *cwd) {
    const char *p = json.data;
    const char *end = json.data + json.size;
    p = skip_space(p, end);
    if (p >= end || *p != '{') {
        return 0;
    }
    p = skip_space(p + 1, end);
    while (p < end && *p == '"') {
        const char *key = p + 1;
        const char *key_end = skip_string(p, end);
        const char *value;
        size_t key_size;
        span *slot = NULL;
        if (key_end == NULL) {
            return 0;
        }
        key_size = (size_t)(key_end - 1 - key);
        if (key_size == 4 && memcmp(key, "argv", 4) == 0) {
            slot = argv;
        } else if (key_size == 3 && memcmp(key, "env", 3) == 0) {
            slot = env;
        } else if (key_size == 3 && memcmp(key, "cwd", 3) == 0) {
            slot = cwd;
        }
        p = skip_space(key_end, end);
        if (p >= end || *p != ':') {
            return 0;
        }
        value = skip_space(p + 1, end);
        p = skip_value(value, end, 0);
        if (p == NULL) {
            return 0;
        }
        if (slot != NULL) {
            slot->data = value;
            slot->size = (size_t)(p - value);
        }
        p = skip_space(p, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
        }
    }
    return argv->data != NULL && env->data != NULL && cwd->data != NULL;
}

static int32_t oot_create(const tea_host_services *host, tea_str config_json,
                          tea_instance **instance, tea_error *error) {
    tea_instance *made;
    (void)config_json;
    if (host == NULL || host->struct_size < sizeof(tea_host_services)) {
        return TEA_FAILED;
    }
    made = (tea_instance *)malloc(sizeof *made);
    if (made == NULL) {
        host->set_error(error, cstr("oot-echo: out of memory"));
        return TEA_FAILED;
    }
    made->host = host;
    *instance = made;
    return TEA_OK;
}

static void oot_destroy(tea_instance *instance) {
    free(instance);
}

static int32_t oot_probe(tea_instance *instance, tea_error *error) {
    (void)instance;
    (void)error;
    return TEA_OK; /* needs nothing from the host */
}

static int32_t oot_prepare(tea_instance *instance, tea_str spec, tea_buffer *plan,
                           tea_error *error) {
    const tea_host_services *host = instance->host;
    span argv = {NULL, 0};
    span env = {NULL, 0};
    span cwd = {NULL, 0};
    if (!find_members(spec, &argv, &env, &cwd)) {
        host->set_error(error, cstr("oot-echo: the launch spec lacks argv, env or cwd"));
        return TEA_INVALID;
    }
    if (host->buffer_append(plan, cstr("{\"argv\":")) != TEA_OK ||
        host->buffer_append(plan, str(argv.data, argv.size)) != TEA_OK ||
        host->buffer_append(plan, cstr(",\"env\":")) != TEA_OK ||
        host->buffer_append(plan, str(env.data, env.size)) != TEA_OK ||
        host->buffer_append(plan, cstr(",\"cwd\":")) != TEA_OK ||
        host->buffer_append(plan, str(cwd.data, cwd.size)) != TEA_OK ||
        host->buffer_append(plan, cstr(",\"files\":[],\"confinement\":\"opt-out\"}")) != TEA_OK) {
        host->set_error(error, cstr("oot-echo: the host refused the plan"));
        return TEA_FAILED;
    }
    return TEA_OK;
}

static const tea_backend_ops ops = {
    {sizeof(tea_backend_ops), 0, oot_create, oot_destroy, oot_probe}, oot_prepare};

static const tea_plugin_descriptor descriptor = {sizeof(tea_plugin_descriptor),
                                                 TEA_ABI_MAJOR,
                                                 TEA_ABI_1_0,
                                                 TEA_KIND_BACKEND,
                                                 0,
                                                 {"oot-echo", 8},
                                                 {"1.0.0", 5},
                                                 &ops};

TEA_PLUGIN_EXPORT const tea_plugin_descriptor *tea_plugin_entry(void);
TEA_PLUGIN_EXPORT const tea_plugin_descriptor *tea_plugin_entry(void) {
    return &descriptor;
}
