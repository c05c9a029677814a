#!/usr/bin/env python3
"""A Kubernetes API server double for scripts/scale-test.sh (issue 48), and the measuring helpers it runs.

  scale-api-double.py serve --n N --cert F --key F --token-file F --port-file F [--repo DIR] [...]

serves over HTTPS on 127.0.0.1, with bearer-token auth (401 without the token), as kube-apiserver does:
  - GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions: LIST with ?limit= and ?continue= paging
    (continue tokens into the snapshot the first page was read at, metadata.resourceVersion,
    remainingItemCount), ?fieldSelector=metadata.name=X; full objects, or a meta.k8s.io/v1
    PartialObjectMetadataList when the Accept header asks `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
    (a PartialObjectMetadata asked of a list, or a list asked of an object, is a 406, as the real server
    answers); GET .../customresourcedefinitions/NAME (full, or `as=PartialObjectMetadata`);
    ?watch=1&resourceVersion=&allowWatchBookmarks=true&timeoutSeconds=: a chunked stream, one JSON event a
    line (ADDED, MODIFIED, DELETED, BOOKMARK every --bookmark-interval s), ending at timeoutSeconds; a
    resourceVersion older than the kept history (--history events) gets an ERROR event holding a Status
    of code 410 (reason Expired), as the watch cache sends it; an expired continue token a 410 answer.
  - the same for /apis/run.ai/v1alpha1/kartas (empty) and /api/v1/namespaces (four namespaces);
  - discovery: /version, /api, /api/v1, /apis, /apis/GROUP/VERSION (from the CRDs served);
  - control (same token): POST /control/event {"type": "MODIFIED", "crd": NAME, "bump": true,
    "schema": false} (bump: a label and the resourceVersion; schema: a new property in every version's
    spec schema, generation + 1), {"type": "ADDED"} (one more unrelated copy), {"type": "DELETED", "crd":
    NAME}; {"unrelated": I} instead of "crd" names the I-th unrelated copy. GET /control/names (the
    unrelated and used CRDs), GET /control/stats (requests and bytes by kind), POST /control/compact
    (forget the history: watches from before now get 410), POST /control/close-watches (end open streams).

The CRDs: N renamed copies of tests/corpus/crds/*.yaml (copy i of file i mod 26, group
scaleIIII.example.com, name PLURAL.scaleIIII.example.com), which no definition uses, plus the corpus CRDs
whose kinds the built-in catalog (definitions/catalog) names and the Karta CRD itself. The two MPIJob
files (v1 and v2beta1) become one CRD, mpijobs.kubeflow.org serving both, as a cluster can hold only one.
The corpus is parsed once (PyYAML) and its JSON cached in --cache-dir; each copy shares the serialised
spec.versions of its source (the bulk of the bytes).

Helpers scale-test.sh runs (see their --help): ready, measure.
"""

import argparse
import base64
import copy
import glob
import hashlib
import http.client
import http.server
import json
import os
import queue
import re
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KARTA_PATH = "/apis/run.ai/v1alpha1/kartas"
NAMESPACE_PATH = "/api/v1/namespaces"
CREATED = "2026-01-01T00:00:00Z"


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def status_body(code, reason, message, details=None):
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
              "reason": reason, "code": code}
    if details:
        status["details"] = details
    return status


# ---------------------------------------------------------------------------------------------- objects

class Item:
    """One object of a collection: its metadata, and its serialised body after "metadata" (shared)."""

    __slots__ = ("name", "metadata", "meta_bytes", "rest", "size")

    def __init__(self, name, metadata, rest):
        self.name = name
        self.metadata = metadata
        self.meta_bytes = dumps(metadata)
        self.rest = rest  # list of bytes: what follows the metadata in the object, up to its closing brace
        self.size = None

    def full_parts(self, typemeta):
        # typemeta: b'"kind":...,"apiVersion":...,' or b''
        return [b"{", typemeta, b'"metadata":', self.meta_bytes] + self.rest

    def partial_bytes(self):
        return b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":' + self.meta_bytes + b"}"


class Collection:
    """A collection with snapshots (for continue tokens) and a bounded event history (for watches)."""

    def __init__(self, server, path, api_version, kind, typemeta_in_list):
        self.server = server
        self.path = path
        self.api_version = api_version
        self.kind = kind
        self.typemeta = ('"kind":"%s","apiVersion":"%s",' % (kind, api_version)).encode()
        self.typemeta_in_list = typemeta_in_list
        self.items = {}          # name -> Item, now
        self.names = []          # sorted
        self.snapshots = {}      # resourceVersion -> (names, items), the last --history ones
        self.snapshot_order = []
        self.events = []         # (rv, type, Item), the last --history ones
        self.floor = 0           # a watch from a resourceVersion below this is too old

    def snapshot(self, rv):
        self.snapshots[rv] = (self.names, self.items)
        self.snapshot_order.append(rv)
        while len(self.snapshot_order) > self.server.history:
            del self.snapshots[self.snapshot_order.pop(0)]

    def apply(self, rv, kind, item):
        items = dict(self.items)
        if kind == "DELETED":
            items.pop(item.name, None)
        else:
            items[item.name] = item
        if kind != "MODIFIED":
            self.names = sorted(items)
        self.items = items
        self.snapshot(rv)
        self.events.append((rv, kind, item))
        if len(self.events) > self.server.history:
            dropped = self.events.pop(0)
            self.floor = dropped[0]


