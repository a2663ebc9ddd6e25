#include "provider/derived_id.h"

#include <cstdint>

namespace understudy {
namespace provider {
namespace {

// FNV-1a over `bytes` from `basis`, then the SplitMix64 finalizer.
uint64_t MixedFnv1a64(absl::string_view bytes, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

std::string DerivedId(absl::string_view prefix, absl::string_view seed) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  for (uint64_t h :
       {MixedFnv1a64(seed, 0xcbf29ce484222325ULL), MixedFnv1a64(seed, 0x6c62272e07bb0142ULL)}) {
    for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 0xf]);
  }
  return out;
}

}  // namespace provider
}  // namespace understudy
