// Header-only C++ helper for plugin authors.
//
// It builds the C operations table of tea/plugin.h from a C++ class and wraps
// every callback in try/catch, so no exception ever unwinds into the host.
// Nothing here is part of the ABI: the host sees only the C structs.
//
//   class MyBackend {
//    public:
//     MyBackend(tea::sdk::Host host, std::string_view config_json);  // throws Invalid
//     void probe();                                                  // throws Unavailable
//     std::string prepare(std::string_view launch_spec_json);
//   };
//   TEA_SDK_BACKEND_PLUGIN(MyBackend, "my-backend", "1.2.0", TEA_ABI_1_6)
//
// The last argument is the ABI minor whose contract the plugin implements (tea/plugin.h lists
// what each added); the manifest's abi must name the same. Without it the macro declares the
// header's newest minor, as the SDK did before 1.6's helpers, and warns (deprecated): such a
// plugin, rebuilt against a newer SDK, would claim fields it has never heard of.
//
// See docs/plugin-authoring.md for the other kinds.
#ifndef TEA_PLUGIN_HPP
#define TEA_PLUGIN_HPP

#include <tea/plugin.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tea::sdk {

inline std::string_view view(tea_str s) noexcept {
    return s.data == nullptr ? std::string_view{} : std::string_view{s.data, s.size};
}
inline tea_str str(std::string_view s) noexcept {
    return tea_str{s.data(), s.size()};
}

// The failure kinds a callback may throw; anything else maps to TEA_FAILED.
struct Invalid : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct Unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The host's services, as a value a plugin keeps for its lifetime.
class Host {
   public:
    explicit Host(const tea_host_services *services) noexcept : services_(services) {}

    void log(tea_log_level level, std::string_view message) const noexcept {
        if (TEA_HAS_MEMBER(tea_host_services, services_, log) && services_->log != nullptr) {
            services_->log(services_->context, level, str(message));
        }
    }
    void debug(std::string_view m) const noexcept { log(TEA_LOG_DEBUG, m); }
    void info(std::string_view m) const noexcept { log(TEA_LOG_INFO, m); }
    void warn(std::string_view m) const noexcept { log(TEA_LOG_WARN, m); }
    void error(std::string_view m) const noexcept { log(TEA_LOG_ERROR, m); }

    void set_error(tea_error *error, std::string_view message) const noexcept {
        if (TEA_HAS_MEMBER(tea_host_services, services_, set_error) &&
            services_->set_error != nullptr && error != nullptr) {
            services_->set_error(error, str(message));
        }
    }
    // Throws when the host refuses the bytes (its buffer limit), so a callback
    // never reports success with a truncated document.
    void append(tea_buffer *buffer, std::string_view bytes) const {
        if (!TEA_HAS_MEMBER(tea_host_services, services_, buffer_append) ||
            services_->buffer_append == nullptr ||
            services_->buffer_append(buffer, str(bytes)) != TEA_OK) {
            throw std::length_error("the output exceeds the host's buffer limit");
        }
    }
    [[nodiscard]] const tea_host_services *services() const noexcept { return services_; }

   private:
    const tea_host_services *services_;
};

// Runs fn, turning any exception into a status and an error sentence.
template <class Fn>
int32_t guard(const Host &host, tea_error *error, Fn &&fn) noexcept {
    try {
        return std::forward<Fn>(fn)();
    } catch (const Invalid &e) {
        host.set_error(error, e.what());
        return TEA_INVALID;
    } catch (const Unavailable &e) {
        host.set_error(error, e.what());
        return TEA_UNAVAILABLE;
    } catch (const std::exception &e) {
        host.set_error(error, e.what());
        return TEA_FAILED;
    } catch (...) {
        host.set_error(error, "the plugin failed with an unknown exception");
        return TEA_FAILED;
    }
}

