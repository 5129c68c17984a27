// The one include for users of Tandem.
#pragma once

#include "tandem/array.hpp"
#include "tandem/config.hpp"
#include "tandem/dtype.hpp"
#include "tandem/error.hpp"
#include "tandem/future.hpp"
#include "tandem/host_array.hpp"
#include "tandem/indexing.hpp"
#include "tandem/kernel.hpp"
#include "tandem/linalg.hpp"
#include "tandem/ops.hpp"
#include "tandem/random.hpp"
#include "tandem/reductions.hpp"
#include "tandem/runtime.hpp"
#include "tandem/shape.hpp"
#include "tandem/shape_ops.hpp"
