#include "definitions/compiled_definition.h"

#include <charconv>

namespace karta {
namespace {

// Rethrows jq's internal `break` (an object with "__jq"): jq 1.6's try would otherwise catch the break
// that limit/2 uses to stop, and report it as an error of the expression.
constexpr const char* kCatch =
    " catch (if (type == \"object\" and has(\"__jq\")) then error(.) else {\"karta.error\": .} end)";

std::string bundle_text(const std::vector<const CompiledExpression*>& members) {
  std::string text = "[";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i != 0) text += ",\n";
    const CompiledExpression& e = *members[i];
    // The newline ends a trailing comment in the user's expression.
    std::string inner = e.mode == ExpressionMode::Path ? "path(" + e.field.expression + "\n)"
                                                        : "(" + e.field.expression + "\n)";
    text += "[limit(" + std::to_string(kMaxExpressionOutputs + 1) + "; try " + inner + kCatch + ")]";
  }
  text += "]";
  return text;
}

JsonPointer pointer_from_jq_path(const json& path) {
  JsonPointer pointer;
  for (const auto& token : path) {
    if (token.is_string()) {
      pointer /= token.get<std::string>();
    } else if (token.is_number_integer() && token.get<std::int64_t>() >= 0) {
      pointer /= static_cast<std::size_t>(token.get<std::int64_t>());
    } else {
      throw std::invalid_argument("path component " + token.dump() + " is neither a key nor an index");
    }
  }
  return pointer;
}

// A component and every component below it, by ownerRef.
void add_with_descendants(const KartaDefinition& d, const std::string& name, std::set<std::string>& into) {
  if (!into.insert(name).second) return;
  for (const auto& child : d.children) {
    if (child.owner_ref == name) add_with_descendants(d, child.name, into);
  }
}

// A pod belongs to a pod group when its component or one of its ancestors is a member (as the published
// StructureSummary resolves it), so a member stands for its whole subtree.
GangPlan gang_plan(const KartaDefinition& d) {
  GangPlan plan;
  const auto& groups = d.gang->pod_groups;
  if (groups.size() != 1) {
    plan.not_computable = std::to_string(groups.size()) + " pod groups: one minimum for the workload cannot describe them";
    return plan;
  }
  const PodGroupDefinition& group = groups.front();
  for (const auto& member : group.members) {
    if (!member.filters.empty() || !member.group_by_key_paths.empty()) {
      plan.not_computable = "pod group \"" + group.name + "\" member \"" + member.component_name + "\" selects pods by " +
                            (member.filters.empty() ? "groupByKeyPaths" : "filters") +
                            ", which are known only once the pods exist";
      return plan;
    }
    add_with_descendants(d, member.component_name, plan.components);
  }
  plan.whole_workload = group.members.empty();
  return plan;
}

}  // namespace

ExpressionId CompiledDefinition::add(const std::optional<JqField>& field, ExpressionMode mode, ExpressionGroup group) {
  if (!field) return kNoExpression;
  CompiledExpression e{*field, mode, group, SimplePath::parse(field->expression), std::nullopt, 0};
  if (!e.simple && mode == ExpressionMode::Value) e.native = NativeExpression::parse(field->expression);
  expressions_.push_back(std::move(e));
  return expressions_.size() - 1;
}

bool CompiledDefinition::prepare_admission() const {
  const JqProgram* program = bundle(ExpressionGroup::Structure);
  return program != nullptr && program->prepare();
}

