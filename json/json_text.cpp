#include "json/json_text.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>  // SSE2: every x86-64 processor has it
#endif

namespace karta {
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  auto continuation = [&](std::size_t k) { return (byte(k) & 0xC0) == 0x80; };
  unsigned char c = byte(0);
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char d = byte(1);
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F)) return 0;
    return continuation(1) && continuation(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char d = byte(1);
    if ((c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F)) return 0;
    return continuation(1) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

namespace {

#if defined(__SSE2__)
// The special bytes of 16 as a bit mask. A signed compare below 0x20 catches both the control characters
// and every byte from 0x80 (negative as a signed char).
unsigned special_mask(const char* sixteen) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sixteen));
  const __m128i special =
      _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
  return static_cast<unsigned>(_mm_movemask_epi8(special));
}
#endif

// Whether a byte is special (below).
constexpr std::array<bool, 256> kSpecial = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\';
  return table;
}();

// The first special byte of data[i, size), or size. Special bytes end a plain run: the quote, the
// backslash, control characters and every non-ASCII byte (checked as UTF-8 by the caller). Sixteen bytes
// at a time; the last few in the last sixteen bytes of the text, read again (a text of fewer than sixteen
// bytes one byte at a time: most keys and values are that short). Without SSE2, eight at a time (SWAR:
// each test sets a byte's high bit), then one at a time.
std::size_t first_special(const char* data, std::size_t size, std::size_t i) {
#if defined(__SSE2__)
  if (size < 16) {
    while (i < size && !kSpecial[static_cast<unsigned char>(data[i])]) ++i;
    return i;
  }
  for (; i + 16 <= size; i += 16) {
    if (unsigned mask = special_mask(data + i)) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
  if (i < size) {  // data[size - 16, i) were checked already: their bits are shifted out
    const unsigned mask = special_mask(data + size - 16) >> (i - (size - 16));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
  return size;
#else
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, data + i, 8);
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    auto zero_byte = [&](std::uint64_t x) { return (x - kOnes) & ~x & kHigh; };
    std::uint64_t special = (word & kHigh)                             // >= 0x80
                            | ((word - 0x20 * kOnes) & ~word & kHigh)  // < 0x20
                            | zero_byte(word ^ ('"' * kOnes)) | zero_byte(word ^ ('\\' * kOnes));
    if (special != 0) break;
  }
  while (i < size && !kSpecial[static_cast<unsigned char>(data[i])]) ++i;
  return i;
#endif
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* data = text.data();
  const std::size_t size = text.size();
  std::size_t i = first_special(data, size, 0);
  const std::size_t at = out.size();
  if (i == size) {  // nothing to escape (nearly every string): the quotes and the text appended as they are
    // Appended, not resized and written over: resize() fills what it adds first, and GCC writes that fill
    // inline as `rep stos`, whose start-up was a quarter of this function's time (bench/README.md, issue
    // 24's fourteenth round).
    out.push_back('"');
    out.append(data, size);
    out.push_back('"');
    return;
  }
  out.reserve(at + size + 2);
  out += '"';
  std::size_t plain = 0;  // start of the run not yet copied
  for (; i < size; i = first_special(data, size, i)) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    if (c >= 0x80) {
      if (std::size_t length = utf8_sequence(text, i)) {
        i += length;
        continue;
      }
    }
    out.append(data + plain, i - plain);
    plain = ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c >= 0x80) {
          out += "\xEF\xBF\xBD";
        } else {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        }
    }
  }
  out.append(data + plain, size - plain);
  out += '"';
}

// Compact JSON, keys in nlohmann::json's order; the same bytes json::dump() gives for valid text.
void append_json(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_json(out, item);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      append_json_string(out, value.get_ref<const std::string&>());
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char digits[24];
      auto end = value.is_number_unsigned()
                     ? std::to_chars(digits, digits + sizeof digits, value.get<std::uint64_t>()).ptr
                     : std::to_chars(digits, digits + sizeof digits, value.get<std::int64_t>()).ptr;
      out.append(digits, end);
      return;
    }
    default:
      out += value.dump();  // floating-point numbers (and binary): nlohmann's own formatting
  }
}

}  // namespace karta
