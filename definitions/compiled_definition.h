#pragma once

// A Karta definition made ready to run: every jq expression parsed once into a native SimplePath when
// it is one (or, for a value, a NativeExpression), the rest compiled by libjq into one program per
// expression group, so evaluating a whole definition on an object costs at most one jq run per group,
// and none when every expression it needs is native.

#include <array>
#include <cstddef>
#include <forward_list>
#include <limits>
#include <memory>
#include <memory_resource>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "definitions/jq_program.h"
#include "definitions/karta_definition.h"
#include "definitions/native_expression.h"
#include "definitions/simple_path.h"

namespace karta {

// Karta's own library caps an expression at 1000 outputs; so do we.
constexpr std::size_t kMaxExpressionOutputs = 1000;

using ExpressionId = std::size_t;
constexpr ExpressionId kNoExpression = std::numeric_limits<std::size_t>::max();

enum class ExpressionMode { Path, Value };
// Structure expressions run on every admission; status ones only when a phase is asked for; pod ones
// (podSelector) on pods, not on the workload: an evaluation of a pod asks only for those.
enum class ExpressionGroup { Structure = 0, Status = 1, Pod = 2 };
constexpr std::size_t kExpressionGroups = 3;

struct CompiledExpression {
  JqField field;
  ExpressionMode mode;
  ExpressionGroup group;
  std::optional<SimplePath> simple;        // evaluated natively when set
  std::optional<NativeExpression> native;  // else tried natively first (values only), jq if it gives up
  std::size_t bundle_slot = 0;             // position in its group's jq program when not simple
};

// An outcome's lists come from its evaluation's arena (DefinitionEvaluation), and live as long as it.
struct ExpressionOutcome {
  std::pmr::vector<JsonPointer> pointers;  // Path mode
  // Evaluated natively by a simple path (either mode): what each output reaches (nullopt: nothing), so
  // that callers need not walk the object again. Empty when jq or a NativeExpression answered.
  std::pmr::vector<std::optional<JsonElement>> places;
  // Value mode. Left empty by DefinitionEvaluation::places_of() for a simple path (its places hold the
  // outputs), and filled from them when outcome() is asked for the same expression.
  std::vector<json> values;
  std::optional<std::string> error;          // what ended evaluation early
  bool capped = false;                       // more than kMaxExpressionOutputs outputs
};

enum class SpecKind { None, PodTemplateSpec, PodSpec, Fragmented };

// Where to look, per component, as expression ids.
struct ComponentPlan {
  const Component* component = nullptr;
  SpecKind spec_kind = SpecKind::None;
  ExpressionId location = kNoExpression;  // podTemplateSpecPath or podSpecPath
  ExpressionId metadata = kNoExpression;  // metadataPath
  ExpressionId labels = kNoExpression, annotations = kNoExpression, scheduler_name = kNoExpression,
               tolerations = kNoExpression, node_selector = kNoExpression, resources = kNoExpression,
               containers = kNoExpression, container = kNoExpression;  // fragmented
  std::vector<ExpressionId> additional_containers;
  ExpressionId gpu_request = kNoExpression;  // the gpuRequestPath extension
  ExpressionId instance_id = kNoExpression;
  ExpressionId replicas = kNoExpression;
  // podSelector, each evaluated on a pod (ExpressionGroup::Pod): componentTypeSelector.keyPath,
  // componentInstanceSelector.idPath, replicaSelector.keyPath.
  ExpressionId pod_type_key = kNoExpression, pod_instance_id = kNoExpression, pod_replica_key = kNoExpression;
};

struct StatusRulePlan {
  const StatusRule* rule = nullptr;
  ExpressionId expression = kNoExpression;
};

struct StatusPlan {
  const StatusDefinition* status = nullptr;
  ExpressionId conditions = kNoExpression;
  ExpressionId phase = kNoExpression;
  std::vector<std::pair<ResourceStatus, std::vector<StatusRulePlan>>> mappings;  // in kPublishedStatusOrder
};

// The root's suspendDefinition: each action's path (Path mode, in the Status group: never evaluated on
// admission), in the order the actions are written.
struct SuspendPlan {
  const SuspendDefinition* suspend = nullptr;
  std::vector<ExpressionId> suspend_paths, resume_paths;
};

// Which pod templates the gang's minimum member count sums, decided once at load (docs/definitions.md,
// "Gang scheduling"): the components a pod group names and their descendants, or every template.
struct GangPlan {
  bool whole_workload = false;
  std::set<std::string> components;
  // Set when no exact figure can be known at admission (several pod groups, members that select pods by
  // filters or groupByKeyPaths): the annotation is then not written, and this says why.
  std::optional<std::string> not_computable;
};

class DefinitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CompiledDefinition {
 public:
  // Compiles every expression; `concurrency` is how many threads may evaluate at once. Throws
  // DefinitionError naming the field whose expression does not compile. With JqCompilation::OnFirstUse
  // (the built-in catalog only: a test compiles its every program) the jq programs are compiled later, by
  // prepare_admission() or on first use, and a fault of the jq would show only there.
  static std::shared_ptr<const CompiledDefinition> compile(KartaDefinition definition, std::size_t concurrency,
                                                           JqCompilation when = JqCompilation::Now);

