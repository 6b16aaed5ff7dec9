// The protections that depend on who runs tea-evaluate, shown for the
// invoking user (root on a CI machine: the target then runs as tea-sandbox)
// and for an unprivileged account running the same build (the target runs as
// that account, its private root in its own home).
#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

INSTANTIATE_TEST_SUITE_P(Identities, EitherIdentity,
                         ::testing::Values(Identity::invoker, Identity::unprivileged),
                         identity_name);

}  // namespace
}  // namespace tea::test::bwrap
