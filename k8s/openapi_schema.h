#pragma once

// Checking a custom object against its CRD's structural OpenAPI v3 schema as the API server does
// before storing it (apiextensions-apiserver): validation, defaulting and pruning, for the subset of the
// schema language CRDs use. Used on definitions (Karta, ResourceInterface) with the schemas of
// definitions/api/published_api.h, so that a definition the API server would refuse, default or prune is
// known before it is used; not meant for objects on the admission path.
//
// What is checked, at each place of the object, against the schema of that place:
// - `type` (object, array, string, integer: a number without a fraction, number, boolean); a null value
//   is accepted only where `nullable: true` (or where the schema names no type), else "must be a string,
//   not null" (the API server removes or defaults such a null before it validates: apply_schema_defaults
//   first does the same). `x-kubernetes-int-or-string` accepts an integer or a string;
// - `enum`, `minLength`/`maxLength` (in characters), `pattern` (ECMAScript regular expressions, searched
//   as Go's MatchString does; a string over 4096 bytes is not searched but reported "too long to check"),
//   `minimum`/`maximum` (with `exclusiveMinimum`/`exclusiveMaximum`), `multipleOf`, `minItems`/`maxItems`,
//   `minProperties`/`maxProperties`, `required` ("is required"); `format` is not checked;
// - `allOf`, `anyOf`, `oneOf` and `not`, as value validations (their unknown fields are not looked at:
//   a structural schema declares every field in `properties`);
// - `x-kubernetes-list-type: set`: equal entries are "duplicate entry: the same as [I]";
//   `x-kubernetes-list-type: map`: entries with the same `x-kubernetes-list-map-keys` are "duplicate
//   entry: name "a" is already at [I]". When the keys are not given (the API server refuses such a CRD;
//   kubebuilder always writes them), the item schema's required field is taken as the key if there is
//   exactly one, and nothing is checked otherwise. An entry lacking a key field is not compared;
// - `x-kubernetes-validations`: rules made of `has(self.FIELD)` and `!has(self.FIELD)` terms joined by
//   `||` and `&&`, with parentheses; a failing rule reports its `message` (or "failed rule: RULE") at
//   the place (below it, for a `fieldPath` of `.a.b` form). Any other rule is "rule not supported:
//   RULE", never passed silently;
// - unknown fields: exactly those the API server would prune (see prune_unknown_fields) are reported,
//   "unknown field" or "unknown field; did you mean "x"?" for a near miss (as the definition parser of
//   definitions/karta_definition.cpp suggests).
// At the root of the object, and of an `x-kubernetes-embedded-resource`, `apiVersion`, `kind` and
// `metadata` are always known; `metadata` must be an object, its contents are the API server's business
// (ObjectMeta) and are not looked at. An embedded resource requires `apiVersion` and `kind`.
//
// Fields are named as DefinitionFault names them (definitions/karta_definition.h): dotted from the root
// without a leading dot, list entries as `[N]`, keys that are not identifiers as `["key"]`:
// `spec.structureDefinition.childComponents[0].name`, `metadata.annotations["x/y"]`; the root itself is
// "". Every violation is reported, in a fixed order: at each place its own violations (type, which
// stops the rest; value limits; duplicates; required fields in the schema's order; allOf...; rules),
// then those of its entries in order or its fields in key order (nlohmann::json's sorted order).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace karta {

using json = nlohmann::json;

struct SchemaViolation {
  std::string field;    // "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"
  std::string message;  // "must be a string, not boolean"
  std::string to_string() const { return field + ": " + message; }
  bool operator==(const SchemaViolation&) const = default;
};

// Validates `object`, a whole custom object, against a CRD version's openAPIV3Schema the way the API
// server would before storing it (with strict field validation: unknown fields are violations).
std::vector<SchemaViolation> validate_against_schema(const json& schema, const json& object);

// Structural defaulting, as the API server makes it on every write and read, after pruning unknown
// fields and before validating (apiextensions-apiserver's PruneNonNullableNullsWithoutDefaults, then
// Default): a null where the schema is not `nullable` is removed when the place has no `default`, and
// replaced by the default when it has one (a field, a map value or a list entry alike); then the
// `default` of every absent field whose parent object exists is filled in. Defaults are filled in before
// the fields below them are visited, so a default's own fields are defaulted too. Root and
// embedded-resource `metadata` are not defaulted. A null where the schema names no field is left for
// validation to report.
void apply_schema_defaults(const json& schema, json& object);

// Removes the fields the schema does not know, as the API server does (pruning), and returns their
// names in the field syntax above, in document order (entries in order, fields in key order).
// `x-kubernetes-preserve-unknown-fields: true` keeps the unknown fields of its place and of the entries
// of its lists; the fields the schema does declare below it are pruned by their own schemas.
// `additionalProperties` schemas the values of a map. Root and embedded-resource `apiVersion`, `kind` and
// `metadata` are kept and not looked into.
std::vector<std::string> prune_unknown_fields(const json& schema, json& object);

// Evaluates one `x-kubernetes-validations` rule on `self` (see above for the rules understood): nullopt
// when the rule is not understood. `has(self.f)` holds when `self` is an object with a non-null `f`.
std::optional<bool> evaluate_validation_rule(std::string_view rule, const json& self);

}  // namespace karta
