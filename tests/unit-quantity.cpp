// Kubernetes quantities read as apimachinery's resource.ParseQuantity reads them (k8s/quantity.h),
// what that changes in a patch, and how figures past an int64 print.

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "cli/live_inspect.h"
#include "json/documents.h"
#include "k8s/quantity.h"
#include "k8s/resources.h"
#include "mutate/mutation.h"
#include "support/test_support.h"

namespace unit_quantity {  // this file's names, apart from other tests' in a unity build

using karta::json;
namespace test = karta::test;

namespace {

struct Expected {
  const char* text;
  const char* value;  // exact decimal
};

// Tables, several entries a line.
// clang-format off
// From apimachinery's quantity_test.go, TestQuantityParse (its `table`): the same inputs, their expected
// Quantity written out as an exact decimal. Three of them are past 2^63-1 and listed with the clamped.
const Expected kApimachineryTable[] = {
    {"0", "0"}, {"0n", "0"}, {"0u", "0"}, {"0m", "0"}, {"0Ki", "0"}, {"0k", "0"}, {"0Mi", "0"}, {"0M", "0"},
    {"0Gi", "0"}, {"0G", "0"}, {"0Ti", "0"}, {"0T", "0"},
    // "Quantity less numbers are allowed"
    {"1", "1"},
    // Binary suffixes
    {"1Ki", "1024"}, {"8Ki", "8192"}, {"7Mi", "7340032"}, {"6Gi", "6442450944"}, {"5Ti", "5497558138880"},
    {"4Pi", "4503599627370496"}, {"3Ei", "3458764513820540928"}, {"10Ti", "10995116277760"},
    {"100Ti", "109951162777600"},
    // Decimal suffixes
    {"5n", "0.000000005"}, {"4u", "0.000004"}, {"3m", "0.003"}, {"9", "9"}, {"8k", "8000"}, {"50k", "50000"},
    {"7M", "7000000"}, {"6G", "6000000000"}, {"5T", "5000000000000"}, {"40T", "40000000000000"},
    {"300T", "300000000000000"}, {"2P", "2000000000000000"}, {"1E", "1000000000000000000"},
    // Decimal exponents
    {"1E-3", "0.001"}, {"1e3", "1000"}, {"1E6", "1000000"}, {"1e9", "1000000000"}, {"1E12", "1000000000000"},
    {"1e15", "1000000000000000"}, {"1E18", "1000000000000000000"},
    // Nonstandard but still parsable
    {"1e14", "100000000000000"}, {"1e13", "10000000000000"}, {"100.035k", "100035"},
    // Things that look like floating point
    {"0.001", "0.001"}, {"0.0005k", "0.5"}, {"0.005", "0.005"}, {"0.05", "0.05"}, {"0.5", "0.5"},
    {"0.00050k", "0.5"}, {"0.00500", "0.005"}, {"0.05000", "0.05"}, {"0.50000", "0.5"}, {"0.5e0", "0.5"},
    {"0.5e-1", "0.05"}, {"0.5e-2", "0.005"}, {"10.035M", "10035000"},
    {"1.2e3", "1200"}, {"1.3E+6", "1300000"}, {"1.40e9", "1400000000"}, {"1.53E12", "1530000000000"},
    {"1.6e15", "1600000000000000"}, {"1.7E18", "1700000000000000000"},
    {"9.01", "9.01"}, {"8.1k", "8100"}, {"7.123456M", "7123456"}, {"6.987654321G", "6987654321"},
    {"5.444T", "5444000000000"}, {"40.1T", "40100000000000"}, {"300.2T", "300200000000000"},
    {"2.5P", "2500000000000000"}, {"1.01E", "1010000000000000000"},
    // Things that saturate/round: to the nano, away from zero
    {"3.001n", "0.000000004"}, {"1.1E-9", "0.000000002"}, {"0.0000000001", "0.000000001"},
    {"0.0000000005", "0.000000001"}, {"0.00000000050", "0.000000001"}, {"0.5e-9", "0.000000001"},
    {"0.9n", "0.000000001"}, {"0.00000012345", "0.000000124"}, {"0.00000012354", "0.000000124"},
    // "We'll accept fractional binary stuff, too."
    {"100.035Ki", "102435.84"}, {"0.5Mi", "524288"}, {"0.05Gi", "53687091.2"}, {"0.025Ti", "27487790694.4"},
    // "Things written by trolls"
    {"0.000000000001Ki", "0.000000002"}, {".001", "0.001"}, {".0001k", "0.1"}, {"1.", "1"}, {"1.G", "1000000000"},
};

// The rest, each read off quantity.go and suffix.go (parseQuantityString, ParseQuantity, interpret).
const Expected kFromTheGoSource[] = {
    // The demo's GPUs as issue 26 wrote them.
    {"4000000000n", "4"}, {"4000000u", "4"}, {"4000m", "4"}, {"0.004k", "4"}, {"40e-1", "4"}, {"0.00390625Ki", "4"},
    {"1536Mi", "1610612736"}, {"1.5Gi", "1610612736"}, {"2Ei", "2305843009213693952"},
    // An exponent is any int64 with a sign and leading zeros, kept as an int32 (it wraps, as in Go).
    {"1e+3", "1000"}, {"1E0003", "1000"}, {"1e-0", "1"}, {"25e-1", "2.5"}, {"1e4294967299", "1000"},
    {"1e-9223372036854775808", "1"},
    // Finer than a nano, however long, rounds away from zero; trailing zeros are only zeros.
    {"0.0000000000000000000000000000000000000001", "0.000000001"}, {"1e-400", "0.000000001"},
    {"123456789012345678901234567890123456789e-40", "0.012345679"},
    {"1000000000000000000000000000000000000000000e-40", "100"},
    // "E" alone is exa; "." with no digit, a sign alone, a suffix alone are Go's zeros.
    {"1E", "1000000000000000000"}, {".", "0"}, {"-.", "0"}, {"+", "0"}, {"-", "0"}, {"-0", "0"}, {"00.000", "0"},
    {"e3", "0"}, {"k", "0"}, {"Ki", "0"}, {"Ti", "0"}, {"e-9", "0"},
    // Right at the bound: 2^63-1 units, and one nano under it, are held exactly.
    {"9223372036854775807", "9223372036854775807"}, {"9223372036854775806.999999999", "9223372036854775806.999999999"},
    {"8191.999999999999Pi", "9223372036854774682.100093158"},
};

// Past 2^63-1 units: ParseQuantity caps binary SI there ("9Ei"); decimal it keeps ("12E", which its
// table expects as 12 x 10^18), but every int64 reading of it overflows, so we hold the bound.
const char* const kClamped[] = {"9Ei", "9223372036854775807Ki", "12E", "8Ei", "9223372036854775808",
                                "9223372036854775807.000000001", "1e30", "1e2147483647", "100000000000000000000000000000P"};

// Refused. From TestQuantityParse's `invalid` list and its empty-string check:
const char* const kApimachineryInvalid[] = {"", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i",
                                            "-3.01i", "-3.01e-", " 1", "1 "};
// and read off the Go source: no hex, no whitespace anywhere, one sign, a suffix from the list or an
// exponent that ParseInt takes, nothing after it; "Pi" and "Ei" alone go through inf.Dec, which wants a
// digit, and so does an exponent below -9 with no number before it.
const char* const kRefused[] = {"0x4", " 4", "4 ", "\t4", "4\n", "4 GPUs", "lots", "1e", "1E+", "1e-", "--1", "+-1",
                                "-+1", "1e1.5", "1ee3", "1Ee3", "1e3Ki", "1E3i", "1ki", "1KI", "1Ki3", "1m3", "1k+",
                                "1e9223372036854775808", "1e-9223372036854775809", "Pi", "Ei", "-Ei", ".Pi",
                                "e-10", "Infinity", "NaN", "4,5", "\xef\xbc\x94"};

// clang-format on

std::string read(const char* text) {
  auto quantity = karta::parse_quantity_text(text);
  if (!quantity) return "refused";
  return quantity->decimal() + (quantity->clamped ? " (clamped)" : "");
}

}  // namespace

TEST_CASE("quantities are read as apimachinery's ParseQuantity reads them, signs and all") {
  for (const auto& [text, value] : kApimachineryTable) {
    CAPTURE(text);
    CHECK(read(text) == value);
    // TestQuantityParse tries every entry again with "-" and with "+" in front.
    CHECK(read(("+" + std::string(text)).c_str()) == value);
    CHECK(read(("-" + std::string(text)).c_str()) == (std::string(value) == "0" ? "0" : "-" + std::string(value)));
  }
  for (const auto& [text, value] : kFromTheGoSource) {
    CAPTURE(text);
    CHECK(read(text) == value);
  }
}

TEST_CASE("a quantity past 2^63-1 units is held at that bound and says so; never wrapped") {
  for (const char* text : kClamped) {
    CAPTURE(text);
    CHECK(read(text) == "9223372036854775807 (clamped)");
    CHECK(read(("-" + std::string(text)).c_str()) == "-9223372036854775807 (clamped)");
  }
  CHECK(karta::parse_quantity_text("1e30")->to_double() == 9223372036854775807.0);
}

TEST_CASE("the forms Kubernetes refuses are refused") {
  for (const char* text : kApimachineryInvalid) {
    CAPTURE(text);
    CHECK(read(text) == "refused");
  }
  for (const char* text : kRefused) {
    CAPTURE(text);
    CHECK(read(text) == "refused");
  }
  // A NUL inside the text is not its end.
  CHECK_FALSE(karta::parse_quantity_text(std::string_view("4\0", 2)).has_value());
}

TEST_CASE("a quantity of a million digits is read at once, exactly") {
  std::string ones(1000000, '1');
  CHECK(read(ones.c_str()) == "9223372036854775807 (clamped)");
  CHECK(read(("0." + ones).c_str()) == "0.111111112");
  CHECK(read(("1" + std::string(999999, '0') + "e-999999").c_str()) == "1");
  CHECK(read(("0." + std::string(999999, '0') + "1").c_str()) == "0.000000001");
}

TEST_CASE("JSON numbers are read from their text, as Kubernetes reads them") {
  CHECK(karta::parse_quantity(json(4)).value() == 4);
  CHECK(karta::parse_quantity(json(-2)).value() == -2);
  CHECK(karta::parse_quantity(json(0.5)).value() == 0.5);
  CHECK(karta::parse_quantity(json(1e-12)).value() == 1e-9);  // rounded up to the nano
  CHECK(karta::parse_quantity(json(1e30)).value() == 9223372036854775807.0);
  CHECK(karta::parse_quantity(json::parse("9223372036854775807")).value() == 9223372036854775807.0);
  CHECK(karta::parse_quantity(json::parse("18446744073709551615")).value() == 9223372036854775807.0);
  CHECK(karta::parse_quantity(json("4000000000n")).value() == 4);
  CHECK(karta::parse_quantity(json("0x4")).has_value() == false);
  CHECK(karta::parse_quantity(json(true)).has_value() == false);
  // An integer read as a number is what its text reads as, at every bound (integers skip the text).
  for (const char* text : {"0", "1", "4", "-1", "-4", "9007199254740993", "-9007199254740993", "9223372036854775806",
                           "9223372036854775807", "9223372036854775808", "18446744073709551615",
                           "-9223372036854775807", "-9223372036854775808"}) {
    CAPTURE(text);
    const json number = json::parse(text);
    REQUIRE(number.is_number_integer());
    CHECK(karta::parse_quantity(number).value() == karta::parse_quantity(json(text)).value());
  }
  CHECK(karta::parse_quantity(json::parse("-9223372036854775808")).value() == -9223372036854775807.0);
}

namespace {

// The demo JobSet with every pod's GPUs written as `gpus`.
json demo_with_gpus(const json& gpus) {
  json object = test::document(test::source_dir() / "examples/jobset-demo.yaml");
  for (auto& job : object["spec"]["replicatedJobs"]) {
    job["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus;
  }
  return object;
}

const karta::CompiledDefinition& jobset_definition() {
  const auto* definition = test::builtin_catalog().find({"jobset.x-k8s.io", "v1alpha2", "JobSet"});
  REQUIRE(definition != nullptr);
  return *definition;
}

// The patch of examples/policy.yaml for `object`.
json example_patch(const json& object) {
  auto policy = test::policy_from_yaml(karta::read_text_file(test::source_dir() / "examples/policy.yaml"));
  return karta::mutate_workload(object, jobset_definition(), policy, {"research", "CREATE"}).patch.value();
}

const std::string kToleration = R"([{"effect":"NoSchedule","key":"nvidia.com/gpu","operator":"Exists"}])";

// examples/policy.yaml's patch for the demo JobSet: queue, role labels, scheduler, GPU tolerations on both
// templates, and the GPU total and the provenance annotation (the queue label is the webhook's) on the workload.
json nine_operations() {
  return json::parse(R"([
    {"op":"add","path":"/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/platform.example.com~1role","value":"leader"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/kai.scheduler~1queue","value":"default-queue"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/spec/replicatedJobs/0/template/spec/template/spec/tolerations","value":)" +
                     kToleration + R"(},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/metadata","value":{"labels":{
      "kai.scheduler/queue":"default-queue","platform.example.com/managed":"true","platform.example.com/role":"worker"}}},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/spec/schedulerName","value":"kai-scheduler"},
    {"op":"add","path":"/spec/replicatedJobs/1/template/spec/template/spec/tolerations","value":)" +
                     kToleration + R"(},
    {"op":"add","path":"/metadata/annotations","value":{"karta.run.ai/written":"label:kai.scheduler/queue",
      "platform.example.com/gpu-total":"12"}}
  ])");
}

}  // namespace

