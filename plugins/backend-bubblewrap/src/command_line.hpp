// The command lines a plan runs: bwrap itself (its options, read from a descriptor), what starts
// it (the helper dropping to the sandbox identity) and what it starts (the view builder), and the
// programs they name, found on the host.
#pragma once

#include <string>
#include <tea/documents.hpp>
#include <vector>

#include "identity.hpp"
#include "settings.hpp"

namespace tea::bwrap {

// `name` itself when it holds a slash (and is executable), otherwise the first of a fixed list of
// system directories holding it; "" when there is none. Never the invoker's PATH: a planted
// "bwrap" earlier on it would be the program that builds the confinement.
std::string find_program(const std::string &name);

// The runtime's helpers, shipped beside this plugin: <prefix>/lib/tea-evaluate/plugins/x.so and
// <prefix>/libexec/tea-evaluate/<name>.
std::string helper_path();
std::string view_builder_path();

// What runs bwrap: the helper dropping to the sandbox identity when the runtime is root, nothing
// otherwise.
std::vector<std::string> identity_prefix(const std::string &helper, const Identity &identity);

// The namespaces and process options of every target's bwrap. The UTS namespace is not among
// them: a target's argument stream ends with it (target_args_file).
std::vector<std::string> namespace_options();

// What bwrap gives the view builder: the call's uid 0 with the three capabilities it needs.
std::vector<std::string> view_builder_privileges();

// The view builder's command line before the target's argv: it reads the view, takes the setup
// mark and runs `exec` as `identity`, which the call's uid 0 stands for on the host.
std::vector<std::string> view_builder_command(const Identity &identity, const std::string &exec);

// Why the bwrap the settings name cannot be found, with the way out: the package to install when
// the setting is the default, the setting to correct when the configuration names another.
std::string bwrap_missing(const Settings &settings);

// bwrap, reading its arguments from Descriptor::args; throws tea::sdk::Unavailable when the host
// has no bwrap.
std::vector<std::string> bwrap_command(const Settings &settings);

// A target's bwrap: the host name on the command line, which bwrap refuses unless the argument
// stream, read first, ends with --unshare-uts (target_args_file).
std::vector<std::string> target_bwrap_command(const Settings &settings);

// bwrap's argument stream as a plan file.
documents::PlanFile args_file(const std::vector<std::string> &args);

// A target's argument stream, ending with its only --unshare-uts (see target_bwrap_command).
documents::PlanFile target_args_file(std::vector<std::string> args);

// The items, each followed by a NUL: the form bwrap's --args, the helper's --env-fd and the view
// builder's --view-fd read.
std::string join_nul(const std::vector<std::string> &items);

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string> &b);

}  // namespace tea::bwrap
