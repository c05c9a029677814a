#include "runtime/admission_state_loader.h"

#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "json/documents.h"
#include "validate/definition_validation.h"

namespace karta {
namespace {

bool is_definition_file(const std::filesystem::path& path) {
  auto name = path.filename().string();
  auto extension = path.extension();
  return !name.starts_with(".") && (extension == ".yaml" || extension == ".yml" || extension == ".json");
}

}  // namespace

AdmissionStateLoader::AdmissionStateLoader(std::vector<std::filesystem::path> directories,
                                           std::filesystem::path policy_file, std::size_t concurrency,
                                           std::vector<std::filesystem::path> crd_directories)
    : directories_(std::move(directories)),
      policy_file_(std::move(policy_file)),
      crd_directories_(std::move(crd_directories)),
      cache_(concurrency) {}

std::shared_ptr<AdmissionState> AdmissionStateLoader::load(const ClusterSources& cluster,
                                                          std::vector<std::string>* rejected) {
  auto state = std::make_shared<AdmissionState>();
  auto crds = std::make_shared<CrdSchemaSet>();
  for (const auto& [name, crd] : cluster.crds) {
    try {
      crds->add_crd(crd);
    } catch (const InputError& e) {
      spdlog::warn("CustomResourceDefinition {} not usable for checking definitions: {}", name, e.what());
    }
  }
  for (const auto& directory : crd_directories_) crds->add_directory(directory);
  state->crds = std::move(crds);

  // Definitions from directories are checked as the cluster's are (jq safety, paths against the CRDs
  // known); compiling them is loading's own work.
  CatalogSources sources;
  sources.directories = directories_;
  const CrdSchemaSet* known = state->crds.get();
  sources.check = [known](const json& document) {
    return validate_definition(document, [known](const GroupVersionKind& kind) { return known->find(kind); },
                               /*compile=*/false).faults;
  };
  state->catalog = load_catalog(sources, &cache_);
  if (!policy_file_.empty()) state->policy = load_policy(policy_file_);

  // The cluster's Karta objects override the built-in catalog and the directories, kind by kind. Each
  // is validated as /validate would (it may predate the webhook, or have been applied while it was down).
  CrdLookup lookup = [&](const GroupVersionKind& kind) { return state->crds->find(kind); };
  for (const auto& [name, object] : cluster.kartas) {
    DefinitionReport report = validate_definition(object, lookup);
    if (!report.ok()) {
      std::string why = "Karta " + name + " not loaded: " + report.faults.front() +
                        (report.faults.size() > 1 ? " (and " + std::to_string(report.faults.size() - 1) + " more)" : "");
      spdlog::error("{}", why);
      if (rejected != nullptr) rejected->push_back(why);
      continue;
    }
    DefinitionParse parsed = parse_karta_definition(object, "cluster:" + name);
    const GroupVersionKind kind = parsed.definition->root_kind();
    state->catalog.add(cache_.compile(std::move(*parsed.definition)));
    state->cluster_kartas[kind.group + "/" + kind.version + "/" + kind.kind] = name;
  }
  cache_.sweep();
  return state;
}

std::string AdmissionStateLoader::fingerprint() const {
  std::string bytes;
  std::error_code ec;
  for (const auto& directory : directories_) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
      if (is_definition_file(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      bytes += file.string() + '\0';
      try {
        bytes += std::to_string(std::hash<std::string>{}(read_text_file(file)));
      } catch (const InputError&) {
        bytes += "unreadable";
      }
    }
  }
  if (!policy_file_.empty()) {
    try {
      bytes += std::to_string(std::hash<std::string>{}(read_text_file(policy_file_)));
    } catch (const InputError&) {
      bytes += "unreadable";
    }
  }
  return bytes;
}

std::shared_ptr<AdmissionState> load_admission_state(const std::vector<std::filesystem::path>& definition_directories,
                                                     const std::filesystem::path& policy_file,
                                                     std::size_t concurrency) {
  AdmissionStateLoader loader(definition_directories, policy_file, concurrency);
  return loader.load();
}

}  // namespace karta
