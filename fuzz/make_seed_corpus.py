#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into fuzz/corpus/<target>/seed-*.

    fuzz/make_seed_corpus.py [CORPUS_DIR]    CORPUS_DIR defaults to tests/corpus

Seeds are small (a few KB): real AdmissionReviews built from the shared corpus samples, hostile ones
(truncated, deeply nested, wrong types, odd shapes), the catalog definitions, policies, and pairs of a
path expression and a document. Inputs found by libFuzzer are kept beside them under their SHA-1 names;
this script rewrites only seed-* files. Needs PyYAML (python3-yaml).
"""
import glob
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests", "corpus")
MAX_SEED = 6 * 1024


def out(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def compact(value):
    return json.dumps(value, separators=(",", ":"), sort_keys=False)


def review(obj, operation="CREATE", uid="b1c2d3e4-0000-4000-8000-000000000001", **extra):
    api_version = obj.get("apiVersion", "v1") if isinstance(obj, dict) else "v1"
    group, _, version = api_version.rpartition("/")
    kind = obj.get("kind", "Pod") if isinstance(obj, dict) else "Pod"
    meta = obj.get("metadata", {}) if isinstance(obj, dict) else {}
    request = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": obj,
        "oldObject": None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    request.update(extra)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def load_yaml(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def admission_seeds():
    t = "fuzz_admission_review"
    samples = sorted(glob.glob(os.path.join(SHARED, "samples", "*.yaml")))
    demo = load_yaml(os.path.join(REPO, "examples", "jobset-demo.yaml"))[0]
    objects = {"jobset-demo": demo}
    for path in samples:
        for i, doc in enumerate(load_yaml(path)):
            objects[os.path.basename(path)[:-5] + ("" if i == 0 else "-%d" % i)] = doc
    for name, obj in objects.items():
        obj.setdefault("metadata", {}).setdefault("namespace", "research")
        text = compact(review(obj))
        if len(text) <= MAX_SEED:
            out(t, "sample-%s.json" % name, text)

    demo_review = review(demo)
    text = compact(demo_review)
    # Truncated, at several places.
    for cut in (1, len(text) // 3, len(text) // 2, len(text) - 1):
        out(t, "hostile-truncated-%d.json" % cut, text[:cut])
    # Nesting at and past the limit (1000), inside the object and as the whole body.
    deep = text.replace('"spec":{', '"spec":{"deep":' + "[" * 990 + "]" * 990 + ",", 1)
    out(t, "hostile-deep-990-in-object.json", deep)
    out(t, "hostile-deep-1001-body.json", "[" * 1001 + "]" * 1001)
    out(t, "hostile-deep-unclosed.json", '{"a":' * 3000)
    # Wrong types in the envelope.
    for name, path, value in [
        ("uid-number", ("request", "uid"), 42),
        ("uid-empty", ("request", "uid"), ""),
        ("kind-string", ("request", "kind"), "JobSet"),
        ("object-array", ("request", "object"), [1, 2]),
        ("object-string", ("request", "object"), "spec"),
        ("dryrun-string", ("request", "dryRun"), "true"),
        ("operation-lower", ("request", "operation"), "create"),
        ("userinfo-list", ("request", "userInfo"), ["admin"]),
        ("resource-number", ("request", "resource"), 7),
        ("request-null", ("request",), None),
        ("apiversion-v1beta1", ("apiVersion",), "admission.k8s.io/v1beta1"),
    ]:
        r = json.loads(text)
        cur = r
        for key in path[:-1]:
            cur = cur[key]
        cur[path[-1]] = value
        out(t, "hostile-type-%s.json" % name, compact(r))
    # Out-of-scope requests admitted cheaply.
    out(t, "delete.json", compact(review(demo, "DELETE", oldObject=demo, object=None)))
    out(t, "dry-run.json", compact(review(demo, dryRun=True)))
    out(t, "subresource-status.json", compact(review(demo, "UPDATE", subResource="status")))
    out(t, "update.json", compact(review(demo, "UPDATE", oldObject=demo)))
    unknown = dict(demo, apiVersion="example.com/v1", kind="Widget")
    out(t, "unknown-kind.json", compact(review(unknown)))
    knative = {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
               "metadata": {"name": "hello", "namespace": "default"},
               "spec": {"template": {"spec": {"containers": [{"image": "hello"}]}}}}
    out(t, "knative-service.json", compact(review(knative)))
    core_service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    out(t, "core-service.json", compact(review(core_service)))
    # Odd shapes of a registered kind.
    odd = json.loads(compact(demo))
    odd["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"] = ["a", "b"]
    odd["spec"]["replicatedJobs"][1]["template"]["spec"]["template"] = "not a template"
    out(t, "odd-labels-list-template-string.json", compact(review(odd)))
    odd = json.loads(compact(demo))
    odd["spec"]["replicatedJobs"] = {"leader": odd["spec"]["replicatedJobs"][0]}
    out(t, "odd-replicatedjobs-map.json", compact(review(odd)))
    odd = json.loads(compact(demo))
    odd["metadata"]["labels"] = None
    odd["metadata"]["annotations"] = {"platform.example.com/gpu-total": 12}
    c = odd["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    c["resources"]["limits"]["nvidia.com/gpu"] = "1e308"
    odd["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"] = {"x": {}}
    out(t, "odd-nulls-strings-numbers.json", compact(review(odd)))
    odd = json.loads(compact(demo))
    for job in odd["spec"]["replicatedJobs"]:
        job["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
            "limits": {"nvidia.com/gpu": 1.5e300}, "requests": {"nvidia.com/gpu": "500m"}}
        job["replicas"] = -3
    odd["metadata"]["name"] = "d\u00e9mo-\u2603~/x"
    odd["metadata"]["labels"]["team"] = "Vision Team!"
    out(t, "odd-numbers-unicode-bad-team.json", compact(review(odd)))
    # A number past a double (1e400): finding F1, kept in fuzz/findings/, not in the corpus.
    # out(t, "number-overflow.json", text.replace('"replicas":1', '"replicas":1e400', 1))
    out(t, "empty.json", "")
    out(t, "null.json", "null")
    out(t, "array.json", "[]")
    out(t, "duplicate-keys.json", text.replace('"kind":"AdmissionReview"', '"kind":"AdmissionReview","kind":"AdmissionReview"'))


def definition_seeds():
    t = "fuzz_definition_loader"
    for path in sorted(glob.glob(os.path.join(REPO, "definitions", "catalog", "*.yaml"))):
        with open(path) as f:
            text = f.read()
        out(t, "catalog-" + os.path.basename(path), text)
    minimal = """apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: widget}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings: {running: [{byPhase: Running}]}
      specDefinition:
        podTemplateSpecPath: .spec.template
