// The query string of an HTTP request target ("/path?a=1&b=x%20y"), decoded
// as HTML forms and curl --data-urlencode write it: pairs split at '&', a
// name split from its value at the first '=', "%XX" is the byte XX and '+'
// a space. A name without '=' has the value "".
//
// Thread safety: ParseQuery is reentrant.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace shelfmark {

using QueryParams = std::map<std::string, std::string, std::less<>>;

// Decodes `query` (what follows '?', without it; "" gives no parameters)
// into *out. False, with *error a sentence naming the fault, for a bad
// "%" escape, an empty name, or a name given twice (which one was meant is
// not guessed).
bool ParseQuery(std::string_view query, QueryParams* out, std::string* error);

}  // namespace shelfmark
