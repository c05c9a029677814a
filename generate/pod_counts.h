#pragma once

// How many pods a drafted component runs (generate/karta_draft.h), as the built-in catalog counts them:
// its scaleDefinition. A count of replicas (`replicas`, else `instances`, else `numNodes`, else a
// `minReplicas` with nothing to count beside it, which is what runs at admission) times the pods of each
// replica (`parallelism`: a Job's pods, JobSet's replicated jobs; `numOfHosts`: a Ray worker group's hosts),
// each read from the objects between the pod and the list element or map value it belongs to; a group of
// `size` pods around a leader (LeaderWorkerSet: the leader is one of each group, the workers the rest); the
// nodes of a multi-node object (Dynamo's `multinode.nodeCount`, NIMService's `multiNode.parallelism.pipeline`);
// the copies of a template holding the pods' list and the groups beside the list naming its items
// (PodCliqueSet's `.spec.replicas`, `podCliqueScalingGroups[].cliqueNames`); a list of groups of the pod that
// runs instead of it (Milvus's `groups[]`); an allocation that raises the count while enabled (Spark's
// `dynamicAllocation.initialExecutors`); and templates run by invocation (Argo: the steps and DAG tasks
// reached from `.spec.entrypoint`, each as many times as its `withItems`, three calls deep as the catalog
// counts them). Internal to generate/.

#include <vector>

#include <nlohmann/json.hpp>

#include "generate/component_names.h"
#include "generate/draft_yaml.h"

namespace karta {

// Written at the component's indentation; nothing when the schema holds no count (one pod).
// `groups` are PodPlaces::groups: a place with a list of them among its own fields runs the groups' replicas
// instead of its own when the list is not empty (Milvus's `components.proxy.groups[]`).
void draft_scale(draft_yaml::Yaml& out, const DraftComponent& component, const std::vector<DraftComponent>& all,
                 const std::vector<SchemaSteps>& groups, const nlohmann::json& schema);

}  // namespace karta