class Corpus:
    """The corpus CRDs, parsed once, with the serialised spec.versions of each file."""

    def __init__(self, repo, cache_dir):
        files = sorted(glob.glob(os.path.join(repo, "tests/corpus/crds/*.yaml")))
        if not files:
            sys.exit("scale-api-double: no CRDs in %s/tests/corpus/crds" % repo)
        extra = [os.path.join(repo, "definitions/api/run.ai_kartas.yaml")]
        digest = hashlib.sha256()
        for path in files + extra:
            with open(path, "rb") as f:
                digest.update(path.encode() + b"\0" + f.read())
        cache = os.path.join(cache_dir, "corpus-%s.json" % digest.hexdigest()[:16]) if cache_dir else None
        data = None
        if cache and os.path.exists(cache):
            with open(cache, "rb") as f:
                data = json.load(f)
        if data is None:
            import yaml  # python3-yaml
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            data = {}
            for path in files + extra:
                with open(path, "rb") as f:
                    docs = [d for d in yaml.load_all(f, Loader=loader) if d]
                data[path] = docs[0]
            if cache:
                os.makedirs(cache_dir, exist_ok=True)
                with open(cache + ".tmp", "wb") as f:
                    f.write(dumps(data))
                os.replace(cache + ".tmp", cache)
        self.files = [(os.path.basename(p), data[p]) for p in files]
        self.karta_crd = data[extra[0]]
        # The kinds the built-in catalog names.
        self.used_kinds = set()
        for path in glob.glob(os.path.join(repo, "definitions/catalog/*.yaml")):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for group, kind in re.findall(r"rootComponent:\s*\n\s*name:[^\n]*\n\s*kind:\s*\{group:\s*\"?([^,\"]*)\"?,"
                                          r"\s*version:[^,]*,\s*kind:\s*([A-Za-z0-9]+)\}", text):
                self.used_kinds.add((group, kind))
        # Serialised once per file: "spec.versions", which holds nearly all of the bytes.
        self.versions_bytes = {name: dumps(crd["spec"]["versions"]) for name, crd in self.files}


def crd_status(spec):
    storage = [v["name"] for v in spec.get("versions", []) if v.get("storage")]
    return {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": CREATED, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": CREATED,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": spec["names"],
        "storedVersions": storage[:1],
    }


def crd_item(name, labels, annotations, spec_without_versions, versions_bytes, rv, generation=1):
    metadata = {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, "crd/" + name)),
                "resourceVersion": str(rv), "generation": generation, "creationTimestamp": CREATED}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    head = dumps(spec_without_versions)[:-1] + b',"versions":'
    status = crd_status(dict(spec_without_versions, versions=spec_versions_light(versions_bytes)))
    rest = [b',"spec":' + head, versions_bytes, b'},"status":' + dumps(status) + b"}"]
    return Item(name, metadata, rest)


def spec_versions_light(versions_bytes):
    # crd_status needs only the names and storage flags; json.loads of the whole schema once per copy
    # would cost seconds at N=1000, so this is cached by the bytes object's identity.
    key = id(versions_bytes)
    found = _LIGHT.get(key)
    if found is None or found[0] is not versions_bytes:
        light = [{"name": v["name"], "storage": v.get("storage", False)} for v in json.loads(versions_bytes)]
        found = _LIGHT[key] = (versions_bytes, light)
    return found[1]


_LIGHT = {}


# ---------------------------------------------------------------------------------------------- the double

