// Regions are typed and carry their cost (graph/region.hpp): fusion sets each region's kind from
// the closed RegionKind set and fills in its cost summary (bytes per operand, element operations
// by class and type from the op table's cost column, reduction extents, a product's m, n, k).
// Graphs are built through the public API and planned with fusion directly, as the scheduler
// would, so each region can be looked at before anything runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "plan_helper.hpp"
#include "graph/op_table.hpp"
#include "tandem/tandem.hpp"

using tandem::Array;
using tandem::DType;
using tandem::Runtime;
using tandem::Shape;
using tandem::detail::CostClass;
using tandem::detail::Node;
using tandem::detail::OpKind;
using tandem::detail::Region;
using tandem::detail::RegionKind;

namespace {

Runtime cpu_runtime() {
    tandem::Config c;
    c.device = "cpu";
    return Runtime(c);
}

std::vector<Region> plan(const std::vector<Array>& targets) { return plan_helper::plan(targets); }

Array ramp(Runtime& rt, std::int64_t rows, std::int64_t cols) {
    std::vector<double> v(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25 + 0.001 * static_cast<double>(i);
    return rt.array(std::span<const double>(v), Shape{rows, cols});
}

std::int64_t ops(const Region& r, CostClass c, DType t) {
    return r.cost.ops[static_cast<std::size_t>(c)][t == DType::f32 ? 1 : 0];
}

const Region& only_of_kind(const std::vector<Region>& regions, RegionKind k) {
    auto it = std::find_if(regions.begin(), regions.end(), [&](const Region& r) { return r.kind == k; });
    EXPECT_NE(it, regions.end()) << "no region of kind " << tandem::detail::region_kind_name(k);
    EXPECT_EQ(std::count_if(regions.begin(), regions.end(), [&](const Region& r) { return r.kind == k; }), 1);
    return *it;
}

}  // namespace

TEST(RegionCost, OpTableGivesEveryOpAClass) {
    using tandem::detail::op_info;
    EXPECT_EQ(op_info(OpKind::Add).cost, CostClass::simple);
    EXPECT_EQ(op_info(OpKind::Div).cost, CostClass::divide);
    EXPECT_EQ(op_info(OpKind::Sqrt).cost, CostClass::divide);
    EXPECT_EQ(op_info(OpKind::Exp).cost, CostClass::transcendental);
    EXPECT_EQ(op_info(OpKind::Pow).cost, CostClass::transcendental);
    EXPECT_EQ(op_info(OpKind::RandN).cost, CostClass::random);
    EXPECT_EQ(op_info(OpKind::Input).cost, CostClass::none);
    EXPECT_EQ(op_info(OpKind::Transpose).cost, CostClass::none);
    EXPECT_EQ(op_info(OpKind::Sum).cost, CostClass::simple);
    for (std::size_t i = 0; i < tandem::detail::kOpCount; ++i) {
        const auto& info = op_info(static_cast<OpKind>(i));
        EXPECT_LT(static_cast<std::size_t>(info.cost), tandem::detail::kCostClasses) << info.name;
        if (tandem::detail::is_elementwise(static_cast<OpKind>(i)) && info.group != tandem::detail::OpGroup::Generator)
            EXPECT_NE(info.cost, CostClass::none) << info.name << ": an elementwise op does some work";
    }
}

TEST(RegionCost, ElementwiseChainCountsItsOpsAndBytes) {
    Runtime rt = cpu_runtime();
    const std::int64_t n = 1000;
    Array x = ramp(rt, n, 1);
    Array y = tandem::sin(x) * x + 0.5;   // 1 transcendental, 2 simple per element
    Array z = y / (1.0 + tandem::abs(x)); // 2 simple (plus, abs), 1 divide
    const auto regions = plan({z});
    ASSERT_EQ(regions.size(), 1u);
    const Region& r = regions[0];
    EXPECT_EQ(r.kind, RegionKind::elementwise);
    EXPECT_EQ(r.cost.elements, n);
    EXPECT_EQ(r.cost.input_bytes, std::vector<std::int64_t>{8 * n});
    EXPECT_EQ(r.cost.output_bytes, std::vector<std::int64_t>{8 * n});
    EXPECT_EQ(ops(r, CostClass::transcendental, DType::f64), n);
    EXPECT_EQ(ops(r, CostClass::simple, DType::f64), 4 * n);
    EXPECT_EQ(ops(r, CostClass::divide, DType::f64), n);
    EXPECT_EQ(r.cost.ops_of(CostClass::random), 0);
    EXPECT_EQ(r.cost.k, 0);
    EXPECT_NE(r.to_string().find("cost: reads 8000 B, writes 8000 B"), std::string::npos) << r.to_string();
}

TEST(RegionCost, SingleAndBroadcastOperandsAreCountedAsTheyAre) {
    Runtime rt = cpu_runtime();
    Array x = tandem::single(ramp(rt, 64, 32));
    (void)x.gather().get();                 // a materialised single input
    Array row = ramp(rt, 1, 32);            // expanded over the rows, counted at its own size
    const auto regions = plan({tandem::exp(x) * row});
    ASSERT_EQ(regions.size(), 1u);
    const Region& r = regions[0];
    EXPECT_EQ(r.kind, RegionKind::elementwise);
    std::vector<std::int64_t> in = r.cost.input_bytes;
    std::sort(in.begin(), in.end());
    EXPECT_EQ(in, (std::vector<std::int64_t>{32 * 8, 64 * 32 * 4}));
    EXPECT_EQ(r.cost.output_bytes, std::vector<std::int64_t>{64 * 32 * 4});
    EXPECT_EQ(ops(r, CostClass::transcendental, DType::f32), 64 * 32);
    EXPECT_EQ(ops(r, CostClass::simple, DType::f32), 64 * 32);
    EXPECT_EQ(ops(r, CostClass::transcendental, DType::f64) + ops(r, CostClass::simple, DType::f64), 0);
}

TEST(RegionCost, ReductionCountsItsStepsLinesAndTail) {
    Runtime rt = cpu_runtime();
    Array x = ramp(rt, 100, 30);
    Array norms = tandem::sqrt(tandem::sum(x * x, 1));  // 1 x 30; the square root is the tail
    const auto regions = plan({norms});
    ASSERT_EQ(regions.size(), 1u);
    const Region& r = regions[0];
    EXPECT_EQ(r.kind, RegionKind::reduce);
    ASSERT_EQ(r.tail.size(), 1u);
    EXPECT_EQ(r.cost.reduce_len, 100);
    EXPECT_EQ(r.cost.reduce_lines, 30);
    EXPECT_EQ(r.cost.elements, 3000);
    EXPECT_EQ(r.cost.input_bytes, std::vector<std::int64_t>{3000 * 8});
    EXPECT_EQ(r.cost.output_bytes, (std::vector<std::int64_t>{30 * 8, 30 * 8}));  // the sums, the norms
    EXPECT_EQ(ops(r, CostClass::simple, DType::f64), 3000 + 3000);  // the squares, the sum's steps
    EXPECT_EQ(ops(r, CostClass::divide, DType::f64), 30);           // the tail's square roots
}

TEST(RegionCost, ProductCarriesItsExtentsAndType) {
    Runtime rt = cpu_runtime();
    Array a = ramp(rt, 20, 40);
    Array b = ramp(rt, 20, 30);
    const auto regions = plan({tandem::matmul(tandem::transpose(a), b)});  // a' * b: 40 x 30, k = 20
    const Region& r = only_of_kind(regions, RegionKind::matmul);
    EXPECT_EQ(r.cost.m, 40);
    EXPECT_EQ(r.cost.n, 30);
    EXPECT_EQ(r.cost.k, 20);
    EXPECT_EQ(r.cost.flops(), 2 * 40 * 30 * 20);
    EXPECT_EQ(r.cost.product_dtype, DType::f64);
    EXPECT_EQ(r.cost.output_bytes, std::vector<std::int64_t>{40 * 30 * 8});
}

TEST(RegionCost, EveryKindIsSetAndRearrangementsCostTheirBytes) {
    Runtime rt = cpu_runtime();
    Array x = ramp(rt, 6, 5);
    Array t = tandem::transpose(x);
    Array c = tandem::cumsum(x, 1);
    Array k = tandem::cat(1, {x, x});
    Array v = tandem::reshape(x, Shape{5, 6});
    std::vector<double> idx = {2, 4, 1};
    Array g = tandem::index(x, rt.array(std::span<const double>(idx), Shape{3, 1}));
    const auto regions = plan({t, c, k, v, g});
    EXPECT_EQ(only_of_kind(regions, RegionKind::transpose).cost.output_bytes, std::vector<std::int64_t>{30 * 8});
    const Region& scan = only_of_kind(regions, RegionKind::scan);
    EXPECT_EQ(scan.cost.reduce_len, 6);
    EXPECT_EQ(scan.cost.reduce_lines, 5);
    EXPECT_EQ(ops(scan, CostClass::simple, DType::f64), 30);
    EXPECT_EQ(only_of_kind(regions, RegionKind::concat).cost.output_bytes, std::vector<std::int64_t>{60 * 8});
    EXPECT_EQ(only_of_kind(regions, RegionKind::view).cost.bytes_written(), 0);  // shares its input
    EXPECT_EQ(only_of_kind(regions, RegionKind::gather).cost.output_bytes, std::vector<std::int64_t>{3 * 8});
    for (const Region& r : regions) {
        if (r.kind == RegionKind::scan) continue;
        for (std::size_t c = 1; c < tandem::detail::kCostClasses; ++c)
            EXPECT_EQ(r.cost.ops[c][0] + r.cost.ops[c][1], 0) << tandem::detail::region_kind_name(r.kind);
    }
}

// The plan's order: every region after the regions whose results it reads (placement prices a
// region from where its inputs will be, and the scheduler launches them in this order). A node
// may join an older group of its shape and make it read a newer one: W5's last region
// (v'*G*v / sum(var(X)), whose sum of var joined the 1 x d group of v'*G) came before var(X)'s
// sum of squares.
namespace {

void expect_topological(const std::vector<Region>& regions, const std::string& what) {
    std::unordered_map<const Node*, std::size_t> made_by;
    for (std::size_t i = 0; i < regions.size(); ++i)
        for (const auto& o : regions[i].outputs) made_by[o.node.get()] = i;
    for (std::size_t i = 0; i < regions.size(); ++i)
        for (const auto& in : regions[i].inputs) {
            auto it = made_by.find(in.get());
            if (it != made_by.end())
                EXPECT_LT(it->second, i) << what << ": region " << i << " (" << regions[i].summary()
                                         << ") reads the result of region " << it->second << " ("
                                         << regions[it->second].summary() << ")";
        }
}

}  // namespace

TEST(FusionOrder, PowerIterationsLastRegionComesAfterTheVarianceItReads) {
    Runtime rt = cpu_runtime();
    const std::int64_t n = 64, d = 8;
    const Array X = ramp(rt, n, d);
    const Array Xc = X - tandem::mean(X);
    const Array G = tandem::matmul(Xc, Xc, {.transpose_a = true}) / static_cast<double>(n - 1);
    Array v = rt.ones({d, 1}) / std::sqrt(static_cast<double>(d));
    for (int it = 0; it < 3; ++it) {
        const Array Gv = tandem::matmul(G, v);
        v = Gv / tandem::norm(Gv);
    }
    const Array vGv = tandem::matmul(tandem::matmul(v, G, {.transpose_a = true}), v);
    const auto regions = plan({vGv / tandem::sum(tandem::var(X))});
    expect_topological(regions, "W5");
}

TEST(FusionOrder, RandomProgramsOfReductionsAndBroadcastsAreInTopologicalOrder) {
    Runtime rt = cpu_runtime();
    std::mt19937 rng(20261127);
    for (int program = 0; program < 300; ++program) {
        // Values of three shapes (n x m, 1 x m, n x 1) built by elementwise ops with broadcasting,
        // reductions along either dimension and scalar reductions, read in any order.
        const std::int64_t n = 6, m = 5;
        std::vector<Array> full = {ramp(rt, n, m)}, row = {ramp(rt, 1, m)}, col = {ramp(rt, n, 1)};
        auto pick = [&](std::vector<Array>& from) { return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)]; };
        for (int step = 0; step < 12; ++step) {
            switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
                case 0: full.push_back(pick(full) * pick(row) + 1.0); break;
                case 1: full.push_back(pick(full) - pick(col)); break;
                case 2: row.push_back(tandem::sum(pick(full), 1) / 3.0); break;
                case 3: col.push_back(tandem::mean(pick(full), 2)); break;
                case 4: row.push_back(pick(row) * tandem::sum(pick(col))); break;
                case 5: col.push_back(tandem::exp(pick(col)) - tandem::max(pick(row), {}, 2)); break;
                default: row.push_back(pick(row) + tandem::var(pick(full))); break;
            }
        }
        const auto regions = plan({tandem::sum(pick(full)) + tandem::sum(pick(row)) * tandem::sum(pick(col)), pick(row)});
        expect_topological(regions, "program " + std::to_string(program));
        if (HasFailure()) break;
    }
}
