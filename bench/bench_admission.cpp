// The in-process cost of one admission, as the server pays it: AdmissionService::handle on an
// HttpRequest (decode the AdmissionReview bytes, find the definition, locate the pod templates, build
// the patch, encode the response). No socket, no TLS: scripts/load-test.sh measures those.
//
// Also start-up costs: loading and compiling the built-in catalog, and `karta-webhook validate` of the whole
// catalog against the corpus CRDs (validate/*).
//
// Every admission benchmark reports time per request and allocs/req, counted by the replaced global operator new
// of this binary. Logging is at warn, as scripts/load-test.sh runs the server (one variant shows the cost
// of the per-admission info line). Policy: examples/policy.yaml.
//
//   build/bench/bench_admission [--benchmark_filter=REGEX] [google benchmark flags]
//   build/bench/bench_admission --repeat=N --input=demo_jobset   (for scripts/count-instructions.sh; also
//   unknown_kind, raycluster_50_groups, jobset_2.5MB, and sample:NAME, the corpus's samples/NAME.yaml)

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "admission/admission_service.h"
#include "cli/commands.h"
#include "definitions/builtin_catalog.h"
#include "definitions/catalog.h"
#include "json/documents.h"
#include "policy/policy.h"
#include "runtime/admission_http.h"
#include "validate/crd_schema_set.h"

// ---- allocation counting: every operator new of the process ----

