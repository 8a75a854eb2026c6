#include "perf/key_chooser.h"

#include <algorithm>
#include <cmath>

namespace shelfmark {

bool ParseKeyDistribution(std::string_view text, KeyDistribution* out) {
  if (text == "uniform") {
    *out = KeyDistribution::kUniform;
  } else if (text == "zipf") {
    *out = KeyDistribution::kZipf;
  } else {
    return false;
  }
  return true;
}

KeyChooser::KeyChooser(uint64_t n, KeyDistribution distribution, double theta, uint64_t seed)
    : n_(n == 0 ? 1 : n), distribution_(distribution), rng_(seed) {
  if (distribution_ != KeyDistribution::kZipf) return;
  cdf_.resize(n_);
  double sum = 0;
  for (uint64_t i = 0; i < n_; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
    cdf_[i] = sum;
  }
  for (double& c : cdf_) c /= sum;
  cdf_.back() = 1.0;  // no rounding gap at the top
}

uint64_t KeyChooser::Next() {
  if (distribution_ == KeyDistribution::kUniform) {
    return std::uniform_int_distribution<uint64_t>(0, n_ - 1)(rng_);
  }
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<uint64_t>(static_cast<uint64_t>(it - cdf_.begin()), n_ - 1);
}

}  // namespace shelfmark
