// Shape: MATLAB normal form (>= 2 dims, trailing singletons dropped), element counts, text,
// and implicit expansion (broadcast_shapes) against the reference rule.
#include <gtest/gtest.h>

#include <random>

#include "reference.hpp"
#include "tandem/tandem.hpp"

using tandem::Shape;

TEST(Shape, DefaultIsZeroByZero) {
    Shape s;
    EXPECT_EQ(s.ndims(), 2);
    EXPECT_EQ(s[0], 0);
    EXPECT_EQ(s[1], 0);
    EXPECT_EQ(s.numel(), 0);
    EXPECT_TRUE(s.empty());
    EXPECT_FALSE(s.is_scalar());
    EXPECT_EQ(s.to_string(), "0x0");
    EXPECT_EQ(s, Shape({0, 0}));
}

TEST(Shape, TrailingSingletonsBeyondSecondAreDropped) {
    EXPECT_EQ(Shape({3, 4, 1}), Shape({3, 4}));
    EXPECT_EQ(Shape({3, 4, 1, 1, 1}), Shape({3, 4}));
    EXPECT_EQ(Shape({3, 4, 1}).ndims(), 2);
    EXPECT_EQ(Shape({3, 4, 2, 1}).ndims(), 3);
    EXPECT_EQ(Shape({3, 4, 2, 1}), Shape({3, 4, 2}));
    // Singletons inside are kept.
    EXPECT_EQ(Shape({3, 1, 2}).ndims(), 3);
    EXPECT_NE(Shape({3, 1, 2}), Shape({3, 2}));
    // The second dimension is never dropped.
    EXPECT_EQ(Shape({1, 1}).ndims(), 2);
    EXPECT_EQ(Shape({1, 1, 1}), Shape({1, 1}));
    EXPECT_EQ(Shape({5, 1}).ndims(), 2);
}

TEST(Shape, OneDimensionIsPaddedToTwo) {
    Shape s{5};
    EXPECT_EQ(s.ndims(), 2);
    EXPECT_EQ(s[0], 5);
    EXPECT_EQ(s[1], 1);
    EXPECT_EQ(s, Shape({5, 1}));
}

TEST(Shape, VectorConstructorNormalisesToo) {
    EXPECT_EQ(Shape(std::vector<std::int64_t>{2, 3, 1, 1}), Shape({2, 3}));
    EXPECT_EQ(Shape(std::vector<std::int64_t>{2, 3, 4}).dims(), (std::vector<std::int64_t>{2, 3, 4}));
}

TEST(Shape, NumelAndPredicates) {
    EXPECT_EQ(Shape({3, 4, 2}).numel(), 24);
    EXPECT_EQ(Shape({3, 0, 2}).numel(), 0);
    EXPECT_TRUE(Shape({3, 0, 2}).empty());
    EXPECT_TRUE(Shape::scalar().is_scalar());
    EXPECT_EQ(Shape::scalar(), Shape({1, 1}));
    EXPECT_EQ(Shape::scalar().numel(), 1);
    EXPECT_FALSE(Shape({1, 2}).is_scalar());
    EXPECT_EQ(Shape({0, 3}).numel(), 0);
}

TEST(Shape, ExtentBeyondNdimsIsOne) {
    Shape s{3, 4};
    EXPECT_EQ(s[2], 1);
    EXPECT_EQ(s[7], 1);
    Shape t{3, 4, 5};
    EXPECT_EQ(t[2], 5);
    EXPECT_EQ(t[3], 1);
}

TEST(Shape, ToString) {
    EXPECT_EQ(Shape({3, 4}).to_string(), "3x4");
    EXPECT_EQ(Shape({3, 4, 2}).to_string(), "3x4x2");
    EXPECT_EQ(Shape({3, 4, 1}).to_string(), "3x4");
    EXPECT_EQ(Shape({0, 3}).to_string(), "0x3");
    EXPECT_EQ(Shape::scalar().to_string(), "1x1");
}

TEST(Shape, NegativeExtentIsShapeError) {
    EXPECT_THROW(Shape({-1, 3}), tandem::ShapeError);
    EXPECT_THROW(Shape({3, -2}), tandem::ShapeError);
    EXPECT_THROW(Shape({3, 4, -1}), tandem::ShapeError);
    EXPECT_THROW(Shape(std::vector<std::int64_t>{2, -5}), tandem::ShapeError);
}

TEST(Shape, OverflowingElementCountIsShapeError) {
    const std::int64_t big = std::int64_t{1} << 40;
    EXPECT_THROW(Shape({big, big}), tandem::ShapeError);
    EXPECT_THROW(Shape({INT64_MAX, 2}), tandem::ShapeError);
    // A zero extent makes the count 0 whatever the others are.
    EXPECT_EQ(Shape({0, big}).numel(), 0);
    // Large but representable is fine.
    EXPECT_EQ(Shape({std::int64_t{1} << 20, std::int64_t{1} << 20}).numel(), std::int64_t{1} << 40);
}

