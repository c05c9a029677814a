#pragma once

// A Kubernetes resource quantity ("4", "500m", "16Gi", "1e3", "4000000000n") read exactly as
// apimachinery's resource.ParseQuantity reads it: the same forms accepted and refused, the same
// rounding. A custom resource keeps the text the user wrote, so this reading is the webhook's only
// defence against a count Kubernetes would read differently.
//
// The value is held exactly, to the nano, up to 2^63-1 units. ParseQuantity caps binary-SI values
// there itself ("9Ei" is 2^63-1); decimal values it keeps at any size ("12E", "1e30"), but every
// int64 reading Kubernetes makes of them (Value, MilliValue) overflows, so we hold them at the same
// bound and say so (`clamped`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace karta {

// 2^63-1: the largest magnitude, in whole units, that a Quantity holds.
inline constexpr std::uint64_t kQuantityLimit = 9223372036854775807ULL;

struct Quantity {
  bool negative = false;
  std::uint64_t units = 0;  // whole units, at most kQuantityLimit
  std::uint32_t nanos = 0;  // billionths of a unit, below 10^9
  bool clamped = false;     // the text meant more than kQuantityLimit units: `units` holds the limit

  // The nearest double (exact for whole numbers up to 2^53).
  double to_double() const;
  // Exact decimal without exponent: "4", "0.5", "-0.000000001", "9223372036854775807".
  std::string decimal() const;
  bool operator==(const Quantity&) const = default;
};

// The quantity `text` spells, or nullopt where ParseQuantity returns an error: "", " 4", "4 ", "0x4",
// "1e", "1.1.M", "--1", "4 GPUs". Values finer than a nano are rounded away from zero ("0.9n" is 1n),
// as ParseQuantity rounds them.
std::optional<Quantity> parse_quantity_text(std::string_view text);

// A JSON number as a quantity: Kubernetes reads the number's text (4 as "4", 1e30 as "1e+30").
Quantity quantity_of_number(double number);

// Whether `figure` (a sum or product of quantities, kept as a double, in some unit: millicores, bytes)
// rounds to a whole number an int64 holds. One past it is printed as the bound, marked (">=...").
bool fits_int64(double figure);

}  // namespace karta