namespace detail {

template <class Impl>
struct Instance {
    Host host{nullptr};
    std::unique_ptr<Impl> impl;
};

template <class Impl>
Instance<Impl> *self(tea_instance *instance) noexcept {
    return reinterpret_cast<Instance<Impl> *>(instance);
}

template <class Impl>
struct Common {
    static int32_t create(const tea_host_services *services, tea_str config, tea_instance **out,
                          tea_error *error) noexcept {
        const Host host{services};
        return guard(host, error, [&] {
            auto made = std::make_unique<Instance<Impl>>(
                Instance<Impl>{host, std::make_unique<Impl>(host, view(config))});
            *out = reinterpret_cast<tea_instance *>(made.release());
            return static_cast<int32_t>(TEA_OK);
        });
    }
    static void destroy(tea_instance *instance) noexcept {
        // The host's handle owns the instance; a destructor must not unwind into C.
        try {
            delete self<Impl>(instance);  // NOLINT(cppcoreguidelines-owning-memory)
        } catch (...) {                   // NOLINT(bugprone-empty-catch)
        }
    }
    static int32_t probe(tea_instance *instance, tea_error *error) noexcept {
        auto *s = self<Impl>(instance);
        return guard(s->host, error, [&] {
            s->impl->probe();
            return static_cast<int32_t>(TEA_OK);
        });
    }
    static constexpr tea_plugin_ops_base base(uint32_t size) noexcept {
        return tea_plugin_ops_base{size, 0, &create, &destroy, &probe};
    }
};

// Calls (impl->*method)(input) and appends the returned document.
template <class Impl, class Method>
int32_t transform(tea_instance *instance, tea_str input, tea_buffer *out, tea_error *error,
                  Method method) noexcept {
    auto *s = self<Impl>(instance);
    return guard(s->host, error, [&] {
        const std::string result = ((*s->impl).*method)(view(input));
        s->host.append(out, result);
        return static_cast<int32_t>(TEA_OK);
    });
}

}  // namespace detail

template <class Impl>
struct BackendAdapter {
    static int32_t prepare(tea_instance *i, tea_str spec, tea_buffer *out, tea_error *e) noexcept {
        return detail::transform<Impl>(i, spec, out, e, &Impl::prepare);
    }
    static constexpr tea_backend_ops ops{detail::Common<Impl>::base(sizeof(tea_backend_ops)),
                                         &prepare};
};

template <class Impl>
struct ObserverAdapter {
    static int32_t wrap(tea_instance *i, tea_str in, tea_buffer *out, tea_error *e) noexcept {
        return detail::transform<Impl>(i, in, out, e, &Impl::wrap);
    }
    static int32_t collect(tea_instance *i, tea_str in, tea_buffer *out, tea_error *e) noexcept {
        return detail::transform<Impl>(i, in, out, e, &Impl::collect);
    }
    static constexpr tea_observer_ops ops{detail::Common<Impl>::base(sizeof(tea_observer_ops)),
                                          &wrap, &collect};
};

template <class Impl>
struct LoginAdapter {
    static int32_t grant(tea_instance *i, tea_str in, tea_buffer *out, tea_error *e) noexcept {
        return detail::transform<Impl>(i, in, out, e, &Impl::grant);
    }
    static constexpr tea_login_ops ops{detail::Common<Impl>::base(sizeof(tea_login_ops)), &grant};
};

// Impl::Session is the per-call state; Impl::open(request, info) returns a
// std::unique_ptr<Session> and appends nothing itself (info is a std::string&);
// Impl::close(Session&) returns the records document.
template <class Impl>
struct EgressAdapter {
    using Session = typename Impl::Session;
    static int32_t open(tea_instance *i, tea_str in, tea_egress_session **session, tea_buffer *info,
                        tea_error *e) noexcept {
        auto *s = detail::self<Impl>(i);
        return guard(s->host, e, [&] {
            std::string text;
            std::unique_ptr<Session> made = s->impl->open(view(in), text);
            s->host.append(info, text);
            *session = reinterpret_cast<tea_egress_session *>(made.release());
            return static_cast<int32_t>(TEA_OK);
        });
    }
    static int32_t close(tea_instance *i, tea_egress_session *session, tea_buffer *records,
                         tea_error *e) noexcept {
        auto *s = detail::self<Impl>(i);
        std::unique_ptr<Session> owned{reinterpret_cast<Session *>(session)};
        return guard(s->host, e, [&] {
            s->host.append(records, s->impl->close(*owned));
            return static_cast<int32_t>(TEA_OK);
        });
    }
    static constexpr tea_egress_ops ops{detail::Common<Impl>::base(sizeof(tea_egress_ops)), &open,
                                        &close};
};

