// Loading plugin libraries through the C ABI of sdk/include/tea/plugin.h.
// A library, once loaded, is never unloaded: nothing a plugin made can outlive it.
#pragma once

#include <tea/plugin.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "plugins/capabilities.hpp"
#include "plugins/host_services.hpp"
#include "plugins/manifest.hpp"
#include "plugins/trust.hpp"

namespace tea::plugins {

// The smallest tables this host accepts: their ABI 1.0 sizes. When a member is
// appended in a later minor these stay as they are.
inline constexpr std::uint32_t descriptor_min_size = sizeof(tea_plugin_descriptor);
inline constexpr std::uint32_t backend_ops_min_size = sizeof(tea_backend_ops);
inline constexpr std::uint32_t observer_ops_min_size = sizeof(tea_observer_ops);
inline constexpr std::uint32_t egress_ops_min_size = sizeof(tea_egress_ops);
inline constexpr std::uint32_t login_ops_min_size = sizeof(tea_login_ops);

// The biggest document a plugin may hand back through one buffer.
inline constexpr std::size_t plugin_output_limit = std::size_t{64} << 20U;

class Instance;

class LoadedPlugin {
   public:
    using Ops = std::variant<tea_backend_ops, tea_observer_ops, tea_egress_ops, tea_login_ops>;

    LoadedPlugin(Manifest manifest, std::string version, int abi_major, int abi_minor, Ops ops,
                 const tea_host_services *host);

    [[nodiscard]] const Manifest &manifest() const { return manifest_; }
    [[nodiscard]] const std::string &name() const { return manifest_.name; }
    [[nodiscard]] Kind kind() const { return manifest_.kind; }
    [[nodiscard]] const std::string &version() const { return version_; }
    // For showing only: what the plugin can be asked is in capabilities().
    [[nodiscard]] int abi_major() const { return abi_major_; }
    [[nodiscard]] int abi_minor() const { return abi_minor_; }
    [[nodiscard]] const Capabilities &capabilities() const { return capabilities_; }
    [[nodiscard]] const tea_plugin_ops_base &base() const;
    [[nodiscard]] const Ops &ops() const { return ops_; }
    [[nodiscard]] const tea_host_services *host() const { return host_; }

    // Makes an instance from the plugin's config table (JSON). Throws
    // std::runtime_error naming the plugin and file, with the plugin's message.
    [[nodiscard]] std::unique_ptr<Instance> create(const std::string &config_json) const;

   private:
    Manifest manifest_;
    std::string version_;
    int abi_major_;
    int abi_minor_;
    Capabilities capabilities_;
    Ops ops_;
    const tea_host_services *host_;
};

struct ProbeResult {
    bool available = false;
    std::string reason;  // why not, and the way out
};

// One plugin instance; destroyed with the object.
class Instance {
   public:
    Instance(const LoadedPlugin &plugin, tea_instance *handle) : plugin_(plugin), handle_(handle) {}
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;
    ~Instance();

    [[nodiscard]] const LoadedPlugin &plugin() const { return plugin_; }
    [[nodiscard]] tea_instance *handle() const { return handle_; }
    ProbeResult probe() const;

    // Calls one of the kind's (instance, input, buffer, error) operations; throws
    // std::runtime_error "plugin 'x': <operation> failed: <message>".
    using TransformFn = int32_t (*)(tea_instance *, tea_str, tea_buffer *, tea_error *);
    std::string transform(TransformFn fn, std::string_view operation, std::string_view input) const;

   private:
    const LoadedPlugin &plugin_;
    tea_instance *handle_;
};

// Opens the manifest's library (as `trust` requires, see trust.hpp) and checks everything the
// ABI promises. Throws std::runtime_error with one sentence naming the file, what was expected
// and what was found.
std::shared_ptr<const LoadedPlugin> load_plugin(
    const Manifest &manifest, const TrustPolicy &trust = TrustPolicy::for_this_process());

class Registry {
   public:
    Registry() = default;
    // Not copied: a copy would not keep its entries in place as it reads more manifests.
    Registry(const Registry &) = delete;
    Registry &operator=(const Registry &) = delete;
    Registry(Registry &&) noexcept = default;
    Registry &operator=(Registry &&) noexcept = default;
    ~Registry() = default;

    struct Entry {
        std::filesystem::path manifest_file;
        std::string name;  // empty when the manifest could not be read
        std::optional<Kind> kind;
        std::shared_ptr<const LoadedPlugin> plugin;  // null when refused
        std::string refusal;
    };

    // Lists the manifests of dirs, in order. A manifest is read when a command first needs it,
    // and its library opened when its plugin is first asked for. The first plugin of a name
    // wins; a later one of the same name is refused.
    // As root (trust), a manifest and its library are used only when nobody but root can have
    // chosen them (trust.hpp); otherwise the entry is refused, saying why.
    static Registry discover(const std::vector<std::filesystem::path> &manifest_dirs,
                             const std::filesystem::path &plugin_libdir,
                             const TrustPolicy &trust = TrustPolicy::for_this_process());

    // Every entry, each manifest read and each library loaded (for listing and checking them
    // all).
    [[nodiscard]] const std::vector<Entry> &entries() const;
    // The loaded plugin of that name and kind, reading the manifests only as far as its first.
    // Throws tea::Error (exit 2): no such plugin, another kind, or the reason it was refused.
    [[nodiscard]] const LoadedPlugin &require(std::string_view name, Kind kind) const;
    [[nodiscard]] const Entry *find(std::string_view name) const;

   private:
    [[nodiscard]] const Entry *find_locked(std::string_view name) const;
    // A manifest is read, and a library opened, when a command first asks for its plugin, so a
    // call pays only for the plugins it uses.
    void load(Entry &entry) const;
    // Reads the next manifest into a new entry; false when every one has been read.
    bool read_next() const;
    struct Pending {
        Manifest manifest;
        bool tried = false;
    };
    std::vector<std::filesystem::path> files_;  // every manifest, in order
    std::filesystem::path plugin_libdir_;
    TrustPolicy trust_;
    // One per manifest read so far, in files_ order; capacity reserved for all of them, so an
    // entry never moves.
    mutable std::vector<Entry> entries_;
    mutable std::vector<Pending> pending_;  // parallel to entries_
    // Held by every public method: reading a manifest or opening a library changes the entries,
    // and a call's observer is selected on a thread of its own while the call selects others.
    std::unique_ptr<std::mutex> lock_ = std::make_unique<std::mutex>();
};

}  // namespace tea::plugins
