// A descriptor a process of the target's identity handed over (SCM_RIGHTS), owned: its open file
// may still be shared with the sender, so it is closed without ever waiting
// (stream_relay::close_shared), whatever the sender set on it.
#pragma once

#include <tea/stream_relay.hpp>

#include "util/fd.hpp"

namespace tea::bridge {

using HandedFd = BasicFd<stream_relay::close_shared>;

}  // namespace tea::bridge
