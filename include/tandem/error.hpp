// Errors thrown by Tandem. Every error is a tandem::Error; the subclass says what kind of
// thing was wrong, the message says which op, which argument and which shapes/settings.
#pragma once

#include "tandem/export.hpp"

#include <stdexcept>
#include <string>

namespace tandem {

/// Base of every error Tandem throws (synchronously, or through a Future).
class TANDEM_API Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Operand shapes that do not agree (implicit expansion, reshape, creation).
class TANDEM_API ShapeError : public Error {
public:
    using Error::Error;
};

/// An element type that an op or an accessor does not accept.
class TANDEM_API DTypeError : public Error {
public:
    using Error::Error;
};

/// A value that an op cannot accept (NaN converted to logical, a bad argument).
class TANDEM_API ValueError : public Error {
public:
    using Error::Error;
};

/// A subscript outside an array (MATLAB's "Index exceeds ..."): the message names the index and
/// the extent.
class TANDEM_API IndexError : public ValueError {
public:
    using ValueError::ValueError;
};

/// An allocation that the machine cannot satisfy.
class TANDEM_API OutOfMemoryError : public Error {
public:
    using Error::Error;
};

/// A device (GPU) failure: no usable device, a lost device, a shader that fails to compile.
/// Work that hits one falls back to the CPU; this reaches users only where no fallback exists
/// (a device requested explicitly that cannot be opened, for instance).
class TANDEM_API DeviceError : public Error {
public:
    using Error::Error;
};

/// A user kernel's command group that cannot run as given (tandem/kernel.hpp): an accessor of the
/// wrong type, a range larger than a buffer it writes, a buffer of a runtime that is gone, a body
/// missing for the only executor there is. The message names the kernel and the buffer.
class TANDEM_API KernelError : public Error {
public:
    using Error::Error;
};

/// A user kernel's GLSL body that glslang rejects: each error with the body's own line number.
class TANDEM_API KernelCompileError : public KernelError {
public:
    using KernelError::KernelError;
};

/// A bad setting: an environment variable or Config field with an invalid value.
class TANDEM_API ConfigError : public Error {
public:
    using Error::Error;
};

}  // namespace tandem
