// What the core may ask of a loaded plugin, by name, from the ABI minor its descriptor declares
// (sdk/include/tea/plugin.h lists what each minor added). Computed once, when the plugin is
// loaded: the rest of the core never compares minor numbers.
#pragma once

#include <tea/plugin.h>

namespace tea::plugins {

struct Capabilities {
    // 1.1, observer: tells a plan's launcher from a target that starts itself
    // (audit.targetStartKind "target"); an older one would leave such a target unaudited.
    bool target_start_kind = false;
    // 1.2, backend: may hand the host a setup mark to read once its confinement stands.
    bool setup_mark = false;
    // 1.3, backend: provides the call's unmade directories itself (launch spec "unmade").
    bool unmade_directories = false;
    // 1.4, backend: is told when an observer will wrap its plan ("observed") and may then
    // answer with a holder.
    bool observed = false;
    // 1.5, backend: answers a staged spec with a process the host may start early ("staged").
    bool staged = false;
    // 1.6, backend: runs its target as the identity the host took for the call ("identity").
    bool call_identity = false;
    // 1.7, login: answers grant with the documents of tea/login_documents.hpp; before 1.7
    // they were provisional, and the host never calls grant.
    bool login_grant = false;
    // 1.8, backend: shows a login's files read-only in the private home ("loginFiles").
    bool login_files = false;
    // 1.8, egress: connects a pinned item to its addresses without resolving its host.
    bool egress_pin = false;
    // 1.9, backend: runs the bridge's relay beside the target in the call's namespaces ("bridge").
    bool bridge = false;
    // 1.10, backend: may ask for its plan's process in a session of its own ("newSession"); an
    // older one sending it is refused, as a host of its minor would refuse the unknown field.
    bool new_session = false;

    static constexpr Capabilities of_minor(int minor) {
        Capabilities c;
        c.target_start_kind = minor >= TEA_ABI_1_1;
        c.setup_mark = minor >= TEA_ABI_1_2;
        c.unmade_directories = minor >= TEA_ABI_1_3;
        c.observed = minor >= TEA_ABI_1_4;
        c.staged = minor >= TEA_ABI_1_5;
        c.call_identity = minor >= TEA_ABI_1_6;
        c.login_grant = minor >= TEA_ABI_1_7;
        c.login_files = minor >= TEA_ABI_1_8;
        c.egress_pin = minor >= TEA_ABI_1_8;
        c.bridge = minor >= TEA_ABI_1_9;
        c.new_session = minor >= TEA_ABI_1_10;
        return c;
    }
};

}  // namespace tea::plugins
