// KeyChooser: which of n keys a benchmark operation touches next, uniform or
// zipf (rank i, 0-based, drawn with probability proportional to
// 1 / (i + 1)^theta; rank 0 is the hottest key).
//
// Thread safety: Next() mutates the generator: one chooser per thread (each
// with its own seed); construction is reentrant.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace shelfmark {

enum class KeyDistribution { kUniform, kZipf };

// "uniform" / "zipf"; false for anything else.
bool ParseKeyDistribution(std::string_view text, KeyDistribution* out);

class KeyChooser {
 public:
  // Preconditions: n >= 1; theta > 0 for zipf (ignored for uniform). The
  // zipf table costs 8 bytes per key.
  KeyChooser(uint64_t n, KeyDistribution distribution, double theta, uint64_t seed);

  // A key index in [0, n).
  uint64_t Next();

 private:
  uint64_t n_;
  KeyDistribution distribution_;
  std::vector<double> cdf_;  // zipf: cdf_[i] = P(rank <= i)
  std::mt19937_64 rng_;
};

}  // namespace shelfmark
