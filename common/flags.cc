#include "common/flags.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace shelfmark {
namespace {

std::string Range(auto lo, auto hi) {
  std::ostringstream out;
  out << "[" << lo << ", " << hi << "]";
  return out.str();
}

}  // namespace

void FlagSet::AddInt64(std::string name, int64_t* target, std::string help,
                       int64_t min_value, int64_t max_value) {
  auto set = [=](std::string_view text) -> std::string {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return "expects an integer, got '" + std::string(text) + "'";
    }
    if (v < min_value || v > max_value) {
      return "value " + std::string(text) + " is outside " + Range(min_value, max_value);
    }
    *target = v;
    return "";
  };
  flags_.push_back({std::move(name), std::move(help), std::to_string(*target), false, set});
}

void FlagSet::AddDouble(std::string name, double* target, std::string help,
                        double min_value, double max_value) {
  auto set = [=](std::string_view text) -> std::string {
    std::string s(text);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
      return "expects a number, got '" + s + "'";
    }
    if (v < min_value || v > max_value) {
      return "value " + s + " is outside " + Range(min_value, max_value);
    }
    *target = v;
    return "";
  };
  std::ostringstream def;
  def << *target;
  flags_.push_back({std::move(name), std::move(help), def.str(), false, set});
}

void FlagSet::AddBool(std::string name, bool* target, std::string help) {
  auto set = [=](std::string_view text) -> std::string {
    if (text == "true" || text == "1") { *target = true; return ""; }
    if (text == "false" || text == "0") { *target = false; return ""; }
    return "expects true or false, got '" + std::string(text) + "'";
  };
  flags_.push_back({std::move(name), std::move(help), *target ? "true" : "false", true, set});
}

void FlagSet::AddString(std::string name, std::string* target, std::string help,
                        std::vector<std::string> allowed) {
  auto set = [=](std::string_view text) -> std::string {
    if (allowed.empty()) { *target = std::string(text); return ""; }
    for (const auto& a : allowed) {
      if (a == text) { *target = a; return ""; }
    }
    std::string choices;
    for (const auto& a : allowed) choices += (choices.empty() ? "" : "|") + a;
    return "expects one of " + choices + ", got '" + std::string(text) + "'";
  };
  flags_.push_back({std::move(name), std::move(help), *target, false, set});
}

const FlagSet::Flag* FlagSet::Find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FlagSet::Parse(int argc, const char* const* argv, std::string* error) {
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (flags_done || arg.size() < 2 || arg.substr(0, 2) != "--") {
      positional_.emplace_back(arg);
      continue;
    }
    if (arg == "--") { flags_done = true; continue; }
    if (arg == "--help" || arg == "-h") { help_requested_ = true; continue; }
    arg.remove_prefix(2);
    size_t eq = arg.find('=');
    std::string_view name = arg.substr(0, eq);
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      *error = program_ + ": unknown flag --" + std::string(name);
      return false;
    }
    if (eq == std::string_view::npos && !flag->is_bool) {
      *error = program_ + ": flag --" + std::string(name) + " needs a value (--" +
               std::string(name) + "=...)";
      return false;
    }
    std::string_view value = eq == std::string_view::npos ? "true" : arg.substr(eq + 1);
    std::string message = flag->set(value);
    if (!message.empty()) {
      *error = program_ + ": flag --" + std::string(name) + " " + message;
      return false;
    }
  }
  return true;
}

void FlagSet::ParseOrExit(int argc, const char* const* argv) {
  std::string error;
  if (!Parse(argc, argv, &error)) {
    std::fprintf(stderr, "%s\n%s", error.c_str(), Usage().c_str());
    std::exit(2);
  }
  if (help_requested_) {
    std::fputs(Usage().c_str(), stdout);
    std::exit(0);
  }
}

std::string FlagSet::Usage() const {
  std::string out = "usage: " + program_ + " [--name=value ...]\n";
  for (const auto& f : flags_) {
    out += "  --" + f.name + " (default " + (f.default_text.empty() ? "\"\"" : f.default_text) +
           ")  " + f.help + "\n";
  }
  return out;
}

}  // namespace shelfmark
