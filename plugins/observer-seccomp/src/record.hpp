// The record tea-seccomp-supervise writes into the call's trace directory and the plugin's
// collect reads: one header, the call's distinct accesses, one trailer. Every field ends with a
// NUL byte (a path holds any byte but NUL):
//
//   header   "tea-seccomp-record/1" NONCE
//   event    "e" PID SYSCALL ASKED RESOLVED ACCESS OK ERROR NAMED UNVERIFIED COUNT
//   trailer  "end" COMPLETE REASON TARGET_STARTED NOTIFICATIONS
//
// A record without its trailer (the supervisor died), with another call's nonce, or with bytes
// after the trailer is not this call's whole record: the call's audit is incomplete.
#ifndef TEA_SECCOMP_RECORD_HPP
#define TEA_SECCOMP_RECORD_HPP

#include <string>
#include <string_view>

namespace tea::seccomp_observer {

inline constexpr std::string_view kRecordMagic = "tea-seccomp-record/1";
inline constexpr const char *kRecordFile = "record";
// The variable that hands the supervisor its call's nonce (removed before the plan runs).
inline constexpr std::string_view kNonceVariable = "TEA_SECCOMP_NONCE=";

inline void append_field(std::string &out, std::string_view field) {
    out.append(field);
    out.push_back('\0');
}

}  // namespace tea::seccomp_observer

#endif
