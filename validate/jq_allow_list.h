#pragma once

// The jq 1.6 builtins a definition may call, by name and arity, and the constructs refused with a reason
// of their own (jq_safety.h says why each kind is refused). Any call that is in neither list is refused as
// "not an allowed builtin".

#include <string>
#include <string_view>
#include <vector>

namespace karta {

struct JqRefusal {
  std::string_view name;  // a builtin, keyword, variable or operator
  int arity;              // -1: any arity
  std::string_view reason;
};

bool is_allowed_builtin(std::string_view name, int arity);
// The refusal for a construct with that name and arity, or nullptr.
const JqRefusal* find_refusal(std::string_view name, int arity);

// The allow-list: every jq 1.6 builtin a definition may call, as "name/arity", sorted (`getpath` with a
// literal path only, as jq_safety.h says).
std::vector<std::string> jq_allowed_builtins();

}  // namespace karta
