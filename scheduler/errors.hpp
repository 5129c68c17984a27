// How the scheduler tells failures apart (what it does after one depends on it).
#pragma once

#include <exception>
#include <string>

#include "tandem/error.hpp"

namespace tandem::detail {

/// A failure of the data (a NaN converted to logical): the same on any backend.
inline bool is_data_error(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const ValueError&) {
        return true;
    } catch (...) {
        return false;
    }
}

/// A failure of the device itself (lost): no more work should go there.
inline bool is_device_error(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const DeviceError&) {
        return true;
    } catch (...) {
        return false;
    }
}

/// What an error says.
inline std::string error_text(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace tandem::detail
