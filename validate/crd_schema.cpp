// Reading a definition's jq expression against a CRD's schema (crd_schema.h says how expressions are read
// and what is reported): the Checker (crd_schema_checker.h) walks the schema (crd_schema_walk.cpp) as it
// reads the expression (crd_schema_reading.cpp); here, the shape of the place an expression ends at, and
// the entry point. Loading CRDs (crd_schema_set.cpp) and reading schema nodes (crd_schema_nodes.cpp) are
// apart.

#include "validate/crd_schema.h"

#include "validate/crd_schema_checker.h"
#include "validate/crd_schema_nodes.h"

namespace karta {
namespace crd_schema_checking {

using crd_schema_nodes::describe;
using crd_schema_nodes::flag;
using crd_schema_nodes::is_opaque_object;
using crd_schema_nodes::is_pod_spec;
using crd_schema_nodes::is_pod_template;
using crd_schema_nodes::is_scalar;
using crd_schema_nodes::map_values;
using crd_schema_nodes::member;
using crd_schema_nodes::property;
using crd_schema_nodes::type_of;

void Checker::check_shape(const Place& place, ExpectedShape expected, std::string_view field_name) {
  if (expected == ExpectedShape::Any) return;
  const json& node = *place.node;
  const std::string field(field_name);
  const std::string here = "`" + render(place.steps) + "`";
  const std::string type = type_of(node);
  const bool scalar_or_list = is_scalar(type) || type == "array";
  auto not_verified = [&](const std::string& what) {
    add(false, here + " is not verified as " + what + ": " + kind_ + "'s schema does not describe its fields");
  };
  switch (expected) {
    case ExpectedShape::PodTemplateSpec: {
      const std::string needs = ", but " + field + " needs a PodTemplateSpec (`{metadata, spec}`)";
      if (is_pod_template(node)) {
        if (crd_schema_nodes::keeps_metadata_labels(node)) return;
        return add(true, here + " is a PodTemplateSpec whose schema declares no `metadata.labels`: the API server "
                               "would prune the labels and annotations " + field + " gives its pods (a structural "
                               "schema keeps declared fields only); use podSpecPath `" +
                               render(plus(place.steps, SimplePath::Field{"spec"})) +
                               "` with a metadataPath the schema declares");
      }
      if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
      if (is_pod_spec(node)) return add(true, here + " is a PodSpec" + needs);
      const json* spec = property(node, "spec");
      if (is_opaque_object(node) || (spec != nullptr && is_opaque_object(*spec)))
        return not_verified("a PodTemplateSpec");
      return add(true, here + " is an object without `spec.containers`" + needs);
    }
    case ExpectedShape::PodSpec: {
      const std::string needs = ", but " + field + " needs a PodSpec";
      if (is_pod_spec(node)) return;
      if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
      if (is_pod_template(node))
        return add(true, here + " is a PodTemplateSpec" + needs + "; did you mean `" +
                             render(plus(place.steps, SimplePath::Field{"spec"})) + "`?");
      if (is_opaque_object(node)) return not_verified("a PodSpec");
      return add(true, here + " is an object without `containers`" + needs);
    }
    case ExpectedShape::ObjectWithLabels:
      if (scalar_or_list)
        return add(true, here + " is " + describe(type) + ", but " + field +
                             " needs an object with `labels` and `annotations`");
      // A structural schema keeps declared fields only: labels written where none is declared are pruned.
      if (type == "object" && !flag(node, "x-kubernetes-preserve-unknown-fields") &&
          property(node, "labels") == nullptr) {
        return add(true, here + " is an object whose schema declares no `labels`: the API server would prune the "
                               "labels and annotations " + field + " gives its pods (a structural schema keeps "
                               "declared fields only); name an object whose schema declares `labels`");
      }
      return;
    case ExpectedShape::StringMap: {
      const std::string needs = ", but " + field + " needs a map of strings";
      if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
      if (const json* values = map_values(node)) {
        const std::string value_type = type_of(*values);
        if (value_type == "string" || value_type.empty()) return;
        return add(true, here + " is a map of " + (value_type == "integer" ? "integers" : value_type + "s") + needs);
      }
      if (member(node, "additionalProperties") != nullptr || is_opaque_object(node))
        return not_verified("a map of strings");
      return add(true, here + " is an object with fields of its own" + needs);
    }
    case ExpectedShape::Integer:
      if (type == "integer" || type == "number" || type == "int-or-string" || type.empty()) return;
      return add(true, here + " is " + describe(type) + ", but " + field + " needs an integer");
    case ExpectedShape::String:
      if (type == "string" || type == "int-or-string" || type.empty()) return;
      return add(!is_scalar(type), here + " is " + describe(type) + ", but " + field + " needs a string");
    case ExpectedShape::ResourceRequirements: {
      const std::string needs = ", but " + field + " needs a ResourceRequirements (`{limits, requests}`)";
      if (scalar_or_list) return add(true, here + " is " + describe(type) + needs);
      if (property(node, "limits") != nullptr || property(node, "requests") != nullptr) return;
      if (is_opaque_object(node)) return not_verified("a ResourceRequirements");
      return add(true, here + " is an object without `limits` or `requests`" + needs);
    }
    case ExpectedShape::List:
      if (type == "array" || type.empty()) return;
      return add(true, here + " is " + describe(type) + ", but " + field + " needs a list");
    case ExpectedShape::Object:
      if (!scalar_or_list) return;
      return add(true, here + " is " + describe(type) + ", but " + field + " needs an object");
    case ExpectedShape::Any:
      return;
  }
}

}  // namespace crd_schema_checking

namespace {

using crd_schema_checking::Checker;
using crd_schema_checking::Place;
using crd_schema_checking::State;
using crd_schema_checking::View;

std::string_view default_field(ExpectedShape expected) {
  switch (expected) {
    case ExpectedShape::PodTemplateSpec:
      return "podTemplateSpecPath";
    case ExpectedShape::PodSpec:
      return "podSpecPath";
    case ExpectedShape::ObjectWithLabels:
      return "metadataPath";
    case ExpectedShape::StringMap:
      return "labelsPath";
    case ExpectedShape::Integer:
      return "replicasPath";
    case ExpectedShape::String:
      return "instanceIdPath";
    case ExpectedShape::ResourceRequirements:
      return "resourcesPath";
    case ExpectedShape::List:
      return "containersPath";
    case ExpectedShape::Object:
    case ExpectedShape::Any:
      break;
  }
  return "this path";
}

}  // namespace

std::vector<SchemaFinding> check_path_against_schema(const CrdSchema& crd, std::string_view expression,
                                                     ExpectedShape expected, std::string_view field) {
  const std::string_view field_name = field.empty() ? default_field(expected) : field;
  if (!crd.schema.is_object())
    return {{false, "not checked against the schema: " + crd.kind.kind +
                        "'s CustomResourceDefinition has no schema for " + crd.kind.api_version()}};
  JqTokens tokens = tokenize_jq(expression);
  if (tokens.error) return {{false, "not checked against the schema: it does not parse: " + *tokens.error}};
  if (tokens.tokens.empty()) return {{false, "not checked against the schema: the expression is empty"}};
  Checker checker(crd, expression);
  View view(tokens.tokens);
  Place end = checker.pipeline(view, 0, tokens.tokens.size(), checker.root());
  if (end.state == State::Known) {
    checker.check_shape(end, expected, field_name);
  } else if (end.state == State::Computed && expected != ExpectedShape::Any && expected != ExpectedShape::Integer &&
             expected != ExpectedShape::String) {
    checker.add(false, "not checked against the schema: `" + checker.snippet(view, 0, tokens.tokens.size()) +
                           "` computes a value instead of naming a place, so its shape is unknown");
  }
  return checker.take();
}

}  // namespace karta