class State:
    def __init__(self, args):
        self.history = args.history
        self.lock = threading.Condition()
        self.rv = 1000
        self.stats = {}
        self.bump = 0
        self.watch_epoch = 0  # close-watches moves it on
        started = time.time()
        corpus = Corpus(args.repo, args.cache_dir)
        self.corpus = corpus
        self.crds = Collection(self, CRD_PATH, "apiextensions.k8s.io/v1", "CustomResourceDefinition", False)
        self.kartas = Collection(self, KARTA_PATH, "run.ai/v1alpha1", "Karta", True)
        self.namespaces = Collection(self, NAMESPACE_PATH, "v1", "Namespace", False)
        self.collections = {c.path: c for c in (self.crds, self.kartas, self.namespaces)}
        self.specs = {}  # name -> (spec without versions, versions as parsed or None, versions bytes, labels, annotations)
        self.unrelated = []
        self.used = []
        for i in range(args.n):
            self.add_copy(i, initial=True)
        # The real CRDs the catalog uses, and the Karta CRD.
        real = {}
        for file_name, crd in corpus.files:
            spec = crd["spec"]
            if (spec["group"], spec["names"]["kind"]) not in corpus.used_kinds:
                continue
            name = crd["metadata"]["name"]
            if name in real:  # the two MPIJob files: one CRD serving both versions
                merged = copy.deepcopy(real[name])
                extra = [dict(v, storage=False) for v in spec["versions"]
                         if v["name"] not in {w["name"] for w in merged["spec"]["versions"]}]
                merged["spec"]["versions"] = merged["spec"]["versions"] + extra
                real[name] = merged
            else:
                real[name] = crd
        real[corpus.karta_crd["metadata"]["name"]] = corpus.karta_crd
        for name in sorted(real):
            crd = real[name]
            spec = dict(crd["spec"])
            versions = spec.pop("versions")
            self.rv += 1
            self.specs[name] = [spec, versions, dumps(versions), crd["metadata"].get("labels"),
                                crd["metadata"].get("annotations"), 1]
            self.crds.items[name] = self.make_crd(name, self.rv)
            self.used.append(name)
        self.crds.names = sorted(self.crds.items)
        for ns in ("default", "karta-system", "kube-public", "kube-system"):
            self.rv += 1
            metadata = {"name": ns, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, "ns/" + ns)),
                        "resourceVersion": str(self.rv), "creationTimestamp": CREATED,
                        "labels": {"kubernetes.io/metadata.name": ns}}
            self.namespaces.items[ns] = Item(ns, metadata, [b',"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}'])
        self.namespaces.names = sorted(self.namespaces.items)
        for c in self.collections.values():
            c.snapshot(self.rv)
            c.floor = self.rv
        self.full_bytes = sum(self.item_size(i) for i in self.crds.items.values())
        print("scale-api-double: %d CRDs (%d unrelated copies, %d used by the catalog), %.1f MB of JSON in full "
              "form, built in %.1f s" % (len(self.crds.items), len(self.unrelated), len(self.used),
                                         self.full_bytes / 1e6, time.time() - started), file=sys.stderr, flush=True)

    def item_size(self, item):
        if item.size is None:
            item.size = sum(len(p) for p in item.full_parts(b""))
        return item.size

    def add_copy(self, i, initial=False):
        file_name, crd = self.corpus.files[i % len(self.corpus.files)]
        group = "scale%04d.example.com" % i
        spec = dict(crd["spec"])
        spec.pop("versions")
        spec["group"] = group
        name = "%s.%s" % (spec["names"]["plural"], group)
        self.rv += 1
        self.specs[name] = [spec, None, self.corpus.versions_bytes[file_name], crd["metadata"].get("labels"),
                            crd["metadata"].get("annotations"), 1]
        item = self.make_crd(name, self.rv)
        self.unrelated.append(name)
        if initial:
            self.crds.items[name] = item
        return item

    def make_crd(self, name, rv):
        spec, versions, versions_bytes, labels, annotations, generation = self.specs[name]
        return crd_item(name, labels, annotations, spec, versions_bytes, rv, generation)

    def count(self, key, n=1):
        self.stats[key] = self.stats.get(key, 0) + n

    # control
    def event(self, request):
        with self.lock:
            kind = request.get("type", "MODIFIED")
            name = request.get("crd")
            if name is None and "unrelated" in request:
                if not self.unrelated:
                    raise KeyError("there is no unrelated CRD (N=0)")
                name = self.unrelated[int(request["unrelated"]) % len(self.unrelated)]
            if kind == "ADDED":
                item = self.add_copy(len(self.unrelated))
                self.crds.apply(self.rv, "ADDED", item)
            elif kind == "DELETED":
                if name not in self.crds.items:
                    raise KeyError("no CRD " + str(name))
                self.rv += 1
                old = self.crds.items[name]
                metadata = dict(old.metadata, resourceVersion=str(self.rv))
                item = Item(name, metadata, old.rest)
                self.crds.apply(self.rv, "DELETED", item)
                if name in self.unrelated:
                    self.unrelated.remove(name)
            elif kind == "MODIFIED":
                if name not in self.crds.items:
                    raise KeyError("no CRD " + str(name))
                entry = self.specs[name]
                if request.get("bump", True):
                    self.bump += 1
                    entry[3] = dict(entry[3] or {}, **{"scale-test.karta.run.ai/bump": str(self.bump)})
                if request.get("schema"):
                    self.bump += 1
                    versions = entry[1] if entry[1] is not None else json.loads(entry[2])
                    versions = copy.deepcopy(versions)
                    for version in versions:
                        schema = version.setdefault("schema", {}).setdefault("openAPIV3Schema", {})
                        spec_schema = schema.setdefault("properties", {}).setdefault("spec", {"type": "object"})
                        spec_schema.setdefault("properties", {})["scaleTest%d" % self.bump] = {
                            "type": "string", "description": "added by scale-test.sh"}
                    entry[1] = versions
                    entry[2] = dumps(versions)
                    entry[5] += 1
                self.rv += 1
                item = self.make_crd(name, self.rv)
                self.crds.apply(self.rv, "MODIFIED", item)
            else:
                raise KeyError("unknown event type " + str(kind))
            self.count("control events")
            self.lock.notify_all()
            return {"type": kind, "name": item.name, "resourceVersion": item.metadata["resourceVersion"]}

    def compact(self):
        with self.lock:
            for c in self.collections.values():
                c.events = []
                c.floor = self.rv
                c.snapshots = {self.rv: (c.names, c.items)}
                c.snapshot_order = [self.rv]
            self.lock.notify_all()
            return {"compactedAt": self.rv}

    def close_watches(self):
        with self.lock:
            self.watch_epoch += 1
            self.lock.notify_all()
            return {"epoch": self.watch_epoch}


def parse_accept(header):
    """The media ranges of an Accept header, best first: [(type, {param: value})]."""
    ranges = []
    for order, part in enumerate((header or "*/*").split(",")):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        params = {}
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        ranges.append((-q, order, fields[0].lower(), params))
    ranges.sort()
    return [(t, p) for _, _, t, p in ranges]


