#include "specsim/plausibility.hpp"

#include <array>
#include <cmath>
#include <sstream>

#include "specsim/error.hpp"

namespace specsim {

namespace {

// Lower bounds are 0 (or 1 where a smaller value has no meaning); the readers reject 0 where a
// value divides. Upper bounds, with the largest real value each is measured against:
constexpr std::array kRanges{
    PlausibleRange{Magnitude::kBytes, "size", 0.0, 1125899906842624.0 /* 1 PiB */,
                   "1 PiB: over 5000x the largest GPU memory (B200, 192 GB, "
                   "https://www.nvidia.com/en-us/data-center/dgx-b200/) and 1000x the ~1 TB of Kimi-K2's "
                   "weights; no size specsim models comes near it"},
    PlausibleRange{Magnitude::kDuration, "duration", 0.0, 31557600.0 /* 1 year */,
                   "1 year: a forward, a collective or a decode step takes microseconds to seconds, and "
                   "the longest intervention effort in a catalogue is weeks"},
    PlausibleRange{Magnitude::kBandwidth, "bandwidth", 0.0, 1e15 /* 1 PB/s */,
                   "1 PB/s: 125x the fastest memory of one GPU (B200 HBM3e, 8 TB/s, "
                   "https://www.nvidia.com/en-us/data-center/dgx-b200/) and 500x an NVLink 5 port set "
                   "(1.8 TB/s)"},
    PlausibleRange{Magnitude::kFlopRate, "FLOP rate", 0.0, 1e18 /* 1 EFLOP/s */,
                   "1 EFLOP/s: 55x a B200's densest rate (FP4 with sparsity, 18 PFLOP/s: 144 PFLOP/s "
                   "per 8-GPU DGX B200, https://www.nvidia.com/en-us/data-center/dgx-b200/)"},
    PlausibleRange{Magnitude::kRate, "rate", 0.0, 1e9,
                   "1e9 tokens/s: the largest scenario batch (1e6 requests) at 1000 tokens/s each; one "
                   "request decodes at most a few thousand tokens/s"},
    PlausibleRange{Magnitude::kCount, "count", 0.0, 1e7,
                   "1e7: 60x the largest count in a model file (Kimi-K2's vocabulary, 163840, "
                   "https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json)"},
    PlausibleRange{Magnitude::kTokenCount, "token count", 0.0, 9007199254740992.0 /* 2^53 */,
                   "2^53: where a double stops counting whole tokens exactly; a server at 1e6 tokens/s "
                   "reaches it after 285 years"},
    PlausibleRange{Magnitude::kTokensPerCycle, "acceptance length", 1.0, 65.0,
                   "1 to 65 tokens per verify cycle: the bonus token alone, up to specsim's longest chain "
                   "(speculation.num_steps <= 64) all accepted plus the bonus; EAGLE-3's drafts are at "
                   "most 8 tokens deep (https://arxiv.org/abs/2503.01840)"},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kRanges.size(); ++i) {
    if (static_cast<std::size_t>(kRanges[i].magnitude) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(), "plausible_range(m) indexes kRanges by Magnitude");

std::string show(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::span<const PlausibleRange> plausible_ranges() { return kRanges; }

const PlausibleRange& plausible_range(Magnitude m) { return kRanges[static_cast<std::size_t>(m)]; }

Magnitude magnitude_of(units::Quantity q) {
  switch (q) {
    case units::Quantity::kDuration: return Magnitude::kDuration;
    case units::Quantity::kBytes: return Magnitude::kBytes;
    case units::Quantity::kBandwidth: return Magnitude::kBandwidth;
    case units::Quantity::kFlopRate: return Magnitude::kFlopRate;
    case units::Quantity::kRate: return Magnitude::kRate;
  }
  return Magnitude::kCount;
}

std::string implausible(double value, Magnitude m, std::string_view text) {
  const PlausibleRange& r = plausible_range(m);
  const std::string shown = text.empty() ? show(value) : "'" + std::string(text) + "'";
  if (!std::isfinite(value)) {
    return shown + " is not a finite " + std::string(r.name) + (text.empty() ? "" : " once its unit is applied");
  }
  if (value < r.min || value > r.max) {
    return shown + (text.empty() ? "" : " = " + show(value)) + ": outside the plausible " + std::string(r.name) + " range [" +
           show(r.min) + ", " + show(r.max) + "] (" + std::string(r.reason) + ")";
  }
  return {};
}

void check_plausible(double value, Magnitude m, std::string_view text) {
  if (std::string why = implausible(value, m, text); !why.empty()) throw Error(why);
}

}  // namespace specsim
