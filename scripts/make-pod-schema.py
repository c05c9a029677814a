#!/usr/bin/env python3
"""Writes definitions/api/pod-v1.json, an OpenAPI v3 schema of the core v1 Pod.

Definitions hold jq paths that are evaluated on Pods (podSelector's idPath and keyPath, gang scheduling's
filters and groupByKeyPaths, ...). Checking those paths needs a schema of Pod, and the API server's own
OpenAPI document is not available offline, so this script puts one together:

- `spec` (PodSpec) is copied from the JobSet CRD of the corpus (tests/corpus/crds/jobset.yaml, version
  v1alpha2), at .spec.versions[v1alpha2].schema.openAPIV3Schema.properties.spec.properties.replicatedJobs
  .items.properties.template.properties.spec.properties.template.properties.spec: JobSet embeds a whole
  batch/v1 JobTemplateSpec, whose PodTemplateSpec's spec is controller-gen's rendering of core v1 PodSpec.
  Every `description` is removed (only the schema keyword, never a field that happens to be named so);
- `metadata` (ObjectMeta) and `status` (PodStatus) are written by hand below, from the Kubernetes API
  reference (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/ and
  .../workload-resources/pod-v1/#PodStatus), with the list types of k8s.io/api's markers. A container
  status's `resources` and `allocatedResources` reuse the container's ResourceRequirements from the PodSpec
  above; `state` and `lastState` are left open (x-kubernetes-preserve-unknown-fields).

The output is JSON with sorted keys, so running the script again on the same input writes the same bytes.

Usage: scripts/make-pod-schema.py [--jobset tests/corpus/crds/jobset.yaml] [--output definitions/api/pod-v1.json]
(paths relative to the repository root).
"""

import argparse
import copy
import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Keys of a schema whose value is a map of field names to schemas.
SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
# Keys of a schema whose value is a schema or a list of schemas.
SCHEMA_VALUES = ("items", "additionalProperties", "not")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def strip_descriptions(schema):
    """A copy of `schema` without its `description` keywords, at every depth."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(field) for name, field in value.items()}
        elif key in SCHEMA_VALUES:
            out[key] = strip_descriptions(value)
        elif key in SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_descriptions(s) for s in value]
        else:
            out[key] = copy.deepcopy(value)  # default, enum, example: values, not schemas
    return out


def pod_spec_from_jobset(path):
    with open(path, encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d]
    crds = [d for d in documents if d.get("kind") == "CustomResourceDefinition"]
    if len(crds) != 1:
        sys.exit(f"{path}: expected one CustomResourceDefinition, found {len(crds)}")
    versions = [v for v in crds[0]["spec"]["versions"] if v["name"] == "v1alpha2"]
    if not versions:
        sys.exit(f"{path}: no version v1alpha2")
    schema = versions[0]["schema"]["openAPIV3Schema"]
    try:
        job_template = schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]["template"]
        pod_template = job_template["properties"]["spec"]["properties"]["template"]
        pod_spec = pod_template["properties"]["spec"]
    except KeyError as e:
        sys.exit(f"{path}: the PodSpec is not where expected (missing {e})")
    if "containers" not in pod_spec.get("properties", {}):
        sys.exit(f"{path}: the schema found has no containers: not a PodSpec")
    return strip_descriptions(pod_spec)


def string(**extra):
    return {"type": "string", **extra}


def integer(fmt):
    return {"type": "integer", "format": fmt}


def boolean():
    return {"type": "boolean"}


def timestamp():
    return {"type": "string", "format": "date-time"}


def string_map():
    return {"type": "object", "additionalProperties": {"type": "string"}}


def object_of(properties, required=None):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def list_of(items, list_type="atomic", keys=None):
    schema = {"type": "array", "items": items, "x-kubernetes-list-type": list_type}
    if keys:
        schema["x-kubernetes-list-map-keys"] = keys
    return schema


def object_meta():
    """meta/v1 ObjectMeta, the fields a client may see (selfLink, long deprecated, is left out)."""
    owner_reference = object_of(
        {
            "apiVersion": string(),
            "kind": string(),
            "name": string(),
            "uid": string(),
            "controller": boolean(),
            "blockOwnerDeletion": boolean(),
        },
        required=["apiVersion", "kind", "name", "uid"],
    )
    return object_of(
        {
            "name": string(),
            "generateName": string(),
            "namespace": string(),
            "uid": string(),
            "resourceVersion": string(),
            "generation": integer("int64"),
            "creationTimestamp": timestamp(),
            "deletionTimestamp": timestamp(),
            "deletionGracePeriodSeconds": integer("int64"),
            "labels": string_map(),
            "annotations": string_map(),
            "ownerReferences": list_of(owner_reference, "map", ["uid"]),
            "finalizers": list_of(string(), "set"),
            "managedFields": list_of({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        }
    )


def pod_status(pod_spec):
    """core/v1 PodStatus. Container resources are the PodSpec's ResourceRequirements and quantities."""
    container = pod_spec["properties"]["containers"]["items"]
    resources = copy.deepcopy(container["properties"]["resources"])
    quantity_map = copy.deepcopy(resources["properties"]["limits"])
    condition = object_of(
        {
            "type": string(),
            "status": string(),
            "reason": string(),
            "message": string(),
            "lastProbeTime": timestamp(),
            "lastTransitionTime": timestamp(),
            "observedGeneration": integer("int64"),
        },
        required=["type", "status"],
    )
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    container_status = object_of(
        {
            "name": string(),
            "ready": boolean(),
            "restartCount": integer("int32"),
            "image": string(),
            "imageID": string(),
            "containerID": string(),
            "started": boolean(),
            "state": open_object,
            "lastState": open_object,
            "resources": resources,
            "allocatedResources": quantity_map,
        },
        required=["name", "ready", "restartCount", "image", "imageID"],
    )
    ip = object_of({"ip": string()}, required=["ip"])
    return object_of(
        {
            "phase": string(enum=["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
            "conditions": list_of(condition, "map", ["type"]),
            "message": string(),
            "reason": string(),
            "nominatedNodeName": string(),
            "hostIP": string(),
            "hostIPs": list_of(ip),
            "podIP": string(),
            "podIPs": list_of(ip, "map", ["ip"]),
            "startTime": timestamp(),
            "qosClass": string(enum=["BestEffort", "Burstable", "Guaranteed"]),
            "initContainerStatuses": list_of(container_status),
            "containerStatuses": list_of(container_status),
            "ephemeralContainerStatuses": list_of(container_status),
            "resourceClaimStatuses": list_of(
                object_of({"name": string(), "resourceClaimName": string()}, required=["name"]), "map", ["name"]
            ),
            "resize": string(),
        }
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobset", default=os.path.join(ROOT, "tests/corpus/crds/jobset.yaml"))
    parser.add_argument("--output", default=os.path.join(ROOT, "definitions/api/pod-v1.json"))
    args = parser.parse_args()

    spec = pod_spec_from_jobset(args.jobset)
    pod = object_of(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": object_meta(),
            "spec": spec,
            "status": pod_status(spec),
        }
    )
    text = json.dumps(pod, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(args.output, ROOT)} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
