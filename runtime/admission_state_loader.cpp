#include "runtime/admission_state_loader.h"

#include <algorithm>
#include <functional>

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "definitions/api/published_api.h"
#include "json/documents.h"
#include "json/json_document.h"
#include "validate/definition_validation.h"

namespace karta {
namespace {

bool is_definition_file(const std::filesystem::path& path) {
  auto name = path.filename().string();
  auto extension = path.extension();
  return !name.starts_with(".") && (extension == ".yaml" || extension == ".yml" || extension == ".json");
}

// Under definitionPolicy.mode warn, a definition whose only faults are paths the schema does not have is
// loaded, with a log line: those paths yield nothing. Any other fault (jq that is unsafe or does not
// compile, the published schema, the structure) keeps it out in either mode: karta-webhook never runs an
// expression with a safety fault.
bool loadable(const DefinitionReport& report, const Policy& policy, const std::string& what) {
  if (report.ok()) return true;
  if (policy.definition_policy.mode != DefinitionPolicyMode::Warn || !report.only_path_faults()) return false;
  std::string faults;
  for (const auto& fault : report.faults) faults += (faults.empty() ? "" : "; ") + fault;
  spdlog::warn("{} loaded with {} path {} (definitionPolicy.mode: warn), which yield nothing: {}", what,
               report.faults.size(), report.faults.size() == 1 ? "fault" : "faults", faults);
  return true;
}

}  // namespace

std::set<std::string> groups_used(const Catalog& catalog, const std::map<std::string, json>& kartas) {
  std::set<std::string> groups;
  for (const auto& definition : catalog.definitions()) groups.insert(definition->root_kind().group);
  for (const auto& [name, karta] : kartas) {
    if (auto kind = defined_kind(karta)) groups.insert(kind->group);
  }
  return groups;
}

std::vector<ClusterKartaCheck> add_cluster_kartas(AdmissionState& state, const std::map<std::string, json>& kartas,
                                                  DefinitionCache& cache) {
  std::vector<ClusterKartaCheck> checks;
  CrdLookup lookup = [&](const GroupVersionKind& kind) { return state.crds ? state.crds->find(kind) : nullptr; };
  for (const auto& [name, object] : kartas) {
    DefinitionReport report = validate_definition(object, lookup);
    ClusterKartaCheck& check = checks.emplace_back(ClusterKartaCheck{name, report.faults, false});
    if (!loadable(report, state.policy, "Karta " + name)) {
      spdlog::error("{}", check.not_loaded());
      continue;
    }
    DefinitionParse parsed = parse_karta_definition(object, "cluster:" + name);
    const GroupVersionKind kind = parsed.definition->root_kind();
    state.catalog.add(cache.compile(std::move(*parsed.definition)));
    state.cluster_kartas[kind.group + "/" + kind.version + "/" + kind.kind] = name;
    check.loaded = true;
  }
  return checks;
}

std::string ClusterKartaCheck::not_loaded() const {
  return "Karta " + name + " not loaded: " + faults.front() +
         (faults.size() > 1 ? " (and " + std::to_string(faults.size() - 1) + " more)" : "");
}

AdmissionStateLoader::AdmissionStateLoader(std::vector<std::filesystem::path> directories,
                                           std::filesystem::path policy_file, std::size_t concurrency,
                                           std::vector<std::filesystem::path> crd_directories)
    : directories_(std::move(directories)),
      policy_file_(std::move(policy_file)),
      crd_directories_(std::move(crd_directories)),
      cache_(concurrency) {}

std::shared_ptr<AdmissionState> AdmissionStateLoader::load(const ClusterSources& cluster,
                                                          std::vector<std::string>* rejected) {
  PublishedSchemaHold schemas;  // the Karta CRD's schema parsed once for the directories' and the cluster's definitions
  auto state = std::make_shared<AdmissionState>();
  auto crds = std::make_shared<CrdSchemaSet>();
  for (const auto& schema : cluster.crd_schemas) crds->add(schema);
  for (const auto& directory : crd_directories_) crds->add_directory(directory);
  state->crds = std::move(crds);

  if (!policy_file_.empty()) {
    // Read once: the digest is of the bytes loaded, not of a file that changed in between.
    try {
      const std::string text = read_text_file(policy_file_);
      state->policy = load_policy_text(text, policy_file_.string());
      state->policy_digest = short_sha256(text);
    } catch (const InputError& e) {
      throw PolicyLoadError(e.what());
    }
  }
  // Definitions from directories are checked as the cluster's are (jq safety, paths against the CRDs
  // known); compiling them is loading's own work.
  CatalogSources sources;
  sources.directories = directories_;
  const CrdSchemaSet* known = state->crds.get();
  const Policy& policy = state->policy;
  sources.check = [known, &policy](const json& document) {
    DefinitionReport report = validate_definition(
        document, [known](const GroupVersionKind& kind) { return known->find(kind); }, /*compile=*/false);
    const json* name_value = find_json_at(document, json::json_pointer("/metadata/name"));
    std::string name = name_value != nullptr && name_value->is_string() ? name_value->get<std::string>() : "";
    return loadable(report, policy, "definition " + name) ? std::vector<std::string>{} : report.faults;
  };
  state->catalog = load_catalog(sources, &cache_);

  // The cluster's Karta objects override the built-in catalog and the directories, kind by kind.
  for (const auto& check : add_cluster_kartas(*state, cluster.kartas, cache_)) {
    if (!check.loaded && rejected != nullptr) rejected->push_back(check.not_loaded());
  }
  cache_.sweep();
  return state;
}

AdmissionStateLoader::Fingerprint AdmissionStateLoader::fingerprint() const {
  Fingerprint fingerprint;
  std::error_code ec;
  for (const auto& directory : directories_) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
      if (is_definition_file(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      fingerprint.definitions += file.string() + '\0';
      try {
        fingerprint.definitions += std::to_string(std::hash<std::string>{}(read_text_file(file)));
      } catch (const InputError&) {
        fingerprint.definitions += "unreadable";
      }
    }
  }
  if (!policy_file_.empty()) {
    try {
      fingerprint.policy = std::to_string(std::hash<std::string>{}(read_text_file(policy_file_)));
    } catch (const InputError&) {
      fingerprint.policy = "unreadable";
    }
  }
  return fingerprint;
}

std::string short_sha256(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1) return "unknown";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < 8 && i < size; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 0xf];
  }
  return text;
}

std::shared_ptr<AdmissionState> load_admission_state(const std::vector<std::filesystem::path>& definition_directories,
                                                     const std::filesystem::path& policy_file,
                                                     std::size_t concurrency) {
  AdmissionStateLoader loader(definition_directories, policy_file, concurrency);
  return loader.load();
}

}  // namespace karta
