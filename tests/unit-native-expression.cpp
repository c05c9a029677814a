#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "definitions/compiled_definition.h"
#include "definitions/jq_program.h"
#include "definitions/native_expression.h"
#include "support/test_support.h"

namespace unit_native_expression {  // this file's names, apart from other tests' in a unity build

using karta::json;
using karta::JsonDocument;
using karta::NativeExpression;
namespace test = karta::test;

namespace {

std::optional<std::vector<json>> native(const std::string& expression, const std::string& document) {
  auto parsed = NativeExpression::parse(expression);
  REQUIRE_MESSAGE(parsed.has_value(), expression);
  auto doc = JsonDocument::parse(document);
  return parsed->evaluate(doc.root(), 1000);
}

std::vector<json> jq(const std::string& expression, const std::string& document) {
  karta::JqProgram program(expression, 1);
  auto doc = JsonDocument::parse(document);
  karta::JqInput input(doc.root());
  auto outcome = program.run(input, 1000);
  REQUIRE_FALSE(outcome.error.has_value());
  return outcome.outputs;
}

const char* const kJobSetReplicas =
    ".spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)";
// The built-in Knative Service's revision: its annotations are strings.
const char* const kKnativeReplicas =
    "[(.spec.template.metadata.annotations[\"autoscaling.knative.dev/min-scale\"] // "
    ".spec.template.metadata.annotations[\"autoscaling.knative.dev/minScale\"] // \"1\" | tonumber), 1] | max";
// The built-in RayCluster's workers.
const char* const kRayReplicas =
    ".spec.workerGroupSpecs[]? | ([.replicas // 0, .minReplicas // 0 | tonumber] | max | tonumber) * "
    "(.numOfHosts // 1 | tonumber)";

}  // namespace

TEST_CASE("the native grammar takes paths, pipes, commas, //, arithmetic, parentheses, numbers, strings, tonumber and reduced lists only") {
  for (const char* text : {".spec.replicas // 1", kJobSetReplicas, kRayReplicas, kKnativeReplicas, ".a - 1 + .b * 2",
                           "(.a)", ".a[]?.b // 0", "1.5", ".", ".a | . * 2", ".a//.b//3", ".a, .b", "[.a, .b] | max",
                           "[.a[]] | min", "[.a[] | .b] | add", ".x | [.a, 1] | max | . * 2", "([.a] | max), 1",
                           "\"1\"", ".a // \"x y\"", "\"\"", "\"2\" | tonumber", "\"a-b_c/d.e:f ~!\""}) {
    CAPTURE(text);
    CHECK(NativeExpression::parse(text).has_value());
  }
  // A list is native only as the whole of what `| max`, `| min` or `| add` reduces (no list is a value
  // here): `[.a] * 2` would reduce nothing, `.a, [.b] | max` reduces `.a, [.b]`.
  for (const char* text : {"if .a then 1 else 2 end", ".spec.mpiReplicaSpecs | keys[]", "$x", "[.a]", "[]", "[] | max",
                           "[.a] | length", "[.a] | max_by(.b)", "[.a] | maximum", "[.a] * 2", "[.a] // 1",
                           ".a, [.b] | max", ".a | [.b]", "[.a] | max(1)", "max", "[.a] | . | max",
                           // jq reads these as `[.a] | (max, 1)` and `[.a] | (max // 0)`: not a list reduced
                           "[.a] | max, 1", "[.a] | max // 0", "[.a] | max * 2", "([.a] | max, 1)",
                           // escapes and interpolation are jq's; a string is no path's start
                           "\"a\\nb\"", "\"\\(.a)\"", "\"\xc3\xa9\"", "\"a\x8f" "b\"", "\"\x7f\"", "\"a\\\"b\"", "\"open", "\"a\".b", "\"a\"[0]", "\"tab\there\"",
                           ".a?", "1e3", ".a |= 1", ".a //= 1", "-1", ".a / 2", ".a == 1",
                           "tonumbers", "(.a", ".a)", "1.", ".a # comment", "..", ".a[] as $x | $x", "length"}) {
    CAPTURE(text);
    CHECK_FALSE(NativeExpression::parse(text).has_value());
  }
}

TEST_CASE("native evaluation gives jq's outputs, numbers written as jq_program writes them") {
  const std::string demo = R"({"spec":{"replicatedJobs":[
      {"name":"leader","replicas":1,"template":{"spec":{"parallelism":1}}},
      {"name":"worker","replicas":2,"template":{"spec":{"parallelism":4}}},
      {"name":"cpu","template":{"spec":{}}},
      {"name":"half","replicas":3,"template":{"spec":{"parallelism":0.5}}}]}})";
  CHECK(native(kJobSetReplicas, demo) == std::vector<json>{1, 8, 1, 1.5});
  CHECK(native(kJobSetReplicas, demo) == jq(kJobSetReplicas, demo));
  for (const char* expression : {".spec.replicas // 1", ".spec.replicatedJobs[1].replicas - 1 + 10",
                                 ".spec.replicatedJobs[].name // \"x\"", ".spec.replicatedJobs[]?.replicas // 0",
                                 ".spec.missing[]? // 7", ".spec.replicatedJobs[0]", ".spec.replicatedJobs[9] // false"}) {
    auto parsed = NativeExpression::parse(expression);
    if (!parsed) continue;  // a string literal: not in the grammar
    CAPTURE(expression);
    auto doc = JsonDocument::parse(demo);
    auto outputs = parsed->evaluate(doc.root(), 1000);
    REQUIRE(outputs.has_value());
    CHECK(*outputs == jq(expression, demo));
  }
  // false and null are not values for //; 0 and "" are.
  CHECK(native(".a // 5", R"({"a":false})") == std::vector<json>{5});
  CHECK(native(".a // 5", R"({"a":null})") == std::vector<json>{5});
  CHECK(native(".a // 5", R"({"a":0})") == std::vector<json>{0});
  CHECK(native(".a[] // 5", R"({"a":[null,2,false,3]})") == std::vector<json>{2, 3});
  CHECK(native(".a[] // 5", R"({"a":[null,false]})") == std::vector<json>{5});
  CHECK(native(".a // 5", R"({"a":0})") == jq(".a // 5", R"({"a":0})"));
}

