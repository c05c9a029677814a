#pragma once

// `karta-webhook validate`: Karta definitions checked offline (structure, safe jq, paths against CRDs),
// or a policy file loaded as serve loads it.

#include <iosfwd>
#include <string>
#include <vector>

namespace karta {

// validate --policy FILE [--namespaces FILE]: exit 0 when the policy loads (a fault is thrown, so the
// command exits 1 with the loader's message); with namespaces, the tenant each gets and what looks like
// a mistake.
int validate_policy(const std::string& policy_file, const std::string& namespaces_file, std::ostream& out);

// validate -f FILES/DIRS [--crds DIR...]: each definition valid or its faults and warnings; exit 1 when
// any has a fault or a file holds none.
int validate_offline(const std::vector<std::string>& names, const std::vector<std::string>& crd_directories,
                     std::ostream& out);

}  // namespace karta
