// The node table interns nodes by structure (graph/node.hpp): the same op, type, extents,
// operands and attributes give the same node while it lives; a node that died, or was forgotten,
// is made again; keys of many words; the table keeps working through many rebuilds; what a
// finished region drops is freed by the next build, or by the table's burial thread.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "graph/node.hpp"
#include "tandem/tandem.hpp"

using namespace tandem::detail;
using tandem::DType;
using tandem::Shape;

namespace {

std::shared_ptr<Node> constant(NodeTable& t, double v) { return t.make(OpKind::Constant, DType::f64, Shape::scalar(), {}, {v, 0, 0}); }

}  // namespace

TEST(NodeTable, TheSameStructureIsTheSameNodeWhileItLives) {
    NodeTable t(nullptr);
    auto x = t.make_input(DType::f64, Shape{4, 1});
    auto a = t.make(OpKind::Exp, DType::f64, Shape{4, 1}, {x});
    EXPECT_EQ(t.make(OpKind::Exp, DType::f64, Shape{4, 1}, {x}), a);
    EXPECT_NE(t.make(OpKind::Sin, DType::f64, Shape{4, 1}, {x}), a) << "another op";
    EXPECT_NE(t.make(OpKind::Exp, DType::f32, Shape{4, 1}, {x}), a) << "another type";
    EXPECT_NE(t.make(OpKind::Exp, DType::f64, Shape{2, 2}, {x}), a) << "other extents";
    EXPECT_NE(t.make(OpKind::Exp, DType::f64, Shape{4, 1}, {t.make_input(DType::f64, Shape{4, 1})}), a)
        << "another operand (inputs are never interned)";
    EXPECT_EQ(constant(t, 2.5), constant(t, 2.5));
    EXPECT_NE(constant(t, 2.5), constant(t, -2.5));
    EXPECT_NE(constant(t, 0.0), constant(t, -0.0)) << "attributes compare by their bits";
}

TEST(NodeTable, ANodeThatDiedOrWasForgottenIsMadeAgain) {
    NodeTable t(nullptr);
    auto x = t.make_input(DType::f64, Shape{3, 1});
    std::uint64_t first_id = 0;
    {
        auto a = t.make(OpKind::Sqrt, DType::f64, Shape{3, 1}, {x});
        first_id = a->id;
    }
    auto again = t.make(OpKind::Sqrt, DType::f64, Shape{3, 1}, {x});
    EXPECT_NE(again->id, first_id) << "the dead node's entry gives a new node";
    EXPECT_EQ(t.make(OpKind::Sqrt, DType::f64, Shape{3, 1}, {x}), again);
    t.forget(*again);
    auto fresh = t.make(OpKind::Sqrt, DType::f64, Shape{3, 1}, {x});
    EXPECT_NE(fresh, again) << "a forgotten node is not found again";
    EXPECT_EQ(t.make(OpKind::Sqrt, DType::f64, Shape{3, 1}, {x}), fresh);
}

TEST(NodeTable, KeysOfManyWords) {
    // A key holds the extents and operand ids inline up to 8 words, the rest apart.
    NodeTable t(nullptr);
    std::vector<std::shared_ptr<Node>> parts;
    for (int i = 0; i < 12; ++i) parts.push_back(t.make_input(DType::f64, Shape{2, 1, 1, 1}));
    auto cat = t.make(OpKind::Cat, DType::f64, Shape{24, 1, 1, 1}, parts, {0, 0, 0});
    EXPECT_EQ(t.make(OpKind::Cat, DType::f64, Shape{24, 1, 1, 1}, parts, {0, 0, 0}), cat);
    auto swapped = parts;
    std::swap(swapped[10], swapped[11]);  // differs past the inline words only
    EXPECT_NE(t.make(OpKind::Cat, DType::f64, Shape{24, 1, 1, 1}, swapped, {0, 0, 0}), cat);
}

