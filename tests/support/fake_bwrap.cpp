#include "support/fake_bwrap.hpp"

#include <algorithm>

#include "support/process.hpp"

namespace tea::test {

namespace fs = std::filesystem;

std::string bwrap_failing_once(const fs::path &dir, const std::string &only_when) {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::all);
    const auto fake = dir / "bwrap";
    const auto failed = "'" + (dir / "failed").string() + "'";
    // bwrap's arguments are in the descriptor named after --args (11 for the backend's plans);
    // opened by path, so bwrap still reads them from the start.
    const auto matches =
        only_when.empty() ? std::string{} : " && grep -qa -- '" + only_when + "' /proc/self/fd/11";
    write_file(fake.string(),
               "#!/bin/sh\n"
               "if [ \"$1\" = --args ]; then\n"
               "  echo try >>'" +
                   (dir / "tries").string() +
                   "'\n"
                   "  if [ ! -e " +
                   failed + " ]" + matches +
                   "; then\n"
                   "    : >" +
                   failed +
                   "\n"
                   "    echo \"bwrap: Can't mkdir parents for /gone\" >&2\n"
                   "    exit 1\n"
                   "  fi\n"
                   "fi\n"
                   "exec /usr/bin/bwrap \"$@\"\n");
    fs::permissions(fake, fs::perms{0755});
    return "[plugin.bubblewrap]\nbwrap = \"" + fake.string() + "\"\n";
}

std::size_t bwrap_tries(const fs::path &dir) {
    const auto log = read_file((dir / "tries").string());
    return static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
}

}  // namespace tea::test
