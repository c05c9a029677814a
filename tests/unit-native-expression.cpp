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

// Each expression answered natively, with jq's outputs on `document`.
void check_native_answers_as_jq(std::initializer_list<const char*> expressions, const std::string& document) {
  for (const char* expression : expressions) {
    const std::string text = expression;
    CAPTURE(text);
    auto outputs = native(expression, document);
    REQUIRE(outputs.has_value());
    CHECK(*outputs == jq(expression, document));
  }
}

const char* const kJobSetReplicas =
    ".spec.replicatedJobs[] | (.replicas // 1 | tonumber) * (.template.spec.parallelism // 1 | tonumber)";
// The built-in Knative Service's revision: its annotations are strings.
const char* const kKnativeReplicas =
    "[(.spec.template.metadata.annotations[\"autoscaling.knative.dev/min-scale\"] // "
    ".spec.template.metadata.annotations[\"autoscaling.knative.dev/minScale\"] // \"1\" | tonumber), 1] | max";
// The built-in LeaderWorkerSet's workers, the LLMInferenceService's worker, and Milvus's proxy.
const char* const kLwsReplicas =
    "(.spec.replicas // 1 | tonumber) * ((.spec.leaderWorkerTemplate.size // 1 | tonumber)\n"
    "- (if .spec.leaderWorkerTemplate.leaderTemplate then 1 else 0 end))";
const char* const kLlmWorkerReplicas =
    "(.spec.replicas // .spec.scaling.minReplicas // 1 | tonumber) *\n"
    "((if (.spec.parallelism.data // 0) > 0 or (.spec.parallelism.dataLocal // 0) > 0\n"
    "  then ([(.spec.parallelism.data // 1 | tonumber) / (.spec.parallelism.dataLocal // 1 | tonumber) | floor, 1] | max)\n"
    "  elif (.spec.parallelism.pipeline // 0) > 0 then .spec.parallelism.pipeline\n"
    "  else 1 end)\n"
    " - (if .spec.template then 1 else 0 end) | tonumber)";
const char* const kMilvusProxyReplicas =
    "if .spec.mode != \"cluster\" then 0 elif (.spec.components.proxy.groups | length) > 0 then "
    "([.spec.components.proxy.groups[] | .replicas // 1] | add) else (.spec.components.proxy.replicas // 1 | tonumber) end";
// The built-in RayCluster's workers.
const char* const kRayReplicas =
    ".spec.workerGroupSpecs[]? | ([.replicas // 0, .minReplicas // 0 | tonumber] | max | tonumber) * "
    "(.numOfHosts // 1 | tonumber)";

}  // namespace

