#include "provider/stream_render.h"

#include <utility>

namespace understudy {
namespace provider {

std::optional<RenderedEvent> SteppedRenderer::Next() {
  while (pending_.empty()) {
    if (done_) return std::nullopt;
    if (!Step()) done_ = true;
  }
  RenderedEvent event = std::move(pending_.front());
  pending_.pop_front();
  return event;
}

void SteppedRenderer::Emit(std::string text, int chunk) {
  pending_.push_back({std::move(text), chunk});
}

std::vector<RenderedEvent> RenderAll(EventRenderer& renderer) {
  std::vector<RenderedEvent> out;
  while (std::optional<RenderedEvent> event = renderer.Next()) out.push_back(std::move(*event));
  return out;
}

std::vector<std::string> RenderAllText(EventRenderer& renderer) {
  std::vector<std::string> out;
  while (std::optional<RenderedEvent> event = renderer.Next()) out.push_back(std::move(event->text));
  return out;
}

}  // namespace provider
}  // namespace understudy