TEST(Shape, ShapeErrorIsATandemError) {
    try {
        Shape s{-1, 3};
        FAIL() << "no exception";
    } catch (const tandem::Error& e) {
        EXPECT_NE(dynamic_cast<const tandem::ShapeError*>(&e), nullptr);
        EXPECT_FALSE(std::string(e.what()).empty());
    }
}

TEST(Broadcast, Basics) {
    using tandem::broadcast_shapes;
    EXPECT_EQ(broadcast_shapes(Shape({3, 4}), Shape({3, 4}), "plus"), Shape({3, 4}));
    EXPECT_EQ(broadcast_shapes(Shape({5, 1}), Shape({1, 4}), "plus"), Shape({5, 4}));
    EXPECT_EQ(broadcast_shapes(Shape({1, 1}), Shape({3, 4, 2}), "plus"), Shape({3, 4, 2}));
    EXPECT_EQ(broadcast_shapes(Shape({3, 1, 4}), Shape({1, 5}), "plus"), Shape({3, 5, 4}));
    EXPECT_EQ(broadcast_shapes(Shape({3, 4}), Shape({1, 1, 6}), "plus"), Shape({3, 4, 6}));
    // A 1 against a 0 gives 0.
    EXPECT_EQ(broadcast_shapes(Shape({0, 3}), Shape({1, 3}), "plus"), Shape({0, 3}));
    EXPECT_EQ(broadcast_shapes(Shape({1, 1}), Shape({0, 0}), "plus"), Shape({0, 0}));
    EXPECT_EQ(broadcast_shapes(Shape({1, 3}), Shape({0, 1}), "plus"), Shape({0, 3}));
    EXPECT_EQ(broadcast_shapes(Shape({0, 0}), Shape({0, 0}), "plus"), Shape({0, 0}));
}

TEST(Broadcast, MismatchIsShapeErrorNamingOpAndShapes) {
    struct Case {
        Shape a, b;
        std::string sa, sb;
    };
    const Case cases[] = {
        {Shape({3, 4}), Shape({4, 3}), "3x4", "4x3"},
        {Shape({2, 3, 4}), Shape({2, 5}), "2x3x4", "2x5"},
        {Shape({0, 3}), Shape({2, 3}), "0x3", "2x3"},
        {Shape({0, 0}), Shape({2, 2}), "0x0", "2x2"},
        {Shape({5, 1}), Shape({4, 1}), "5x1", "4x1"},
    };
    for (const auto& c : cases) {
        for (std::string op : {"plus", "atan2", "where"}) {
            SCOPED_TRACE(op + " " + c.sa + " vs " + c.sb);
            try {
                (void)tandem::broadcast_shapes(c.a, c.b, op);
                ADD_FAILURE() << "no ShapeError";
            } catch (const tandem::ShapeError& e) {
                const std::string m = e.what();
                EXPECT_NE(m.find(op), std::string::npos) << m;
                EXPECT_NE(m.find(c.sa), std::string::npos) << m;
                EXPECT_NE(m.find(c.sb), std::string::npos) << m;
            }
        }
    }
}

TEST(Broadcast, AgreesWithReferenceOnRandomShapes) {
    std::mt19937_64 rng(0x5eed5);
    int agreed = 0, failed = 0;
    for (int it = 0; it < 2000; ++it) {
        auto random_dims = [&] {
            tref::Dims d(2 + rng() % 3);
            for (auto& x : d) x = static_cast<std::int64_t>(rng() % 4);  // 0..3
            return d;
        };
        const auto a = random_dims(), b = random_dims();
        SCOPED_TRACE(tref::dims_str(a) + " vs " + tref::dims_str(b));
        const auto want = tref::broadcast(a, b);
        if (want) {
            EXPECT_EQ(tandem::broadcast_shapes(tref::to_shape(a), tref::to_shape(b), "plus"), tref::to_shape(*want));
            ++agreed;
        } else {
            EXPECT_THROW((void)tandem::broadcast_shapes(tref::to_shape(a), tref::to_shape(b), "plus"),
                         tandem::ShapeError);
            ++failed;
        }
    }
    EXPECT_GT(agreed, 100);
    EXPECT_GT(failed, 100);
}

TEST(Broadcast, IsSymmetric) {
    std::mt19937_64 rng(77);
    for (int it = 0; it < 500; ++it) {
        tref::Dims a(2 + rng() % 3), b(2 + rng() % 3);
        for (auto& x : a) x = (rng() % 3 == 0) ? 1 : 3;
        for (auto& x : b) x = (rng() % 3 == 0) ? 1 : 3;
        EXPECT_EQ(tandem::broadcast_shapes(tref::to_shape(a), tref::to_shape(b), "plus"),
                  tandem::broadcast_shapes(tref::to_shape(b), tref::to_shape(a), "plus"));
    }
}
