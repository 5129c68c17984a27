// matmul epilogues folded into the product's region on the CPU executor (epilogue_cases.hpp).
#include <gtest/gtest.h>

#include "epilogue_cases.hpp"

namespace {

TEST(MatmulEpilogue, FoldsAndKeepsTheUnfusedBits) {
    tandem::Config c;
    c.device = "cpu";
    tandem::Runtime fused(c);
    c.fusion = false;
    tandem::Runtime plain(c);
    std::mt19937_64 rng(61);
    tep::check_chains(fused, plain, rng);
}

}  // namespace