TEST_CASE("expressions of one value each (evaluated without streams) give jq's value, and give up where jq errs") {
  const std::string document = R"({"a":{"b":3,"c":null,"d":false,"e":[5,6]},"f":"text","g":2.5})";
  for (const char* expression : {".a.b", ".a | .b", ". | .a.b", ".a.c // .g", ".a.d // 7", "(.a.c // .a.b) * (.x // 2)",
                                 ".a.e[1] // 0 | tonumber", ".a.e[9] // .a.e[0]", "1 + 2 * 3", ".g - 1 - .a.b",
                                 ".a.b | tonumber | . * 2", "(.a | .b) + (.a.e | .[0])"}) {
    CAPTURE(expression);
    auto outputs = native(expression, document);
    REQUIRE(outputs.has_value());
    CHECK(outputs->size() == 1);
    CHECK(*outputs == jq(expression, document));
  }
  // jq would error, or give what the native grammar does not imitate: given up, as with streams.
  for (const char* expression : {".f.b", ".f | tonumber", ".a.c + 1", ".f * 2", ".a.b.c // 1", ".a.e.x", ".g[0]"}) {
    CAPTURE(expression);
    CHECK_FALSE(native(expression, document).has_value());
  }
}

TEST_CASE("commas and lists reduced by max, min and add give jq's outputs") {
  const std::string ray = R"({"spec":{"workerGroupSpecs":[
      {"groupName":"a","replicas":2,"minReplicas":1},
      {"groupName":"b","minReplicas":3,"numOfHosts":2},
      {"groupName":"c"},
      {"groupName":"d","replicas":1.5,"minReplicas":1.5,"numOfHosts":4}]}})";
  CHECK(native(kRayReplicas, ray) == std::vector<json>{2, 6, 0, 6});
  CHECK(*native(kRayReplicas, ray) == jq(kRayReplicas, ray));
  CHECK(native(kRayReplicas, R"({"spec":{}})") == std::vector<json>{});  // `[]?` over nothing: no output
  const std::string document = R"({"a":[3,1,2,1.5],"b":[],"c":{"x":4,"y":-2},"d":7,"e":0.25})";
  for (const char* expression : {"[.a[]] | max", "[.a[]] | min", "[.a[]] | add", "[.b[]] | max", "[.b[]] | min",
                                 "[.b[]] | add", "[.c[]] | max", "[.c[]] | add", "[.d, .e, .a[0]] | max",
                                 "[.a[] | . * 2] | add", ".d, .e", ".a[], .d", "([.a[]] | max) * 2, .e // 1",
                                 "[.d, .missing // 0] | min", "[.a[]] | add | . + 1", "[([.a[]] | max), .d] | min"}) {
    CAPTURE(expression);
    auto outputs = native(expression, document);
    REQUIRE(outputs.has_value());
    CHECK(*outputs == jq(expression, document));
  }
  // jq orders and adds other kinds by rules of its own (null first, strings after numbers, arrays joined):
  // given up, and jq decides.
  const std::string mixed = R"({"a":[3,1],"c":{"x":4},"d":7,"n":null,"s":"x"})";
  for (const char* expression : {"[.d, .n] | max", "[.d, .missing] | min", "[.d, .s] | max", "[.c] | add",
                                 "[.a] | max", "[.d, .s] | add", "[.n] | add"}) {
    CAPTURE(expression);
    CHECK_FALSE(native(expression, mixed).has_value());
  }
}

