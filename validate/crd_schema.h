#pragma once

// Checking a definition's jq paths against the OpenAPI v3 schema of a CustomResourceDefinition: every
// field a path names must exist at that place of the schema, and the place a path leads to must have the
// shape its definition field needs (a PodTemplateSpec for podTemplateSpecPath, an integer for
// replicasPath, ...).
//
// How an expression is read:
// - a simple path (`.a.b`, `."a-b"`, `.["a"]`, `[N]`, `[]`, each optionally followed by `?`) is walked
//   through the schema: `.field` goes to `properties.field`, or to `additionalProperties` (a map); `[]`
//   goes to `items` (a list) or `additionalProperties` (a map); `[N]` goes to `items`. `allOf`, `anyOf`
//   and `oneOf` are merged. The root `metadata` (and that of an `x-kubernetes-embedded-resource`) is
//   ObjectMeta even where the CRD only says `type: object`;
// - any other expression is read best effort: its stages (`A | B | C`) are walked one after the other,
//   `SIMPLE // default` is checked as SIMPLE, `X as $v` and `select(...)` pass their input on, and the
//   relative paths found inside the rest (operands, parentheses, `if`, object values, interpolations,
//   arguments of builtins that read the same input, and of `map`, `sort_by`, `any`, ... which read the
//   elements) are checked at the place they read from;
// - below `x-kubernetes-preserve-unknown-fields` (or an object whose schema lists no fields) nothing can
//   be verified: that is a warning "... is not verified below `<place>` ...";
// - a relative path read from a computed value (the output of `keys`, `with_entries`, `catch`, ...) is a
//   warning starting with "not checked against the schema: ".
// The shape is checked only where the whole expression ends at a place of the schema.
//
// Messages name the root kind and the place in jq syntax, in backquotes:
//   "`.spec.replicatedJob` is not in JobSet's schema at `.spec`; did you mean `replicatedJobs`?"
//   "`.spec.workerGroupSpecs` is not in RayJob's schema at `.spec`; `workerGroupSpecs` exists at
//    `.spec.rayClusterSpec.workerGroupSpecs`"
//   "`.spec.template.spec` is a PodSpec, but podTemplateSpecPath needs a PodTemplateSpec (`{metadata, spec}`)"
//   "`.spec.template` is a PodTemplateSpec, but podSpecPath needs a PodSpec; did you mean `.spec.template.spec`?"
//   "`.spec.name` is a string, but replicasPath needs an integer"

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/group_version_kind.h"
#include "validate/crd_schema_set.h"  // CrdSchema, CrdSchemaSet

namespace karta {

using json = nlohmann::json;

// What the place a path leads to must be.
enum class ExpectedShape {
  Any,
  PodTemplateSpec,   // {metadata, spec: {containers, ...}}
  PodSpec,           // {containers, ...}
  ObjectWithLabels,  // holds labels and annotations maps (ObjectMeta, KServe's predictor); any object will do
  StringMap,         // an object whose additionalProperties are strings
  Integer,           // integer, number or x-kubernetes-int-or-string
  String,
  ResourceRequirements,  // {limits, requests}
  List,
  Object,
};

struct SchemaFinding {
  bool fault;  // false: a warning
  std::string message;
};

// What a path the webhook writes to must reach: a string (queuePath: the queue) or a map of strings
// (workloadPodLabelsPath: the labels the kind's operator copies onto its pods).
enum class WrittenShape { String, StringMap };

// Checks a path of a definition that /mutate writes to (`field` names it in messages: "queuePath")
// against the schema of its root kind, beyond what check_path_against_schema says of it: the path must be
// plain (fields, `[N]`, `[]`), every place on its way described by the schema, and it must reach a field
// of the shape given outside the object's metadata (and apiVersion and kind), outside any pod template or
// pod spec, through no field a PodSpec or a Container has (`name` aside: image, command, env,
// securityContext, volumes, ...), and, for a string, outside any object that holds a container's fields
// (an image with a command, args or env). Otherwise the webhook could write a workload's queue into what
// its pods run. Faults only, the first one met; nothing for a field the schema lacks (that is
// check_path_against_schema's to say).
std::vector<SchemaFinding> check_write_path(const CrdSchema& crd, std::string_view expression, WrittenShape shape,
                                            std::string_view field);

// Checks one jq expression of a definition against the schema of its root kind. `field` names the
// definition field in messages ("replicasPath"); when empty, the usual field for `expected` is named
// (podTemplateSpecPath, podSpecPath, metadataPath, labelsPath, replicasPath, instanceIdPath,
// resourcesPath, containersPath). Findings are in the order found, without duplicates.
std::vector<SchemaFinding> check_path_against_schema(const CrdSchema& crd, std::string_view expression,
                                                     ExpectedShape expected, std::string_view field = {});

}  // namespace karta