"""
    out(t, "minimal.yaml", minimal)
    out(t, "minimal.json", compact(yaml.safe_load(minimal)))
    out(t, "bad-jq.yaml", minimal.replace(".spec.template", "'.spec | [.a'"))
    out(t, "jq-expression.yaml", minimal.replace(".spec.template", "'.spec.templates[]? // .spec.template'"))
    out(t, "unknown-field.yaml", minimal.replace("specDefinition:", "bogus: 1\n      specDefinition:"))
    out(t, "two-docs-and-other-kinds.yaml", minimal + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" +
        minimal.replace("Widget", "Gadget"))
    out(t, "aliases.yaml", "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n" + minimal)
    out(t, "deep.yaml", "a: " + "[" * 300 + "]" * 300 + "\n")
    out(t, "tags.yaml", minimal.replace("name: widget\n", "name: !!int 5\n", 1))
    out(t, "resource-interface.yaml", """apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: widget}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings: {running: [{byPhase: Running}]}
      specDefinition:
        podSpecPath: .spec.podSpec
        metadataPath: .spec.podMeta
""")


def policy_seeds():
    t = "fuzz_policy_loader"
    with open(os.path.join(REPO, "examples", "policy.yaml")) as f:
        example = f.read()
    out(t, "example.yaml", example)
    with open(os.path.join(HERE, "fuzz_support.h")) as f:
        header = f.read()
    everything = re.search(r'kEverythingPolicy = R"\((.*?)\)";', header, re.S).group(1)
    out(t, "everything.yaml", everything)
    out(t, "readme.yaml", 'podTemplates:\n  labels: {platform.example.com/managed: "true"}\n'
        '  annotations: {platform.example.com/owner: platform}\n  overwrite: false\n')
    out(t, "empty.yaml", "")
    out(t, "unknown-field.yaml", "podTemplates:\n  labelz: {}\n")
    out(t, "bad-label-key.yaml", 'podTemplates:\n  labels: {"-bad/key-": "x"}\n')
    out(t, "bad-value.yaml", "podTemplates:\n  labels: {a: 5}\n")
    out(t, "bad-regex.yaml", 'labelPolicy:\n  workload:\n    allowed: {team: "([a-z"}\n')
    out(t, "placeholder-unknown.yaml", 'podTemplates:\n  labels: {a: "{{nope}}"}\n')
    out(t, "placeholder-unterminated.yaml", 'podTemplates:\n  annotations: {a: "{{name"}\n')
    out(t, "tolerations.yaml", "gpu:\n  tolerations: [{key: a, operator: Equal, value: b, effect: NoExecute, tolerationSeconds: 5}]\n"
        "  nodeSelector: {gpu: 'yes'}\n  resourceNames: [nvidia.com/gpu, nvidia.com/mig-1g.5gb]\n")
    out(t, "two-docs.yaml", "podTemplates: {}\n---\nscheduling: {schedulerName: x}\n")
    out(t, "json.json", compact(yaml.safe_load(example)))


def path_seeds():
    t = "fuzz_path_evaluation"
    simple = re.compile(r'^(\.[A-Za-z_][A-Za-z0-9_]*|\[\]|\[[0-9]+\]|\["[^"\\]*"\]|\."[^"\\]*")+$')
    # The simple paths of each catalog definition, by the root kind it describes.
    by_kind = {}
    for path in sorted(glob.glob(os.path.join(REPO, "definitions", "catalog", "*.yaml"))):
        for doc in load_yaml(path):
            kind = doc["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"]
            found = by_kind.setdefault(kind, [])

            def walk(v):
                if isinstance(v, dict):
                    for x in v.values():
                        if isinstance(x, str) and simple.match(x.strip()) and x.strip() not in found:
                            found.append(x.strip())
                        walk(x)
                elif isinstance(v, list):
                    for x in v:
                        walk(x)
            walk(doc)
    # Each small sample with up to four paths of its kind's definition.
    for path in sorted(glob.glob(os.path.join(SHARED, "samples", "*.yaml"))):
        doc = load_yaml(path)[0]
        text = compact(doc)
        if len(text) > 3000:
            continue
        name = os.path.basename(path)[:-5]
        paths = sorted(by_kind.get(doc.get("kind"), []), key=lambda e: not e.startswith(".spec"))
        for i, e in enumerate(paths[:4]):
            out(t, "sample-%s-%d" % (name, i), e + "\n" + text)
    handmade = [
        (".", '{"a":1}'),
        (".[0]", "[1,2]"),
        (".[]", '{"b":{"t":1},"a":{"t":2}}'),
        (".a[].t", '{"a":[{"t":{"x":1}},{"t":null},{"u":2}]}'),
        ('.spec["pytorchReplicaSpecs"][].template', '{"spec":{"pytorchReplicaSpecs":{"Worker":{"template":1},"Master":{}}}}'),
        ('.metadata."kai.scheduler/queue"', '{"metadata":{"kai.scheduler/queue":"q"}}'),
        ('.m["a~b"]["c/d"]', '{"m":{"a~b":{"c/d":0}}}'),
        ('."quoted \\"field\\""', '{"quoted \\"field\\"":true}'),
        (".a[5]", '{"a":[1]}'),
        (".a[999999999]", "null"),
        (".s.x", '{"s":"text"}'),
        (".s[]", '{"s":"text"}'),
        (".n[]", '{"n":null}'),
        (".a[].b[]", '{"a":[{"b":[1]},{"b":null},{"b":[2]}]}'),
        (".arr.x", '{"arr":[1]}'),
        ('.a["k"]', '{"a":[1]}'),
        (".x[0]", '{"x":{"0":1}}'),
        (".a.b.c.d", '{"a":{"b":7}}'),
        (" .a ", '{"a":1}'),
        (".a", ""),
        (".\u00e9t\u00e9", '{"\u00e9t\u00e9":1}'),
        ('.["\u00e9t\u00e9"]', '{"\u00e9t\u00e9":1}'),
        (".a[]", '{"a":[' + ",".join(str(i) for i in range(100)) + "]}"),
        (".a[0]", '{"a":[9007199254740993, 1e308, -0.0]}'),
        (".a", '{"a":9007199254740993}'),
    ]
    for i, (e, d) in enumerate(handmade):
        out(t, "handmade-%02d" % i, e + "\n" + d if d else e)


if __name__ == "__main__":
    admission_seeds()
    definition_seeds()
    policy_seeds()
    path_seeds()