TEST_CASE("string literals and tonumber of a plain integer's digits give jq's outputs") {
  const std::string knative = R"({"spec":{"template":{"metadata":{"annotations":{
      "autoscaling.knative.dev/min-scale":"3","autoscaling.knative.dev/minScale":"5"}}}}})";
  CHECK(native(kKnativeReplicas, knative) == std::vector<json>{3});
  CHECK(native(kKnativeReplicas, R"({"spec":{"template":{"metadata":{"annotations":{
      "autoscaling.knative.dev/minScale":"0"}}}}})") == std::vector<json>{1});
  CHECK(native(kKnativeReplicas, R"({"spec":{"template":{}}})") == std::vector<json>{1});  // the default "1"
  CHECK(native(kKnativeReplicas, R"({"spec":{"template":{"metadata":{"annotations":{
      "autoscaling.knative.dev/min-scale":7}}}}})") == std::vector<json>{7});  // a number, as written by hand
  const std::string document =
      R"({"a":"12","b":"-40","c":"0","d":"999999999999999","e":null,"f":"x","g":4,"h":"-999999999999999"})";
  for (const char* expression : {"\"1\"", "\"1\" | tonumber", ".e // \"7\" | tonumber", ".a | tonumber", ".b | tonumber",
                                 ".c | tonumber", ".d | tonumber", ".h | tonumber", "(.a | tonumber) * 2",
                                 "[.a, .b, .c | tonumber] | max", "[.a, .b | tonumber] | add", ".e // \"none\"",
                                 ".f // \"y\"", ".e // \"\"", "\"a\", \"b\"", "\"x+y=z\"",
                                 ".g | tonumber", "\"-5\" | tonumber", ".e // .missing // \"10\" | tonumber"}) {
    CAPTURE(expression);
    auto outputs = native(expression, document);
    REQUIRE(outputs.has_value());
    CHECK(*outputs == jq(expression, document));
  }
  CHECK(native(".a | tonumber", document) == std::vector<json>{12});
  CHECK(native(".e // \"none\"", document) == std::vector<json>{"none"});
  // A string is no number to arithmetic or to a reduction (jq repeats, joins or orders strings): given up.
  for (const char* expression : {"\"1\" + 1", "\"1\" * 2", ".a + 1", "[.a, .b] | max", "[\"1\"] | add", ".f | tonumber",
                                 "\"2\" - \"1\""}) {
    CAPTURE(expression);
    CHECK_FALSE(native(expression, document).has_value());
  }
}

TEST_CASE("the admission of these built-in kinds runs no jq: every expression it evaluates is native") {
  // The structure group is what admission evaluates (pod templates, ids, replicas). A kind listed here
  // converts no object to jq's values: for a RayCluster of 50 groups that was 60% of its admission.
  std::set<std::string> without_jq;
  for (const auto& definition : test::builtin_catalog().definitions()) {
    bool jq_needed = false;
    for (const auto& e : definition->expressions()) {
      jq_needed |= e.group == karta::ExpressionGroup::Structure && !e.simple && !e.native;
    }
    const auto& kind = definition->root_kind();
    if (!jq_needed) without_jq.insert(kind.group + "/" + kind.version + "/" + kind.kind);
  }
  CHECK(without_jq == std::set<std::string>{
      "/v1/Pod", "apps/v1/DaemonSet", "apps/v1/Deployment", "apps/v1/ReplicaSet", "apps/v1/StatefulSet",
      "batch/v1/CronJob", "batch/v1/Job", "jobset.x-k8s.io/v1alpha2/JobSet", "kubeflow.org/v2beta1/MPIJob",
      "ray.io/v1/RayCluster",
      "ray.io/v1/RayJob", "ray.io/v1/RayService", "serving.knative.dev/v1/Service",
      "serving.kserve.io/v1beta1/InferenceService"});
}

