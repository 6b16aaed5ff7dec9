#include "redaction/stream_redactor.hpp"

#include <algorithm>

namespace tea::redaction {

StreamRedactor::StreamRedactor(const SecretMatcher &matcher, ByteSink &sink)
    : matcher_(matcher), sink_(sink) {
    // Both stay within these bounds (stream_redactor.hpp), so no write allocates.
    held_.reserve(matcher.longest());
    pending_.reserve(matcher.longest() + 1);
}

void StreamRedactor::write(std::string_view bytes) {
    if (bytes.empty()) return;
    const Window window{held_, decided_, bytes, position_};
    const auto *data = reinterpret_cast<const unsigned char *>(bytes.data());
    std::size_t taken = 0;
    while (taken < bytes.size()) {
        std::uint32_t length = 0;
        taken += matcher_.advance(state_, data + taken, bytes.size() - taken, length);
        position_ = window.chunk_begin + taken;
        if (length != 0) {
            cover(position_ - length, position_);
            write_decided(position_ - matcher_.depth(state_), window);
        }
    }
    write_decided(position_ - matcher_.depth(state_), window);
    hold(window);
}

void StreamRedactor::finish_cut() {
    if (const auto partial = matcher_.depth(state_); partial != 0) {
        cover(position_ - partial, position_);
    }
    finish();
}

void StreamRedactor::finish() {
    const Window window{held_, decided_, {}, position_};
    write_decided(position_, window);
    held_.clear();
    state_ = SecretMatcher::kRoot;
}

void StreamRedactor::cover(std::uint64_t begin, std::uint64_t end) {
    if (begin < run_end_) {
        // Overlaps the run whose marker is out: that marker stands for this one too, and for
        // every byte up to its end.
        pending_.clear();
        decided_ = run_end_ = end;
        return;
    }
    // Found in the order of their ends, so the runs this one overlaps are the last ones.
    while (!pending_.empty() && pending_.back().end > begin) {
        begin = std::min(begin, pending_.back().begin);
        pending_.pop_back();
    }
    pending_.push_back({begin, end});
}

void StreamRedactor::write_decided(std::uint64_t safe, const Window &window) {
    // No secret found later can start before `safe`: a run that starts by then is final (a later
    // one can only lengthen it), and so is every byte before it and before `safe`.
    while (!pending_.empty() && pending_.front().begin <= safe) {
        const Covered run = pending_.front();
        pending_.erase(pending_.begin());
        pass(decided_, run.begin, window);
        sink_.write(kRedactedMarker);
        ++redactions_;
        decided_ = run_end_ = run.end;
    }
    if (safe > decided_) {
        pass(decided_, safe, window);
        decided_ = safe;
    }
}

void StreamRedactor::pass(std::uint64_t from, std::uint64_t to, const Window &window) {
    if (from < window.chunk_begin && from < to) {
        const auto stop = std::min(to, window.chunk_begin);
        sink_.write(window.held.substr(from - window.held_begin, stop - from));
        from = stop;
    }
    if (from < to) sink_.write(window.chunk.substr(from - window.chunk_begin, to - from));
}

void StreamRedactor::hold(const Window &window) {
    if (decided_ < window.chunk_begin) {
        held_.erase(0, decided_ - window.held_begin);
        held_.append(window.chunk);
    } else {
        held_.assign(window.chunk.substr(decided_ - window.chunk_begin));
    }
}

}  // namespace tea::redaction