TEST_CASE("the native grammar takes paths, pipes, commas, //, arithmetic, comparisons, and, or, if, literals, tonumber, length, floor and reduced lists only") {
  for (const char* text : {".spec.replicas // 1", kJobSetReplicas, kRayReplicas, kKnativeReplicas, kLwsReplicas,
                           kLlmWorkerReplicas, kMilvusProxyReplicas, ".a - 1 + .b * 2", "(.a)", ".a[]?.b // 0", "1.5",
                           ".", ".a | . * 2", ".a//.b//3", ".a, .b", "[.a, .b] | max", "[.a[]] | min",
                           "[.a[] | .b] | add", ".x | [.a, 1] | max | . * 2", "([.a] | max), 1", "\"1\"",
                           ".a // \"x y\"", "\"\"", "\"2\" | tonumber", "\"a-b_c/d.e:f ~!\"", ".a / 2", ".a == 1",
                           ".a != \"x\"", ".a < 1", ".a <= 1", ".a > 1", ".a >= 1", ".a and .b", ".a or .b and .c",
                           "true", "false", "null", "length", ".a | length", "floor", ".a / .b | floor",
                           "if .a then 1 else 2 end", "if .a then 1 elif .b then 2 else 3 end", "if .a then .b[] else 0 end",
                           "if .a == \"x\" then 0 else (.b // 1 | tonumber) end * 2", ".a==1 and .b!=2 or .c>=3",
                           "1 + if .a then 1 else 2 end", ".then // .and", ".android", ".spec.mpiReplicaSpecs | keys[]",
                           ".a | .[keys[]] | .replicas // 1", ".[keys[]]", ".[keys[]].b", ".[keys[]][0]",
                           "keys[]", "[keys[]] | max", ".keys"}) {
    CAPTURE(text);
    CHECK(NativeExpression::parse(text).has_value());
    CHECK_FALSE(karta::jq_compile_error(text).has_value());  // the grammar takes nothing jq refuses
  }
  // A list is native only as the whole of what `| max`, `| min` or `| add` reduces (no list is a value
  // here): `[.a] * 2` would reduce nothing, `.a, [.b] | max` reduces `.a, [.b]`.
  for (const char* text : {"keys", "keys[]?", ".[keys[]]?", "keys[].a", "keys[][0]", ".a[keys[]]", ".[keys[]][keys[]]", ".[keys[] ]",
                           ".[ keys[]]", ".a | keys", "$x", "[.a]", "[]", "[] | max",
                           "[.a] | length", "[.a] | max_by(.b)", "[.a] | maximum", "[.a] * 2", "[.a] // 1",
                           ".a, [.b] | max", ".a | [.b]", "[.a] | max(1)", "max", "[.a] | . | max",
                           // jq reads these as `[.a] | (max, 1)` and `[.a] | (max // 0)`: not a list reduced
                           "[.a] | max, 1", "[.a] | max // 0", "[.a] | max * 2", "([.a] | max, 1)",
                           // escapes and interpolation are jq's; a string is no path's start
                           "\"a\\nb\"", "\"\\(.a)\"", "\"\xc3\xa9\"", "\"a\x8f" "b\"", "\"\x7f\"", "\"a\\\"b\"", "\"open", "\"a\".b",
                           "\"a\"[0]", "\"tab\there\"",
                           // jq 1.6 requires the else; a condition of several values runs a branch per value
                           "if .a then 1 end", "if .a[] then 1 else 2 end", "if .a then 1 else 2", "if .a else 1 end",
                           "if .a then 1 elif .b then 2 end", "if . then 1 else 2 end.x", "if . then 1 else 2 end | [.]",
                           // comparisons do not chain in jq; the rest is not in the grammar
                           ".a == .b == .c", ".a < .b < .c", ".a % 2", "not", ".a | not", "lengths", "floor(1)",
                           "truex", "nulls", "and", ".a and", "or .a", ".a ! = 1", ".a = 1", ".a === 1",
                           ".a?", "1e3", ".a |= 1", ".a //= 1", "-1", ".a /= 2",
                           "tonumbers", "(.a", ".a)", "1.", ".a # comment", "..", ".a[] as $x | $x"}) {
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
  check_native_answers_as_jq({"[.a[]] | max", "[.a[]] | min", "[.a[]] | add", "[.b[]] | max", "[.b[]] | min",
                                 "[.b[]] | add", "[.c[]] | max", "[.c[]] | add", "[.d, .e, .a[0]] | max",
                                 "[.a[] | . * 2] | add", ".d, .e", ".a[], .d", "([.a[]] | max) * 2, .e // 1",
                              "[.d, .missing // 0] | min", "[.a[]] | add | . + 1", "[([.a[]] | max), .d] | min"},
                             document);
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
  check_native_answers_as_jq({"\"1\"", "\"1\" | tonumber", ".e // \"7\" | tonumber", ".a | tonumber", ".b | tonumber",
                                 ".c | tonumber", ".d | tonumber", ".h | tonumber", "(.a | tonumber) * 2",
                                 "[.a, .b, .c | tonumber] | max", "[.a, .b | tonumber] | add", ".e // \"none\"",
                                 ".f // \"y\"", ".e // \"\"", "\"a\", \"b\"", "\"x+y=z\"",
                                 ".g | tonumber", "\"-5\" | tonumber", ".e // .missing // \"10\" | tonumber"}, document);
  CHECK(native(".a | tonumber", document) == std::vector<json>{12});
  CHECK(native(".e // \"none\"", document) == std::vector<json>{"none"});
  // A string is no number to arithmetic or to a reduction (jq repeats, joins or orders strings): given up.
  for (const char* expression : {"\"1\" + 1", "\"1\" * 2", ".a + 1", "[.a, .b] | max", "[\"1\"] | add", ".f | tonumber",
                                 "\"2\" - \"1\""}) {
    CAPTURE(expression);
    CHECK_FALSE(native(expression, document).has_value());
  }
}

TEST_CASE("comparisons, and, or, if, null, true, false, length, floor and / give jq's outputs") {
  const std::string document = R"({"a":3,"b":"x","c":null,"d":false,"e":true,"f":[1,2,3],"g":{"p":1,"q":2},
      "h":-2.5,"i":0,"j":"3","k":[],"l":{},"m":7.75,"s":{"mode":"cluster","groups":[{"replicas":2},{}]}})";
  for (const char* expression :
       {".a == 3", ".a == 3.0", ".a != 3", ".b == \"x\"", ".b != \"y\"", ".c == null", ".missing == null", ".d == false",
        ".e == true", ".d == null", ".a == \"3\"", ".j == 3", ".f == 1", ".g == \"x\"", ".f == null", ".a < 4", ".a <= 3",
        ".a > 3", ".a >= 3", ".h < .i", ".a and .b", ".a and .d", ".c and .x.y.z", ".d or .a", ".c or .d", ".e or .x.y.z",
        ".a > 1 and .b == \"x\" or .c", ".a and (.d or .e)", "true", "false", "null", "true and false", "null or true",
        ".f | length", ".g | length", ".c | length", ".h | length", ".k | length", ".l | length", ".a | length",
        ".m | floor", ".h | floor", ".a / 2", ".m / .h", "7 / 2 | floor", "if .a then 1 else 2 end",
        "if .d then 1 else 2 end", "if .c then 1 elif .e then 2 else 3 end", "if .d then 1 elif .c then 2 else 3 end",
        "if .a > 2 then .f[] else 0 end", "if .b == \"x\" then \"yes\" else \"no\" end",
        "(if .e then 1 else 0 end) * 10 + 1", "1 + if .d then 1 else 2 end * 3", ".f[] | . > 1", ".f[] | . == 2 or . == 3",
        "[.f[] | . * 2] | add", "(.f[] | . > 1) and .a", ".a and (.f[] | . > 1)",
        "(.f[] | . > 1) or .d", ".d or (.f[] | . > 1)", ".c and (.f[] | . > 1)",
        "if .s.mode != \"cluster\" then 0 elif (.s.groups | length) > 0 then ([.s.groups[] | .replicas // 1] | add) "
        "else 1 end",
        "[(.a // 1 | tonumber) / (.i // 1 | tonumber) | floor, 1] | max"}) {
    const std::string text = expression;
    CAPTURE(text);
    auto outputs = native(expression, document);
    if (std::string_view(expression).find(".i // 1 | tonumber) | floor") != std::string_view::npos) {
      CHECK_FALSE(outputs.has_value());  // a division by zero: jq's error, given up
      continue;
    }
    REQUIRE(outputs.has_value());
    CHECK(*outputs == jq(expression, document));
  }
  CHECK(native(".a == 3.0 and .b != \"y\"", document) == std::vector<json>{true});
  CHECK(native("if .c then 1 elif .e then 2 else 3 end", document) == std::vector<json>{2});
  CHECK(native(".f[] | . > 1", document) == std::vector<json>{false, true, true});
  CHECK(native(".f | length", document) == std::vector<json>{3});
  CHECK(native(".h | length", document) == std::vector<json>{2.5});
  CHECK(native(".m | floor", document) == std::vector<json>{7});
  // jq orders and compares lists, objects, strings and booleans by rules of its own, divides by zero with
  // an error, counts a string's code points, and has no length of a boolean: each given up.
  for (const char* expression : {".f == .f", ".g == .g", ".f != .k", ".b < \"y\"", ".a < \"x\"", ".c < 1", ".d > .e",
                                 ".a / 0", ".a / .i", ".b / \"x\"", ".b | length", ".d | length", ".b | floor",
                                 ".c | floor", "if .b.x then 1 else 2 end", "if .a then .b.x else 2 end", "1 / 0 | floor",
                                 // an operand of several values: jq's cartesian order, not imitated
                                 ".f[] > 1", ".f[] == .a", ".f[] > 1 and .a", ".a and .f[] > 1"}) {
    const std::string text = expression;
    CAPTURE(text);
    CHECK_FALSE(native(expression, document).has_value());
  }
}

