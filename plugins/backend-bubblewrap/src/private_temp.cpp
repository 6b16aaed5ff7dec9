#include "private_temp.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "paths.hpp"

namespace tea::bwrap {

PrivateTemp::PrivateTemp(const std::vector<std::string> &candidates, std::vector<std::string> shown)
    : shown_(std::move(shown)) {
    std::erase_if(shown_, [](const std::string &s) { return s.empty(); });
    for (const auto &c : candidates) {
        struct stat st {};
        if (::lstat(c.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            continue;
        }
        if (std::any_of(shown_.begin(), shown_.end(),
                        [&](const std::string &s) { return inside(c, s); })) {
            continue;
        }
        replaced_.push_back(normal(c).string());
    }
    for (const auto &place : shown_) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(place, ec);
        if (!ec && in_replaced(place) && real != normal(place)) {
            aliases_.push_back({normal(place).string(), real.string()});
        }
    }
}

bool PrivateTemp::in_replaced(const std::string &path) const {
    return std::any_of(replaced_.begin(), replaced_.end(),
                       [&](const std::string &r) { return inside(path, r); });
}

std::vector<std::string> PrivateTemp::view_paths(const std::string &real) const {
    std::vector<std::string> out;
    if (!hides(real)) {
        out.push_back(real);
    }
    for (const auto &alias : aliases_) {
        if (inside(real, alias.real)) {
            const auto rest = std::filesystem::path{real}.lexically_relative(alias.real);
            const auto shown =
                normal((std::filesystem::path{alias.shown} / rest).string()).string();
            if (std::find(out.begin(), out.end(), shown) == out.end()) {
                out.push_back(shown);
            }
        }
    }
    return out;
}

bool PrivateTemp::hides(const std::string &path) const {
    return in_replaced(path) && std::none_of(shown_.begin(), shown_.end(),
                                             [&](const std::string &s) { return inside(path, s); });
}

}  // namespace tea::bwrap
