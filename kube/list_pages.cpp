#include "kube/list_pages.h"

#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "kube/json_fields.h"

namespace karta::kube {

using json = nlohmann::json;

ListSummary list_all(ApiClient& client, const std::string& collection, const ListOptions& options,
                     const std::function<void(ListPage& page)>& on_page) {
  ListSummary summary;
  std::string continue_token;
  std::unordered_set<std::string> tokens_seen;
  // Why the LIST cannot go on, naming the collection.
  auto stopped = [&](const std::string& why) { return ApiError("LIST " + client.url(collection) + ": " + why, 0, "", why); };
  std::size_t page_size = options.page_size;
  for (;;) {
    if (summary.pages == options.max_pages) {
      throw stopped("the server still sends continue tokens after " + std::to_string(summary.pages) +
                    " pages, the most a LIST may take");
    }
    std::string query = collection;
    char separator = '?';
    if (page_size != 0) {
      query += "?limit=" + std::to_string(page_size);
      separator = '&';
    }
    if (!options.label_selector.empty()) {
      query += separator + std::string("labelSelector=") + query_escape(options.label_selector);
      separator = '&';
    }
    if (!continue_token.empty()) query += separator + std::string("continue=") + query_escape(continue_token);
    json page;
    try {
      page = client.get(query);
    } catch (const AnswerTooLargeError& e) {
      // Rather than hold more, ask for fewer objects from the same place in the same snapshot.
      if (page_size == 1) {
        throw AnswerTooLargeError(std::string(e.what()) + ", even for a page of one object", e.limit());
      }
      page_size = page_size == 0 ? kListPageSize : page_size / 2;
      continue;
    } catch (const ApiError& e) {
      // A 410 on a later page: the snapshot the continue token points into has been compacted away.
      // client-go's pager then lists again from the start; the caller decides.
      if (e.status() != 410 || summary.pages == 0) throw;
      throw ApiError("GET " + client.url(query) + ": the continue token expired after " +
                         std::to_string(summary.pages) + " pages (" + std::to_string(summary.items) +
                         " objects; 410 " + e.reason() + ": " + e.message() + "); the LIST must start again",
                     e.status(), e.reason(), e.message());
    }
    const std::string where = "GET " + client.url(query);
    if (!page.is_object() || !page.contains("metadata") || !page["metadata"].is_object()) {
      throw std::runtime_error(where + ": the answer is not a list (no metadata)");
    }
    ListPage delivered;
    delivered.number = summary.pages + 1;
    // Every page carries the resourceVersion of the snapshot the first one was read at.
    if (summary.resource_version.empty()) summary.resource_version = metadata_string(page, "resourceVersion");
    delivered.resource_version = summary.resource_version;
    continue_token = metadata_string(page, "continue");
    if (!continue_token.empty() && !tokens_seen.insert(continue_token).second) {
      throw stopped("page " + std::to_string(summary.pages + 1) +
                    " came with a continue token the server had already sent: the LIST would never end");
    }
    if (auto remaining = page["metadata"].find("remainingItemCount");
        remaining != page["metadata"].end() && remaining->is_number_unsigned()) {
      delivered.remaining = remaining->get<std::size_t>();
    }
    json& page_items = page["items"];
    if (!page_items.is_null() && !page_items.is_array()) throw std::runtime_error(where + ": items is not a list");
    std::string api_version = string_at(page, "apiVersion");
    std::string kind = string_at(page, "kind");
    if (kind.size() > 4 && kind.ends_with("List")) kind.resize(kind.size() - 4);
    if (page_items.is_array()) {  // an empty list may say "items": null
      for (json& item : page_items) {
        if (!item.is_object() || metadata_string(item, "name").empty()) {
          throw std::runtime_error(where + ": an item has no metadata.name");
        }
        if (!item.contains("apiVersion") && !api_version.empty()) item["apiVersion"] = api_version;
        if (!item.contains("kind") && !kind.empty()) item["kind"] = kind;
        delivered.items.push_back(std::move(item));
      }
    }
    ++summary.pages;
    summary.items += delivered.items.size();
    delivered.items_so_far = summary.items;
    if (on_page) on_page(delivered);
    if (continue_token.empty()) break;
  }
  return summary;
}

}  // namespace karta::kube
