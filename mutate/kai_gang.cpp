#include "mutate/kai_gang.h"

namespace karta {
namespace {

bool holds(const std::optional<JsonElement>& map, const std::string& key) {
  return map && map->is_object() && member(*map, key).has_value();
}

}  // namespace

std::vector<GangAnnotation> jobset_gang(JsonElement jobset, const std::string& key, bool create) {
  std::vector<GangAnnotation> out;
  auto spec = member(jobset, "spec");
  auto replicated = spec ? member(*spec, "replicatedJobs") : std::nullopt;
  if (!replicated || !replicated->is_array()) return out;
  const auto jobs = array_of(*replicated);
  const std::size_t count = jobs.size();
  // spec.startupPolicy.startupPolicyOrder: InOrder or AnyOrder (the default).
  auto startup = spec ? member(*spec, "startupPolicy") : std::nullopt;
  auto order = startup ? member(*startup, "startupPolicyOrder") : std::nullopt;
  auto order_text = order ? string_of(*order) : std::nullopt;
  const bool in_order = order_text && *order_text == "InOrder";
  const JsonPointer root("/metadata/annotations");
  out.push_back({root, std::to_string(in_order ? 1 : count), holds(find_at(jobset, root), key)});
  if (!create) return out;
  std::size_t i = 0;
  for (JsonElement job : jobs) {
    JsonPointer annotations("/spec/replicatedJobs");
    annotations /= i++;
    annotations /= "template";
    annotations /= "metadata";
    annotations /= "annotations";
    std::int64_t parallelism = 1;
    auto template_spec = find_at(job, JsonPointer("/template/spec/parallelism"));
    if (template_spec && template_spec->is_int64()) parallelism = template_spec->get_int64().value();
    if (parallelism < 1) continue;  // a replicatedJob of no pod: KAI's value would be refused (>= 1)
    out.push_back({annotations, std::to_string(parallelism), holds(find_at(jobset, annotations), key)});
  }
  return out;
}

}  // namespace karta