TEST(NodeTable, LiveNodesAreFoundThroughManyRebuilds) {
    // A thousand nodes kept, a hundred thousand made and dropped around them (each shard fills
    // and is rebuilt many times, growing and shrinking): every kept one is still found, and every
    // dropped one is made anew.
    NodeTable t(nullptr);
    auto x = t.make_input(DType::f64, Shape{1, 1});
    std::vector<std::shared_ptr<Node>> kept;
    for (int i = 0; i < 1000; ++i) kept.push_back(t.make(OpKind::Mul, DType::f64, Shape{1, 1}, {x, constant(t, i)}));
    for (int round = 0; round < 4; ++round) {
        std::vector<std::shared_ptr<Node>> churn;
        for (int i = 0; i < 25000; ++i) churn.push_back(t.make(OpKind::Add, DType::f64, Shape{1, 1}, {x, constant(t, i + 0.5)}));
        for (int i = 0; i < 25000; i += 997)
            EXPECT_EQ(t.make(OpKind::Add, DType::f64, Shape{1, 1}, {x, constant(t, i + 0.5)}), churn[static_cast<std::size_t>(i)]);
        churn.clear();  // dropped
        for (int i = 0; i < 1000; ++i)
            ASSERT_EQ(t.make(OpKind::Mul, DType::f64, Shape{1, 1}, {x, constant(t, i)}), kept[static_cast<std::size_t>(i)])
                << "round " << round << ", node " << i;
    }
}

TEST(NodeTable, KeysThatDifferInHighBitsAloneSpreadOverShardsAndSlots) {
    // Attributes 1.0, 2.0, ... (a loop's random streams, its constants) differ only in their high
    // bits; the low bits of their hashes choose the shard and the slot, and must differ too.
    NodeTable t(nullptr);
    std::vector<std::shared_ptr<Node>> nodes;
    std::vector<bool> low_seen(1u << 12, false);
    std::size_t distinct = 0;
    for (int k = 1; k <= 256; ++k) {
        nodes.push_back(t.make(OpKind::RandN, DType::f32, Shape{1000, 1}, {}, {42, 0, static_cast<double>(k)}));
        const std::size_t low = nodes.back()->hash & ((1u << 12) - 1);
        if (!low_seen[low]) low_seen[low] = true, ++distinct;
    }
    EXPECT_GT(distinct, 230u) << "256 keys: their hashes' low 12 bits nearly all distinct";
    for (int k = 1; k <= 256; ++k)
        EXPECT_EQ(t.make(OpKind::RandN, DType::f32, Shape{1000, 1}, {}, {42, 0, static_cast<double>(k)}), nodes[k - 1]);
}

TEST(NodeTable, WhatIsBuriedIsFreedByTheNextMakeOrSoonAfter) {
    NodeTable t(nullptr);
    auto x = t.make_input(DType::f64, Shape{3, 1});
    auto bury_exp = [&] {
        auto a = t.make(OpKind::Exp, DType::f64, Shape{3, 1}, {x});
        const std::weak_ptr<Node> w = a;
        std::vector<std::shared_ptr<Node>> released{std::move(a)};
        t.bury(released);
        EXPECT_TRUE(released.empty()) << "the graveyard takes the references";
        return w;
    };
    // The next make() frees what was buried before it looks anything up: the same expression
    // built again is a new node (recomputed), whenever the builder comes.
    std::weak_ptr<Node> w = bury_exp();
    const std::uint64_t first_id = w.expired() ? 0 : w.lock()->id;  // (the burial thread may have come first)
    auto other = t.make(OpKind::Sin, DType::f64, Shape{3, 1}, {x});
    EXPECT_TRUE(w.expired()) << "make() freed the graveyard first";
    EXPECT_NE(t.make(OpKind::Exp, DType::f64, Shape{3, 1}, {x})->id, first_id);
    // Nobody builds: the burial thread frees it soon after (kBurialGrace).
    w = bury_exp();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!w.expired() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    EXPECT_TRUE(w.expired()) << "a graveyard no make() came for is freed by the burial thread";
    // Or at once, when asked (Scheduler::wait_idle).
    w = bury_exp();
    t.release_buried();
    EXPECT_TRUE(w.expired());
}

