// Fuzzes the watch-stream decoder as WatchStream uses it: the input is a watch response body,
// fed to a LineSplitter in chunks whose sizes are taken from the input's own bytes (so chunk
// boundaries fall anywhere, inside UTF-8 sequences and between '\r' and '\n'), and every line is
// decoded by ParseWatchEvent with the accessors the informers call. Properties: nothing crashes;
// the lines do not depend on where the chunks end; every failure carries a message.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/testing/fuzz_check.h"
#include "scheduler/kube/watch_decoder.h"

namespace taskgov::scheduler::kube {
namespace {

std::vector<std::string> Drain(LineSplitter* splitter) {
  std::vector<std::string> lines;
  while (std::optional<std::string> line = splitter->NextLine()) lines.push_back(std::move(*line));
  return lines;
}

// The lines of `stream` fed in chunks of 1..64 bytes, the k-th chunk's size from byte k.
std::vector<std::string> ChunkedLines(std::string_view stream) {
  LineSplitter splitter;
  std::vector<std::string> lines;
  size_t k = 0;
  for (size_t pos = 0; pos < stream.size(); ++k) {
    const size_t n = 1 + static_cast<uint8_t>(stream[k % stream.size()]) % 64;
    splitter.Feed(stream.substr(pos, n));
    pos += std::min(n, stream.size() - pos);
    for (std::string& line : Drain(&splitter)) lines.push_back(std::move(line));
    (void)splitter.overflow();
  }
  FUZZ_CHECK(splitter.buffered() == stream.size() - stream.substr(0, stream.rfind('\n') + 1).size(),
             "only the bytes after the last newline stay buffered");
  (void)splitter.blank();
  return lines;
}

void DecodeLine(const std::string& line) {
  common::Result<WatchEvent> event = ParseWatchEvent(line);
  if (!event.ok()) {
    FUZZ_CHECK(!event.error().message.empty(), "a bad event says what is wrong");
    return;
  }
  (void)WatchEventTypeName(event->type);
  (void)event->resource_version();
  common::Result<ObjectMeta> meta = ReadObjectMeta(event->object());
  if (meta.ok()) (void)meta->key();
  (void)ReadStatus(event->object());
}

}  // namespace
}  // namespace taskgov::scheduler::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskgov::scheduler::kube;
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  LineSplitter whole;
  whole.Feed(stream);
  const std::vector<std::string> lines = Drain(&whole);
  FUZZ_CHECK(ChunkedLines(stream) == lines, "chunk boundaries do not change the lines");
  for (const std::string& line : lines) DecodeLine(line);
  return 0;
}
