// The calibration file (calibrate/calibration_file.hpp): a round trip keeps every rate of the CPU
// and of each device; each open device takes the entry of its identity (one without keeps the
// defaults); a file that is corrupt, of another version, of another CPU or with an impossible rate
// is reported once and the built-in defaults are used; `tandem calibrate`'s measurements
// (tandem::calibrate) write a file that the next runtime reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>
#include <string>

#include "calibrate/calibration_file.hpp"
#include "tandem/calibration.hpp"
#include "tandem/error.hpp"

using namespace tandem::detail;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
    fs::path d = fs::temp_directory_path() / ("tandem-calibration-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

constexpr const char* kGpuA = "Test GPU (driver 1.2, 00ff)";
constexpr const char* kGpuB = "Other GPU (driver 3.4, 11ee)";

/// Measured on a CPU and two devices of different rates.
Calibration sample() {
    Calibration c;
    c.machine = {"Test CPU 3000", 8};
    c.created_unix_s = 1'790'000'000;
    c.profile = default_machine_profile(8, {DeviceClass::discrete_gpu, DeviceClass::discrete_gpu});
    c.profile.cpu.bytes_per_s = 12.5e9;
    c.profile.devices[0].identity = kGpuA;
    c.profile.devices[0].rates.ops_per_s[3][1] = 7.25e11;
    c.profile.devices[0].link.sync_s = 42e-6;
    c.profile.devices[1].identity = kGpuB;
    c.profile.devices[1].rates.bytes_per_s = 3.5e11;
    c.profile.devices[1].link.upload_bytes_per_s = 6e9;
    return c;
}

/// The runtime's defaults for devices of these identities, in this order.
MachineProfile defaults_for(const std::vector<std::string>& identities) {
    MachineProfile m = default_machine_profile(8, std::vector<DeviceClass>(identities.size(), DeviceClass::discrete_gpu));
    for (std::size_t d = 0; d < identities.size(); ++d) m.devices[d].identity = identities[d];
    return m;
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

}  // namespace

TEST(Calibration, RoundTripKeepsEveryRate) {
    const Calibration c = sample();
    const Calibration back = calibration_from_json(to_json(c), "test");
    EXPECT_EQ(back.machine, c.machine);
    EXPECT_EQ(back.created_unix_s, c.created_unix_s);
    ASSERT_EQ(back.profile.devices.size(), 2u);
    EXPECT_EQ(back.profile.cpu.bytes_per_s, 12.5e9);
    EXPECT_EQ(back.profile.devices[0].identity, kGpuA);
    EXPECT_EQ(back.profile.devices[0].rates.ops_per_s[3][1], 7.25e11);
    EXPECT_EQ(back.profile.devices[0].link.sync_s, 42e-6);
    EXPECT_EQ(back.profile.devices[1].identity, kGpuB);
    EXPECT_EQ(back.profile.devices[1].rates.bytes_per_s, 3.5e11);
    EXPECT_EQ(back.profile.devices[1].link.upload_bytes_per_s, 6e9);
    for (std::size_t d = 0; d < 2; ++d) {
        const ExecutorProfile &want = c.profile.devices[d].rates, &got = back.profile.devices[d].rates;
        for (std::size_t k = 1; k < kCostClasses; ++k)
            for (std::size_t t = 0; t < 2; ++t) {
                EXPECT_EQ(back.profile.cpu.ops_per_s[k][t], c.profile.cpu.ops_per_s[k][t]);
                EXPECT_EQ(got.ops_per_s[k][t], want.ops_per_s[k][t]);
            }
        EXPECT_EQ(got.flops_per_s, want.flops_per_s);
        EXPECT_EQ(got.launch_s, want.launch_s);
        EXPECT_EQ(back.profile.devices[d].link.download_bytes_per_s, c.profile.devices[d].link.download_bytes_per_s);
        EXPECT_EQ(back.profile.devices[d].link.latency_s, c.profile.devices[d].link.latency_s);
    }
    // Two entries for one device: a bad file.
    Calibration twice = sample();
    twice.profile.devices[1].identity = kGpuA;
    EXPECT_THROW((void)calibration_from_json(to_json(twice), "twice"), tandem::ConfigError);
}

TEST(Calibration, WrittenFileIsLoadedForItsMachineOnly) {
    const fs::path dir = temp_dir("load");
    const std::string path = (dir / "sub" / "calibration.json").string();
    write_calibration(sample(), path);  // creates the directory
    // The devices opened in the other order, and a third the calibration never saw.
    const MachineProfile defaults = defaults_for({kGpuB, kGpuA, "New GPU (driver 9, 77)"});
    const MachineProfile p = load_profile(path, sample().machine, defaults);
    EXPECT_EQ(p.cpu.bytes_per_s, 12.5e9);
    EXPECT_NE(p.source.find("calibration " + path), std::string::npos) << p.source;
    EXPECT_NE(p.source.find("old"), std::string::npos) << p.source;  // its age
    ASSERT_EQ(p.devices.size(), 3u) << "one profile per open device, in their order";
    EXPECT_EQ(p.devices[0].rates.bytes_per_s, 3.5e11) << "device 0 is GPU B: B's entry";
    EXPECT_EQ(p.devices[0].link.upload_bytes_per_s, 6e9);
    EXPECT_EQ(p.devices[1].rates.ops_per_s[3][1], 7.25e11) << "device 1 is GPU A: A's entry";
    EXPECT_EQ(p.devices[1].link.sync_s, 42e-6);
    EXPECT_EQ(p.devices[0].source, "calibrated");
    EXPECT_EQ(p.devices[2].rates.bytes_per_s, defaults.devices[2].rates.bytes_per_s) << "not measured: the defaults";
    EXPECT_NE(p.devices[2].source.find("not in the calibration"), std::string::npos) << p.devices[2].source;
    // Another machine (the CPU's key): the defaults, saying why.
    MachineKey other = sample().machine;
    other.cpu_threads = 16;
    const MachineProfile q = load_profile(path, other, defaults);
    EXPECT_EQ(q.cpu.bytes_per_s, defaults.cpu.bytes_per_s);
    EXPECT_EQ(q.devices[1].rates.ops_per_s[3][1], defaults.devices[1].rates.ops_per_s[3][1]);
    EXPECT_NE(q.source.find("another machine"), std::string::npos) << q.source;
    // No file, or "none": the defaults.
    EXPECT_NE(load_profile((dir / "missing.json").string(), sample().machine, defaults).source.find("tandem calibrate"),
              std::string::npos);
    EXPECT_NE(load_profile("none", sample().machine, defaults).source.find("built-in defaults"), std::string::npos);
    fs::remove_all(dir);
}

TEST(Calibration, BadFilesAreReportedAndIgnored) {
    const fs::path dir = temp_dir("bad");
    const MachineProfile defaults = defaults_for({kGpuA});
    std::string good = to_json(sample());
    struct Case {
        const char* name;
        std::string text;
        const char* says;
    };
    std::string old_version = good, zero_rate = good, foreign = good;
    old_version.replace(old_version.find("\"version\": 2"), 12, "\"version\": 1");
    const std::string rate_text = "\"bytes_per_s\": 12500000000.0";
    ASSERT_NE(zero_rate.find(rate_text), std::string::npos) << good;
    zero_rate.replace(zero_rate.find(rate_text), rate_text.size(), "\"bytes_per_s\": 0.0");
    foreign.replace(foreign.find("tandem calibration"), 18, "something else!!!!");
    const Case cases[] = {
        {"truncated", good.substr(0, good.size() / 2), "not valid JSON"},
        {"empty", "", "not valid JSON"},
        {"old", old_version, "version 1, this Tandem reads version 2"},
        {"zero", zero_rate, "positive rate"},
        {"foreign", foreign, "not a Tandem calibration"},
    };
    for (const Case& c : cases) {
        const std::string path = (dir / (std::string(c.name) + ".json")).string();
        write(path, c.text);
        EXPECT_THROW((void)calibration_from_json(c.text, path), tandem::ConfigError) << c.name;
        try {
            (void)calibration_from_json(c.text, path);
        } catch (const tandem::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.name << ": " << e.what();
        }
        const MachineProfile p = load_profile(path, sample().machine, defaults);
        EXPECT_EQ(p.cpu.bytes_per_s, defaults.cpu.bytes_per_s) << c.name;
        EXPECT_NE(p.source.find("cannot be used"), std::string::npos) << c.name << ": " << p.source;
    }
    fs::remove_all(dir);
}

TEST(Calibration, MeasuringWritesAFileTheRuntimeReads) {
    // The CPU alone (no device: the configuration asks for none), quick.
    const fs::path dir = temp_dir("measure");
    tandem::Config config;
    config.device = "cpu";
    tandem::CalibrateOptions o;
    o.quick = true;
    o.output = (dir / "calibration.json").string();
    double last = 0;
    o.progress = [&](double done, const std::string&) {
        EXPECT_GE(done, last);
        last = done;
    };
    const tandem::CalibrationResult r = tandem::calibrate(config, o);
    EXPECT_EQ(last, 1.0);
    EXPECT_EQ(r.path, o.output);
    EXPECT_NE(r.rates.find("GB/s"), std::string::npos) << r.rates;
    std::ifstream in(o.output);
    std::stringstream text;
    text << in.rdbuf();
    const Calibration c = calibration_from_json(text.str(), o.output);
    EXPECT_TRUE(c.profile.devices.empty()) << "no device measured";
    EXPECT_GT(c.profile.cpu.bytes_per_s, 1e8);
    EXPECT_GT(c.profile.cpu.flops_per_s[0], 1e8);
    for (std::size_t k = 1; k < kCostClasses; ++k) EXPECT_GT(c.profile.cpu.ops_per_s[k][0], 1e6) << k;
    fs::remove_all(dir);
}

TEST(Calibration, AnUnwritablePlaceFailsBeforeMeasuring) {
    tandem::Config config;
    config.device = "cpu";
    tandem::CalibrateOptions o;
    o.output = "/proc/tandem-cannot-write/calibration.json";
    bool measured = false;
    o.progress = [&](double, const std::string&) { measured = true; };
    try {
        (void)tandem::calibrate(config, o);
        ADD_FAILURE() << "no ConfigError";
    } catch (const tandem::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(o.output), std::string::npos) << e.what();
    }
    EXPECT_FALSE(measured) << "it measured before finding it could not write";
}

