#pragma once

// The mutating decision as a pure function: an object and its definition in, a JSON Patch out.

#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "definitions/compiled_definition.h"
#include "mutate/json_patch.h"
#include "policy/policy.h"

namespace karta {

using json = nlohmann::json;

// Who the workload is, for placeholders and for rules that depend on the operation.
struct WorkloadContext {
  std::string namespace_name;  // request.namespace
  std::string operation = "CREATE";
  // On UPDATE, the object as stored (request.oldObject): a pod template the request leaves as it was is
  // not patched. A Job's template is immutable, so patching an unchanged one would make the API server
  // refuse every later update of the Job (a label, Kueue's suspend, a finalizer).
  std::optional<JsonElement> old_object;
  // The namespace's labels, when known: scheduling.queue.namespaceLabel reads the queue there.
  const std::map<std::string, std::string>* namespace_labels = nullptr;
  // Who the policy is, for warnings: "tenant research", or "the global policy".
  std::string tenant = "the global policy";
};

// Provenance (README, "What the webhook wrote"): the annotation on the workload that lists the labels of
// the workload itself that the webhook wrote (its queue, priorityClassName and preemptibility labels),
// sorted and comma-separated, each "label:KEY" ("label:kai.scheduler/queue,label:priorityClassName";
// other prefixes are reserved and ignored). A value listed there follows the policy on a later admission
// (replaced when the policy's value changed); a value not listed is the user's and stays. Listing a key
// only lets the webhook write the policy's own value there, so a forged entry takes nothing over. Only the
// first kMaxWrittenEntries entries of the first kMaxWrittenText characters are read.
inline constexpr const char* kWrittenAnnotation = "karta.run.ai/written";
inline constexpr std::size_t kMaxWrittenText = 4096;
inline constexpr std::size_t kMaxWrittenEntries = 64;
// The entries of an annotation's value, bounded as above.
std::set<std::string> written_entries(std::string_view annotation);

struct MutationOutcome {
  JsonPatch patch;                    // RFC 6902 operations; empty when the object already conforms
  std::size_t templates = 0;          // pod templates located in the object
  double total_gpus = 0;              // GPUs of the whole workload
  std::vector<std::string> notes;     // odd shapes and evaluation errors: logged, never a denial
  std::vector<std::string> warnings;  // for the user: a policy value skipped on this object
};

// Applies the policy to the workload and every pod template the definition locates in `object`:
// labels and annotations (placeholders filled per template), scheduler name, queue (the workload's own,
// else the namespace's, else the default), GPU hints on the templates that request GPUs, the workload's
// GPU total, its gang minimum (gang.kinds only), and its priority and topology (on the workload only). An object with no pod
// template, of a kind whose definition names a workload-wide pod-label map (workloadPodLabelsPath), gets
// the labels that are the same on every pod there instead. Idempotent: the patched
// object, mutated again, gives an empty patch. On UPDATE with the old object, only the pod templates the
// request changes are patched; the workload's own labels and annotations are patched as on CREATE (they
// are mutable in every kind).
MutationOutcome mutate_workload(JsonElement object, const CompiledDefinition& definition, const Policy& policy,
                                const WorkloadContext& context = {});
// The same for an object held as nlohmann::json (offline commands and tests).
MutationOutcome mutate_workload(const json& object, const CompiledDefinition& definition, const Policy& policy,
                                const WorkloadContext& context = {});

}  // namespace karta
