#include "k8s/quantity.h"

#include <algorithm>
#include <charconv>
#include <cmath>

// Read for semantics from apimachinery (pkg/api/resource/quantity.go: parseQuantityString and
// ParseQuantity; suffix.go: the suffixer); the code here is our own. Where Go takes a fast int64 path
// or a slow inf.Dec one, the value is the same; only what each path refuses differs (see
// `digitless_refused`).

namespace karta {
namespace {

__extension__ typedef unsigned __int128 Wide;

constexpr std::uint64_t kNanosPerUnit = 1000000000;
constexpr Wide kLimitNanos = Wide(kQuantityLimit) * kNanosPerUnit;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// What a suffix means: value = number x base^exponent.
struct Suffix {
  int base = 10;
  std::int32_t exponent = 0;
};

// Go's strconv.ParseInt(text, 10, 64): an optional sign, then at least one digit, within int64.
std::optional<std::int64_t> go_parse_int64(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  const std::uint64_t bound = negative ? std::uint64_t(1) << 63 : (std::uint64_t(1) << 63) - 1;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    if (magnitude > (bound - std::uint64_t(c - '0')) / 10) return std::nullopt;
    magnitude = magnitude * 10 + std::uint64_t(c - '0');
  }
  return negative ? static_cast<std::int64_t>(~magnitude + 1) : static_cast<std::int64_t>(magnitude);
}

// The suffixer's reading: decimal SI, binary SI, or "e"/"E" and a signed integer. Go keeps that
// integer as an int32, so "1e4294967299" is 1e3 to Kubernetes, and to us.
std::optional<Suffix> interpret(std::string_view suffix) {
  static constexpr std::pair<std::string_view, Suffix> kNamed[] = {
      {"", {10, 0}},   {"n", {10, -9}}, {"u", {10, -6}}, {"m", {10, -3}}, {"k", {10, 3}},  {"M", {10, 6}},
      {"G", {10, 9}},  {"T", {10, 12}}, {"P", {10, 15}}, {"E", {10, 18}}, {"Ki", {2, 10}}, {"Mi", {2, 20}},
      {"Gi", {2, 30}}, {"Ti", {2, 40}}, {"Pi", {2, 50}}, {"Ei", {2, 60}}};
  for (const auto& [name, meaning] : kNamed) {
    if (suffix == name) return meaning;
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    auto exponent = go_parse_int64(suffix.substr(1));
    if (!exponent) return std::nullopt;
    return Suffix{10, static_cast<std::int32_t>(static_cast<std::uint32_t>(*exponent))};
  }
  return std::nullopt;
}

// A number with no digit at all ("", "+", ".", "-.") is 0 on Go's int64 path but refused by inf.Dec on
// the slow path, which ParseQuantity takes for exponents below -9 ("e-10") and for "Pi" and "Ei" (its
// precision estimate, 15 - 1 - exponent*3/10 - 1, falls below 0 there).
bool digitless_refused(const Suffix& suffix) {
  if (suffix.base == 2) return 15 - 1 - suffix.exponent * 3 / 10 - 1 < 0;
  return suffix.exponent < -9;
}

// ceil(digits x 2^binary x 10^decimal) in nanos, or nullopt past kLimitNanos. `digits` has no leading
// or trailing zero.
std::optional<Wide> nanos_of(std::string_view digits, int binary, std::int64_t decimal) {
  auto shifted = [binary](Wide value) -> std::optional<Wide> {
    if (value > (kLimitNanos >> binary)) return std::nullopt;
    return value << binary;
  };
  auto whole = [](std::string_view part) {
    Wide value = 0;
    for (char c : part) value = value * 10 + Wide(c - '0');
    return value;
  };
  const auto length = static_cast<std::int64_t>(digits.size());
  if (decimal >= 0) {
    if (length + decimal > 29) return std::nullopt;  // at least 10^28 nanos, past 9.2 x 10^27
    Wide value = whole(digits);
    for (std::int64_t i = 0; i < decimal; ++i) value *= 10;
    auto result = shifted(value);
    if (!result || *result > kLimitNanos) return std::nullopt;
    return result;
  }
  // The integer part, then the fraction 0.ddd times 2^binary, multiplied digit by digit from the right:
  // the carry out of the last digit is the fraction's integer part, and any digit left behind rounds up.
  const std::int64_t fraction_length = -decimal;
  const std::int64_t integer_length = std::max<std::int64_t>(length - fraction_length, 0);
  if (integer_length > 29) return std::nullopt;
  auto result = shifted(whole(digits.substr(0, static_cast<std::size_t>(integer_length))));
  if (!result) return std::nullopt;
  Wide carry = 0;
  bool remainder = false;
  for (std::int64_t i = length - 1; i >= integer_length; --i) {
    Wide product = (Wide(digits[static_cast<std::size_t>(i)] - '0') << binary) + carry;
    remainder = remainder || product % 10 != 0;
    carry = product / 10;
  }
  // The fraction's leading zeros, as far as the carry still reaches.
  for (std::int64_t zeros = fraction_length - (length - integer_length); zeros > 0 && carry != 0; --zeros) {
    remainder = remainder || carry % 10 != 0;
    carry /= 10;
  }
  Wide total = *result + carry + (remainder ? 1 : 0);
  if (total > kLimitNanos) return std::nullopt;
  return total;
}

}  // namespace

