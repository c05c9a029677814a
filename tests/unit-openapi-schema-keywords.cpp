// Schema validation, pruning and rules (k8s/openapi_schema.h) on small schemas: what the Karta CRDs do not use.

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "json/documents.h"
#include "k8s/openapi_schema.h"
#include "support/schema_violations.h"
#include "support/test_support.h"

namespace unit_openapi_schema_keywords {  // this file's names, apart from other tests' in a unity build

using karta::evaluate_validation_rule;
using karta::json;
using karta::prune_unknown_fields;
using karta::validate_against_schema;
using karta::test::Fields;
using karta::test::lines;
using karta::test::Violations;

TEST_CASE("openapi schema: null, nullable, int-or-string, numbers and patterns") {
  json schema = karta::test::yaml(R"(
type: object
properties:
  name: {type: string, pattern: '^[a-z]+$', maxLength: 5}
  note: {type: string, nullable: true}
  size: {x-kubernetes-int-or-string: true}
  count: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true}
  ratio: {type: number, multipleOf: 0.5}
  step: {type: number, multipleOf: 0.1}
  mode: {type: string, enum: [a, b]}
  label: {type: string, maxLength: 3}
)");
  CHECK(validate_against_schema(schema, json{{"name", "abc"},
                                             {"note", nullptr},
                                             {"size", "1Gi"},
                                             {"count", 3.0},
                                             {"ratio", 1.5},
                                             {"step", 0.3},
                                             {"mode", "a"}}) == Violations{});
  CHECK(validate_against_schema(schema, json{{"name", nullptr}, {"size", true}, {"count", 1.5}}) ==
        Violations{
            {"count", "must be an integer, not number"},
            {"name", "must be a string, not null"},
            {"size", "must be an integer or a string, not boolean"},
        });
  CHECK(validate_against_schema(schema, json{{"name", "Abcdef"}, {"count", 10}, {"ratio", 0.3}, {"mode", "c"}}) ==
        Violations{
            {"count", "must be less than 10"},
            {"mode", "must be one of \"a\", \"b\", not \"c\""},
            {"name", "must be at most 5 characters long"},
            {"name", "must match the pattern `^[a-z]+$`"},
            {"ratio", "must be a multiple of 0.5"},
        });
  json long_name = json{{"name", std::string(5000, 'a')}};
  CHECK(validate_against_schema(schema, long_name) ==
        Violations{{"name", "must be at most 5 characters long"},
                   {"name", "too long to check against the pattern `^[a-z]+$` (over 4096 bytes)"}});
  // Characters, not bytes.
  CHECK(validate_against_schema(schema, json{{"label", "\xc3\xa9t\xc3\xa9"}}) == Violations{});
  CHECK(validate_against_schema(schema, json{{"label", "\xc3\xa9t\xc3\xa9s"}}) ==
        Violations{{"label", "must be at most 3 characters long"}});
}

TEST_CASE("openapi schema: preserve-unknown-fields, maps, embedded resources and the root") {
  json schema = karta::test::yaml(R"(
type: object
properties:
  spec:
    type: object
    properties:
      open:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          closed: {type: object, properties: {a: {type: string}}}
      annotations: {type: object, additionalProperties: {type: string}}
      opaque: {type: object}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        properties: {spec: {type: object, properties: {x: {type: string}}}}
)");
  json object = karta::test::yaml(R"(
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, labels: {a: b}, anything: [1, 2]}
spec:
  open: {free: {deep: 1}, closed: {a: x, b: y}}
  annotations: {example.com/x: "1", plain: 2}
  opaque: {gone: true}
  template: {metadata: {whatever: 1}, spec: {x: "1", y: 2}}
extra: 1
)");
  CHECK(validate_against_schema(schema, object) == Violations{
                                                       {"extra", "unknown field"},
                                                       {"spec.annotations.plain", "must be a string, not number"},
                                                       {"spec.opaque.gone", "unknown field"},
                                                       {"spec.open.closed.b", "unknown field; did you mean \"a\"?"},
                                                       {"spec.template.apiVersion", "is required"},
                                                       {"spec.template.kind", "is required"},
                                                       {"spec.template.spec.y", "unknown field; did you mean \"x\"?"},
                                                   });
  json pruned = object;
  CHECK(lines(prune_unknown_fields(schema, pruned)) ==
        lines(Fields{"extra", "spec.opaque.gone", "spec.open.closed.b", "spec.template.spec.y"}));
  CHECK(pruned["spec"]["open"]["free"] == json{{"deep", 1}});
  CHECK(pruned["metadata"] == object["metadata"]);
  CHECK(pruned["spec"]["template"]["metadata"] == json{{"whatever", 1}});

  CHECK(validate_against_schema(schema, json{{"metadata", "x"}}) ==
        Violations{{"metadata", "must be an object, not string"}});
}

TEST_CASE("openapi schema: rules") {
  CHECK(evaluate_validation_rule("has(self.a) || has(self.b)", json{{"b", 1}}) == std::optional<bool>(true));
  CHECK(evaluate_validation_rule("!has(self.a) || has(self.b)", json{{"a", 1}}) == std::optional<bool>(false));
  CHECK(evaluate_validation_rule("has(self.a) && !(has(self.b) || has(self.c))", json{{"a", 1}, {"c", nullptr}}) ==
        std::optional<bool>(true));
  CHECK(evaluate_validation_rule("self.a > 0", json::object()) == std::nullopt);
  CHECK(evaluate_validation_rule("has(self.a) ||", json::object()) == std::nullopt);
  CHECK(evaluate_validation_rule("has(self.a.b)", json::object()) == std::nullopt);
  CHECK(evaluate_validation_rule("hasx(self.a)", json::object()) == std::nullopt);

  json schema = karta::test::yaml(R"(
type: object
properties:
  a: {type: string}
  b: {type: string}
x-kubernetes-validations:
  - rule: has(self.a)
  - rule: '!has(self.b)'
    message: b is not allowed
    fieldPath: .b
  - rule: self.a == self.b
    message: never evaluated
)");
  CHECK(validate_against_schema(schema, json{{"b", "x"}}) == Violations{
                                                                 {"", "failed rule: has(self.a)"},
                                                                 {"b", "b is not allowed"},
                                                                 {"", "rule not supported: self.a == self.b"},
                                                             });
}

}  // namespace unit_openapi_schema_keywords
