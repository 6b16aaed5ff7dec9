/*
 * A one-file login plugin compiled with nothing but
 *   cc -shared -fPIC $(pkg-config --cflags tea-sdk) oot_pc.c
 * to prove the installed pkg-config file is enough to build a plugin.
 */
#include <stddef.h>
#include <tea/plugin.h>

struct tea_instance {
    int unused;
};

static tea_instance the_instance;

static int32_t pc_create(const tea_host_services *host, tea_str config, tea_instance **instance,
                         tea_error *error) {
    (void)host;
    (void)config;
    (void)error;
    *instance = &the_instance;
    return TEA_OK;
}

static void pc_destroy(tea_instance *instance) {
    (void)instance;
}

static int32_t pc_probe(tea_instance *instance, tea_error *error) {
    (void)instance;
    (void)error;
    return TEA_OK;
}

static int32_t pc_grant(tea_instance *instance, tea_str request, tea_buffer *grant,
                        tea_error *error) {
    (void)instance;
    (void)request;
    (void)grant;
    (void)error;
    return TEA_FAILED;
}

static const tea_login_ops ops = {{sizeof(tea_login_ops), 0, pc_create, pc_destroy, pc_probe},
                                  pc_grant};

static const tea_plugin_descriptor descriptor = {sizeof(tea_plugin_descriptor),
                                                 TEA_ABI_MAJOR,
                                                 TEA_ABI_1_0,
                                                 TEA_KIND_LOGIN,
                                                 0,
                                                 {"oot-pc", 6},
                                                 {"0.1.0", 5},
                                                 &ops};

TEA_PLUGIN_EXPORT const tea_plugin_descriptor *tea_plugin_entry(void);
TEA_PLUGIN_EXPORT const tea_plugin_descriptor *tea_plugin_entry(void) {
    return &descriptor;
}