std::optional<Quantity> parse_quantity_text(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::size_t pos = 0;
  const std::size_t end = text.size();
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') negative = text[pos++] == '-';
  const std::size_t number_start = pos;
  while (pos < end && text[pos] == '0') ++pos;
  const std::size_t integer_start = pos;
  while (pos < end && is_digit(text[pos])) ++pos;
  std::string_view integer = text.substr(integer_start, pos - integer_start);
  std::string_view fraction;
  if (pos < end && text[pos] == '.') {
    const std::size_t fraction_start = ++pos;
    while (pos < end && is_digit(text[pos])) ++pos;
    fraction = text.substr(fraction_start, pos - fraction_start);
  }
  bool has_digit = false;
  for (std::size_t i = number_start; i < pos && !has_digit; ++i) has_digit = is_digit(text[i]);

  // The suffix: letters that may start one, an optional sign, digits, and then the end.
  const std::size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(text[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (text[pos] == '+' || text[pos] == '-')) ++pos;
  while (pos < end && is_digit(text[pos])) ++pos;
  if (pos < end) return std::nullopt;
  auto suffix = interpret(text.substr(suffix_start));
  if (!suffix) return std::nullopt;
  if (!has_digit && digitless_refused(*suffix)) return std::nullopt;

  // The significant digits, their decimal exponent counted from the nano.
  std::string digits(integer);
  digits.append(fraction);
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Quantity{};
  std::size_t last = digits.find_last_not_of('0');
  std::int64_t decimal = std::int64_t(digits.size() - 1 - last) - std::int64_t(fraction.size()) + 9;
  if (suffix->base == 10) decimal += suffix->exponent;
  std::string_view significant = std::string_view(digits).substr(first, last - first + 1);

  Quantity quantity;
  quantity.negative = negative;
  auto nanos = nanos_of(significant, suffix->base == 2 ? suffix->exponent : 0, decimal);
  if (!nanos) {
    quantity.units = kQuantityLimit;
    quantity.clamped = true;
    return quantity;
  }
  quantity.units = static_cast<std::uint64_t>(*nanos / kNanosPerUnit);
  quantity.nanos = static_cast<std::uint32_t>(*nanos % kNanosPerUnit);
  return quantity;
}

Quantity quantity_of_number(double number) {
  char text[64];
  auto written = std::to_chars(text, text + sizeof text, number);
  return parse_quantity_text(std::string_view(text, static_cast<std::size_t>(written.ptr - text))).value_or(Quantity{});
}

double Quantity::to_double() const {
  double magnitude = static_cast<double>(units) + static_cast<double>(nanos) / double(kNanosPerUnit);
  return negative ? -magnitude : magnitude;
}

std::string Quantity::decimal() const {
  // Appended, not `"-" + std::to_string(units)`: GCC 12 at -O3 warns (-Wrestrict, falsely) on the insert
  // at the front that operator+ makes.
  std::string text = negative ? "-" : "";
  text += std::to_string(units);
  if (nanos != 0) {
    std::string fraction = std::to_string(nanos);
    fraction.insert(0, 9 - fraction.size(), '0');
    text += "." + fraction.substr(0, fraction.find_last_not_of('0') + 1);
  }
  return text;
}

bool fits_int64(double figure) {
  // 2^63 is the first double past int64; every double below it rounds to one that fits.
  return std::isfinite(figure) && figure < 9223372036854775808.0 && figure >= -9223372036854775808.0;
}

}  // namespace karta
