#include "support/corpus.h"

#include <cstdlib>

#include <doctest/doctest.h>

#include "support/test_support.h"

namespace karta::test {

namespace fs = std::filesystem;

std::optional<fs::path> corpus_dir() {
  fs::path dir = std::getenv("KARTA_CORPUS_DIR") ? fs::path(std::getenv("KARTA_CORPUS_DIR")) : fs::path(KARTA_CORPUS_DIR);
  if (fs::is_directory(dir / "samples") && fs::is_directory(dir / "crds")) return dir;
  // The corpus is part of the repository: missing, it is a broken checkout (or a wrong KARTA_CORPUS_DIR),
  // never a reason to skip. FAIL throws, so callers never see the empty value.
  FAIL("the corpus is missing at " << dir.string() << " (it is kept in the repository at tests/corpus/)");
  return std::nullopt;
}

std::vector<json> sample_objects() {
  std::vector<json> objects;
  auto corpus = corpus_dir();
  if (!corpus) return objects;
  for (const auto& file : fs::directory_iterator(*corpus / "samples")) {
    for (auto& d : documents(file.path())) objects.push_back(std::move(d.value));
  }
  objects.push_back(document(source_dir() / "examples/jobset-demo.yaml"));
  return objects;
}

}  // namespace karta::test
