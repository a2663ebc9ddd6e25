// Rendering a stream one event at a time. Each API's RenderStream (in its
// codec's header) renders every event of a recorded answer at once; its
// StreamRenderer gives the same events one by one, so that an answer sent
// as its client reads it holds only the events on their way, however long
// the stream (service/http_render.h). RenderStream is its renderer run to
// the end.
#ifndef UNDERSTUDY_PROVIDER_STREAM_RENDER_H_
#define UNDERSTUDY_PROVIDER_STREAM_RENDER_H_

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace understudy {
namespace provider {

// One event of a rendered stream.
struct RenderedEvent {
  // The whole event as sent: "data: {...}\n\n", "event: <type>\ndata:
  // {...}\n\n", or a piece of Gemini's JSON array.
  std::string text;
  // The index (into the rendered chunks) of the chunk whose content this
  // event carries, whose recorded offset paces it; -1 for a structural
  // event, which goes out right after the event before it.
  int chunk = -1;
};

// A stream's events, one at a time. Not thread-safe; what it renders from
// (the chunks) must outlive it.
class EventRenderer {
 public:
  virtual ~EventRenderer() = default;
  // The next event; nullopt after the last (and on every call after).
  virtual std::optional<RenderedEvent> Next() = 0;
};

// A renderer that works in steps, each producing a few events (a chunk's,
// a block's start): the codecs' renderers are written this way.
class SteppedRenderer : public EventRenderer {
 public:
  std::optional<RenderedEvent> Next() final;

 protected:
  // Emits the next step's events; false once this was the last step.
  virtual bool Step() = 0;
  void Emit(std::string text, int chunk = -1);

 private:
  std::deque<RenderedEvent> pending_;
  bool done_ = false;
};

// Every event of `renderer`, in order.
std::vector<RenderedEvent> RenderAll(EventRenderer& renderer);
// Their texts alone.
std::vector<std::string> RenderAllText(EventRenderer& renderer);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_STREAM_RENDER_H_
