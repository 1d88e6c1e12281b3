#pragma once

// The data scientist's commands and the live views (issue 13, part 2):
//
//   taskgov job submit NAME --image IMG [-n NS] [--queue-name Q] [--priority CLASS]
//                     [--instance-type T] [--accelerators N --vcpu N --memory GIB]
//                     [--accelerators-limit N --vcpu-limit N --memory-limit GIB]
//                     [--node-count N] [--tasks-per-node N] [--command W]... [--args W]...
//                     [--env K=V]... [--pull-policy P] [--max-retry N] [--kind auto|Job|PyTorchJob]
//                     [--dry-run[=client|server]]
//   taskgov job list [-A | -n NS] [--team T] [--state S]
//   taskgov job describe|delete|suspend|resume NAME
//   taskgov job priority NAME CLASS
//   taskgov top teams [--team T]
//
// Kubernetes objects through the API server with the user's credentials; live numbers (queue
// position, wait, use, borrowed, lent) through the admin API (admin_client.h). Commands that
// need only Kubernetes objects work without the admin API and say in one line what is missing.
// Writes re-read and retry on a 409 (resourceVersion), never overwrite blindly.
// Thread-compatible.

#include "extender/cli/command.h"

namespace taskgov::cli {

[[nodiscard]] Command JobCommands();
[[nodiscard]] Command TopCommands();

}  // namespace taskgov::cli