TEST_CASE("keys[] and .[keys[]] give jq's outputs: keys sorted bytewise, members in their keys' order") {
  const std::string document = R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":4},"Master":{"replicas":1},
      "a\"b":{"replicas":"2"},"\u00e9":{},"Z":{"replicas":0},"W":null},"list":[5,6,7],"empty":{},"none":null,"n":3,
      "same":{"b":1,"a":2,"b":3}}})";
  check_native_answers_as_jq({".spec.pytorchReplicaSpecs | keys[]", ".spec.pytorchReplicaSpecs | .[keys[]] | .replicas // 1",
                                 ".spec.pytorchReplicaSpecs | .[keys[]]", ".spec.list | keys[]", ".spec.list | .[keys[]]",
                                 ".spec.empty | keys[]", ".spec.empty | .[keys[]]", ".spec | keys[]", "[.spec.list | keys[]] | max",
                                 ".spec.pytorchReplicaSpecs | keys[] | . == \"Master\"", ".spec.same | keys[]",
                                 ".spec.same | .[keys[]]", ".spec.same | .[]"}, document);
  CHECK(native(".spec.pytorchReplicaSpecs | keys[]", document) ==
        std::vector<json>{"Master", "W", "Worker", "Z", "a\"b", "\u00e9"});
  CHECK(native(".spec.pytorchReplicaSpecs | .[keys[]] | .replicas // 1", document) ==
        std::vector<json>{1, 1, 4, 0, "2", 1});
  // keys of null, a number or a string are jq's errors (`.[keys[]]?` does not catch them: not native).
  for (const char* expression : {".spec.none | keys[]", ".spec.n | keys[]", ".spec.none | .[keys[]]", ".spec.n | .[keys[]]"}) {
    const std::string text = expression;
    CAPTURE(text);
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
      "/v1/Pod", "agents.x-k8s.io/v1beta1/Sandbox", "apps/v1/DaemonSet", "apps/v1/Deployment", "apps/v1/ReplicaSet",
      "apps/v1/StatefulSet", "apps.nvidia.com/v1alpha1/NIMCache", "apps.nvidia.com/v1alpha1/NIMService",
      "batch.volcano.sh/v1alpha1/Job", "batch/v1/CronJob", "batch/v1/Job",
      "jobset.x-k8s.io/v1alpha2/JobSet", "kubeflow.org/v1/JAXJob", "kubeflow.org/v1/MPIJob", "kubeflow.org/v1/Notebook",
      "kubeflow.org/v1/PaddleJob", "kubeflow.org/v1/PyTorchJob", "kubeflow.org/v1/TFJob", "kubeflow.org/v1/XGBoostJob",
      "kubeflow.org/v2beta1/MPIJob", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
      "milvus.io/v1beta1/Milvus", "nvidia.com/v1beta1/DynamoGraphDeployment", "ray.io/v1/RayCluster", "ray.io/v1/RayJob",
      "ray.io/v1/RayService", "serving.knative.dev/v1/Service", "serving.kserve.io/v1alpha1/LLMInferenceService",
      "serving.kserve.io/v1alpha2/LLMInferenceService", "serving.kserve.io/v1beta1/InferenceService",
      "sparkoperator.k8s.io/v1beta2/SparkApplication", "trainer.kubeflow.org/v1alpha1/TrainJob"});
  // What still needs jq: an object literal (Dynamo v1alpha1's `.spec.services // {} | keys[]`), `as`
  // bindings, `select` and `any` (PodCliqueSet), and `select` over Argo's templates (Workflow).
  CHECK(without_jq.size() == test::builtin_catalog().definitions().size() - 3);
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