TEST_CASE("where jq 1.6's answer could differ, native evaluation gives up and jq decides") {
  // A string in arithmetic (jq repeats it), tonumber on a string (jq parses it), an operand with two
  // values (jq's cartesian order), null in arithmetic (jq treats it as 0 for +), errors of every kind.
  CHECK_FALSE(native(".a * 2", R"({"a":"x"})").has_value());
  // tonumber on a string other than a plain integer's digits: jq 1.6 parses it as JSON text, and reads
  // " 3", "03", "+3" and "3.0" as 3, "1e2" as 100, "-0" as -0 and "nan" as null.
  for (const char* text : {R"(" 3")", R"("3 ")", R"("03")", R"("+3")", R"("3.0")", R"("1e2")", R"("-0")", R"("nan")",
                           R"("")", R"("-")", R"("abc")", R"("[1]")", R"("0x10")", R"("1000000000000000")",
                           R"("-1000000000000000")"}) {
    CAPTURE(text);
    CHECK_FALSE(native(".a | tonumber", std::string(R"({"a":)") + text + "}").has_value());
  }
  CHECK_FALSE(native(".a[] * 2", R"({"a":[1,2]})").has_value());
  CHECK_FALSE(native(".a + 1", R"({"b":1})").has_value());
  CHECK_FALSE(native(".a.b", R"({"a":"text"})").has_value());
  CHECK_FALSE(native(".a[]", R"({"a":5})").has_value());
  CHECK_FALSE(native(".a[0]", R"({"a":{"0":1}})").has_value());
  CHECK_FALSE(native(".a[]", R"({})").has_value());  // jq: Cannot iterate over null
  std::string many = R"({"a":[)";
  for (int i = 0; i < 1500; ++i) many += (i ? "," : "") + std::to_string(i);
  CHECK_FALSE(native(".a[]", many + "]}").has_value());  // past the cap: jq caps it
}

TEST_CASE("a definition answers through jq when native evaluation gives up") {
  const auto* definition = test::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(definition != nullptr);
  karta::ExpressionId replicas = karta::kNoExpression;
  for (const auto& plan : definition->components()) {
    if (plan.replicas != karta::kNoExpression) replicas = plan.replicas;
  }
  REQUIRE(replicas != karta::kNoExpression);
  REQUIRE(definition->expressions()[replicas].native.has_value());
  // replicas as a string in exponent form: jq's tonumber parses it as JSON text, native evaluation does not try.
  auto document = JsonDocument::parse(R"({"spec":{"replicatedJobs":[
      {"name":"a","replicas":"3e0","template":{"spec":{"parallelism":2,"template":{"spec":{}}}}},
      {"name":"b","replicas":2,"template":{"spec":{"template":{"spec":{}}}}}]}})");
  karta::DefinitionEvaluation evaluation(*definition, document.root());
  const auto& outcome = evaluation.outcome(replicas);
  CHECK_FALSE(outcome.error.has_value());
  CHECK(outcome.values == std::vector<json>{6, 2});
}

TEST_CASE("every native catalog expression gives what libjq gives, on every sample") {
  const std::vector<json> objects = test::sample_objects();
  REQUIRE(objects.size() >= 45);
  std::size_t expressions = 0, compared = 0, answered = 0;
  for (const auto& definition : test::builtin_catalog().definitions()) {
    for (const auto& e : definition->expressions()) {
      if (!e.native) continue;
      ++expressions;
      CAPTURE(e.field.expression);
      karta::JqProgram program(e.field.expression, 1);
      for (const auto& object : objects) {
        auto document = JsonDocument::from(object);
        auto by_native = e.native->evaluate(document.root(), 1000);
        karta::JqInput input(document.root());
        auto by_jq = program.run(input, 1000);
        ++compared;
        if (!by_native) continue;
        ++answered;
        CHECK_FALSE(by_jq.error.has_value());
        CHECK(*by_native == by_jq.outputs);
      }
    }
  }
  MESSAGE(expressions << " native catalog expressions, " << compared << " evaluations, " << answered
                      << " answered natively");
  CHECK(expressions >= 15);
  CHECK(answered >= 100);
}

}  // namespace unit_native_expression