TEST(Calibration, TheLearnedHistoryRoundTripsAndIsSavedIntoItsFile) {
    Calibration c = sample();
    c.profile.cpu_history.add({0x1234, {2.0, 2.5, 3.0}});
    c.profile.devices[1].history.add({0xabc, {0.5, 0.5, 0.5}});
    const Calibration back = calibration_from_json(to_json(c), "test");
    EXPECT_EQ(back.profile.history_size(), 2u);
    EXPECT_EQ(back.profile.cpu_history.correction(0x1234), 2.5);
    EXPECT_EQ(back.profile.devices[1].history.correction(0xabc), 0.5) << "per device";
    EXPECT_EQ(back.profile.devices[0].history.correction(0xabc), 1.0);
    // Without histories: loads with none.
    std::string text = to_json(sample());
    const auto at = text.find("\"cpu_history\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(calibration_from_json(text.replace(at, 13, "\"unused_1234\""), "old").profile.history_size(), 0u);
    // A bad one is a bad file.
    std::string bad = to_json(c);
    const std::string sig = "\"0000000000001234\"";
    ASSERT_NE(bad.find(sig), std::string::npos) << bad;
    bad.replace(bad.find(sig), sig.size(), "\"not hex\"");
    EXPECT_THROW((void)calibration_from_json(bad, "bad"), tandem::ConfigError);

    // save_history: what a runtime learned replaces the file's histories, per device by identity,
    // for its machine only.
    const fs::path dir = temp_dir("history");
    const std::string path = (dir / "calibration.json").string();
    write_calibration(sample(), path);
    MachineProfile learned = load_profile(path, sample().machine, defaults_for({kGpuB, "New GPU"}));
    for (double r : {4.0, 5.0, 6.0}) learned.devices[0].history.observe(0x77, 1.0, r);   // GPU B
    for (double r : {7.0, 7.0, 7.0}) learned.devices[1].history.observe(0x77, 1.0, r);   // not in the file
    for (double r : {2.0, 2.0, 2.0}) learned.cpu_history.observe(0x66, 1.0, r);
    save_history(path, sample().machine, learned);
    MachineProfile p = load_profile(path, sample().machine, defaults_for({kGpuA, kGpuB}));
    EXPECT_EQ(p.devices[1].history.correction(0x77), 5.0) << "GPU B's, under its identity";
    EXPECT_EQ(p.devices[0].history.correction(0x77), 1.0) << "GPU A learned nothing";
    EXPECT_EQ(p.cpu_history.correction(0x66), 2.0);
    EXPECT_EQ(p.file, path);
    EXPECT_NE(p.source.find("refined by 2 kinds"), std::string::npos) << p.source;
    MachineKey other = sample().machine;
    other.cpu_threads = 1;
    save_history(path, other, MachineProfile{});  // another machine's runtime: leaves it alone
    p = load_profile(path, sample().machine, defaults_for({kGpuA, kGpuB}));
    EXPECT_EQ(p.history_size(), 2u);
    fs::remove_all(dir);
}
