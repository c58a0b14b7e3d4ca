// specsim's public face in one include: load a scenario (load.hpp), calibrate and predict
// (cycle.hpp, prior_band.hpp for the band), ask what-ifs (whatif.hpp: breakeven, rank, sweep, Monte
// Carlo; concurrency.hpp), render any result as the CLI prints it (report.hpp), write an engine's
// launch (emit.hpp), and calibrate from nccl-tests logs and step times (calibrate_nccl.hpp,
// calibrate_compute.hpp). Everything throws specsim::Error (error.hpp) with file, line and key.
// The other headers of lib/include/specsim are the layers under these, for tools that need one
// piece (docs/library.md#layout).
#pragma once

#include "specsim/calibrate_compute.hpp"
#include "specsim/calibrate_nccl.hpp"
#include "specsim/comm_table.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/emit.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"
#include "specsim/validate_corpus.hpp"
#include "specsim/whatif.hpp"
