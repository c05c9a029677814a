#include "admission/base64.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KARTA_BASE64_X86 1
#endif

namespace karta {
namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The two base64 characters of every 12-bit group: two lookups per three bytes instead of four.
constexpr std::array<char, 2 * 4096> kBase64Pairs = [] {
  std::array<char, 2 * 4096> table{};
  for (int i = 0; i < 4096; ++i) {
    table[2 * i] = kBase64[i >> 6];
    table[2 * i + 1] = kBase64[i & 63];
  }
  return table;
}();

// Each kernel encodes whole steps from the start of `in` while a step's reads stay inside `size` bytes,
// and returns the bytes it encoded (a multiple of 3); the next narrower kernel goes on from there.

// Six bytes at a time from one eight-byte load (read as big-endian: the first byte is the highest), four
// lookups written as one eight-byte store; then three at a time. Leaves the last one or two bytes.
std::size_t encode_scalar(char* o, const unsigned char* in, std::size_t size) {
  std::size_t i = 0;
  for (; i + 8 <= size; i += 6, o += 8) {
    std::uint64_t w;
    std::memcpy(&w, in + i, 8);
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
    char chars[8];
    std::memcpy(chars, &kBase64Pairs[2 * ((w >> 52) & 4095)], 2);
    std::memcpy(chars + 2, &kBase64Pairs[2 * ((w >> 40) & 4095)], 2);
    std::memcpy(chars + 4, &kBase64Pairs[2 * ((w >> 28) & 4095)], 2);
    std::memcpy(chars + 6, &kBase64Pairs[2 * ((w >> 16) & 4095)], 2);
    std::memcpy(o, chars, 8);
  }
  for (; i + 2 < size; i += 3, o += 4) {
    unsigned n = (unsigned{in[i]} << 16) | (unsigned{in[i + 1]} << 8) | in[i + 2];
    std::memcpy(o, &kBase64Pairs[2 * (n >> 12)], 2);
    std::memcpy(o + 2, &kBase64Pairs[2 * (n & 4095)], 2);
  }
  return i;
}

#if defined(KARTA_BASE64_X86)
// Twelve bytes to sixteen characters a step with SSSE3's byte shuffle (Wojciech Muła's method, "Base64
// encoding with SIMD instructions"): each three bytes spread over a 32-bit lane, their four 6-bit fields
// moved to a byte each by two multiplies, and each field made its character by adding an offset from a
// 16-entry table. Each step reads 16 bytes. Compiled for SSSE3 alone and called only where the processor
// has it.
__attribute__((target("ssse3"))) std::size_t encode_ssse3(char* out, const unsigned char* in, std::size_t size) {
  const __m128i spread = _mm_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1);
  const __m128i offsets = _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                        '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
  std::size_t i = 0;
  for (; i + 16 <= size; i += 12, out += 16) {
    const __m128i v = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)), spread);
    const __m128i first_and_third =
        _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0fc0fc00)), _mm_set1_epi32(0x04000040));
    const __m128i second_and_fourth =
        _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003f03f0)), _mm_set1_epi32(0x01000010));
    const __m128i fields = _mm_or_si128(first_and_third, second_and_fourth);  // a 6-bit value a byte
    // Which offset: 13 for 0-25 ('A'), 0 for 26-51 ('a'), 1-10 for the digits, 11 for '+', 12 for '/'.
    __m128i row = _mm_subs_epu8(fields, _mm_set1_epi8(51));
    row = _mm_or_si128(row, _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), fields), _mm_set1_epi8(13)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_add_epi8(fields, _mm_shuffle_epi8(offsets, row)));
  }
  return i;
}

