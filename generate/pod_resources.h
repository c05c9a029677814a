#pragma once

// What a drafted component's pods ask for outside the containers its pod template or pod spec lists
// (generate/karta_draft.h), written as karta-webhook's extensions so that `inspect` and the admission
// count them as the built-in catalog does: a container spelt inside a pod spec's object (KServe's
// `.spec.predictor.model`: `additionalContainerPaths`), and a `{name, quantity}` request of a pod spelt out
// field by field (SparkApplication's `gpu`: `gpuRequestPath`). Internal to generate/.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/pod_places.h"

namespace karta {

// The fields of a PodSpec place that each hold a container of its own, in name order; none for other
// shapes (a PodTemplateSpec's containers are its spec's, a fragmented pod names its container).
std::vector<std::string> additional_container_fields(const PodPlace& place);

// The fields of `node` that ask for `quantity` of the resource `name` (an integer quantity, a string
// name), in name order.
std::vector<std::string> quantity_request_fields(const nlohmann::json& node);

}  // namespace karta
