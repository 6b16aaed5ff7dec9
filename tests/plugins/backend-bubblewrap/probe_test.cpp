// The backend's probe (plugins/backend-bubblewrap/src/probe.cpp) as the real runtime makes it: it
// confines a trivial process twice, through the helper and through the view builder, before the
// first call. Each call here names a bwrap of its own (a copy no probe has passed with yet), so
// that it probes afresh instead of finding the probe's stamp.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

TEST_F(Confinement, TheProbeHoldsWhateverDescriptorsTheRuntimeInherited) {
    // A runtime started with descriptors open (a shell's, a CI runner's, a lock's) opens the
    // probe's files at higher numbers, among those the probe gives its child (10 to 19). Placing
    // one there must never close another still to be placed: the view builder's descriptor then
    // held the helper, and the host was said to be unable to confine.
    const fs::path system_bwrap = fs::exists("/usr/bin/bwrap") ? "/usr/bin/bwrap" : "/bin/bwrap";
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(null, 0);
    // The first layout, nothing inherited, is the control: the probe passes there either way.
    const std::vector<std::vector<int>> layouts{{},         {3, 10},       {3, 4, 10},
                                                {3, 9, 10}, {3, 4, 5, 10}, {3, 4, 5, 6, 7, 10}};
    for (std::size_t i = 0; i < layouts.size(); ++i) {
        const auto bwrap = base() / ("bwrap-" + std::to_string(i));
        fs::copy_file(system_bwrap, bwrap);
        fs::permissions(bwrap, fs::perms{0755});
        Call call;
        call.command = {"sh", "-c", "echo PROBED"};
        call.config = "[plugin.bubblewrap]\nbwrap = \"" + bwrap.string() + "\"\n";
        call.options = {"--observer", "none"};
        for (const int number : layouts[i]) {
            call.inherit.emplace_back(null, number);
        }
        const auto r = run(call);
        EXPECT_EQ(r.status, 0) << "inherited descriptors: " << layouts[i].size() << "\n" << r;
        EXPECT_TRUE(r.has("PROBED")) << r;
    }
    ::close(null);
}

}  // namespace
}  // namespace tea::test::bwrap
