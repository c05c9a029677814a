#pragma once

// The gang values KAI Scheduler v0.16+ reads on a JobSet (kai-scheduler/KAI-Scheduler v0.17.0,
// pkg/podgrouper/podgrouper/plugins/jobset/jobset_grouper.go): one PodGroup per JobSet, a subgroup per
// replicatedJob and a leaf per replica (one Job). `kai.scheduler/batch-min-member` on the JobSet is the
// root's minSubGroup: how many replicatedJobs must be schedulable, clamped to their count
// (computePodGroupMinSubGroup); without it KAI takes 1 for an InOrder JobSet ("the jobset controller will
// create one replicatedJob at a time") and the count of replicatedJobs otherwise. The same key on a
// replicatedJob's template.metadata.annotations is the minMember of each of its leaves, `parallelism` (1
// when unset) without it (singleReplicaSubGroupMinMember). So the webhook, when a policy asks for a
// JobSet's gang, writes exactly what KAI would compute, and never a value the user set.

#include <string>
#include <vector>

#include "json/json_document.h"
#include "json/json_pointer.h"

namespace karta {

struct GangAnnotation {
  JsonPointer annotations;  // the annotations map it goes into (created when absent)
  std::string value;
  bool user_set = false;    // the map already holds the key: the user's value, left alone
};

// The root's value and one per replicatedJob (on CREATE only: a JobSet's replicatedJobs cannot change
// afterwards), for the annotation `key`.
std::vector<GangAnnotation> jobset_gang(JsonElement jobset, const std::string& key, bool create);

}  // namespace karta
