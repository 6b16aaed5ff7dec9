// The event-stream reader (core/services/sse_events.hpp) fed whole and in every split: the same
// events come out, whatever the line endings and wherever the pieces break.
#include "services/sse_events.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tea::services {
namespace {

struct Seen {
    std::vector<std::string> data;
    std::vector<std::string> junk;
};

Seen read_in_pieces(std::string_view stream, std::size_t piece) {
    Seen seen;
    SseEvents events{[&](const std::string &d) { seen.data.push_back(d); },
                     [&](std::string_view j) { seen.junk.emplace_back(j); }};
    for (std::size_t at = 0; at < stream.size(); at += piece) {
        events.feed(stream.substr(at, piece));
    }
    events.finish();
    return seen;
}

TEST(SseEvents, EventsComeOutTheSameWhateverThePieces) {
    const std::string stream =
        ": comment\n\nevent: message\nid: 4\ndata: {\"a\":1}\n\n"
        "data: one\r\ndata:two\r\n\r\nretry: 10\rdata: three\r\rid: 5\n\n";
    for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
        const Seen seen = read_in_pieces(stream, piece);
        ASSERT_EQ(seen.data, (std::vector<std::string>{"{\"a\":1}", "one\ntwo", "three"}))
            << "pieces of " << piece;
        EXPECT_TRUE(seen.junk.empty()) << "pieces of " << piece;
    }
}

TEST(SseEvents, ALineThatIsNoFieldIsJunkAndTheEventsAroundItStillCome) {
    const Seen seen = read_in_pieces("data: a\n\nnot a field\n\ndata: b\n\n", 3);
    EXPECT_EQ(seen.data, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(seen.junk, (std::vector<std::string>{"not a field"}));
}

TEST(SseEvents, AnEventCutShortByTheStreamsEndIsJunkNotDispatched) {
    const Seen seen = read_in_pieces("data: whole\n\ndata: cut", 4);
    EXPECT_EQ(seen.data, (std::vector<std::string>{"whole"}));
    EXPECT_EQ(seen.junk, (std::vector<std::string>{"data: cut"}));
}

}  // namespace
}  // namespace tea::services
