#pragma once

// Base64 (RFC 4648, with padding) for the AdmissionReview's patch: the response's largest field, written
// for every patched admission. Encoded with the widest kernel the processor has, chosen once.

#include <string>
#include <string_view>
#include <vector>

namespace karta {

std::string base64_encode(std::string_view bytes);
// The same, appended to `out`.
void append_base64(std::string& out, std::string_view bytes);

// The encoder's kernels, narrowest first; each writes the same text (tests run every one the processor has).
enum class Base64Kernel {
  Scalar,      // six bytes a step from one eight-byte load, two lookups of a 4096-entry table per 3 bytes
  Ssse3,       // twelve bytes to sixteen characters a step (x86-64 with SSSE3)
  Avx512Vbmi,  // forty-eight bytes to sixty-four characters a step (x86-64 with AVX-512 VBMI)
};
const char* kernel_name(Base64Kernel kernel);
// The kernels this processor can run, narrowest first; append_base64 uses the last.
const std::vector<Base64Kernel>& available_base64_kernels();
// append_base64 with `kernel` as the widest one used (the narrower ones take the tail it leaves): one of
// available_base64_kernels().
void append_base64(std::string& out, std::string_view bytes, Base64Kernel kernel);

}  // namespace karta