// Forty-eight bytes to sixty-four characters a step with AVX-512 VBMI (Muła and Lemire, "Base64 encoding
// and decoding at almost the speed of a memory copy", 2019): a byte permute spreads each three bytes b0 b1
// b2 over a 32-bit lane as b1 b0 b2 b1 (lowest byte first), where each output character's six bits lie
// together: at bit 10 (b0's high six), 4 (b0's low two above b1's high four), 22 (b1's low four above b2's
// high two) and 16 (b2's low six). A multishift moves each to a byte, and a second permute (which reads
// only the low six bits of each index) looks it up in the alphabet. Each step reads 64 bytes, so it stops
// at least 16 bytes before the end. The demo JobSet's 1.3 KB patch: 27 steps instead of 108 of SSSE3.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) std::size_t encode_avx512_vbmi(char* out, const unsigned char* in,
                                                                                     std::size_t size) {
  const __m512i spread = _mm512_setr_epi32(0x01020001, 0x04050304, 0x07080607, 0x0a0b090a, 0x0d0e0c0d, 0x10110f10,
                                           0x13141213, 0x16171516, 0x191a1819, 0x1c1d1b1c, 0x1f201e1f, 0x22232122,
                                           0x25262425, 0x28292728, 0x2b2c2a2b, 0x2e2f2d2e);
  const __m512i shifts = _mm512_set1_epi64(0x3036242a1016040a);  // 10, 4, 22, 16 and each 32 more
  const __m512i alphabet = _mm512_loadu_si512(kBase64);
  std::size_t i = 0;
  // The zero-masking forms with every lane kept: the plain ones start from _mm512_undefined_epi32(),
  // which GCC 12 warns of as maybe uninitialized.
  const __mmask64 all = ~__mmask64{0};
  for (; i + 64 <= size; i += 48, out += 64) {
    const __m512i lanes = _mm512_maskz_permutexvar_epi8(all, spread, _mm512_loadu_si512(in + i));
    const __m512i fields = _mm512_maskz_multishift_epi64_epi8(all, shifts, lanes);
    _mm512_storeu_si512(out, _mm512_maskz_permutexvar_epi8(all, fields, alphabet));
  }
  return i;
}
#endif

std::vector<Base64Kernel> detect_kernels() {
  std::vector<Base64Kernel> kernels{Base64Kernel::Scalar};
#if defined(KARTA_BASE64_X86)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("ssse3")) return kernels;  // each kernel hands its tail to the narrower ones
  kernels.push_back(Base64Kernel::Ssse3);
  // GCC's check of an AVX-512 feature includes the operating system's saving of its registers (XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vbmi")) {
    kernels.push_back(Base64Kernel::Avx512Vbmi);
  }
#endif
  return kernels;
}

}  // namespace

const char* kernel_name(Base64Kernel kernel) {
  switch (kernel) {
    case Base64Kernel::Scalar: return "scalar";
    case Base64Kernel::Ssse3: return "ssse3";
    case Base64Kernel::Avx512Vbmi: return "avx512vbmi";
  }
  return "unknown";
}

const std::vector<Base64Kernel>& available_base64_kernels() {
  static const std::vector<Base64Kernel> kernels = detect_kernels();
  return kernels;
}

void append_base64(std::string& out, std::string_view bytes, Base64Kernel kernel) {
  const std::size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4, '=');
  char* o = out.data() + start;
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t i = 0;
  auto advance = [&](std::size_t encoded) {  // `encoded` more bytes written as characters
    i += encoded;
    o += encoded / 3 * 4;
  };
#if defined(KARTA_BASE64_X86)
  if (kernel >= Base64Kernel::Avx512Vbmi) advance(encode_avx512_vbmi(o, in + i, size - i));
  if (kernel >= Base64Kernel::Ssse3) advance(encode_ssse3(o, in + i, size - i));
#else
  (void)kernel;
#endif
  advance(encode_scalar(o, in + i, size - i));
  if (i < size) {  // one or two bytes left; the '=' padding is already there
    unsigned n = unsigned{in[i]} << 16;
    if (i + 1 < size) n |= unsigned{in[i + 1]} << 8;
    o[0] = kBase64[(n >> 18) & 63];
    o[1] = kBase64[(n >> 12) & 63];
    if (i + 1 < size) o[2] = kBase64[(n >> 6) & 63];
  }
}

void append_base64(std::string& out, std::string_view bytes) {
  static const Base64Kernel widest = available_base64_kernels().back();
  append_base64(out, bytes, widest);
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  append_base64(out, bytes);
  return out;
}

}  // namespace karta
