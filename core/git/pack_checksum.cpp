#include "git/pack_checksum.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <stdexcept>
#include <string>

namespace tea::git {
namespace {

[[noreturn]] void openssl_failed(const char *call) {
    const char *reason = ERR_reason_error_string(ERR_get_error());
    throw std::runtime_error(std::string("cannot compute the SHA-1 checksum of a pack (") + call +
                             ": " + (reason != nullptr ? reason : "no reason given") + ")");
}

}  // namespace

void PackChecksum::Free::operator()(evp_md_ctx_st *context) const {
    EVP_MD_CTX_free(context);
}

PackChecksum::PackChecksum() : context_(EVP_MD_CTX_new()) {
    if (!context_) openssl_failed("EVP_MD_CTX_new");
    if (EVP_DigestInit_ex(context_.get(), EVP_sha1(), nullptr) != 1)
        openssl_failed("EVP_DigestInit_ex");
}

void PackChecksum::update(const unsigned char *data, std::size_t size) {
    if (EVP_DigestUpdate(context_.get(), data, size) != 1) openssl_failed("EVP_DigestUpdate");
}

Sha1Digest PackChecksum::finish() {
    Sha1Digest digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1 || length != digest.size())
        openssl_failed("EVP_DigestFinal_ex");
    return digest;
}

}  // namespace tea::git