def negotiate(header):
    """"full", "PartialObjectMetadata" or "PartialObjectMetadataList"; None when nothing is acceptable."""
    for media, params in parse_accept(header):
        if media not in ("application/json", "application/*", "*/*"):
            continue  # yaml, protobuf, cbor: this double speaks JSON only
        target = params.get("as")
        if target is None:
            return "full"
        if target in ("PartialObjectMetadata", "PartialObjectMetadataList") and params.get("g") == "meta.k8s.io" \
                and params.get("v") == "v1":
            return target
        # as=Table, or another group or version: not served here; the next range may be
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scale-api-double"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True

    # -- writing
    def send_json(self, code, body, extra_headers=()):
        data = body if isinstance(body, bytes) else dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.state.count("bytes sent", len(data))
        self.log(code, len(data))

    def send_status(self, code, reason, message, details=None):
        self.send_json(code, status_body(code, reason, message, details))

    def start_chunked(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, parts):
        size = sum(len(p) for p in parts)
        if size == 0:
            return 0
        self.wfile.write(b"".join([b"%x\r\n" % size] + parts + [b"\r\n"]))
        self.state.count("bytes sent", size)
        return size

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")

    def log(self, code, size, note=""):
        if self.server.log_file:
            self.server.log_file.write("%.3f %s %s %s %d %s\n" % (time.time(), self.command, self.path, code, size, note))
            self.server.log_file.flush()

    @property
    def state(self):
        return self.server.state

    # -- dispatch
    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def handle_any(self):
        try:
            self.route()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout, OSError) as e:
            self.state.count("connections broken by the client")
            self.log("-", 0, "client went away: %s" % e.__class__.__name__)
            self.close_connection = True

    def route(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Authorization") != "Bearer " + self.server.token:
            self.state.count("401 answers")
            self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        path = url.path.rstrip("/") or "/"
        if path.startswith("/control/"):
            return self.control(path, body)
        if self.command != "GET":
            return self.send_status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        for prefix, collection in self.state.collections.items():
            if path == prefix:
                if query.get("watch") in ("1", "true"):
                    return self.watch(collection, query)
                return self.list(collection, query)
            if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1:]:
                return self.get_one(collection, path[len(prefix) + 1:])
        return self.discovery(path)

    # -- control
    def control(self, path, body):
        state = self.state
        try:
            if path == "/control/event" and self.command == "POST":
                return self.send_json(200, state.event(json.loads(body or b"{}")))
            if path == "/control/names":
                return self.send_json(200, {"unrelated": state.unrelated, "used": state.used})
            if path == "/control/stats":
                with state.lock:
                    stats = dict(state.stats, resourceVersion=state.rv, crds=len(state.crds.items),
                                 fullFormBytes=state.full_bytes)
                return self.send_json(200, stats)
            if path == "/control/compact" and self.command == "POST":
                return self.send_json(200, state.compact())
            if path == "/control/close-watches" and self.command == "POST":
                return self.send_json(200, state.close_watches())
        except (KeyError, ValueError) as e:
            return self.send_status(400, "BadRequest", str(e))
        return self.send_status(404, "NotFound", "no control endpoint " + path)

    # -- LIST
    def list(self, collection, query):
        state = self.state
        form = negotiate(self.headers.get("Accept"))
        if form is None:
            return self.send_status(406, "NotAcceptable", "only the following media types are accepted: application/json")
        if form == "PartialObjectMetadata":
            return self.send_status(406, "NotAcceptable",
                                    "you requested PartialObjectMetadata, but the requested object is a list (*%sList)"
                                    % collection.kind)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            return self.send_status(400, "BadRequest", "limit: invalid value")
        token = query.get("continue")
        field = query.get("fieldSelector", "")
        only = None
        if field:
            m = re.fullmatch(r"metadata\.name==?(.*)", field)
            if not m:
                return self.send_status(400, "BadRequest", 'field label not supported: "%s"' % field.split("=")[0])
            only = m.group(1)
        with state.lock:
            if token:
                try:
                    decoded = json.loads(base64.b64decode(token + "=" * (-len(token) % 4)))
                    rv, start = int(decoded["rv"]), decoded["start"]
                except (ValueError, KeyError, TypeError):
                    return self.send_status(400, "BadRequest", "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
                if rv not in collection.snapshots:
                    state.count("410 answers (continue expired)")
                    return self.send_status(410, "Expired", "The provided continue parameter is too old to display a "
                                            "consistent list result. You can start a new list without the continue "
                                            "parameter.")
                names, items = collection.snapshots[rv]
            else:
                rv, start = state.rv, ""
                names, items = collection.names, collection.items
        if only is not None:
            names = [n for n in names if n == only]
        # bisect for the first name after start
        lo, hi = 0, len(names)
        while lo < hi:
            mid = (lo + hi) // 2
            if names[mid] < start:
                lo = mid + 1
            else:
                hi = mid
        begin = lo
        end = len(names) if limit <= 0 else min(len(names), begin + limit)
        page = names[begin:end]
        meta = {"resourceVersion": str(rv)}
        if end < len(names):
            meta["continue"] = base64.b64encode(dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": page[-1] + "\x00"})).decode()
            meta["remainingItemCount"] = len(names) - end
        if form == "PartialObjectMetadataList":
            state.count("LIST pages (metadata only) of " + collection.path)
            head = b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":' + dumps(meta) + b',"items":['
            parts = [head]
            for i, name in enumerate(page):
                parts.append((b"," if i else b"") + items[name].partial_bytes())
            parts.append(b"]}")
            self.start_chunked()
            sent = self.chunk(parts)
            self.end_chunked()
            self.log(200, sent, "%d items, metadata only" % len(page))
            return
        state.count("LIST pages (full) of " + collection.path)
        typemeta = collection.typemeta if collection.typemeta_in_list else b""
        self.start_chunked()
        sent = self.chunk([('{"kind":"%sList","apiVersion":"%s","metadata":' % (collection.kind, collection.api_version)).encode(),
                           dumps(meta), b',"items":['])
        for i, name in enumerate(page):
            # One chunk an object, as a Go server flushing its buffer would send them: a client that stops
            # reading (too large) stops the double too.
            sent += self.chunk(([b","] if i else []) + items[name].full_parts(typemeta))
        sent += self.chunk([b"]}"])
        self.end_chunked()
        self.log(200, sent, "%d items of %d, limit %d" % (len(page), len(names), limit))

    # -- GET one
    def get_one(self, collection, name):
        state = self.state
        form = negotiate(self.headers.get("Accept"))
        if form is None:
            return self.send_status(406, "NotAcceptable", "only the following media types are accepted: application/json")
        if form == "PartialObjectMetadataList":
            return self.send_status(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested "
                                    "object is not a list (*%s)" % collection.kind)
        with state.lock:
            item = collection.items.get(name)
        if item is None:
            state.count("GET one: 404")
            resource = collection.path.rsplit("/", 1)[1]
            group = collection.api_version.split("/")[0] if "/" in collection.api_version else ""
            return self.send_status(404, "NotFound", '%s%s "%s" not found' % (resource, "." + group if group else "", name),
                                    {"name": name, "group": group, "kind": resource})
        if form == "PartialObjectMetadata":
            state.count("GET one (metadata only) of " + collection.path)
            state.count("GET " + name + " (metadata only)")
            return self.send_json(200, item.partial_bytes())
        state.count("GET one (full) of " + collection.path)
        state.count("GET " + name)
        return self.send_json(200, b"".join(item.full_parts(collection.typemeta)))

    # -- WATCH
    def watch(self, collection, query):
        state = self.state
        form = negotiate(self.headers.get("Accept"))
        if form is None:
            return self.send_status(406, "NotAcceptable", "only the following media types are accepted: application/json")
        if form == "PartialObjectMetadataList":
            return self.send_status(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested "
                                    "object is not a list (*%s)" % collection.kind)
        partial = form == "PartialObjectMetadata"
        try:
            timeout = int(query.get("timeoutSeconds") or 1800)
        except ValueError:
            return self.send_status(400, "BadRequest", "timeoutSeconds: invalid value")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        rv_text = query.get("resourceVersion", "")
        state.count("WATCH (%s) of %s" % ("metadata only" if partial else "full", collection.path))
        deadline = time.monotonic() + timeout
        self.start_chunked()
        sent = 0
        typemeta = collection.typemeta

        def event_line(kind, item):
            obj = item.partial_bytes() if partial else b"".join(item.full_parts(typemeta))
            return [b'{"type":"', kind.encode(), b'","object":', obj, b"}\n"]

        def bookmark(rv):
            if partial:
                obj = b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"%d","creationTimestamp":null}}' % rv
            else:
                obj = b"{" + typemeta + b'"metadata":{"resourceVersion":"%d","creationTimestamp":null}}' % rv
            return [b'{"type":"BOOKMARK","object":', obj, b"}\n"]

        with state.lock:
            epoch = state.watch_epoch
            if rv_text in ("", "0"):
                # As the real server: the current objects as ADDED events, then changes from now.
                pending = [event_line("ADDED", collection.items[n]) for n in collection.names]
                position = state.rv
            else:
                try:
                    position = int(rv_text)
                except ValueError:
                    self.chunk([dumps({"type": "ERROR", "object": status_body(400, "BadRequest", "invalid resource version")}), b"\n"])
                    self.end_chunked()
                    return
                if position < collection.floor:
                    state.count("410 ERROR events (watch too old)")
                    line = dumps({"type": "ERROR", "object": status_body(
                        410, "Expired", "too old resource version: %d (%d)" % (position, collection.floor))}) + b"\n"
                    pending = None
                else:
                    pending = []
        if pending is None:
            sent += self.chunk([line])
            self.end_chunked()
            self.log(200, sent, "410 too old")
            return
        for parts in pending:
            sent += self.chunk(parts)
        last_bookmark = time.monotonic()
        while True:
            with state.lock:
                while True:
                    new = [(rv, k, it) for rv, k, it in collection.events if rv > position]
                    now = time.monotonic()
                    if new or now >= deadline or state.watch_epoch != epoch:
                        break
                    if bookmarks and now - last_bookmark >= self.server.bookmark_interval:
                        break
                    wait = deadline - now
                    if bookmarks:
                        wait = min(wait, self.server.bookmark_interval - (now - last_bookmark))
                    state.lock.wait(max(0.01, wait))
                current = state.rv
                gone = position < collection.floor
            if state.watch_epoch != epoch or time.monotonic() >= deadline:
                break
            if gone:
                sent += self.chunk([dumps({"type": "ERROR", "object": status_body(
                    410, "Expired", "too old resource version: %d (%d)" % (position, collection.floor))}), b"\n"])
                state.count("410 ERROR events (watch too old)")
                break
            for rv, kind, item in new:
                sent += self.chunk(event_line(kind, item))
                position = rv
                state.count("watch events sent")
            if not new and bookmarks:
                position = max(position, current)
                sent += self.chunk(bookmark(position))
                last_bookmark = time.monotonic()
                state.count("bookmarks sent")
        self.end_chunked()
        self.log(200, sent, "watch ended")

    # -- discovery
    def discovery(self, path):
        state = self.state
        state.count("discovery " + path)
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-scale-api-double",
                                        "platform": "linux/amd64"})
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % self.server.server_address[1]}]})
        if path == "/api/v1":
            return self.send_json(200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
                 "verbs": ["get", "list", "watch"], "shortNames": ["ns"]}]})
        groups = {"apiextensions.k8s.io": {"v1": [{"name": "customresourcedefinitions",
                                                    "singularName": "customresourcedefinition", "namespaced": False,
                                                    "kind": "CustomResourceDefinition", "verbs": ["get", "list", "watch"],
                                                    "shortNames": ["crd", "crds"]}]}}
        with state.lock:
            specs = [(name, state.specs[name]) for name in state.crds.names if name in state.specs]
        for name, (spec, versions, versions_bytes, _, _, _) in specs:
            for version in (versions if versions is not None else spec_versions_light(versions_bytes)):
                names = spec["names"]
                groups.setdefault(spec["group"], {}).setdefault(version["name"], []).append(
                    {"name": names["plural"], "singularName": names.get("singular", ""),
                     "namespaced": spec.get("scope") == "Namespaced", "kind": names["kind"],
                     "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]})
        if path == "/apis":
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in sorted(vs)],
                 "preferredVersion": {"groupVersion": "%s/%s" % (g, sorted(vs)[0]), "version": sorted(vs)[0]}}
                for g, vs in sorted(groups.items())]})
        m = re.fullmatch(r"/apis/([^/]+)/([^/]+)", path)
        if m and m.group(1) in groups and m.group(2) in groups[m.group(1)]:
            return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                        "groupVersion": "%s/%s" % m.groups(), "resources": groups[m.group(1)][m.group(2)]})
        return self.send_status(404, "NotFound", "the server could not find the requested resource")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def get_request(self):
        sock, address = self.socket.accept()
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