// Plain counters, not atomics: a locked add per allocation cost about 8% of a request in a first version,
// and every benchmark here runs on one thread (the process's other threads, if any, only add noise).
namespace {
struct Counter {
  std::uint64_t value = 0;
  std::uint64_t load() const { return value; }
  void add(std::uint64_t n) { value += n; }
};
Counter g_allocations;
Counter g_allocated_bytes;

void* counted_alloc(std::size_t size) {
  g_allocations.add(1);
  g_allocated_bytes.add(size);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* counted_aligned_alloc(std::size_t size, std::align_val_t alignment) {
  g_allocations.add(1);
  g_allocated_bytes.add(size);
  std::size_t a = static_cast<std::size_t>(alignment);
  void* p = nullptr;
  if (posix_memalign(&p, a < sizeof(void*) ? sizeof(void*) : a, size == 0 ? 1 : size) != 0) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t size, std::align_val_t a) { return counted_aligned_alloc(size, a); }
void* operator new[](std::size_t size, std::align_val_t a) { return counted_aligned_alloc(size, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using karta::json;
namespace fs = std::filesystem;

fs::path source_dir() {
  if (const char* dir = std::getenv("KARTA_SOURCE_DIR")) return dir;
  return KARTA_SOURCE_DIR;
}

fs::path corpus_dir() {
  if (const char* dir = std::getenv("KARTA_CORPUS_DIR")) return dir;
  return KARTA_CORPUS_DIR;
}

std::string review_body(const json& object, const std::string& uid = "705ab4f5-6393-11e8-b7cc-42010a800002") {
  const std::string api_version = object.value("apiVersion", "v1");
  auto slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  std::string kind = object.value("kind", "");
  std::string plural = kind;
  for (auto& c : plural) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  json metadata = object.value("metadata", json::object());
  json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", uid},
        {"kind", {{"group", group}, {"version", version}, {"kind", kind}}},
        {"resource", {{"group", group}, {"version", version}, {"resource", plural + "s"}}},
        {"requestKind", {{"group", group}, {"version", version}, {"kind", kind}}},
        {"name", metadata.value("name", "")},
        {"namespace", metadata.value("namespace", "default")},
        {"operation", "CREATE"},
        {"userInfo", {{"username", "kubernetes-admin"}, {"groups", {"system:masters", "system:authenticated"}}}},
        {"object", object},
        {"oldObject", nullptr},
        {"dryRun", false},
        {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
  return review.dump();
}

json first_document(const fs::path& file) { return karta::read_documents(file).at(0).value; }

json demo_jobset() { return first_document(source_dir() / "examples/jobset-demo.yaml"); }

// The demo JobSet as a kind no definition describes: admitted without work.
json unknown_kind_object() {
  json object = demo_jobset();
  object["apiVersion"] = "example.com/v1";
  object["kind"] = "Gizmo";
  return object;
}

// A sample of the corpus, in the namespace and with the team label the policy asks for.
json corpus_sample(const std::string& name) {
  json object = first_document(corpus_dir() / "samples" / (name + ".yaml"));
  object["metadata"]["namespace"] = "research";
  object["metadata"]["labels"]["team"] = "vision";
  return object;
}

// The corpus RayCluster with `groups` worker groups (copies of its worker group, renamed).
json large_raycluster(std::size_t groups) {
  json cluster = first_document(corpus_dir() / "samples/raycluster-1.yaml");
  cluster["metadata"]["namespace"] = "research";
  cluster["metadata"]["labels"]["team"] = "vision";
  json group = cluster["spec"]["workerGroupSpecs"].at(0);
  json all = json::array();
  for (std::size_t i = 0; i < groups; ++i) {
    json g = group;
    g["groupName"] = "workergroup-" + std::to_string(i);
    if (i % 2 == 0) g["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1;
    all.push_back(std::move(g));
  }
  cluster["spec"]["workerGroupSpecs"] = std::move(all);
  return cluster;
}

// The demo JobSet, grown to about `bytes` of review with configuration-like environment variables
// (what makes real objects big: inlined configuration, long command lines).
json large_jobset(std::size_t bytes) {
  json jobset = demo_jobset();
  std::size_t per_variable = 0;
  std::string value(200, 'v');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + (i * 7) % 26);
  json& jobs = jobset["spec"]["replicatedJobs"];
  std::size_t count = 0;
  while (jobset.dump().size() < bytes) {
    for (auto& job : jobs) {
      json& container = job["template"]["spec"]["template"]["spec"]["containers"][0];
      for (int k = 0; k < 100; ++k, ++count) {
        container["env"].push_back({{"name", "CONFIG_" + std::to_string(count)}, {"value", value}});
      }
    }
    (void)per_variable;
  }
  return jobset;
}

std::string synthetic_definition(int i) {
  std::string n = std::to_string(i);
  return "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata:\n  name: synthetic-" + n +
         "\nspec:\n  structureDefinition:\n    rootComponent:\n      name: widget\n"
         "      kind: {group: synthetic" + n + ".example.com, version: v1, kind: Widget" + n + "}\n"
         "      statusDefinition:\n        conditionsDefinition:\n          path: .status.conditions\n"
         "        statusMappings:\n          running:\n            - byConditions: [{type: Ready, status: \"True\"}]\n"
         "    childComponents:\n      - name: role\n        kind: {group: batch, version: v1, kind: Job}\n"
         "        ownerRef: widget\n        specDefinition:\n"
         "          podTemplateSpecPath: .spec.roles[].template\n"
         "        instanceIdPath: .spec.roles[].name\n"
         "        podSelector:\n          componentInstanceSelector: {idPath: '.metadata.labels.role'}\n"
         "        scaleDefinition:\n          replicasPath: .spec.roles[].replicas\n";
}

// The built-in catalog plus synthetic definitions of made-up kinds, `total` definitions in all.
karta::Catalog catalog_of(std::size_t total) {
  karta::Catalog catalog = karta::load_catalog(karta::CatalogSources{});
  for (int i = 0; catalog.size() < total; ++i) {
    for (auto& definition : karta::parse_definitions(synthetic_definition(i), "synthetic-" + std::to_string(i))) {
      catalog.add(karta::CompiledDefinition::compile(std::move(definition), 1));
    }
  }
  return catalog;
}

std::shared_ptr<karta::AdmissionService> service_with(karta::Catalog catalog) {
  auto state = std::make_shared<karta::AdmissionState>();
  state->catalog = std::move(catalog);
  state->policy = karta::load_policy(source_dir() / "examples/policy.yaml");
  auto service = std::make_shared<karta::AdmissionService>();
  service->update(std::move(state));
  return service;
}

int patch_operations(const karta::HttpResponse& response) {
  json review = json::parse(response.body);
  if (!review["response"].contains("patch")) return 0;
  // The base64 patch decoded only to count operations, once, outside the timed loop.
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string text = review["response"]["patch"].get<std::string>(), out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    buffer = (buffer << 6) | static_cast<unsigned>(alphabet.find(c));
    if ((bits += 6) >= 8) out.push_back(static_cast<char>((buffer >> (bits -= 8)) & 0xff));
  }
  return static_cast<int>(json::parse(out).size());
}

void run_handle(benchmark::State& state, std::shared_ptr<karta::AdmissionService> service, karta::HttpRequest request) {
  karta::HttpResponse first = karta::handle_admission(*service, karta::AdmissionEndpoint::Mutate, request);
  if (first.status != 200) {
    state.SkipWithError(("status " + std::to_string(first.status) + ": " + first.body).c_str());
    return;
  }
  std::uint64_t allocations = g_allocations.load(), bytes = g_allocated_bytes.load();
  for (auto _ : state) {
    karta::HttpResponse response = karta::handle_admission(*service, karta::AdmissionEndpoint::Mutate, request);
    benchmark::DoNotOptimize(response.body.data());
  }
  auto iterations = static_cast<double>(state.iterations());
  state.counters["allocs/req"] = static_cast<double>(g_allocations.load() - allocations) / iterations;
  state.counters["alloc_KB/req"] = static_cast<double>(g_allocated_bytes.load() - bytes) / iterations / 1024.0;
  state.counters["body_KB"] = static_cast<double>(request.body.size()) / 1024.0;
  state.counters["patch_ops"] = patch_operations(first);
  state.SetBytesProcessed(static_cast<std::int64_t>(request.body.size()) * state.iterations());
}

karta::HttpRequest mutate_request(std::string body) {
  return karta::HttpRequest{"POST", "/mutate", "timeout=10s", "application/json", std::move(body)};
}

// `--repeat=N --input=NAME`: N admissions of one input on the built-in catalog and nothing else (no other
// fixture is built), for scripts/count-instructions.sh, which runs this under callgrind twice and divides
// the difference in instructions by the difference in admissions: a figure the machine's load cannot move.
int repeat_admissions(const std::string& input, long count) {
  auto service = service_with(karta::load_catalog(karta::CatalogSources{}));
  std::string body;
  if (input == "demo_jobset") {
    body = review_body(demo_jobset());
  } else if (input == "unknown_kind") {
    body = review_body(unknown_kind_object());
  } else if (input == "raycluster_50_groups") {
    body = review_body(large_raycluster(50));
  } else if (input == "jobset_2.5MB") {
    body = review_body(large_jobset(2'500'000));
  } else if (input.starts_with("sample:") && fs::is_regular_file(corpus_dir() / "samples" / (input.substr(7) + ".yaml"))) {
    body = review_body(corpus_sample(input.substr(7)));
  } else {
    std::fprintf(stderr,
                 "--input: demo_jobset, unknown_kind, raycluster_50_groups, jobset_2.5MB or sample:NAME (a file "
                 "samples/NAME.yaml of the corpus), not \"%s\"\n",
                 input.c_str());
    return 2;
  }
  const karta::HttpRequest request = mutate_request(std::move(body));
  std::size_t bytes = 0;
  for (long i = 0; i < count; ++i) {
    karta::HttpResponse response = karta::handle_admission(*service, karta::AdmissionEndpoint::Mutate, request);
    if (response.status != 200) {
      std::fprintf(stderr, "status %d: %s\n", response.status, response.body.c_str());
      return 1;
    }
    bytes += response.body.size();
  }
  std::printf("%ld admissions of %s, %zu response bytes\n", count, input.c_str(), bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]).starts_with("--repeat=") &&
      std::string_view(argv[2]).starts_with("--input=")) {
    spdlog::set_level(spdlog::level::warn);
    return repeat_admissions(argv[2] + 8, std::strtol(argv[1] + 9, nullptr, 10));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  spdlog::set_level(spdlog::level::warn);

  auto builtin = service_with(karta::load_catalog(karta::CatalogSources{}));
  const std::size_t builtin_size = builtin->state()->catalog.size();
  auto fifty = service_with(catalog_of(50));
  auto five_hundred = service_with(catalog_of(500));

  std::string demo = review_body(demo_jobset());
  std::string ray = review_body(large_raycluster(50));
  std::string big = review_body(large_jobset(2'500'000));
  std::string unknown = review_body(unknown_kind_object());

  auto add = [](const std::string& name, std::shared_ptr<karta::AdmissionService> service, const std::string& body) {
    return benchmark::RegisterBenchmark(name.c_str(), [service, body](benchmark::State& s) {
      run_handle(s, service, mutate_request(body));
    });
  };
  const std::string b = std::to_string(builtin_size);
  add("handle/demo_jobset/catalog:" + b, builtin, demo);
  add("handle/demo_jobset/catalog:50", fifty, demo);
  add("handle/demo_jobset/catalog:500", five_hundred, demo);
  add("handle/unknown_kind/catalog:" + b, builtin, unknown);
  add("handle/unknown_kind/catalog:50", fifty, unknown);
  add("handle/unknown_kind/catalog:500", five_hundred, unknown);
  add("handle/raycluster_50_groups/catalog:50", fifty, ray);
  add("handle/jobset_2.5MB/catalog:50", fifty, big)->Unit(benchmark::kMillisecond);
  // Kinds whose admission ran jq until the native grammar read their expressions (tenth round).
  for (const char* sample : {"leaderworkerset-1", "pytorchjob-1", "knativeservice-1", "milvus-1"}) {
    add(std::string("handle/sample:") + sample + "/catalog:" + b, builtin, review_body(corpus_sample(sample)));
  }

  // The per-admission info log line, written to a sink that discards it (formatting cost only).
  benchmark::RegisterBenchmark("handle/demo_jobset/catalog:50/info_log_to_null_sink", [fifty, demo](benchmark::State& s) {
    auto previous = spdlog::default_logger();
    auto null_logger = std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>());
    spdlog::set_default_logger(null_logger);
    spdlog::set_level(spdlog::level::info);
    run_handle(s, fifty, mutate_request(demo));
    spdlog::set_default_logger(previous);
    spdlog::set_level(spdlog::level::warn);
  });

  // Finding the definition alone.
  for (auto [name, service] : {std::pair{"catalog_find/catalog:" + b, builtin}, std::pair{std::string("catalog_find/catalog:50"), fifty},
                               std::pair{std::string("catalog_find/catalog:500"), five_hundred}}) {
    benchmark::RegisterBenchmark(name.c_str(), [service](benchmark::State& s) {
      const karta::Catalog& catalog = service->state()->catalog;
      karta::GroupVersionKind kind{"jobset.x-k8s.io", "v1alpha2", "JobSet"};
      std::uint64_t allocations = g_allocations.load();
      for (auto _ : s) benchmark::DoNotOptimize(catalog.find(kind));
      s.counters["allocs/req"] = static_cast<double>(g_allocations.load() - allocations) / static_cast<double>(s.iterations());
    });
  }

  // Start-up: the built-in catalog parsed, and parsed and compiled (jq compiles each program once).
  benchmark::RegisterBenchmark("catalog/parse_builtin", [](benchmark::State& s) {
    for (auto _ : s) {
      std::size_t n = 0;
      for (const auto& file : karta::builtin_catalog_files()) n += karta::parse_definitions(file.text, std::string(file.name)).size();
      benchmark::DoNotOptimize(n);
    }
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("catalog/load_and_compile_builtin", [](benchmark::State& s) {
    std::uint64_t allocations = g_allocations.load();
    std::size_t size = 0;
    for (auto _ : s) size = karta::load_catalog(karta::CatalogSources{}).size();
    s.counters["definitions"] = static_cast<double>(size);
    s.counters["allocs"] = static_cast<double>(g_allocations.load() - allocations) / static_cast<double>(s.iterations());
  })->Unit(benchmark::kMillisecond);
  // What loading no longer pays: the built-in catalog's jq is compiled on first use (JqCompilation::OnFirstUse).
  // This compiles every program of it once, one state each, as `inspect` over every kind would; serve
  // compiles only the structure programs, off its admission threads. Nearly all of it is libjq 1.6 binding
  // its builtin library again for each program.
  benchmark::RegisterBenchmark("catalog/compile_builtin_jq_programs", [](benchmark::State& s) {
    std::size_t programs = 0;
    for (auto _ : s) {
      s.PauseTiming();
      karta::Catalog catalog = karta::load_catalog(karta::CatalogSources{});
      s.ResumeTiming();
      programs = 0;
      for (const auto& definition : catalog.definitions()) {
        for (auto group : {karta::ExpressionGroup::Structure, karta::ExpressionGroup::Status, karta::ExpressionGroup::Pod}) {
          if (const karta::JqProgram* program = definition->bundle(group)) programs += program->prepare() ? 1 : 0;
        }
      }
    }
    s.counters["programs"] = static_cast<double>(programs);
  })->Unit(benchmark::kMillisecond);

  // Offline validation, as `karta-webhook validate -f definitions/catalog --crds tests/corpus/crds` runs it:
  // read every CRD of the corpus (16 files, 15 MB of YAML, the 2.7 MB LLMInferenceService CRD among them),
  // then check each catalog definition's paths against its kind's schema. The CRDs alone, and the largest
  // one alone, show where the time goes.
  const std::string catalog_dir = std::string(KARTA_SOURCE_DIR) + "/definitions/catalog";
  const std::string crds_dir = std::string(KARTA_CORPUS_DIR) + "/crds";
  benchmark::RegisterBenchmark("validate/catalog_against_corpus_crds", [catalog_dir, crds_dir](benchmark::State& s) {
    std::vector<std::string> args = {"karta-webhook", "validate", "-f", catalog_dir, "--crds", crds_dir};
    std::string last;
    for (auto _ : s) {
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      std::ostringstream out, err;
      if (karta::run_command_line(static_cast<int>(argv.size()), argv.data(), out, err) != 0) {
        s.SkipWithError(("validate failed: " + out.str() + err.str()).c_str());
        return;
      }
      last = out.str();
    }
    // The summary line: "<n> definitions, 0 with faults".
    s.counters["definitions"] = std::stod(last.substr(last.rfind('\n', last.size() - 2) + 1));
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("validate/load_corpus_crds", [crds_dir](benchmark::State& s) {
    std::size_t versions = 0;
    for (auto _ : s) versions = karta::CrdSchemaSet::load_directory(crds_dir).size();
    s.counters["schemas"] = static_cast<double>(versions);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("validate/load_crd/llminferenceservice_2.7MB", [crds_dir](benchmark::State& s) {
    const std::filesystem::path file = std::filesystem::path(crds_dir) / "llminferenceservice.yaml";
    for (auto _ : s) {
      karta::CrdSchemaSet set;
      for (const auto& document : karta::read_documents(file)) set.add_crd(document.value);
      benchmark::DoNotOptimize(set.size());
    }
    s.SetBytesProcessed(static_cast<std::int64_t>(std::filesystem::file_size(file)) * s.iterations());
  })->Unit(benchmark::kMillisecond);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