// The descriptor of a plugin of `kind` that implements ABI minor `abi_minor` (TEA_ABI_1_0 ...
// TEA_ABI_MINOR).
constexpr tea_plugin_descriptor make_descriptor(tea_plugin_kind kind, std::string_view name,
                                                std::string_view version, const void *ops,
                                                std::uint16_t abi_minor) noexcept {
    return tea_plugin_descriptor{sizeof(tea_plugin_descriptor),
                                 TEA_ABI_MAJOR,
                                 abi_minor,
                                 kind,
                                 0,
                                 tea_str{name.data(), name.size()},
                                 tea_str{version.data(), version.size()},
                                 ops};
}

namespace detail {

[[deprecated(
    "name the ABI minor the plugin implements (e.g. TEA_ABI_1_6) as the macro's last argument, "
    "and the same in its manifest; without it the plugin claims this header's newest "
    "minor")]] constexpr std::uint16_t
header_minor() noexcept {
    return std::uint16_t{TEA_ABI_MINOR};
}

}  // namespace detail

[[deprecated(
    "pass the ABI minor the plugin implements as the last "
    "argument")]] constexpr tea_plugin_descriptor
make_descriptor(tea_plugin_kind kind, std::string_view name, std::string_view version,
                const void *ops) noexcept {
    return make_descriptor(kind, name, version, ops, TEA_ABI_MINOR);
}

}  // namespace tea::sdk

#define TEA_SDK_DEFINE_PLUGIN_(ADAPTER, KIND, IMPL, NAME, VERSION, MINOR)                \
    extern "C" TEA_PLUGIN_EXPORT const tea_plugin_descriptor *tea_plugin_entry(void) {   \
        static constexpr tea_plugin_descriptor descriptor = ::tea::sdk::make_descriptor( \
            KIND, NAME, VERSION, &::tea::sdk::ADAPTER<IMPL>::ops, MINOR);                \
        return &descriptor;                                                              \
    }
#define TEA_SDK_DEFINE_STATED_(ADAPTER, KIND, IMPL, NAME, VERSION, MINOR)               \
    static_assert((MINOR) >= TEA_ABI_1_0 && (MINOR) <= TEA_ABI_MINOR,                   \
                  "the plugin's ABI minor must be one this SDK knows: TEA_ABI_1_0 ... " \
                  "TEA_ABI_MINOR");                                                     \
    TEA_SDK_DEFINE_PLUGIN_(ADAPTER, KIND, IMPL, NAME, VERSION, static_cast<std::uint16_t>(MINOR))
#define TEA_SDK_DEFINE_UNSTATED_(ADAPTER, KIND, IMPL, NAME, VERSION) \
    TEA_SDK_DEFINE_PLUGIN_(ADAPTER, KIND, IMPL, NAME, VERSION, ::tea::sdk::detail::header_minor())

// The macros take (IMPL, NAME, VERSION, MINOR), or the deprecated (IMPL, NAME, VERSION).
#define TEA_SDK_PICK_(A1, A2, A3, A4, CHOSEN, ...) CHOSEN
#define TEA_SDK_BACKEND_PLUGIN(...)                                                      \
    TEA_SDK_PICK_(__VA_ARGS__, TEA_SDK_DEFINE_STATED_, TEA_SDK_DEFINE_UNSTATED_, unused) \
    (BackendAdapter, TEA_KIND_BACKEND, __VA_ARGS__)
#define TEA_SDK_OBSERVER_PLUGIN(...)                                                     \
    TEA_SDK_PICK_(__VA_ARGS__, TEA_SDK_DEFINE_STATED_, TEA_SDK_DEFINE_UNSTATED_, unused) \
    (ObserverAdapter, TEA_KIND_OBSERVER, __VA_ARGS__)
#define TEA_SDK_EGRESS_PLUGIN(...)                                                       \
    TEA_SDK_PICK_(__VA_ARGS__, TEA_SDK_DEFINE_STATED_, TEA_SDK_DEFINE_UNSTATED_, unused) \
    (EgressAdapter, TEA_KIND_EGRESS, __VA_ARGS__)
#define TEA_SDK_LOGIN_PLUGIN(...)                                                        \
    TEA_SDK_PICK_(__VA_ARGS__, TEA_SDK_DEFINE_STATED_, TEA_SDK_DEFINE_UNSTATED_, unused) \
    (LoginAdapter, TEA_KIND_LOGIN, __VA_ARGS__)

#endif  // TEA_PLUGIN_HPP
