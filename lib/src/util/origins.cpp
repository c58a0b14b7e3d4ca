#include "specsim/origins.hpp"

namespace specsim {

void Origins::add(const std::string& key, SourceLocation where) { places_[key] = std::move(where); }

void Origins::add_patch(const std::string& key, const std::string& patch) { patches_[key] = patch; }

SourceLocation Origins::of(const std::string& key) const {
  for (std::string k = key;;) {
    if (auto p = patches_.find(k); p != patches_.end()) return {p->second, 0, 0};
    if (auto f = places_.find(k); f != places_.end()) return f->second;
    const std::size_t dot = k.rfind('.');
    if (dot == std::string::npos) return fallback_;
    k.resize(dot);
  }
}

}  // namespace specsim