  // Compiles one more jq state of the program admission runs (the structure group), when it has fewer
  // than one per CPU; false when there is nothing left to compile. For a thread off the admission path.
  bool prepare_admission() const;

  const KartaDefinition& definition() const { return definition_; }
  const GroupVersionKind& root_kind() const { return definition_.root_kind(); }
  const std::vector<ComponentPlan>& components() const { return components_; }
  const std::optional<StatusPlan>& status() const { return status_; }
  const std::optional<SuspendPlan>& suspend() const { return suspend_; }
  const std::optional<GangPlan>& gang() const { return gang_; }
  // The definition's workload_pod_labels path (Path mode, Structure group), or kNoExpression.
  ExpressionId workload_pod_labels() const { return workload_pod_labels_; }
  // The definition's queuePath (Path mode) and gangMinMemberPath (Value mode), Structure group, or
  // kNoExpression.
  ExpressionId queue_path() const { return queue_path_; }
  ExpressionId gang_min_member() const { return gang_min_member_; }
  const std::vector<CompiledExpression>& expressions() const { return expressions_; }
  const JqProgram* bundle(ExpressionGroup group) const { return bundles_[static_cast<int>(group)].get(); }

 private:
  CompiledDefinition() = default;
  ExpressionId add(const std::optional<JqField>& field, ExpressionMode mode, ExpressionGroup group);

  KartaDefinition definition_;
  std::vector<CompiledExpression> expressions_;
  std::vector<ComponentPlan> components_;
  std::optional<StatusPlan> status_;
  std::optional<SuspendPlan> suspend_;
  std::optional<GangPlan> gang_;
  ExpressionId workload_pod_labels_ = kNoExpression;
  ExpressionId queue_path_ = kNoExpression;
  ExpressionId gang_min_member_ = kNoExpression;
  std::array<std::unique_ptr<JqProgram>, kExpressionGroups> bundles_;
};

// The results of one definition's expressions on one object, computed on first use and kept. Belongs to
// the thread handling the object.
class DefinitionEvaluation {
 public:
  DefinitionEvaluation(const CompiledDefinition& definition, JsonElement object);
  ~DefinitionEvaluation();

  const ExpressionOutcome& outcome(ExpressionId id);
  // The same, except that a simple path's Value-mode outputs are left as `places` (what each reaches in
  // the object) and not converted into `values`: for a reader that takes what it needs from the object
  // (the locator's instance ids). Where places is empty, values holds the outputs as outcome() gives them.
  const ExpressionOutcome& places_of(ExpressionId id);
  JsonElement object() const { return object_; }
  const CompiledDefinition& definition() const { return definition_; }

 private:
  void run_bundle(ExpressionGroup group);

  // `outcome` kept where slots point, and the slot of `id` pointed at it.
  ExpressionOutcome& keep(ExpressionId id, ExpressionOutcome&& outcome);

  // An empty outcome whose lists allocate from arena_.
  ExpressionOutcome fresh_outcome() {
    return ExpressionOutcome{std::pmr::vector<JsonPointer>(&arena_),
                             std::pmr::vector<std::optional<JsonElement>>(&arena_), {}, std::nullopt, false};
  }

  const CompiledDefinition& definition_;
  JsonElement object_;
  // Where the outcomes' pointers and places are kept: a buffer in this object first (the demo JobSet's
  // evaluation needs some 1.2 KB), then blocks from the heap, all let go at once with the evaluation. A
  // simple path's two lists were two of an admission's allocations, and its instance ids a third. Declared
  // before the outcomes, so it outlives them.
  static constexpr std::size_t kArenaInPlace = 2048;
  alignas(std::max_align_t) std::array<std::byte, kArenaInPlace> arena_buffer_;
  std::pmr::monotonic_buffer_resource arena_{arena_buffer_.data(), arena_buffer_.size()};
  struct Slot {
    ExpressionOutcome* outcome = nullptr;  // not evaluated yet: null
    bool values_pending = false;           // a simple path's Value-mode outcome whose values are not filled yet
  };
  // By id. A slot points at its outcome, so that making the slots (a definition has some twenty
  // expressions, an admission evaluates three or four) writes a few bytes each: slots holding outcomes
  // were cleared 136 bytes each, 2% of the demo JobSet's admission (bench/README.md, issue 24).
  boost::container::small_vector<Slot, 32> outcomes_;
  // The outcomes: the first few in place, the rest in a list (neither moves what it holds).
  static constexpr std::size_t kOutcomesInPlace = 6;
  union OutcomeStorage {
    OutcomeStorage() {}
    ~OutcomeStorage() {}
    ExpressionOutcome outcome;
  };
  std::array<OutcomeStorage, kOutcomesInPlace> in_place_;
  std::size_t in_place_used_ = 0;
  std::forward_list<ExpressionOutcome> more_;
  std::unique_ptr<JqInput> jq_input_;
};

}  // namespace karta
