#!/bin/sh
# The budget, cgroup and kill-safety tests of a build on cgroup2, in a guest that
# run-in-guest.sh boots (every controller on cgroup2, as on a systemd host), in three set-ups:
#   root         the runtime in a login session's scope, shared: its calls' cgroups beneath
#                /sys/fs/cgroup/tea-evaluate; the calls root runs as tea-test-user have none
#   delegated    tea-test-user in a leaf of its delegated user@UID.service, each runtime alone
#                in a scope of its own (delegated-scope.sh, as systemd-run --user --scope -p
#                Delegate=yes would start it): the runtime moves into a leaf and its calls get
#                cgroup2 cgroups beside it
#   undelegated  the same user's runtime in the login shell's own scope, which it shares: no
#                cgroup, the budgets fall to the resource limits and the record says why
# TEA_TEST_CALL_CGROUP tells the tests which of these the records must name. Exits 0 when every
# step passed.
#
#   cgroup2-budgets.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
user=tea-test-user
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"

failed=
step() {
    name=$1
    shift
    echo "=== $name: $*"
    if "$@"; then
        echo "=== $name: passed"
    else
        echo "=== $name: FAILED"
        failed="$failed $name"
    fi
}

confinement=$build/bin/bubblewrap_confinement_test
# Each budget once per set-up (a few minutes in all under an emulator): the memory budget at
# twice it, the default share of the host, one call at its process budget beside another, a fork
# bomb, and what a call leaves past a killed runtime; as root also a budget of one process and a
# daemon at the call's end.
calls='*AMemoryBudget*/AsInvoker:*AShareOfTheHost*/AsInvoker:*AProcessBudgetAtItsLimit*'
calls=$calls':*ForkBomb*:*WhatACallLeft*'

step root-cgroups env TEA_TEST_CALL_CGROUP=cgroup2 "$build/bin/call_cgroup_test"
step root-calls env TEA_TEST_CALL_CGROUP=cgroup2 "$confinement" \
    --gtest_filter="$calls:*ABwrapThatCannotMakeItsNamespaces*:*SetsidDaemon*/AsInvoker"
step delegated-calls "$here/as-delegated-user.sh" "$user" env TEA_TEST_CALL_CGROUP=cgroup2 \
    TEA_TEST_RUNTIME_WRAPPER="$here/delegated-scope.sh" \
    "$confinement" --gtest_filter="$calls"
step undelegated-calls "$here/as-delegated-user.sh" "$user" env TEA_TEST_CALL_CGROUP=none \
    "$confinement" --gtest_filter='*AMemoryBudget*/AsInvoker'

if [ -n "$failed" ]; then
    echo "=== failed:$failed"
    exit 1
fi
echo "=== every step passed"
