#pragma once

// `taskgov simulate`: replays a workload trace through taskgov's real decision code on virtual
// time (scheduler/sim) and prints what a day under a policy looks like — utilisation, stranded
// accelerators, time to guarantee, fairness of borrowing, disruptions, lost work, waits — and,
// with --compare, the same trace under a second policy beside it.
//
//   taskgov simulate --policy DIR --trace FILE [--compare DIR2] [--seed N]
//   taskgov simulate --policy DIR --generate --nodes ml.p5.48xlarge=4,ml.g5.12xlarge=4
//                    [--jobs 172] [--span 20m] [--seed N] [--write-trace FILE]
//
// Thread-compatible.

#include "extender/cli/command.h"

namespace taskgov::cli {

[[nodiscard]] Command SimulateCommand();

}  // namespace taskgov::cli