def serve(args):
    state = State(args)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    server = Server(("127.0.0.1", args.port), Handler)
    server.tls = tls
    server.state = state
    with open(args.token_file) as f:
        server.token = f.read().strip()
    server.bookmark_interval = args.bookmark_interval
    server.log_file = open(args.request_log, "a", buffering=1) if args.request_log else None
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


# ---------------------------------------------------------------------------------------------- helpers

def cpu_ns(pid):
    """CPU time (ns) of every live thread of pid, from /proc/PID/task/*/schedstat (not the 10 ms ticks of
    /proc/PID/stat: an event can cost less than one)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def stat_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ready(args):
    """Polls GET /readyz every --interval s over a new TLS connection until 200; prints the seconds since
    --since-ns (a time.time_ns() taken just before the webhook was started)."""
    tls = ssl.create_default_context(cafile=args.cafile)
    until = time.monotonic() + args.timeout
    host, port = "127.0.0.1", args.port
    last = "no answer"
    while time.monotonic() < until:
        if not alive(args.pid):
            print("the webhook exited before /readyz answered 200 (last: %s)" % last, file=sys.stderr)
            return 2
        try:
            conn = http.client.HTTPSConnection(host, port, context=tls, timeout=2)
            conn.request("GET", "/readyz")
            response = conn.getresponse()
            body = response.read()
            conn.close()
            if response.status == 200:
                print("%.3f" % ((time.time_ns() - args.since_ns) / 1e9))
                return 0
            last = "%d %s" % (response.status, body.decode(errors="replace")[:200])
        except (OSError, http.client.HTTPException) as e:
            last = str(e)
        time.sleep(args.interval)
    print("no 200 from /readyz within %d s (last: %s)" % (args.timeout, last), file=sys.stderr)
    return 1


class Webhook:
    def __init__(self, port, cafile):
        self.port = port
        self.tls = ssl.create_default_context(cafile=cafile)
        self.conn = None

    def get(self, path):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=10)
                self.conn.request("GET", path)
                response = self.conn.getresponse()
                return response.status, response.read().decode(errors="replace")
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise

    def reloads(self, source="cluster"):
        status, text = self.get("/metrics")
        m = re.search(r'^karta_reloads_total\{source="%s"\} (\d+)' % source, text, re.M)
        return int(m.group(1)) if m else 0


class Double:
    def __init__(self, port, cafile, token):
        self.port = port
        self.tls = ssl.create_default_context(cafile=cafile)
        self.token = token

    def call(self, method, path, body=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=30)
        conn.request(method, path, body=dumps(body) if body is not None else None,
                     headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        if response.status != 200:
            raise RuntimeError("%s %s answered %d: %s" % (method, path, response.status, data[:300]))
        return json.loads(data)


class Measure:
    def __init__(self, args):
        self.args = args
        self.pid = args.pid
        self.hook = Webhook(args.port, args.cafile)
        with open(args.token_file) as f:
            self.double = Double(args.double_port, args.double_cafile, f.read().strip())
        self.idle_rate = 0.0  # ns of CPU per s, idle
        self.results = {}

    def say(self, text):
        print("scale-test: " + text, file=sys.stderr, flush=True)

    def check_alive(self):
        if not alive(self.pid):
            raise SystemExit("the webhook exited (see its log)")

    def settle(self, since_cpu, since_t, min_window=2.0, quiet=1.0, limit=600.0, stop=None):
        """Samples the CPU every 0.1 s from since_t until it has not been busy (more than 10 ms in 0.1 s,
        10% of a CPU, beyond the idle rate) for `quiet` s and at least min_window s passed. (Not any rise: an
        idle webhook holding 200 CRDs used 13 ms/s, in bursts of up to 4 ms in 0.1 s.) Returns (CPU ns used
        from since_t to the end less the idle rate over that time, end, the last busy sample's time)."""
        last_rise = None
        previous = since_cpu
        while True:
            time.sleep(0.1)
            self.check_alive()
            now = time.monotonic()
            cpu = cpu_ns(self.pid)
            if cpu - previous > 10_000_000 + self.idle_rate * 0.1:
                last_rise = now
            previous = cpu
            quiet_since = last_rise if last_rise is not None else since_t
            if now - since_t >= min_window and now - quiet_since >= quiet and (stop is None or stop()):
                break
            if now - since_t > limit:
                self.say("the CPU still rose after %.0f s; measuring what there is" % limit)
                break
        used = cpu - since_cpu - self.idle_rate * (now - since_t)
        return max(0.0, used), now, last_rise

    def run(self):
        a = self.args
        t = time.monotonic()
        self.say("settling after ready (the webhook compiles its jq states, frees what loading left)")
        used, _, _ = self.settle(cpu_ns(self.pid), t, min_window=3.0, quiet=2.0)
        self.results["after_ready_cpu_ms"] = used / 1e6
        t0, c0 = time.monotonic(), cpu_ns(self.pid)
        time.sleep(a.idle_window)
        self.idle_rate = (cpu_ns(self.pid) - c0) / (time.monotonic() - t0)
        self.results["idle_cpu_ms_per_s"] = self.idle_rate / 1e6
        self.results["rss_idle_kib"] = proc_kib(self.pid, "VmRSS")
        self.say("idle: RSS %.1f MiB, CPU %.2f ms/s" % (self.results["rss_idle_kib"] / 1024, self.idle_rate / 1e6))

        names = self.double.call("GET", "/control/names")
        if names["unrelated"]:
            unrelated_event = {"type": "MODIFIED", "unrelated": 0, "bump": True}
            self.results["unrelated_event_kind"] = "MODIFIED (a label) of " + names["unrelated"][0]
        else:
            unrelated_event = {"type": "ADDED"}
            self.results["unrelated_event_kind"] = "ADDED of one unrelated CRD (N=0 has none to modify)"
        # One unrelated CRD event.
        reloads0 = self.hook.reloads()
        c0, t0 = cpu_ns(self.pid), time.monotonic()
        sent = self.double.call("POST", "/control/event", unrelated_event)
        used, end, last_rise = self.settle(c0, t0)
        self.results["unrelated_cpu_ms"] = used / 1e6
        self.results["unrelated_busy_ms"] = (last_rise - t0) * 1e3 if last_rise else 0.0
        self.results["unrelated_reloads"] = self.hook.reloads() - reloads0
        self.say("unrelated event (%s): %.1f ms CPU, busy %.0f ms, cluster reloads +%d" % (
            sent["name"], self.results["unrelated_cpu_ms"], self.results["unrelated_busy_ms"],
            self.results["unrelated_reloads"]))
        # One event of a CRD in W: a new property in the JobSet schema.
        if names["unrelated"]:
            unrelated_names = names["unrelated"]
        else:
            unrelated_names = [sent["name"]]
        reloads0 = self.hook.reloads()
        c0, t0 = cpu_ns(self.pid), time.monotonic()
        self.double.call("POST", "/control/event", {"type": "MODIFIED", "crd": a.used_crd, "schema": True, "bump": False})
        reloaded_at = None
        while time.monotonic() - t0 < a.event_timeout:
            self.check_alive()
            if self.hook.reloads() > reloads0:
                reloaded_at = time.monotonic()
                break
            time.sleep(0.01)
        used, end, last_rise = self.settle(c0, t0)
        self.results["w_reload_ms"] = (reloaded_at - t0) * 1e3 if reloaded_at else float("nan")
        self.results["w_cpu_ms"] = used / 1e6
        self.results["w_busy_ms"] = (last_rise - t0) * 1e3 if last_rise else 0.0
        self.say("event of %s (schema): reload counted after %s ms, %.1f ms CPU, busy %.0f ms" % (
            a.used_crd, "%.0f" % self.results["w_reload_ms"] if reloaded_at else "(never, %d s)" % a.event_timeout,
            self.results["w_cpu_ms"], self.results["w_busy_ms"]))

        # /mutate under a stream of events, in two modes; a quiet run of each first.
        for mode in ("keepalive", "newconn"):
            for with_events in ((False, True) if a.quiet_baseline else (True,)):
                label = "%s_%s" % (mode, "events" if with_events else "quiet")
                events = threading.Thread(target=self.event_stream, args=(unrelated_names,)) if with_events else None
                c0, t0 = cpu_ns(self.pid), time.monotonic()
                if events:
                    events.start()
                p50, p99, count, errors = self.wrk() if mode == "keepalive" else self.new_connections()
                if events:
                    events.join()
                used, end, last_rise = self.settle(c0, t0, min_window=0.5)
                self.results[label] = (p50, p99, count, errors)
                self.results[label + "_cpu_ms"] = used / 1e6
                self.say("/mutate %s%s: p50 %.2f ms, p99 %.2f ms over %d requests (%d errors); webhook CPU %.0f ms, "
                         "busy until %.1f s after the start" % (
                             "keep-alive" if mode == "keepalive" else "new connection each",
                             ", %d events 0.5 s apart" % a.events if with_events else ", no events",
                             p50, p99, count, errors, used / 1e6, (last_rise - t0) if last_rise else 0.0))
        self.results["peak_kib"] = proc_kib(self.pid, "VmHWM")
        self.results["rss_end_kib"] = proc_kib(self.pid, "VmRSS")
        self.results["stat_cpu_s"] = stat_cpu_s(self.pid)
        self.results["reloads_cluster_total"] = self.hook.reloads()
        self.results["double_stats"] = self.double.call("GET", "/control/stats")
        print(json.dumps(self.results, indent=1))

    def event_stream(self, names):
        a = self.args
        start = time.monotonic() + 0.5
        for i in range(a.events):
            delay = start + i * a.event_interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.double.call("POST", "/control/event", {"type": "MODIFIED", "crd": names[(i + 1) % len(names)], "bump": True})

    def load_seconds(self):
        a = self.args
        return 0.5 + a.events * a.event_interval + 1.0

    def wrk(self):
        a = self.args
        duration = self.load_seconds()
        lua = os.path.join(a.work, "wrk-paced.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                    'local f = assert(io.open("%s", "rb"))\nwrk.body = f:read("*a")\nf:close()\n'
                    "function delay() return %d end\n" % (a.body, int(1000 / a.rate)))
        command = ["taskset", "-c", a.client_cpus, "wrk", "-t1", "-c1", "-d%ds" % round(duration), "--timeout", "5s",
                   "--latency", "-s", lua, "https://127.0.0.1:%d/mutate" % a.port]
        out = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60)
        text = out.stdout + out.stderr
        with open(os.path.join(a.work, "wrk-%d.txt" % time.time_ns()), "w") as f:
            f.write(text)

        def ms(value):
            m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value)
            scale = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m.group(2)]
            return float(m.group(1)) * scale

        p50 = ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
        p99 = ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
        count = int(re.search(r"(\d+) requests in", text).group(1))
        errors = 0
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        if m:
            errors += int(m.group(1))
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        if m:
            errors += sum(int(x) for x in m.groups())
        return p50, p99, count, errors

    def new_connections(self):
        """Sequential requests, request k due at k/rate s, each on a new TLS connection, run pinned to the
        client CPUs (this process is)."""
        a = self.args
        with open(a.body, "rb") as f:
            body = f.read()
        request = (b"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (a.port, len(body))) + body
        tls = ssl.create_default_context(cafile=a.cafile)
        latencies, errors = [], 0
        start = time.monotonic()
        duration = self.load_seconds()
        k = 0
        while True:
            due = start + k / a.rate
            if due - start >= duration:
                break
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            k += 1
            t = time.perf_counter()
            try:
                with socket.create_connection(("127.0.0.1", a.port), timeout=5) as raw:
                    with tls.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                        s.sendall(request)
                        data = b""
                        while True:
                            piece = s.recv(65536)
                            if not piece:
                                break
                            data += piece
                            head, sep, rest = data.partition(b"\r\n\r\n")
                            if sep:
                                m = re.search(rb"content-length: *(\d+)", head, re.I)
                                if m and len(rest) >= int(m.group(1)):
                                    break
                latencies.append((time.perf_counter() - t) * 1e3)
                if not data.startswith(b"HTTP/1.1 200"):
                    errors += 1
            except (OSError, ssl.SSLError):
                errors += 1
        latencies.sort()
        if not latencies:
            return float("nan"), float("nan"), 0, errors
        pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
        return pick(0.50), pick(0.99), len(latencies), errors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the API double")
    s.add_argument("--n", type=int, required=True, help="unrelated CRDs (renamed corpus copies)")
    s.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--token-file", required=True)
    s.add_argument("--port", type=int, default=0, help="0: any free port")
    s.add_argument("--port-file", required=True, help="written with the port once serving")
    s.add_argument("--history", type=int, default=1000, help="events (and LIST snapshots) kept per collection")
    s.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between BOOKMARK events")
    s.add_argument("--cache-dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                       "karta-scale-test"),
                   help="where the corpus's parsed JSON is cached ('' for nowhere)")
    s.add_argument("--request-log", help="append one line per request here")
    r = sub.add_parser("ready", help="wait for the webhook's /readyz")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--cafile", required=True)
    r.add_argument("--pid", type=int, required=True)
    r.add_argument("--since-ns", type=int, required=True)
    r.add_argument("--timeout", type=float, default=180)
    r.add_argument("--interval", type=float, default=0.02)
    m = sub.add_parser("measure", help="the measurements after ready; prints JSON")
    m.add_argument("--pid", type=int, required=True)
    m.add_argument("--port", type=int, required=True)
    m.add_argument("--cafile", required=True)
    m.add_argument("--double-port", type=int, required=True)
    m.add_argument("--double-cafile", required=True)
    m.add_argument("--token-file", required=True)
    m.add_argument("--body", required=True)
    m.add_argument("--work", required=True)
    m.add_argument("--client-cpus", default="1")
    m.add_argument("--used-crd", default="jobsets.jobset.x-k8s.io")
    m.add_argument("--events", type=int, default=20)
    m.add_argument("--event-interval", type=float, default=0.5)
    m.add_argument("--event-timeout", type=float, default=300)
    m.add_argument("--rate", type=float, default=40, help="/mutate requests per second")
    m.add_argument("--idle-window", type=float, default=3.0)
    m.add_argument("--quiet-baseline", type=int, default=1)
    args = parser.parse_args()
    if args.command == "serve":
        serve(args)
    elif args.command == "ready":
        sys.exit(ready(args))
    else:
        Measure(args).run()


if __name__ == "__main__":
    main()
