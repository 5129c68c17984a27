// User kernels on the CPU executor: the C++ bodies (tests/kernel_cases.hpp).
#include <gtest/gtest.h>

#include "kernel_cases.hpp"

namespace {

tandem::Config cpu() {
    tandem::Config c;
    c.device = "cpu";
    c.plan_cache = "verify";
    return c;
}

}  // namespace

TEST(Kernel, ElementwiseWithSpecialValues) {
    tandem::Runtime rt(cpu());
    kernel_cases::elementwise_with_specials(rt);
}

TEST(Kernel, DependencyKinds) {
    tandem::Runtime rt(cpu());
    kernel_cases::dependency_kinds(rt);
}

TEST(Kernel, ReadWriteInPlace) {
    tandem::Runtime rt(cpu());
    kernel_cases::read_write_in_place(rt);
}

TEST(Kernel, InteropWithArrays) {
    tandem::Runtime rt(cpu());
    kernel_cases::interop_with_arrays(rt);
}

TEST(Kernel, HostTaskAndHostAccessor) {
    tandem::Runtime rt(cpu());
    kernel_cases::host_task_and_host_accessor(rt);
}

TEST(Kernel, ExplicitAndInOrderDependencies) {
    tandem::Runtime rt(cpu());
    kernel_cases::explicit_and_in_order_dependencies(rt);
}

TEST(Kernel, ThrowingBodyPoisonsDependantsOnly) {
    tandem::Runtime rt(cpu());
    kernel_cases::throwing_body_poisons_dependants_only(rt);
}

TEST(Kernel, BadInputIsRefusedAtSubmit) {
    tandem::Runtime rt(cpu());
    kernel_cases::bad_input_is_refused_at_submit(rt);
}

TEST(Kernel, BufferOutlivingItsRuntime) { kernel_cases::buffer_outliving_its_runtime(cpu()); }

TEST(Kernel, GlslOnlyKernelWithoutADeviceIsRefused) {
    tandem::Runtime rt(cpu());
    tandem::Buffer y(rt, tandem::Shape{8, 1}, tandem::DType::f64, "y");
    tandem::Queue q(rt);
    static const tandem::Kernel fill = tandem::Kernel("fill").accessors({"y"}).glsl("y(item.x) = 1.0;");
    try {
        q.submit([&](tandem::Handler& h) {
            h.require(y, tandem::access::write);
            h.parallel_for(tandem::Range(8), fill);
        });
        ADD_FAILURE() << "a GLSL-only kernel was accepted by a runtime without a device";
    } catch (const tandem::KernelError& e) {
        EXPECT_NE(std::string(e.what()).find("fill"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no device"), std::string::npos) << e.what();
    }
}

TEST(Kernel, RuntimeDestroyedWhileItsQueueSendsGroupsInTheBackground) {
    // The queue sends groups from a runtime thread; the runtime going away waits for that send
    // instead of being destroyed by it (seen: the last reference dropped on a continuation thread).
    for (int round = 0; round < 20; ++round) {
        auto rt = std::make_unique<tandem::Runtime>(cpu());
        auto q = std::make_unique<tandem::Queue>(*rt);
        tandem::Buffer b(*rt, std::vector<double>(64, 1.0), tandem::Shape{64, 1}, "b");
        for (int k = 0; k < 50; ++k)
            q->submit([&](tandem::Handler& h) {
                auto acc = h.require<double>(b, tandem::access::read_write);
                h.parallel_for(tandem::Range(64), [=](tandem::Item it) { acc[it.linear] += 1.0; });
            });
        rt.reset();  // the queue outlives it: what it still holds fails, nothing crashes
        try {
            q->wait();
        } catch (const tandem::KernelError& e) {
            EXPECT_NE(std::string(e.what()).find("gone"), std::string::npos) << e.what();
        }
        q.reset();
    }
}

TEST(Kernel, AGroupRunsOnceWhicheverOfItsValuesIsAskedForFirst) {
    // A gather of one buffer a group writes, before the queue sends the group: the plan computes
    // all of the group's values (its other buffer, its token), and the group runs once.
    tandem::Runtime rt(cpu());
    tandem::Buffer x(rt, std::vector<double>(100, 2.0), tandem::Shape{100, 1}, "x");
    tandem::Buffer a(rt, tandem::Shape{100, 1}, tandem::DType::f64, "a");
    tandem::Buffer b(rt, tandem::Shape{100, 1}, tandem::DType::f64, "b");
    std::atomic<int> runs{0};
    tandem::Queue q(rt);
    for (int k = 0; k < 20; ++k) {
        auto ev = q.submit([&](tandem::Handler& h) {
            auto in = h.require<double>(x, tandem::access::read);
            auto oa = h.require<double>(a, tandem::access::write);
            auto ob = h.require<double>(b, tandem::access::write);
            h.host_task([=, &runs] {
                ++runs;
                for (int i = 0; i < 100; ++i) oa[i] = in[i] + 1, ob[i] = in[i] * 3;
            });
        });
        EXPECT_EQ(a.array().gather().get().at(5), 3.0);
        ev.wait();
        EXPECT_EQ(b.array().gather().get().at(5), 6.0);
    }
    q.wait();
    EXPECT_EQ(runs.load(), 20);
}
