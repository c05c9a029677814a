#pragma once

// LIST a collection in pages, as client-go's pager does: ?limit=N, then the continue token of each page
// until there is none. Every page is read from the snapshot of the first one (its resourceVersion).
// Blocking, on the caller's thread, over ApiClient::get.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/api_client.h"
#include "kube/api_path.h"  // query_escape, for the watcher

namespace karta::kube {

// How many pages a LIST may take. client-go's pager has no limit, but a server that keeps sending new
// continue tokens (or a loop of them) would then be read forever, piling up objects. 10,000 pages of the
// default 100 are a million objects: 6 times the 150,000 pods of Kubernetes' largest tested clusters.
constexpr std::size_t kMaxListPages = 10'000;

// Objects per LIST page unless the caller asks otherwise: what one page makes the client hold is bounded
// by ApiClientOptions::body_limit (kube/api_client.h), and 100 objects of a few KB each, or 10 of the
// largest CRDs, are far from it. (client-go's pager asks for 500; kubectl's --chunk-size too.)
constexpr std::size_t kListPageSize = 100;

struct ListOptions {
  std::string label_selector;  // "" for every object; sent percent-encoded
  std::size_t page_size = kListPageSize;  // ?limit=; 0 asks for everything in one answer
  std::size_t max_pages = kMaxListPages;
};

// One page, given to the caller as it arrives.
struct ListPage {
  // The page's objects. Objects of built-in lists come without apiVersion and kind (watch events always
  // have them): they are filled in from the list's, so both look alike.
  std::vector<nlohmann::json> items;
  std::size_t number = 1;        // 1 for the first page
  std::size_t items_so_far = 0;  // in this page and the ones before it
  // The server's estimate of the objects still to come (remainingItemCount); it gives none with a label
  // selector.
  std::optional<std::size_t> remaining;
  std::string resource_version;  // of the snapshot
};

struct ListSummary {
  std::size_t pages = 0;
  std::size_t items = 0;
  std::string resource_version;
};

// LISTs `collection` ("/api/v1/namespaces/ns/pods", "/apis/jobset.x-k8s.io/v1alpha2/jobsets") and calls
// on_page with each page. Throws ApiError as get() does: 403 and 404 carry the Status's reason and
// message; a 410 for a page after the first (the continue token expired: the snapshot was compacted
// away) says so and that the LIST must start again. A continue token the server already sent (the LIST
// would go round for ever), or a page past options.max_pages, ends it with an ApiError (status 0) naming
// the collection; that page is not delivered. A page larger than the client's body_limit is asked for
// again with half the limit (the same continue token: the same snapshot), down to one object; a single
// object past it ends the LIST with the AnswerTooLargeError, naming the limit. A page that is not a list
// is a runtime_error. Exceptions from on_page pass through.
ListSummary list_all(ApiClient& client, const std::string& collection, const ListOptions& options,
                     const std::function<void(ListPage& page)>& on_page);

}  // namespace karta::kube
