#include "plugins/loader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "plugins/host_services.hpp"
#include "plugins/library.hpp"
#include "util/closest_match.hpp"
#include "util/error.hpp"

namespace tea::plugins {
namespace {

std::runtime_error refusal(const std::filesystem::path &file, const std::string &what) {
    return std::runtime_error{file.string() + ": " + what};
}

std::string article(std::string_view kind) {
    const bool vowel =
        !kind.empty() && std::string_view{"aeiou"}.find(kind[0]) != std::string_view::npos;
    return (vowel ? "an " : "a ") + std::string{kind};
}

template <class Ops>
Ops copy_ops(const void *raw, std::uint32_t min_size, const std::filesystem::path &library,
             std::string_view kind) {
    const auto *base = static_cast<const tea_plugin_ops_base *>(raw);
    if (base->struct_size < min_size) {
        throw refusal(library, "the " + std::string{kind} + " operations table is " +
                                   std::to_string(base->struct_size) +
                                   " bytes; expected at least " + std::to_string(min_size) +
                                   " (ABI 1.0)");
    }
    if (base->reserved != 0) {
        throw refusal(library, "the " + std::string{kind} +
                                   " operations table's field 'reserved' is " +
                                   std::to_string(base->reserved) + "; expected 0");
    }
    // Copy what this host knows into a zeroed table; a newer plugin's extra members are ignored.
    Ops out{};
    std::memcpy(&out, raw, std::min<std::size_t>(base->struct_size, sizeof(Ops)));
    return out;
}

void require_op(const void *fn, std::string_view op, std::string_view kind,
                const std::filesystem::path &library) {
    if (fn == nullptr) {
        throw refusal(library, "the operations table has no '" + std::string{op} +
                                   "' (required for " + article(kind) + " plugin)");
    }
}

LoadedPlugin::Ops read_ops(const tea_plugin_descriptor &d, const std::filesystem::path &library) {
    auto base = [&](const tea_plugin_ops_base &b, std::string_view kind) {
        require_op(reinterpret_cast<const void *>(b.create), "create", kind, library);
        require_op(reinterpret_cast<const void *>(b.destroy), "destroy", kind, library);
        require_op(reinterpret_cast<const void *>(b.probe), "probe", kind, library);
    };
    switch (d.kind) {
        case TEA_KIND_BACKEND: {
            auto ops = copy_ops<tea_backend_ops>(d.ops, backend_ops_min_size, library, "backend");
            base(ops.base, "backend");
            require_op(reinterpret_cast<const void *>(ops.prepare), "prepare", "backend", library);
            return ops;
        }
        case TEA_KIND_OBSERVER: {
            auto ops =
                copy_ops<tea_observer_ops>(d.ops, observer_ops_min_size, library, "observer");
            base(ops.base, "observer");
            require_op(reinterpret_cast<const void *>(ops.wrap), "wrap", "observer", library);
            require_op(reinterpret_cast<const void *>(ops.collect), "collect", "observer", library);
            return ops;
        }
        case TEA_KIND_EGRESS: {
            auto ops = copy_ops<tea_egress_ops>(d.ops, egress_ops_min_size, library, "egress");
            base(ops.base, "egress");
            require_op(reinterpret_cast<const void *>(ops.open), "open", "egress", library);
            require_op(reinterpret_cast<const void *>(ops.close), "close", "egress", library);
            return ops;
        }
        case TEA_KIND_LOGIN: {
            auto ops = copy_ops<tea_login_ops>(d.ops, login_ops_min_size, library, "login");
            base(ops.base, "login");
            require_op(reinterpret_cast<const void *>(ops.grant), "grant", "login", library);
            return ops;
        }
        default:
            throw refusal(library, "declares plugin kind " + std::to_string(d.kind) +
                                       ", which this host does not know (expected 1 backend, "
                                       "2 observer, 3 egress or 4 login)");
    }
}

std::string_view view(tea_str s) {
    return s.data == nullptr ? std::string_view{} : std::string_view{s.data, s.size};
}

}  // namespace

LoadedPlugin::LoadedPlugin(Manifest manifest, std::string version, int abi_major, int abi_minor,
                           Ops ops, const tea_host_services *host)
    : manifest_(std::move(manifest)),
      version_(std::move(version)),
      abi_major_(abi_major),
      abi_minor_(abi_minor),
      capabilities_(Capabilities::of_minor(abi_minor)),
      ops_(ops),
      host_(host) {}

const tea_plugin_ops_base &LoadedPlugin::base() const {
    return std::visit([](const auto &ops) -> const tea_plugin_ops_base & { return ops.base; },
                      ops_);
}

std::unique_ptr<Instance> LoadedPlugin::create(const std::string &config_json) const {
    tea_error error;
    tea_instance *handle = nullptr;
    const auto status =
        base().create(host_, tea_str{config_json.data(), config_json.size()}, &handle, &error);
    if (status != TEA_OK || handle == nullptr) {
        throw std::runtime_error{
            "plugin '" + name() + "' (" + manifest_.library.string() +
            "): create failed: " + (error.message.empty() ? "no reason given" : error.message)};
    }
    return std::make_unique<Instance>(*this, handle);
}

Instance::~Instance() {
    if (handle_ != nullptr) {
        plugin_.base().destroy(handle_);
    }
}

ProbeResult Instance::probe() const {
    tea_error error;
    const auto status = plugin_.base().probe(handle_, &error);
    if (status == TEA_OK) {
        return {true, {}};
    }
    return {false, error.message.empty() ? "the plugin reports it is unavailable, with no reason"
                                         : error.message};
}

std::string Instance::transform(TransformFn fn, std::string_view operation,
                                std::string_view input) const {
    tea_error error;
    tea_buffer out;
    out.limit = plugin_output_limit;
    const auto status = fn(handle_, tea_str{input.data(), input.size()}, &out, &error);
    if (status != TEA_OK) {
        throw std::runtime_error{
            "plugin '" + plugin_.name() + "': " + std::string{operation} +
            " failed: " + (error.message.empty() ? "no reason given" : error.message)};
    }
    return std::move(out.data);
}

std::shared_ptr<const LoadedPlugin> load_plugin(const Manifest &manifest,
                                                const TrustPolicy &trust) {
    const auto &library = manifest.library;
    if (manifest.abi_major != TEA_ABI_MAJOR) {
        throw refusal(manifest.file, "plugin '" + manifest.name + "' declares ABI " +
                                         std::to_string(manifest.abi_major) + "." +
                                         std::to_string(manifest.abi_minor) +
                                         "; this tea-evaluate supports ABI " +
                                         std::to_string(TEA_ABI_MAJOR) + ".x");
    }
    if (manifest.abi_minor > TEA_ABI_MINOR) {
        throw refusal(manifest.file, "plugin '" + manifest.name + "' declares ABI " +
                                         std::to_string(manifest.abi_major) + "." +
                                         std::to_string(manifest.abi_minor) +
                                         ", newer than this tea-evaluate's " +
                                         std::to_string(TEA_ABI_MAJOR) + "." +
                                         std::to_string(TEA_ABI_MINOR) + " (upgrade tea-evaluate)");
    }
    const auto entry = reinterpret_cast<tea_plugin_entry_fn>(
        load_library(library, TEA_PLUGIN_ENTRY_SYMBOL, trust));
    if (entry == nullptr) {
        throw refusal(library, "has no entry symbol '" TEA_PLUGIN_ENTRY_SYMBOL
                               "' (expected a plugin built with the tea-evaluate SDK)");
    }
    const tea_plugin_descriptor *d = entry();
    if (d == nullptr) {
        throw refusal(library, "the entry symbol returned no descriptor");
    }
    if (d->struct_size < descriptor_min_size) {
        throw refusal(library, "the plugin descriptor is " + std::to_string(d->struct_size) +
                                   " bytes; expected at least " +
                                   std::to_string(descriptor_min_size) + " (ABI 1.0)");
    }
    const std::string abi = std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor);
    if (d->abi_major != TEA_ABI_MAJOR) {
        throw refusal(library, "was built for plugin ABI " + abi +
                                   "; this tea-evaluate supports ABI " +
                                   std::to_string(TEA_ABI_MAJOR) +
                                   ".x (rebuild the plugin "
                                   "against this SDK)");
    }
    if (d->abi_minor > TEA_ABI_MINOR) {
        throw refusal(library, "needs plugin ABI " + abi + ", newer than this tea-evaluate's " +
                                   std::to_string(TEA_ABI_MAJOR) + "." +
                                   std::to_string(TEA_ABI_MINOR) + " (upgrade tea-evaluate)");
    }
    // What the host sends a plugin depends on the minor it declares; a manifest that says
    // another would have the listing, and anyone reading it, believe something else.
    if (d->abi_minor != manifest.abi_minor) {
        throw refusal(library, "declares plugin ABI " + abi + " in its descriptor (abi_minor " +
                                   std::to_string(d->abi_minor) + ") but its manifest " +
                                   manifest.file.string() + " says abi = \"" +
                                   std::to_string(manifest.abi_major) + "." +
                                   std::to_string(manifest.abi_minor) +
                                   "\" (the two must name the minor the plugin implements)");
    }
    if (d->reserved != 0) {
        throw refusal(library, "the descriptor's field 'reserved' is " +
                                   std::to_string(d->reserved) + "; expected 0");
    }
    if (d->ops == nullptr) {
        throw refusal(library, "the descriptor has no operations table");
    }
    auto ops = read_ops(*d, library);
    if (d->kind != static_cast<int32_t>(manifest.kind)) {
        throw refusal(library, "is " + article(to_string(static_cast<Kind>(d->kind))) +
                                   " plugin but its manifest " + manifest.file.string() + " says " +
                                   std::string{to_string(manifest.kind)});
    }
    const std::string name{view(d->name)};
    if (name != manifest.name) {
        throw refusal(library, "calls itself '" + name + "' but its manifest " +
                                   manifest.file.string() + " names '" + manifest.name + "'");
    }
    return std::make_shared<const LoadedPlugin>(manifest, std::string{view(d->version)},
                                                d->abi_major, d->abi_minor, ops,
                                                host_services_for(manifest.name));
}