std::shared_ptr<const CompiledDefinition> CompiledDefinition::compile(KartaDefinition definition,
                                                                      std::size_t concurrency, JqCompilation when) {
  std::shared_ptr<CompiledDefinition> compiled(new CompiledDefinition());
  compiled->definition_ = std::move(definition);
  const KartaDefinition& d = compiled->definition_;
  constexpr auto S = ExpressionGroup::Structure;
  for (const Component* component : d.components()) {
    ComponentPlan plan;
    plan.component = component;
    if (const auto& spec = component->spec) {
      if (spec->pod_template_spec) {
        plan.spec_kind = SpecKind::PodTemplateSpec;
        plan.location = compiled->add(spec->pod_template_spec, ExpressionMode::Path, S);
      } else if (spec->pod_spec) {
        plan.spec_kind = SpecKind::PodSpec;
        plan.location = compiled->add(spec->pod_spec, ExpressionMode::Path, S);
        plan.metadata = compiled->add(spec->metadata, ExpressionMode::Path, S);
      } else if (const auto& f = spec->fragmented) {
        plan.spec_kind = SpecKind::Fragmented;
        plan.labels = compiled->add(f->labels, ExpressionMode::Path, S);
        plan.annotations = compiled->add(f->annotations, ExpressionMode::Path, S);
        plan.scheduler_name = compiled->add(f->scheduler_name, ExpressionMode::Path, S);
        plan.tolerations = compiled->add(f->tolerations, ExpressionMode::Path, S);
        plan.node_selector = compiled->add(f->node_selector, ExpressionMode::Path, S);
        plan.resources = compiled->add(f->resources, ExpressionMode::Path, S);
        plan.containers = compiled->add(f->containers, ExpressionMode::Path, S);
        plan.container = compiled->add(f->container, ExpressionMode::Path, S);
      }
      for (const auto& extra : spec->additional_containers) {
        plan.additional_containers.push_back(compiled->add(extra, ExpressionMode::Path, S));
      }
      plan.gpu_request = compiled->add(spec->gpu_request, ExpressionMode::Path, S);
      plan.instance_id = compiled->add(component->instance_id, ExpressionMode::Value, S);
      if (component->scale) plan.replicas = compiled->add(component->scale->replicas, ExpressionMode::Value, S);
    }
    if (const auto& selector = component->pod_selector) {
      constexpr auto P = ExpressionGroup::Pod;
      if (selector->component_type) plan.pod_type_key = compiled->add(selector->component_type->key_path, ExpressionMode::Value, P);
      plan.pod_instance_id = compiled->add(selector->instance_id_path, ExpressionMode::Value, P);
      plan.pod_replica_key = compiled->add(selector->replica_key_path, ExpressionMode::Value, P);
    }
    compiled->components_.push_back(plan);
  }
  if (const auto& status = d.root.status) {
    constexpr auto T = ExpressionGroup::Status;
    StatusPlan plan;
    plan.status = &*status;
    if (status->conditions) plan.conditions = compiled->add(status->conditions->path, ExpressionMode::Value, T);
    plan.phase = compiled->add(status->phase, ExpressionMode::Value, T);
    for (ResourceStatus phase : kPublishedStatusOrder) {
      auto it = status->mappings.find(phase);
      if (it == status->mappings.end()) continue;
      std::vector<StatusRulePlan> rules;
      for (const auto& rule : it->second) {
        std::optional<JqField> expression;
        if (rule.by_expression) expression = rule.by_expression->expression;
        rules.push_back({&rule, compiled->add(expression, ExpressionMode::Value, T)});
      }
      plan.mappings.emplace_back(phase, std::move(rules));
    }
    compiled->status_ = std::move(plan);
  }
  if (const auto& suspend = d.root.suspend) {
    SuspendPlan plan;
    plan.suspend = &*suspend;
    constexpr auto T = ExpressionGroup::Status;
    for (const auto& action : suspend->suspend_actions) {
      plan.suspend_paths.push_back(compiled->add(action.path, ExpressionMode::Path, T));
    }
    for (const auto& action : suspend->resume_actions) {
      plan.resume_paths.push_back(compiled->add(action.path, ExpressionMode::Path, T));
    }
    compiled->suspend_ = std::move(plan);
  }
  if (d.gang) compiled->gang_ = gang_plan(d);
  compiled->workload_pod_labels_ = compiled->add(d.workload_pod_labels, ExpressionMode::Path, ExpressionGroup::Structure);
  compiled->queue_path_ = compiled->add(d.queue_path, ExpressionMode::Path, ExpressionGroup::Structure);
  compiled->gang_min_member_ = compiled->add(d.gang_min_member, ExpressionMode::Value, ExpressionGroup::Structure);

  for (auto group : {ExpressionGroup::Structure, ExpressionGroup::Status, ExpressionGroup::Pod}) {
    std::vector<const CompiledExpression*> members;
    for (auto& e : compiled->expressions_) {
      if (e.group == group && !e.simple) {
        e.bundle_slot = members.size();
        members.push_back(&e);
      }
    }
    if (members.empty()) continue;
    try {
      compiled->bundles_[static_cast<int>(group)] = std::make_unique<JqProgram>(bundle_text(members), concurrency,
                                                                                std::chrono::milliseconds(5'000), when);
    } catch (const JqCompileError&) {
      // Find the culprit: slower, but only on a broken definition.
      for (const auto* e : members) {
        if (auto error = jq_compile_error(e->field.expression)) {
          throw DefinitionError(d.source + ": " + e->field.field + ": jq expression " + e->field.expression +
                                " does not compile: " + *error);
        }
      }
      throw DefinitionError(d.source + ": the definition's jq expressions do not compile together");
    }
  }
  return compiled;
}

DefinitionEvaluation::DefinitionEvaluation(const CompiledDefinition& definition, JsonElement object)
    : definition_(definition), object_(object), outcomes_(definition.expressions().size()) {}

DefinitionEvaluation::~DefinitionEvaluation() {
  for (std::size_t i = 0; i < in_place_used_; ++i) in_place_[i].outcome.~ExpressionOutcome();
}

ExpressionOutcome& DefinitionEvaluation::keep(ExpressionId id, ExpressionOutcome&& outcome) {
  ExpressionOutcome* kept = in_place_used_ < kOutcomesInPlace
                                ? new (&in_place_[in_place_used_++].outcome) ExpressionOutcome(std::move(outcome))
                                : &more_.emplace_front(std::move(outcome));
  outcomes_[id].outcome = kept;
  return *kept;
}

const ExpressionOutcome& DefinitionEvaluation::outcome(ExpressionId id) {
  const ExpressionOutcome& outcome = places_of(id);
  if (outcomes_[id].values_pending) {
    outcomes_[id].values_pending = false;
    auto& values = outcomes_[id].outcome->values;
    values.reserve(outcome.places.size());
    for (const auto& place : outcome.places) values.push_back(place ? to_json(*place) : json(nullptr));
  }
  return outcome;
}

const ExpressionOutcome& DefinitionEvaluation::places_of(ExpressionId id) {
  if (const ExpressionOutcome* kept = outcomes_.at(id).outcome) return *kept;
  const CompiledExpression& e = definition_.expressions()[id];
  if (e.simple) {
    ExpressionOutcome outcome = fresh_outcome();
    const bool path_mode = e.mode == ExpressionMode::Path;
    outcome.error = e.simple->evaluate_into(object_, kMaxExpressionOutputs, path_mode ? &outcome.pointers : nullptr,
                                            outcome.places, outcome.capped);
    outcomes_[id].values_pending = !path_mode;
    return keep(id, std::move(outcome));
  }
  if (e.native) {
    if (auto values = e.native->evaluate(object_, kMaxExpressionOutputs)) {
      return keep(id, ExpressionOutcome{{}, {}, std::move(*values), std::nullopt, false});
    }
  }
  run_bundle(e.group);
  return *outcomes_[id].outcome;
}

void DefinitionEvaluation::run_bundle(ExpressionGroup group) {
  const JqProgram* program = definition_.bundle(group);
  if (!jq_input_) jq_input_ = std::make_unique<JqInput>(object_);
  JqOutcome run = program->run(*jq_input_, 1);
  const json empty = json::array();
  const json& results = (!run.outputs.empty() && run.outputs[0].is_array()) ? run.outputs[0] : empty;
  const auto& expressions = definition_.expressions();
  for (std::size_t id = 0; id < expressions.size(); ++id) {
    const CompiledExpression& e = expressions[id];
    if (e.group != group || e.simple || outcomes_[id].outcome) continue;  // natives already answered stay
    ExpressionOutcome outcome = fresh_outcome();
    if (run.error) outcome.error = *run.error;
    if (e.bundle_slot < results.size()) {
      const json& outputs = results[e.bundle_slot];
      for (const auto& output : outputs) {
        if (output.is_object() && output.size() == 1 && output.contains("karta.error")) {
          const json& message = output["karta.error"];
          outcome.error = message.is_string() ? message.get<std::string>() : message.dump();
          break;
        }
        if (outcome.pointers.size() + outcome.values.size() >= kMaxExpressionOutputs) {
          outcome.capped = true;
          break;
        }
        if (e.mode == ExpressionMode::Path) {
          try {
            outcome.pointers.push_back(pointer_from_jq_path(output));
          } catch (const std::exception& ex) {
            outcome.error = ex.what();
            break;
          }
        } else {
          outcome.values.push_back(output);
        }
      }
    }
    keep(id, std::move(outcome));
  }
}

}  // namespace karta