TEST_CASE("the demo JobSet with its GPUs written as 4000000000n gets the same 9-operation patch as with 4") {
  const json expected = nine_operations();
  REQUIRE(expected.size() == 9);
  CHECK(example_patch(demo_with_gpus(4)) == expected);
  for (const char* spelling :
       {"4", "4000000000n", "4000000u", "4000m", "0.004k", "4e0", "40e-1", "+4", "4.", "0.00390625Ki"}) {
    CAPTURE(spelling);
    CHECK(example_patch(demo_with_gpus(spelling)) == expected);
  }
  json patched = test::kubectl_apply(demo_with_gpus("4000000000n"), expected);
  CHECK(patched["metadata"]["annotations"]["platform.example.com/gpu-total"] == "12");
  CHECK(patched["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["tolerations"] ==
        json::parse(kToleration));
}

TEST_CASE("GPUs written in a form Kubernetes refuses count as none: no GPU toleration, no GPU total") {
  // The same patch without the two tolerations and the GPU total.
  json expected = nine_operations();
  expected.erase(7);
  expected.erase(4);
  expected[6]["value"].erase("platform.example.com/gpu-total");  // the provenance of the queue label stays
  REQUIRE(expected.size() == 7);
  for (const char* spelling : {"0x4", " 4", "4 ", "4 GPUs", "1e", "0", "Ki"}) {
    CAPTURE(spelling);
    CHECK(example_patch(demo_with_gpus(spelling)) == expected);
  }
}

namespace {

// A JobSet whose leader asks for 1e30 cores and 1e30 bytes, and 4 GPUs per pod.
json huge_requests() {
  json object = demo_with_gpus(4);
  object["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]
        ["requests"] = {{"cpu", "1e30"}, {"memory", "1e30"}};
  return object;
}

}  // namespace

TEST_CASE("inspect -f prints cpu and memory of 1e30 as the bound, marked, never as negative numbers") {
  test::TempDir dir;
  std::ofstream(dir.path / "huge.json") << huge_requests().dump();
  int code = 0;
  std::string out =
      test::run_command(test::binary_path().string() + " inspect -f " + (dir.path / "huge.json").string(), &code);
  CHECK(code == 0);
  CHECK(out == R"(JobSet research/demo (jobset.x-k8s.io/v1alpha2)  state: Running
statuses: Running  suspended: no
└── replicatedjob (batch/v1 Job)
    ├── leader 1 replica 4 GPU
    └── worker 2 replicas 8 GPU

ROLE    COMPONENT      REPLICAS  GPU/POD  GPU  CPU                     MEMORY
leader  replicatedjob  1         4        4    >=9223372036854775807m  >=9223372036854775807
worker  replicatedjob  2         4        8    0                       0
total                  3                  12   >=9223372036854775807m  >=9223372036854775807

)");
}

TEST_CASE("inspect KIND/NAME prints cpu and memory of 1e30 as the bound, marked, in its resources table") {
  json view = karta::describe_live_workload(huge_requests(), jobset_definition(), "catalog", {}, {"nvidia.com/gpu"});
  std::string text = karta::render_live_workload(view, std::chrono::system_clock::time_point{});
  CHECK(text.substr(text.find("Resources:")) == R"(Resources:
COMPONENT   REPLICAS   GPU   CPU                      MEMORY
leader      1          4     >=9223372036854775807m   >=9223372036854775807
worker      2          8     0                        0
TOTAL       3          12    >=9223372036854775807m   >=9223372036854775807
)");
}

}  // namespace unit_quantity