Registry Registry::discover(const std::vector<std::filesystem::path> &manifest_dirs,
                            const std::filesystem::path &plugin_libdir, const TrustPolicy &trust) {
    Registry registry;
    registry.files_ = list_manifests(manifest_dirs);
    registry.plugin_libdir_ = plugin_libdir;
    registry.trust_ = trust;
    // One entry per file, made in place: an entry handed out by find() stays where it is while
    // later manifests are read.
    registry.entries_.reserve(registry.files_.size());
    registry.pending_.reserve(registry.files_.size());
    return registry;
}

bool Registry::read_next() const {
    if (entries_.size() == files_.size()) {
        return false;
    }
    const auto &file = files_[entries_.size()];
    Entry entry;
    Pending pending;
    entry.manifest_file = file;
    try {
        pending.manifest = parse_manifest(file, trust_);
        // Named before its library is looked for: a plugin whose library is missing is listed,
        // and asked for, by its name, and keeps it from a later manifest of the same name.
        entry.name = pending.manifest.name;
        entry.kind = pending.manifest.kind;
        const auto earlier = std::find_if(entries_.begin(), entries_.end(),
                                          [&](const Entry &e) { return e.name == entry.name; });
        if (earlier != entries_.end()) {
            // A later directory must not shadow a plugin silently, nor replace it.
            entry.refusal = file.string() + ": duplicate plugin name '" + entry.name +
                            "': already provided by " + earlier->manifest_file.string();
        } else {
            pending.manifest.library = locate_library(pending.manifest, plugin_libdir_);
        }
    } catch (const std::exception &e) {
        entry.refusal = e.what();
    }
    pending.tried = !entry.refusal.empty();
    if (!entry.refusal.empty()) {
        spdlog::debug("plugin refused: {}", entry.refusal);
    }
    entries_.push_back(std::move(entry));
    pending_.push_back(std::move(pending));
    return true;
}