TEST(NodeTable, ALoopsLineageIsSetAsideAndFreedWhereAThreadWaitsForTheDevices) {
    // A device loop's value keeps its lineage: recipes (never in the index) down to its inputs.
    // Buried with the loop's graph, the recipes wait for release_lineage (a gatherer that waits
    // for its devices); a node a build can find that a recipe reads goes with the graph.
    NodeTable t(nullptr);
    auto x = t.make_input(DType::f64, Shape{3, 1});
    auto findable = t.make(OpKind::Exp, DType::f64, Shape{3, 1}, {x});
    auto of = t.make(OpKind::Sin, DType::f64, Shape{3, 1}, {x});
    auto bury_loop = [&](std::weak_ptr<Node>& deep, std::weak_ptr<Node>& read, std::weak_ptr<Node>& head) {
        std::shared_ptr<Node> chain = t.make_recipe(*of, {x});
        deep = chain;
        EXPECT_TRUE(chain->recipe && !chain->recipe_reads_graph) << "a recipe of an input reads no graph";
        for (int k = 0; k < 200; ++k) chain = t.make_recipe(*of, {chain});
        auto reads_findable = t.make_recipe(*of, {findable});
        EXPECT_TRUE(reads_findable->recipe_reads_graph);
        auto top = t.make_recipe(*of, {chain, reads_findable});
        EXPECT_TRUE(top->recipe_reads_graph) << "through the recipes it reads";
        auto value = t.make(OpKind::Cos, DType::f64, Shape{3, 1}, {x});
        value->inputs = {top};  // computed on a device: its recipe instead of its graph
        head = value;
        read = findable;
        findable.reset();
        std::vector<std::shared_ptr<Node>> released{std::move(value)};
        chain.reset(), reads_findable.reset(), top.reset();
        t.bury(released);
    };
    std::weak_ptr<Node> deep, read, head;
    bury_loop(deep, read, head);
    const std::uint64_t read_id = read.expired() ? 0 : read.lock()->id;
    t.release_buried();
    EXPECT_TRUE(head.expired()) << "the graph is gone";
    EXPECT_TRUE(read.expired()) << "and what a build could find with it, though a recipe read it";
    EXPECT_NE(t.make(OpKind::Exp, DType::f64, Shape{3, 1}, {x})->id, read_id) << "built again: a new node";
    EXPECT_FALSE(deep.expired()) << "the lineage is set aside";
    t.release_lineage();
    EXPECT_TRUE(deep.expired()) << "and freed where a thread waits for its devices";
    // Nobody gathers: the burial thread frees it soon after (kLineageGrace).
    findable = t.make(OpKind::Exp, DType::f64, Shape{3, 1}, {x});
    bury_loop(deep, read, head);
    t.release_buried();
    EXPECT_FALSE(deep.expired());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!deep.expired() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    EXPECT_TRUE(deep.expired()) << "lineage no gatherer came for is freed by the burial thread";
}

TEST(NodeTable, AGraphDroppedBeforeItsValueCameIsGoneOnceTheNextExpressionIsBuilt) {
    // Through a runtime: the completion buries the dropped graph before the future resolves,
    // so the first node built after get() finds nothing of it.
    tandem::Config c;
    c.device = "cpu";
    tandem::Runtime rt(c);
    const std::vector<double> v = {1, 2, 3, 4};
    const tandem::Array x = rt.array(std::span<const double>(v), Shape{4, 1});
    for (int round = 0; round < 3; ++round) {
        tandem::Array y = tandem::exp(x) * 2.0 + 1.0;
        const std::weak_ptr<Node> node = y.node();
        const tandem::Future<tandem::HostArray> f = y.gather();
        y = tandem::Array();
        EXPECT_EQ(f.get().numel(), 4);
        const tandem::Array next = tandem::sqrt(x);  // any expression
        EXPECT_TRUE(node.expired()) << "round " << round;
        rt.wait_idle();
    }
    const tandem::Metrics m = rt.metrics();
    EXPECT_EQ(m.plans, 3u) << "each round computed its value again";
}
