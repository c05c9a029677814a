#pragma once

// The corpus the tests read: published CRDs and example objects, kept in the repository at tests/corpus/
// (SOURCES.md there says where each file comes from).

#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta::test {

using json = nlohmann::json;

// The corpus, kept in the repository at tests/corpus/ (KARTA_CORPUS_DIR in the environment overrides it).
// When it is missing the test fails, naming the path, in CI or not; it is never skipped. The result is
// therefore always a path (the optional is kept for the callers' `if (!corpus) return;`).
std::optional<std::filesystem::path> corpus_dir();

// Every object of the corpus samples, then examples/jobset-demo.yaml; fails the test without a corpus.
std::vector<json> sample_objects();

}  // namespace karta::test
