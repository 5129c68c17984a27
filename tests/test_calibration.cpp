// The calibration file (calibrate/calibration_file.hpp): a round trip keeps every rate; a file
// that is corrupt, of another version, of another machine or with an impossible rate is
// reported once and the built-in defaults are used; `tandem calibrate`'s measurements
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

Calibration sample() {
    Calibration c;
    c.machine = {"Test CPU 3000", 8, "Test GPU (driver 1.2, 00ff)"};
    c.has_device = true;
    c.created_unix_s = 1'790'000'000;
    c.profile = default_machine_profile(8, DeviceClass::discrete_gpu);
    c.profile.cpu.bytes_per_s = 12.5e9;
    c.profile.device.ops_per_s[3][1] = 7.25e11;
    c.profile.link.sync_s = 42e-6;
    return c;
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
    EXPECT_TRUE(back.has_device);
    EXPECT_EQ(back.profile.cpu.bytes_per_s, 12.5e9);
    EXPECT_EQ(back.profile.device.ops_per_s[3][1], 7.25e11);
    EXPECT_EQ(back.profile.link.sync_s, 42e-6);
    for (std::size_t k = 1; k < kCostClasses; ++k)
        for (std::size_t t = 0; t < 2; ++t) {
            EXPECT_EQ(back.profile.cpu.ops_per_s[k][t], c.profile.cpu.ops_per_s[k][t]);
            EXPECT_EQ(back.profile.device.ops_per_s[k][t], c.profile.device.ops_per_s[k][t]);
        }
    EXPECT_EQ(back.profile.device.flops_per_s, c.profile.device.flops_per_s);
    EXPECT_EQ(back.profile.device.launch_s, c.profile.device.launch_s);
}

TEST(Calibration, WrittenFileIsLoadedForItsMachineOnly) {
    const fs::path dir = temp_dir("load");
    const std::string path = (dir / "sub" / "calibration.json").string();
    write_calibration(sample(), path);  // creates the directory
    const MachineProfile defaults = default_machine_profile(8, DeviceClass::discrete_gpu);
    const MachineProfile p = load_profile(path, sample().machine, defaults);
    EXPECT_EQ(p.cpu.bytes_per_s, 12.5e9);
    EXPECT_NE(p.source.find("calibration " + path), std::string::npos) << p.source;
    EXPECT_NE(p.source.find("old"), std::string::npos) << p.source;  // its age
    // Another machine: the defaults, saying why.
    MachineKey other = sample().machine;
    other.cpu_threads = 16;
    const MachineProfile q = load_profile(path, other, defaults);
    EXPECT_EQ(q.cpu.bytes_per_s, defaults.cpu.bytes_per_s);
    EXPECT_NE(q.source.find("another machine"), std::string::npos) << q.source;
    // No file, or "none": the defaults.
    EXPECT_NE(load_profile((dir / "missing.json").string(), sample().machine, defaults).source.find("tandem calibrate"),
              std::string::npos);
    EXPECT_NE(load_profile("none", sample().machine, defaults).source.find("built-in defaults"), std::string::npos);
    fs::remove_all(dir);
}

TEST(Calibration, BadFilesAreReportedAndIgnored) {
    const fs::path dir = temp_dir("bad");
    const MachineProfile defaults = default_machine_profile(8, DeviceClass::discrete_gpu);
    std::string good = to_json(sample());
    struct Case {
        const char* name;
        std::string text;
        const char* says;
    };
    std::string old_version = good, zero_rate = good, foreign = good;
    old_version.replace(old_version.find("\"version\": 1"), 12, "\"version\": 0");
    const std::string rate_text = "\"bytes_per_s\": 12500000000.0";
    ASSERT_NE(zero_rate.find(rate_text), std::string::npos) << good;
    zero_rate.replace(zero_rate.find(rate_text), rate_text.size(), "\"bytes_per_s\": 0.0");
    foreign.replace(foreign.find("tandem calibration"), 18, "something else!!!!");
    const Case cases[] = {
        {"truncated", good.substr(0, good.size() / 2), "not valid JSON"},
        {"empty", "", "not valid JSON"},
        {"old", old_version, "version 0"},
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
    EXPECT_FALSE(c.has_device);
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
    c.profile.history.add({0x1234, false, {2.0, 2.5, 3.0}});
    c.profile.history.add({0xabc, true, {0.5}});
    const Calibration back = calibration_from_json(to_json(c), "test");
    EXPECT_EQ(back.profile.history.size(), 2u);
    EXPECT_EQ(back.profile.history.correction(0x1234, false), 2.5);
    EXPECT_EQ(back.profile.history.correction(0xabc, true), 1.0) << "one run is not enough to trust";
    // A file of before the history: loads with none.
    std::string text = to_json(sample());
    const auto at = text.find("\"history\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(calibration_from_json(text.replace(at, 9, "\"unused\""), "old").profile.history.size(), 0u);
    // A bad one is a bad file.
    std::string bad = to_json(c);
    bad.replace(bad.find("\"cpu\"", bad.find("\"executor\"")), 5, "\"gpu\"");
    EXPECT_THROW((void)calibration_from_json(bad, "bad"), tandem::ConfigError);

    // save_history: what a runtime learned replaces the file's history, for its machine only.
    const fs::path dir = temp_dir("history");
    const std::string path = (dir / "calibration.json").string();
    write_calibration(sample(), path);
    PerformanceHistory learned;
    for (double r : {4.0, 5.0, 6.0}) learned.observe(0x77, true, 1.0, r);
    save_history(path, sample().machine, learned);
    MachineProfile p = load_profile(path, sample().machine, default_machine_profile(8, DeviceClass::discrete_gpu));
    EXPECT_EQ(p.history.correction(0x77, true), 5.0);
    EXPECT_EQ(p.file, path);
    EXPECT_NE(p.source.find("refined by 1 kind"), std::string::npos) << p.source;
    MachineKey other = sample().machine;
    other.cpu_threads = 1;
    save_history(path, other, PerformanceHistory{});  // another machine's runtime: leaves it alone
    p = load_profile(path, sample().machine, default_machine_profile(8, DeviceClass::discrete_gpu));
    EXPECT_EQ(p.history.size(), 1u);
    fs::remove_all(dir);
}