void Registry::load(Entry &entry) const {
    auto &pending = pending_[static_cast<std::size_t>(&entry - entries_.data())];
    if (pending.tried) {
        return;
    }
    pending.tried = true;
    try {
        entry.plugin = load_plugin(pending.manifest, trust_);
    } catch (const std::exception &e) {
        entry.refusal = e.what();
        spdlog::debug("plugin refused: {}", entry.refusal);
    }
}

const std::vector<Registry::Entry> &Registry::entries() const {
    const std::lock_guard held{*lock_};
    while (read_next()) {
    }
    for (auto &e : entries_) {
        load(e);
    }
    return entries_;
}

const Registry::Entry *Registry::find(std::string_view name) const {
    const std::lock_guard held{*lock_};
    return find_locked(name);
}

const Registry::Entry *Registry::find_locked(std::string_view name) const {
    // The first entry of a name is the one in force; duplicates always come later, so the
    // manifests after it need not be read.
    for (std::size_t i = 0; i < entries_.size() || read_next(); ++i) {
        auto &e = entries_[i];
        if (e.name == name) {
            load(e);
            return &e;
        }
    }
    return nullptr;
}

const LoadedPlugin &Registry::require(std::string_view name, Kind kind) const {
    const std::lock_guard held{*lock_};
    const auto *entry = find_locked(name);
    if (entry == nullptr) {
        // find read every manifest: the names of this kind are all known.
        std::vector<std::string> installed;
        for (const auto &e : entries_) {
            if (e.kind == kind && !e.name.empty()) {
                installed.push_back(e.name);
            }
        }
        throw usage_error("no " + std::string{to_string(kind)} + " plugin named '" +
                          std::string{name} + "' is installed (see 'tea-evaluate plugins')" +
                          did_you_mean(name, installed));
    }
    if (!entry->plugin) {
        throw usage_error("the " + std::string{to_string(kind)} + " plugin '" + std::string{name} +
                          "' cannot be loaded: " + entry->refusal);
    }
    if (entry->plugin->kind() != kind) {
        throw usage_error("plugin '" + std::string{name} + "' is " +
                          article(to_string(entry->plugin->kind())) + " plugin, not " +
                          article(to_string(kind)) + " plugin");
    }
    return *entry->plugin;
}

}  // namespace tea::plugins
