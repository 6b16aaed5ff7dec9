#include "plugins/host_services.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <string_view>

struct tea_host_context {
    std::string plugin_name;
};

namespace tea::plugins {
namespace {

// Host tables live until the process ends: a plugin may keep its own.
struct Tables {
    std::mutex mutex;
    std::deque<tea_host_context> contexts;
    std::deque<tea_host_services> tables;
};
Tables &kept() {
    // Never freed on purpose: plugins may use what it holds until the process ends.
    static auto *tables = new Tables;  // NOLINT(cppcoreguidelines-owning-memory)
    return *tables;
}

void host_log(tea_host_context *context, int32_t level, tea_str message) {
    const std::string_view text{message.data, message.data == nullptr ? 0 : message.size};
    // Both arms must be views: with a std::string arm the result is a temporary
    // copy, and the view would dangle before the line is logged.
    const std::string_view name =
        context != nullptr ? std::string_view{context->plugin_name} : std::string_view{"plugin"};
    switch (level) {
        case TEA_LOG_DEBUG:
            spdlog::debug("{}: {}", name, text);
            break;
        case TEA_LOG_INFO:
            spdlog::info("{}: {}", name, text);
            break;
        case TEA_LOG_WARN:
            spdlog::warn("{}: {}", name, text);
            break;
        default:
            spdlog::error("{}: {}", name, text);
            break;
    }
}

void host_set_error(tea_error *error, tea_str message) {
    if (error == nullptr) {
        return;
    }
    try {
        error->message.assign(message.data == nullptr ? "" : message.data,
                              message.data == nullptr ? 0 : message.size);
    } catch (...) {
        error->message.clear();  // no exception unwinds into a plugin's C code
    }
}

int32_t host_buffer_append(tea_buffer *buffer, tea_str bytes) {
    if (buffer == nullptr || (bytes.data == nullptr && bytes.size != 0)) {
        return TEA_FAILED;
    }
    if (bytes.size > buffer->limit - std::min(buffer->limit, buffer->data.size())) {
        return TEA_FAILED;  // a plugin cannot make the host allocate without bound
    }
    try {
        buffer->data.append(bytes.data, bytes.size);
    } catch (...) {
        return TEA_FAILED;  // no exception unwinds into a plugin's C code
    }
    return TEA_OK;
}

}  // namespace

const tea_host_services *host_services_for(const std::string &plugin_name) {
    auto &keep = kept();
    const std::lock_guard lock{keep.mutex};
    auto &context = keep.contexts.emplace_back(tea_host_context{plugin_name});
    return &keep.tables.emplace_back(tea_host_services{sizeof(tea_host_services), TEA_ABI_MAJOR,
                                                       TEA_ABI_MINOR, &context, &host_log,
                                                       &host_set_error, &host_buffer_append});
}

}  // namespace tea::plugins
